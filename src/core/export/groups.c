/*
 * The sample log by group, the base of the one-pass formats (gecko, pprof, speedscope,
 * folded): every sample is appended to the varint log of its group (thread key, kind, PMC
 * source; vlog.c, which moves the logs to a scratch store past its cap) as (time delta,
 * stack id << 1 | has ip, count[, ip delta from the group's last logged ip, module key]), a
 * few bytes a sample (a kernel ip alone is a 10-byte varint; its delta 2 to 4 bytes). The ip and module
 * ride along when a row may need them: samples without a stack, and samples whose stack is
 * not interned (yet), whose row falls back to its first sample's ip. At finish the groups are
 * visited in (thread key, kind, PMC source) order; each is read back alone and aggregated into
 * its rows (a per-stack-id slot array stamped with the group, a map for the rest), sorted by
 * first time, stack id, ip, module and creation order: exactly the rows and order a table of
 * every (thread, stack) row sorted the same way gives, holding one group's rows at a time.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

static uint32_t group_tag(uint16_t kind, uint16_t source)
{
    return (uint32_t)kind << 16 | source;
}

/* The log of rec's group, from the cache or looked up (the thread touched then). */
static int group_of(perch__collect *c, const perch_sample_rec *rec, perch__vlog **g)
{
    perch__samplelog *l = &c->samples;
    uint32_t tag = group_tag(rec->kind, rec->profile_source), thread;
    perch__group_slot *slot =
        &l->cache[perch__hash64(rec->thread_key ^ (uint64_t)tag << 40) & (PERCH_GROUP_CACHE - 1)];
    int err;
    if (slot->log && slot->key == rec->thread_key && slot->tag == tag) {
        if (slot->thread != UINT32_MAX) { /* what touching a known thread does */
            perch__thread *t = &c->ents.threads[slot->thread];
            if (rec->tid == 0 && t->tid == 0 && t->cpu < 0)
                t->cpu = rec->cpu;
        }
        *g = &l->log.v[slot->log - 1];
        return 0;
    }
    err = perch__entities_touch_thread(&c->ents, rec->thread_key, rec->tid, rec->cpu, &thread);
    if (!err)
        err = perch__vlogs_get(&l->log, &c->budget, rec->thread_key, tag, true, g);
    if (!err) {
        (*g)->aux = thread + 1; /* UINT32_MAX (no entity) + 1 = 0 */
        *slot = (perch__group_slot){rec->thread_key, tag, (uint32_t)(*g - l->log.v) + 1, thread};
    }
    return err;
}

int perch__samplelog_add(perch__collect *c, const perch_sample_rec *rec)
{
    perch__samplelog *l = &c->samples;
    uint64_t count = rec->count ? rec->count : 1, e[5];
    bool ip = !perch__stacks_known(&c->stacks, rec->stack_id);
    perch__vlog *g;
    int err = group_of(c, rec, &g);
    if (err)
        return err;
    e[0] = perch__zigzag((int64_t)(rec->ts - g->prev));
    e[1] = (uint64_t)rec->stack_id << 1 | ip;
    e[2] = count;
    e[3] = perch__zigzag((int64_t)(rec->ip - g->prev2)); /* ips of a thread lie close */
    e[4] = rec->module_key;
    err = perch__vlogs_put(&l->log, &c->budget, g, e, ip ? 5 : 3);
    if (err)
        return err;
    g->unsorted |= rec->ts < g->prev;
    g->prev = rec->ts;
    if (ip)
        g->prev2 = rec->ip;
    g->sum += count;
    l->samples++;
    if (rec->ts > l->last_ts)
        l->last_ts = rec->ts;
    return 0;
}

/* ---- reading a group back ------------------------------------------------------------- */

