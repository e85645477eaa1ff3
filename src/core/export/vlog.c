/*
 * Keyed logs of varints for the exporters: one append-only byte log per key (a thread, or a
 * thread's sample group), found through the exporters' u64 map with a probe chain for hash
 * collisions. A log entry is a few LEB128 varints (deltas and small numbers), a few bytes
 * where the fixed structs they replace took 16 to 104, and every byte held in memory is
 * charged to the exporter's budget. Past the store's memory cap every log's bytes so far
 * move to a scratch store (include/perch/scratch.h) as one segment per log, chained per log,
 * so the logs' memory stays bounded however long the trace; a log is read back whole, its
 * segments in order, then its in-memory tail.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

#define NO_SEG UINT32_MAX

void perch__vlogs_init(perch__vlogs *s, size_t memory, perch_scratch_open_fn open, void *open_ctx)
{
    memset(s, 0, sizeof *s);
    s->memory = memory;
    s->open = open;
    s->open_ctx = open_ctx;
}

static uint64_t slot_key(uint64_t key, uint32_t tag)
{
    return perch__hash64(key ^ perch__hash64((uint64_t)tag + 0x9e3779b97f4a7c15ull)) | 1;
}

int perch__vlogs_get(perch__vlogs *s, perch__budget *b, uint64_t key, uint32_t tag, bool create,
                     perch__vlog **out)
{
    uint64_t k = slot_key(key, tag);
    uint32_t idx;
    int err;
    *out = NULL;
    for (; perch__map_get(&s->index, k, &idx); k = perch__hash64(k) | 1) {
        if (s->v[idx].key == key && s->v[idx].tag == tag) {
            *out = &s->v[idx];
            return 0;
        }
    }
    if (!create)
        return 0;
    err = perch__grow(b, (void **)&s->v, &s->cap, s->count + 1, sizeof *s->v);
    if (!err)
        err = perch__map_put(&s->index, b, k, (uint32_t)s->count);
    if (err)
        return err;
    *out = memset(&s->v[s->count++], 0, sizeof *s->v);
    (*out)->key = key;
    (*out)->tag = tag;
    (*out)->seg_first = (*out)->seg_last = NO_SEG;
    return 0;
}

/* Writes the staged bytes (the last segments, contiguous) to the scratch store. Their logs
 * are released: when the write fails they are lost, and the store fails from then on. */
static int flush_stage(perch__vlogs *s)
{
    int err = s->stage_len ? s->scratch.write_at(s->scratch.ctx, s->scratch_end - s->stage_len,
                                                 s->stage, s->stage_len)
                           : 0;
    s->stage_len = 0;
    if (err)
        s->error = err;
    return err;
}

/* Appends the bytes of log l as a new segment at the end of the scratch store: a small log
 * through the stage (one write for many logs: a store of millions of one-sample logs made a
 * system call each), a large one at once. */
static int spill_one(perch__vlogs *s, perch__budget *b, perch__vlog *l)
{
    perch__vlog_seg *seg;
    int err = perch__grow(b, (void **)&s->segs, &s->seg_cap, s->seg_count + 1, sizeof *s->segs);
    if (!err && l->len > UINT32_MAX)
        err = PERCH_ELIMIT;
    if (!err && s->stage_len + l->len > s->stage_cap)
        err = flush_stage(s);
    if (!err && l->len <= s->stage_cap) {
        memcpy(s->stage + s->stage_len, l->data, l->len);
        s->stage_len += l->len;
    } else if (!err) {
        err = s->scratch.write_at(s->scratch.ctx, s->scratch_end, l->data, l->len);
    }
    if (err)
        return err;
    seg = &s->segs[s->seg_count];
    *seg = (perch__vlog_seg){s->scratch_end, (uint32_t)l->len, NO_SEG};
    if (l->seg_last == NO_SEG)
        l->seg_first = (uint32_t)s->seg_count;
    else
        s->segs[l->seg_last].next = (uint32_t)s->seg_count;
    l->seg_last = (uint32_t)s->seg_count++;
    s->scratch_end += l->len;
    l->spilled += l->len;
    s->held -= l->cap;
    perch__release(b, (void **)&l->data, &l->cap, 1);
    l->len = 0;
    return 0;
}

/* Moves every log's bytes to the scratch store (opened on first use). */
static int spill_all(perch__vlogs *s, perch__budget *b)
{
    int err = s->error, ferr;
    if (err)
        return err;
    if (!s->scratch_open) {
        err = s->open(s->open_ctx, &s->scratch);
        s->scratch_open = err == 0;
    }
    if (!err)
        err = perch__grow(b, (void **)&s->stage, &s->stage_cap, PERCH_VLOG_WINDOW, 1);
    for (size_t i = 0; i < s->count && !err; i++)
        if (s->v[i].len)
            err = spill_one(s, b, &s->v[i]);
    /* the logs staged before a failure are released and their segments named: their bytes
     * go out even then (the slice log survives PERCH_ELIMIT growing the segments) */
    ferr = flush_stage(s);
    err = err ? err : ferr;
    s->spills += err == 0;
    return err;
}

int perch__vlogs_put_slow(perch__vlogs *s, perch__budget *b, perch__vlog *l, const uint64_t *vals,
                          size_t n)
{
    size_t old = l->cap;
    int err;
    if (l->len + n * 10 > l->cap && s->memory && s->open && s->held >= s->memory) {
        err = spill_all(s, b);
        if (err)
            return err;
        old = l->cap;
    }
    err = perch__grow(b, (void **)&l->data, &l->cap, l->len + n * 10, 1);
    if (err)
        return err;
    s->held += l->cap - old;
    l->len += perch__put_varints(l->data + l->len, vals, n);
    l->count++;
    return 0;
}