static int cmp_row(const void *x, const void *y)
{
    const perch__agg_row *a = x, *b = y;
    if (a->first_ts != b->first_ts)
        return a->first_ts < b->first_ts ? -1 : 1;
    if (a->stack_id != b->stack_id)
        return a->stack_id < b->stack_id ? -1 : 1;
    if (a->ip != b->ip)
        return a->ip < b->ip ? -1 : 1;
    if (a->module_key != b->module_key)
        return a->module_key < b->module_key ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* A new row of group g for a sample; *row receives its index. */
static int new_row(perch__collect *c, perch__gstate *s, const perch__vlog *g, uint32_t stack_id,
                   uint64_t ip, uint64_t module_key, uint64_t ts, uint32_t *row)
{
    perch__agg_row *r;
    int err;
    if (s->row_count >= UINT32_MAX - 1)
        return PERCH_ELIMIT;
    err = perch__grow(&c->budget, (void **)&s->rows, &s->row_cap, s->row_count + 1, sizeof *r);
    if (err)
        return err;
    r = memset(&s->rows[s->row_count], 0, sizeof *r);
    r->thread_key = g->key;
    r->kind = (uint16_t)(g->tag >> 16);
    r->profile_source = (uint16_t)g->tag;
    r->stack_id = stack_id;
    r->ip = ip;
    r->module_key = module_key;
    r->first_ts = ts;
    r->seq = (uint32_t)s->row_count;
    *row = (uint32_t)s->row_count++;
    return 0;
}

/* The row of a sample of group g (created on its first sample). */
static int row_for(perch__collect *c, perch__gstate *s, const perch__vlog *g, uint32_t stack_id,
                   uint64_t ip, uint64_t module_key, uint64_t ts, uint32_t *row)
{
    uint32_t idx;
    bool is_new;
    int err;
    if (stack_id != 0 && stack_id < s->row_of_cap) {
        uint64_t v = s->row_of[stack_id];
        if (v >> 32 == s->gen) {
            *row = (uint32_t)v;
            return 0;
        }
        err = new_row(c, s, g, stack_id, ip, module_key, ts, row);
        if (err)
            return err;
        s->row_of[stack_id] = (uint64_t)s->gen << 32 | *row;
        return 0;
    }
    if (stack_id != 0) {
        if (perch__map_get(&s->far, stack_id, row))
            return 0;
        err = new_row(c, s, g, stack_id, ip, module_key, ts, row);
        return err ? err : perch__map_put(&s->far, &c->budget, stack_id, *row);
    }
    err = perch__loctab_get(&s->ips, &c->budget, module_key, ip, &idx, &is_new);
    if (err || !is_new) {
        *row = err ? 0 : s->ips.locs[idx].extra;
        return err;
    }
    err = new_row(c, s, g, 0, ip, module_key, ts, row);
    if (!err)
        s->ips.locs[idx].extra = *row;
    return err;
}

/* Empties the per-group state; the stack-id slots are invalidated by a new stamp. */
static int reset_group(perch__collect *c, perch__gstate *s)
{
    size_t need = c->stacks.count;
    int err = 0;
    s->row_count = 0;
    s->v_count = 0;
    perch__map_free(&s->far, &c->budget);
    perch__loctab_free(&s->ips, &c->budget);
    if (s->row_of_cap < need) {
        err = perch__grow(&c->budget, (void **)&s->row_of, &s->row_of_cap, need, sizeof *s->row_of);
        if (err)
            return err;
        memset(s->row_of, 0, s->row_of_cap * sizeof *s->row_of);
        s->gen = 0;
    }
    if (++s->gen == 0) { /* the stamp wrapped: clear every slot */
        memset(s->row_of, 0, s->row_of_cap * sizeof *s->row_of);
        s->gen = 1;
    }
    return 0;
}

/* The most bytes one entry of the log takes: five varints. */
#define ENTRY_MAX 50

/* Decodes log g into its rows (and samples), aggregating counts. */
static int decode_group(perch__collect *c, perch__gstate *s, const perch__vlog *g)
{
    perch__samplelog *l = &c->samples;
    perch__vlog_reader rd;
    size_t off = 0;
    uint64_t ts = 0, prev_ip = 0;
    int err = reset_group(c, s);
    if (!err)
        err = perch__vlog_reader_open(&l->log, &c->budget, g, &s->window, &rd);
    if (!err && l->want_samples)
        err = perch__grow(&c->budget, (void **)&s->v, &s->v_cap, g->count, sizeof *s->v);
    for (size_t i = 0; i < g->count && !err; i++) {
        uint64_t id = 0, ip = 0, mod = 0, count;
        uint32_t row;
        if (!rd.last && rd.len - off < ENTRY_MAX && (err = perch__vlog_reader_refill(&rd, &off)))
            break;
        ts += (uint64_t)perch__unzigzag(perch__vnext(rd.data, rd.len, &off));
        id = perch__vnext(rd.data, rd.len, &off);
        count = perch__vnext(rd.data, rd.len, &off);
        if (id & 1) {
            ip = prev_ip += (uint64_t)perch__unzigzag(perch__vnext(rd.data, rd.len, &off));
            mod = perch__vnext(rd.data, rd.len, &off);
        }
        err = row_for(c, s, g, (uint32_t)(id >> 1), ip, mod, ts, &row);
        if (err)
            break;
        s->rows[row].count += count;
        if (ts < s->rows[row].first_ts)
            s->rows[row].first_ts = ts;
        if (l->want_samples)
            s->v[s->v_count++] = (perch__gsample){ts, row, (uint32_t)count, (uint32_t)i};
    }
    return err;
}

static int cmp_sample(const void *x, const void *y)
{
    const perch__gsample *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* s->keys: n records at base by their time at off (perch__time_order); false when they do
 * not fit its keys (then the caller uses qsort). */
static int time_order(perch__collect *c, perch__gstate *s, const void *base, size_t stride,
                      size_t off, size_t n, unsigned *bits, bool *ok)
{
    int err = perch__grow(&c->budget, (void **)&s->keys, &s->keys_cap, n, sizeof *s->keys);
    if (!err)
        err = perch__grow(&c->budget, (void **)&s->keys_tmp, &s->keys_tmp_cap, n,
                          sizeof *s->keys_tmp);
    *ok = !err && perch__time_order(s->keys, s->keys_tmp, base, stride, off, n, bits);
    return err;
}

static bool rows_sorted(const perch__gstate *s)
{
    for (size_t i = 1; i < s->row_count; i++)
        if (cmp_row(&s->rows[i - 1], &s->rows[i]) > 0)
            return false;
    return true;
}

/* The rows in cmp_row order: by first time, then the runs of one time by cmp_row. */
static int sort_rows(perch__collect *c, perch__gstate *s)
{
    size_t n = s->row_count;
    unsigned bits = 0;
    uint64_t mask;
    bool ok;
    int err;
    if (rows_sorted(s))
        return 0;
    err = time_order(c, s, s->rows, sizeof *s->rows, offsetof(perch__agg_row, first_ts), n, &bits,
                     &ok);
    if (err || !ok) {
        if (!err)
            qsort(s->rows, n, sizeof *s->rows, cmp_row);
        return err;
    }
    mask = ((uint64_t)1 << bits) - 1;
    for (size_t i = 1; i < n; i++) { /* ties of one time: insertion by cmp_row */
        uint64_t x = s->keys[i];
        size_t j = i;
        for (; j > 0 && s->keys[j - 1] >> bits == x >> bits &&
               cmp_row(&s->rows[s->keys[j - 1] & mask], &s->rows[x & mask]) > 0;
             j--)
            s->keys[j] = s->keys[j - 1];
        s->keys[j] = x;
    }
    for (size_t i = 0; i < n; i++)
        s->keys[i] &= mask;
    perch__permute(s->rows, sizeof *s->rows, s->keys, n);
    return 0;
}

/* The samples by time, ties in arrival order (their index, = their order field): they come
 * nearly in order, so only the late ones are sorted (perch__time_order_late). */
static int sort_samples(perch__collect *c, perch__gstate *s)
{
    size_t n = s->v_count;
    int err = perch__grow(&c->budget, (void **)&s->keys, &s->keys_cap, n, sizeof *s->keys);
    if (!err)
        err = perch__grow(&c->budget, (void **)&s->keys_tmp, &s->keys_tmp_cap, n,
                          sizeof *s->keys_tmp);
    if (err)
        return err;
    if (!perch__time_order_late(s->keys, s->keys_tmp, s->v, sizeof *s->v,
                                offsetof(perch__gsample, ts), n)) {
        qsort(s->v, n, sizeof *s->v, cmp_sample);
        return 0;
    }
    perch__permute(s->v, sizeof *s->v, s->keys_tmp, n);
    return 0;
}

_Static_assert(sizeof(perch__agg_row) <= 128 && sizeof(perch__gsample) <= 128,
               "perch__permute moves records of at most 128 bytes");

/* Sorts the group's rows and renumbers its samples' rows. */
static int sort_group(perch__collect *c, perch__gstate *s, const perch__vlog *g)
{
    int err = sort_rows(c, s);
    if (err || !c->samples.want_samples)
        return err;
    err = perch__grow(&c->budget, (void **)&s->pos, &s->pos_cap, s->row_count, sizeof *s->pos);
    if (err)
        return err;
    for (size_t i = 0; i < s->row_count; i++)
        s->pos[s->rows[i].seq] = (uint32_t)i;
    for (size_t i = 0; i < s->v_count; i++)
        s->v[i].row = s->pos[s->v[i].row];
    return g->unsorted ? sort_samples(c, s) : 0;
}

int perch__group_build(perch__collect *c, perch__gstate *s, const perch__vlog *g)
{
    int err = decode_group(c, s, g);
    return err ? err : sort_group(c, s, g);
}

void perch__gstate_free(perch__gstate *s, perch__budget *b)
{
    perch__release(b, (void **)&s->rows, &s->row_cap, sizeof *s->rows);
    perch__release(b, (void **)&s->row_of, &s->row_of_cap, sizeof *s->row_of);
    perch__release(b, (void **)&s->pos, &s->pos_cap, sizeof *s->pos);
    perch__release(b, (void **)&s->v, &s->v_cap, sizeof *s->v);
    perch__release(b, (void **)&s->keys, &s->keys_cap, sizeof *s->keys);
    perch__release(b, (void **)&s->keys_tmp, &s->keys_tmp_cap, sizeof *s->keys_tmp);
    perch__map_free(&s->far, b);
    perch__loctab_free(&s->ips, b);
    perch__vlog_window_free(&s->window, b);
    s->row_count = s->v_count = 0;
}

void perch__samplelog_free(perch__samplelog *l, perch__budget *b)
{
    perch__vlogs_free(&l->log, b);
    perch__release(b, (void **)&l->order, &l->order_cap, sizeof *l->order);
    for (size_t i = 0; i < sizeof l->st / sizeof l->st[0]; i++)
        perch__gstate_free(&l->st[i], b);
    memset(l->cache, 0, sizeof l->cache);
}