int perch__vlogs_read(perch__vlogs *s, perch__budget *b, const perch__vlog *l, const uint8_t **data,
                      size_t *len)
{
    size_t at = 0;
    int err;
    if (l->spilled == 0) {
        *data = l->data;
        *len = l->len;
        return 0;
    }
    if (s->error)
        return s->error;
    if (l->spilled > SIZE_MAX - l->len)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&s->load, &s->load_cap, (size_t)l->spilled + l->len, 1);
    for (uint32_t i = l->seg_first; i != NO_SEG && !err; i = s->segs[i].next) {
        err = s->scratch.read_at(s->scratch.ctx, s->segs[i].off, s->load + at, s->segs[i].len);
        at += s->segs[i].len;
    }
    if (err)
        return err;
    if (l->len)
        memcpy(s->load + at, l->data, l->len);
    *data = s->load;
    *len = at + l->len;
    return 0;
}

int perch__vlog_reader_open(perch__vlogs *s, perch__budget *b, const perch__vlog *l,
                            perch__vlog_window *w, perch__vlog_reader *r)
{
    size_t off = 0;
    int err;
    *r = (perch__vlog_reader){s, l, w, l->data, l->len, l->seg_first, 0, 0, l->spilled == 0};
    if (r->last)
        return 0;
    if (s->error)
        return s->error;
    err = perch__grow(b, (void **)&w->buf, &w->cap, PERCH_VLOG_WINDOW, 1);
    if (!err)
        err = perch__grow(b, (void **)&w->ahead, &w->ahead_cap, PERCH_VLOG_AHEAD, 1);
    if (w->store != s) { /* what the read-ahead holds is another store's */
        w->store = s;
        w->ahead_len = 0;
    }
    r->data = w->buf;
    r->len = 0;
    return err ? err : perch__vlog_reader_refill(r, &off);
}

/* n bytes of the scratch store at off into out: a short read through the window's read-ahead
 * (the next logs' segments usually follow: one system call for many small logs), a long one
 * directly. */
static int read_scratch(perch__vlogs *s, perch__vlog_window *w, uint64_t off, uint8_t *out,
                        size_t n)
{
    int err;
    if (n > w->ahead_cap / 4)
        return s->scratch.read_at(s->scratch.ctx, off, out, n);
    if (off < w->ahead_off || off - w->ahead_off > w->ahead_len ||
        w->ahead_len - (off - w->ahead_off) < n) {
        size_t fill =
            s->scratch_end - off < w->ahead_cap ? (size_t)(s->scratch_end - off) : w->ahead_cap;
        w->ahead_len = 0;
        err = s->scratch.read_at(s->scratch.ctx, off, w->ahead, fill);
        if (err)
            return err;
        w->ahead_off = off;
        w->ahead_len = fill;
    }
    memcpy(out, w->ahead + (off - w->ahead_off), n);
    return 0;
}

int perch__vlog_reader_refill(perch__vlog_reader *r, size_t *off)
{
    perch__vlogs *s = r->s;
    perch__vlog_window *w = r->w;
    size_t keep = r->len - *off, room;
    int err;
    if (keep)
        memmove(w->buf, r->data + *off, keep);
    room = w->cap - keep;
    while (room && r->seg != NO_SEG) {
        const perch__vlog_seg *g = &s->segs[r->seg];
        size_t n = g->len - r->at < room ? g->len - r->at : room;
        err = read_scratch(s, w, g->off + r->at, w->buf + keep, n);
        if (err)
            return err;
        keep += n;
        room -= n;
        r->at += (uint32_t)n;
        if (r->at == g->len) {
            r->seg = g->next;
            r->at = 0;
        }
    }
    if (room && r->seg == NO_SEG) {
        size_t n = r->l->len - r->tail < room ? r->l->len - r->tail : room;
        if (n)
            memcpy(w->buf + keep, r->l->data + r->tail, n);
        keep += n;
        r->tail += n;
    }
    r->data = w->buf;
    r->len = keep;
    r->last = r->seg == NO_SEG && r->tail == r->l->len;
    *off = 0;
    return 0;
}

void perch__vlog_window_free(perch__vlog_window *w, perch__budget *b)
{
    perch__release(b, (void **)&w->buf, &w->cap, 1);
    perch__release(b, (void **)&w->ahead, &w->ahead_cap, 1);
    w->store = NULL;
    w->ahead_off = 0;
    w->ahead_len = 0;
}

void perch__vlogs_seal(perch__vlogs *s, perch__budget *b)
{
    perch__map_free(&s->index, b);
}

void perch__vlogs_free(perch__vlogs *s, perch__budget *b)
{
    for (size_t i = 0; i < s->count; i++)
        perch__release(b, (void **)&s->v[i].data, &s->v[i].cap, 1);
    perch__release(b, (void **)&s->v, &s->cap, sizeof *s->v);
    perch__release(b, (void **)&s->segs, &s->seg_cap, sizeof *s->segs);
    perch__release(b, (void **)&s->load, &s->load_cap, 1);
    perch__release(b, (void **)&s->stage, &s->stage_cap, 1);
    perch__map_free(&s->index, b);
    if (s->scratch_open)
        perch_scratch_close(&s->scratch);
    s->scratch_open = false;
    s->count = s->seg_count = 0;
    s->held = 0;
    s->scratch_end = 0;
    s->error = 0;
}
