/*
 * The capture writer as a perch_sink: one encoder per record type, each appending one record
 * to the open chunk of its type. Field encodings (docs/capture-format.md, "Records") are
 * chosen for what dominates a real trace: samples and slices are a mask byte of "same as
 * before" bits, a thread from a move-to-front list, and zigzag varint deltas of timestamps and
 * addresses; stacks share their outermost frames with a recent stack and delta-code the rest.
 * Every delta base is per chunk (perch__cap_state), so each chunk decodes on its own. Entity
 * records (version 2 updates) are coded in enc_entity.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "capture/writer.h"
#include "perch/error.h"

/* The length of s (len bytes) as written: at most PERCH_CAPTURE_MAX_STRING, cut at a UTF-8
 * boundary. */
static size_t cut_len(const char *s, size_t len)
{
    if (len <= PERCH_CAPTURE_MAX_STRING)
        return len;
    len = PERCH_CAPTURE_MAX_STRING;
    while (len > 0 && ((uint8_t)s[len] & 0xc0) == 0x80)
        len--;
    return len;
}

static size_t cut_utf8(const char *s, size_t len, perch_capture_writer *w)
{
    if (len > PERCH_CAPTURE_MAX_STRING)
        w->stats.truncated++;
    return cut_len(s, len);
}

static int reset_strings(perch_capture_writer *w)
{
    int err = perch__cap_flush_all(w);
    if (err)
        return err;
    perch__strtab_clear(&w->strings);
    w->strings_reset = true;
    w->strings_first_id = 1;
    w->stats.strtab_resets++;
    return 0;
}

static int add_string(perch_capture_writer *w, const char *s, size_t len, uint64_t *id)
{
    uint32_t new_id;
    perch__cap_open_chunk *c = perch__cap_begin(w, PERCH_CHUNK_STRINGS, len + CAP_VARINT_MAX);
    if (!c)
        return w->error;
    int err = perch__strtab_add(&w->strings, s, len, true, &new_id);
    if (err)
        return err;
    cap_put_varint(&c->buf, len);
    cap_put_bytes(&c->buf, s, len);
    *id = new_id;
    return perch__cap_end(w, PERCH_CHUNK_STRINGS);
}

/* True when strs[i] repeats one of strs[0..i) (so it needs no room of its own). */
static bool seen_before(const char *const *strs, const size_t *lens, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strs[j] && lens[j] == lens[i] && memcmp(strs[j], strs[i], lens[i]) == 0)
            return true;
    return false;
}

int perch__cap_intern(perch_capture_writer *w, const char *const *strs, size_t n, uint64_t *ids)
{
    size_t lens[PERCH_CAPTURE_MAX_COUNTERS], need = 0, bytes = 0;
    int err;
    if (n > PERCH_CAPTURE_MAX_COUNTERS)
        return PERCH_ERANGE;
    for (size_t i = 0; i < n; i++) {
        lens[i] = strs[i] ? cut_utf8(strs[i], strlen(strs[i]), w) : 0;
        if (strs[i] && !perch__strtab_find(&w->strings, strs[i], lens[i]) &&
            !seen_before(strs, lens, i)) {
            need++;
            bytes += lens[i];
        }
    }
    if (!perch__strtab_fits(&w->strings, need, bytes)) {
        if ((err = reset_strings(w)) != 0)
            return err;
        if (!perch__strtab_fits(&w->strings, need, bytes))
            return PERCH_ELIMIT;
    }
    for (size_t i = 0; i < n; i++) {
        ids[i] = strs[i] ? perch__strtab_find(&w->strings, strs[i], lens[i]) : 0;
        if (strs[i] && !ids[i] && (err = add_string(w, strs[i], lens[i], &ids[i])) != 0)
            return err;
    }
    return 0;
}

static int ready(perch_capture_writer *w)
{
    if (w->error)
        return w->error;
    return w->finished ? PERCH_ESTATE : 0;
}

/* Leaves out a record that breaks a rule across records (its reason is in w->refusal), before
 * any byte of it is written; not sticky. */
static int refuse(perch_capture_writer *w, perch__cap_rule rule)
{
    w->stats.refused++;
    return rule == CAP_RULE_LIMIT ? PERCH_ELIMIT : PERCH_EINVAL;
}

static int on_trace_info(void *ctx, const perch_trace_info *r)
{
    perch_capture_writer *w = ctx;
    const char *strs[2] = {r->source, r->session_config};
    uint64_t ids[2];
    const uint64_t v[] = {r->os_build,    r->cpu_count,      r->pointer_size, r->clock_type,
                          r->perf_freq,   r->start_filetime, r->end_filetime, r->start_raw,
                          r->events_lost, r->buffers_lost};
    int err = ready(w);
    if (err)
        return err;
    if (w->info_off && !w->unchecked) { /* the reader's words (decode.c dec_trace_info) */
        snprintf(w->refusal, sizeof w->refusal,
                 "a second trace_info record (the first is in the chunk at offset %" PRIu64 ")",
                 w->info_off);
        return refuse(w, CAP_RULE_BROKEN);
    }
    if ((err = perch__cap_intern(w, strs, 2, ids)) != 0)
        return err;
    perch__cap_open_chunk *c = perch__cap_begin(w, PERCH_CHUNK_TRACE_INFO, 128);
    if (!c)
        return w->error;
    cap_put_varint(&c->buf, ids[0]);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cap_put_varint(&c->buf, v[i]);
    cap_put_varint(&c->buf, ids[1]);
    if ((err = perch__cap_end(w, PERCH_CHUNK_TRACE_INFO)) != 0)
        return err;
    return perch__cap_flush(w, PERCH_CHUNK_TRACE_INFO);
}

static int on_process(void *ctx, const perch_process_rec *r)
{
    perch__cap_ent e;
    int err = ready(ctx);
    perch__cap_ent_from_process(&e, r);
    return err ? err : perch__cap_put_entity(ctx, CAP_ENT_PROCESS, &e);
}

static int on_thread(void *ctx, const perch_thread_rec *r)
{
    perch__cap_ent e;
    int err = ready(ctx);
    perch__cap_ent_from_thread(&e, r);
    return err ? err : perch__cap_put_entity(ctx, CAP_ENT_THREAD, &e);
}

static int on_module(void *ctx, const perch_module_rec *r)
{
    perch__cap_ent e;
    int err = ready(ctx);
    perch__cap_ent_from_module(&e, r);
    return err ? err : perch__cap_put_entity(ctx, CAP_ENT_MODULE, &e);
}

static int on_counters(void *ctx, const perch_counters_rec *r)
{
    perch_capture_writer *w = ctx;
    uint64_t ids[PERCH_CAPTURE_MAX_COUNTERS];
    int err = ready(w);
    if (err)
        return err;
    if (r->count > PERCH_CAPTURE_MAX_COUNTERS || (r->count && !r->names))
        return PERCH_EINVAL;
    if ((err = perch__cap_intern(w, (const char *const *)r->names, r->count, ids)) != 0)
        return err;
    perch__cap_open_chunk *c =
        perch__cap_begin(w, PERCH_CHUNK_COUNTERS, CAP_VARINT_MAX * (1 + (size_t)r->count));
    if (!c)
        return w->error;
    cap_put_varint(&c->buf, r->count);
    for (uint32_t i = 0; i < r->count; i++)
        cap_put_varint(&c->buf, ids[i]);
    if ((err = perch__cap_end(w, PERCH_CHUNK_COUNTERS)) != 0)
        return err;
    return perch__cap_flush(w, PERCH_CHUNK_COUNTERS);
}

/* The recent stack sharing the longest run of outermost frames with frames[0..count) (the
 * first such when several tie). */
static unsigned best_suffix(const perch__cap_stack_ring *ring, const uint64_t *frames,
                            uint32_t count, uint32_t *shared)
{
    unsigned best = 0;
    uint32_t most = 0;
    for (unsigned j = 0; j < ring->count; j++) {
        unsigned at = (ring->next + CAP_STACK_RING - 1 - j) % CAP_STACK_RING;
        uint32_t len = ring->len[at], lim = len < count ? len : count, s = 0;
        const uint64_t *f = ring->frames[at] + len;
        while (s < lim && f[-1 - (ptrdiff_t)s] == frames[count - 1 - s])
            s++;
        if (s > most) {
            most = s;
            best = j + 1;
        }
    }
    if (most < 2) /* not worth a reference */
        return *shared = 0;
    *shared = most;
    return best;
}

static int on_stack(void *ctx, const perch_stack_rec *r)
{
    perch_capture_writer *w = ctx;
    uint32_t count = r->frame_count, kernel = r->kernel_frames, shared;
    int err = ready(w);
    if (err)
        return err;
    if (kernel > count || (count && !r->frames))
        return PERCH_EINVAL;
    if (r->id != w->stacks + 1 && !w->opts.stacks_elsewhere) /* one comparison per stack */
        return refuse(w, perch__cap_rule_stack(w->stacks, r->id, w->refusal));
    if (count > PERCH_CAPTURE_MAX_FRAMES) {
        w->stats.truncated++;
        count = PERCH_CAPTURE_MAX_FRAMES;
        kernel = kernel < count ? kernel : count;
    }
    perch__cap_open_chunk *c =
        perch__cap_begin_fast(w, PERCH_CHUNK_STACK, CAP_VARINT_MAX * (5 + (size_t)count));
    if (!c)
        return w->error;
    perch__cap_state *st = &c->state;
    const uint64_t *frames = r->frames;
    uint64_t prev = st->addr, id = r->id;
    unsigned ref = best_suffix(&w->ring, frames, count, &shared);
    uint8_t *p = c->buf.data + c->buf.len;
    p = cap_w_delta(p, id, st->id + 1);
    p = cap_w_varint(p, count);
    p = cap_w_varint(p, kernel);
    p = cap_w_varint(p, ref);
    if (ref)
        p = cap_w_varint(p, shared);
    for (uint32_t i = 0; i < count - shared; i++) {
        uint64_t f = frames[i];
        p = cap_w_delta(p, f, prev);
        prev = f;
    }
    c->buf.len = (size_t)(p - c->buf.data);
    st->id = id;
    w->stacks = id;
    if (count)
        st->addr = frames[0];
    perch__cap_ring_push(&w->ring, frames, count);
    return perch__cap_end(w, PERCH_CHUNK_STACK);
}

/* The MRU slot of (key, tid): found (mask bits = position + 1) or inserted (bits 0). The
 * chunk's hint table remembers the slot each thread last had; a hint is only a guess, checked
 * against the slot (a reused or emptied slot fails the check and the list is searched). */
static perch__cap_thread_slot *thread_slot(perch__cap_open_chunk *c, uint64_t key, uint32_t tid,
                                           uint8_t *mask)
{
    perch__cap_state *st = &c->state;
    perch__cap_mru *m = &st->mru;
    uint64_t h = (key ^ (uint64_t)tid << 40) * 0x9e3779b97f4a7c15u;
    uint8_t *hint = &c->thread_hint[(h >> 32) & (CAP_THREAD_HINTS - 1)];
    int j = *hint;
    if ((unsigned)j >= m->count || m->slot[j].key != key || m->slot[j].tid != tid)
        j = perch__cap_mru_find_slot(m, key, tid);
    perch__cap_thread_slot *t;
    if (j >= 0) {
        unsigned pos = perch__cap_mru_pos(m, (unsigned)j);
        *mask |= (uint8_t)(pos + 1);
        t = perch__cap_mru_promote(m, pos);
    } else {
        perch__cap_thread_slot init = {key, tid, st->cpu, st->addr, 0, 0};
        t = perch__cap_mru_insert(m, &init);
    }
    *hint = (uint8_t)(t - m->slot);
    return t;
}

/* The kind, flags, source and count of a sample: one mask bit when they repeat the chunk's
 * previous ones. */
static uint8_t *put_sample_attrs(uint8_t *p, perch__cap_state *st, const perch_sample_rec *r,
                                 uint8_t *mask)
{
    uint8_t kind = r->kind, flags = r->flags;
    uint16_t source = r->profile_source;
    uint32_t count = r->count;
    if (kind == st->attr_kind && flags == st->attr_flags && source == st->attr_source &&
        count == st->attr_count) {
        *mask |= S_ATTR_SAME;
        return p;
    }
    st->attr_kind = kind;
    st->attr_flags = flags;
    st->attr_source = source;
    st->attr_count = count;
    *p++ = kind;
    *p++ = flags;
    p = cap_w_varint(p, source);
    return cap_w_varint(p, count);
}

/* A sample record (docs/capture-format.md 4.8). Every value it needs is read into locals
 * before the first byte is written: byte stores may alias anything, so this keeps the
 * compiler from reloading the state after each one. */
static int on_sample(void *ctx, const perch_sample_rec *r)
{
    perch_capture_writer *w = ctx;
    int err = ready(w);
    if (err)
        return err;
    if (r->stack_id > w->stacks && !w->opts.stacks_elsewhere) /* one comparison per sample */
        return refuse(w, perch__cap_rule_sample(w->stacks, r->stack_id, w->refusal));
    perch__cap_open_chunk *c = perch__cap_begin_fast(w, PERCH_CHUNK_SAMPLE, 128);
    if (!c)
        return w->error;
    perch__cap_state *st = &c->state;
    uint8_t mask = 0;
    uint64_t ts = r->ts, key = r->thread_key, ip = r->ip, module = r->module_key;
    uint32_t tid = r->tid, stack = r->stack_id;
    uint16_t cpu = r->cpu;
    perch__cap_thread_slot *t = thread_slot(c, key, tid, &mask);
    uint64_t t_ip = t->ip, t_module = t->module_key, prev_ts = st->ts, prev_key = st->key;
    uint32_t t_stack = t->stack_id;
    uint16_t t_cpu = t->cpu;
    t->cpu = cpu;
    t->ip = ip;
    t->module_key = module;
    t->stack_id = stack;
    st->cpu = cpu;
    st->ts = ts;
    st->addr = ip;
    uint8_t *p0 = c->buf.data + c->buf.len, *p = p0 + 1;
    if (cpu == t_cpu)
        mask |= S_CPU_SAME;
    else
        p = cap_w_varint(p, cpu);
    p = cap_w_delta(p, ts, prev_ts);
    if (!(mask & M_THREAD)) {
        p = cap_w_delta(p, key, prev_key);
        p = cap_w_varint(p, tid);
        st->key = key;
    }
    p = put_sample_attrs(p, st, r, &mask);
    p = cap_w_delta(p, ip, t_ip);
    if (module == t_module)
        mask |= S_MODULE_SAME;
    else
        p = cap_w_delta(p, module, t_module);
    if (stack == t_stack)
        mask |= S_STACK_SAME;
    else
        p = cap_w_delta(p, stack, t_stack);
    *p0 = mask;
    c->buf.len = (size_t)(p - c->buf.data);
    return perch__cap_end(w, PERCH_CHUNK_SAMPLE);
}

/* The flags, priority and wait fields of a slice: one mask bit when they repeat. */
static uint8_t *put_slice_attrs(uint8_t *p, perch__cap_state *st, const perch_slice_rec *r,
                                uint8_t *mask)
{
    uint16_t flags = r->flags;
    int8_t prio = r->priority, reason = r->wait_reason, mode = r->wait_mode, state = r->state;
    if (flags == st->s_flags && prio == st->s_prio && reason == st->s_wait_reason &&
        mode == st->s_wait_mode && state == st->s_state) {
        *mask |= L_ATTR_SAME;
        return p;
    }
    st->s_flags = flags;
    st->s_prio = prio;
    st->s_wait_reason = reason;
    st->s_wait_mode = mode;
    st->s_state = state;
    p = cap_w_varint(p, flags);
    *p++ = (uint8_t)prio;
    *p++ = (uint8_t)reason;
    *p++ = (uint8_t)mode;
    *p++ = (uint8_t)state;
    return p;
}

/* A slice record (4.7); like on_sample, state read before bytes are written. */
static int on_slice(void *ctx, const perch_slice_rec *r)
{
    perch_capture_writer *w = ctx;
    int err = ready(w);
    if (err)
        return err;
    if (r->pmc_count > PERCH_MAX_PMC)
        return PERCH_EINVAL;
    perch__cap_open_chunk *c = perch__cap_begin_fast(w, PERCH_CHUNK_SLICE, 192);
    if (!c)
        return w->error;
    perch__cap_state *st = &c->state;
    uint64_t start = r->start_ts, end = r->end_ts, ready_ts = r->ready_ts, key = r->thread_key;
    uint64_t prev_ts = st->ts, prev_key = st->key;
    uint32_t tid = r->tid;
    uint16_t cpu = r->cpu, prev_cpu = st->cpu;
    uint8_t mask = ready_ts ? 0 : L_READY_ZERO;
    thread_slot(c, key, tid, &mask);
    st->cpu = cpu;
    st->ts = start;
    uint8_t *p0 = c->buf.data + c->buf.len, *p = p0 + 1;
    if (cpu == prev_cpu)
        mask |= L_CPU_SAME;
    else
        p = cap_w_varint(p, cpu);
    p = cap_w_delta(p, start, prev_ts);
    p = cap_w_delta(p, end, start);
    if (ready_ts)
        p = cap_w_delta(p, start, ready_ts);
    if (!(mask & M_THREAD)) {
        p = cap_w_delta(p, key, prev_key);
        p = cap_w_varint(p, tid);
        st->key = key;
    }
    p = put_slice_attrs(p, st, r, &mask);
    if (r->pmc_count) {
        unsigned n = r->pmc_count;
        mask |= L_PMC;
        *p++ = (uint8_t)n;
        for (unsigned i = 0; i < n; i++)
            p = cap_w_varint(p, r->pmc_delta[i]);
    }
    *p0 = mask;
    c->buf.len = (size_t)(p - c->buf.data);
    return perch__cap_end(w, PERCH_CHUNK_SLICE);
}

static int on_lbr(void *ctx, const perch_lbr_rec *r)
{
    perch_capture_writer *w = ctx;
    uint32_t n = r->branch_count;
    int err = ready(w);
    if (err)
        return err;
    if (n && (!r->from || !r->to))
        return PERCH_EINVAL;
    if (n > PERCH_CAPTURE_MAX_BRANCHES) {
        w->stats.truncated++;
        n = PERCH_CAPTURE_MAX_BRANCHES;
    }
    perch__cap_open_chunk *c =
        perch__cap_begin_fast(w, PERCH_CHUNK_LBR, CAP_VARINT_MAX * (6 + 2 * (size_t)n));
    if (!c)
        return w->error;
    perch__cap_state *st = &c->state;
    const uint64_t *from = r->from, *to = r->to;
    uint64_t prev = st->addr, key = r->thread_key, ts = r->ts;
    uint8_t *p = c->buf.data + c->buf.len;
    p = cap_w_delta(p, key, st->key);
    p = cap_w_varint(p, r->tid);
    p = cap_w_varint(p, r->pid);
    p = cap_w_delta(p, ts, st->ts);
    p = cap_w_varint(p, r->filters);
    p = cap_w_varint(p, n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t f = from[i], t = to[i];
        p = cap_w_delta(p, f, prev);
        p = cap_w_delta(p, t, f);
        prev = t;
    }
    c->buf.len = (size_t)(p - c->buf.data);
    st->key = key;
    st->ts = ts;
    if (n)
        st->addr = from[0];
    return perch__cap_end(w, PERCH_CHUNK_LBR);
}

/* A ledger or stat record. Its name is checked as the reader will see it: NULL as "", cut like
 * every string (cut_utf8); then noted, so that it is refused if given again. */
static int put_named(perch_capture_writer *w, unsigned type, const char *name, uint64_t value)
{
    unsigned which = type == PERCH_CHUNK_STAT;
    const char *s = name ? name : "";
    size_t len = cut_len(s, strlen(s));
    uint64_t id;
    uint32_t seen_id;
    int err = ready(w);
    if (err)
        return err;
    perch__cap_rule rule = w->unchecked
                               ? CAP_RULE_OK
                               : perch__cap_rule_name(&w->named[which], which, s, len, w->refusal);
    if (rule != CAP_RULE_OK)
        return refuse(w, rule);
    if ((err = perch__cap_intern(w, &name, 1, &id)) != 0)
        return err;
    /* Noted before a byte is written: its failure (out of memory) leaves the record out whole,
     * and is not sticky; a failure after it is (the writer's error), so no name is noted that
     * a later record could still write. */
    if (!w->unchecked && (err = perch__strtab_add(&w->named[which], s, len, true, &seen_id)) != 0)
        return err;
    perch__cap_open_chunk *c = perch__cap_begin(w, type, 2 * CAP_VARINT_MAX);
    if (!c)
        return w->error;
    cap_put_varint(&c->buf, id);
    cap_put_varint(&c->buf, value);
    return perch__cap_end(w, type);
}

int perch__cap_enc_ledger(perch_capture_writer *w, const char *reason, uint64_t count)
{
    return put_named(w, PERCH_CHUNK_LEDGER, reason, count);
}

static int on_ledger(void *ctx, const perch_ledger_rec *r)
{
    return put_named(ctx, PERCH_CHUNK_LEDGER, r->reason, r->count);
}

static int on_stat(void *ctx, const perch_stat_rec *r)
{
    return put_named(ctx, PERCH_CHUNK_STAT, r->name, r->value);
}

/* A symbol record: module key (delta from the previous one), span start (delta from the
 * previous span), span size, function start (delta from the span), function size, source,
 * name (string id). */
static int on_symbol(void *ctx, const perch_symbol_rec *r)
{
    perch_capture_writer *w = ctx;
    uint64_t id;
    const char *name = r->name ? r->name : "";
    int err = ready(w);
    if (err || (err = perch__cap_intern(w, &name, 1, &id)) != 0)
        return err;
    perch__cap_open_chunk *c = perch__cap_begin(w, PERCH_CHUNK_SYMBOL, 6 * CAP_VARINT_MAX + 1);
    if (!c)
        return w->error;
    perch__cap_buf *b = &c->buf;
    perch__cap_state *st = &c->state;
    cap_put_delta(b, r->module_key, st->key);
    cap_put_delta(b, r->span_rva, st->addr);
    cap_put_varint(b, r->span_size);
    cap_put_delta(b, r->func_rva, r->span_rva);
    cap_put_varint(b, r->func_size);
    cap_put_u8(b, r->source);
    cap_put_varint(b, id);
    st->key = r->module_key;
    st->addr = r->span_rva;
    return perch__cap_end(w, PERCH_CHUNK_SYMBOL);
}

int perch_capture_writer_finish(perch_capture_writer *w)
{
    uint64_t refused = w->stats.refused;
    int err = ready(w);
    if (err)
        return err;
    /* Refused when the producer gave that reason too: the file stays readable, stats keep it. */
    if (w->stats.truncated &&
        (err = perch__cap_enc_ledger(w, "capture.truncated", w->stats.truncated)) != 0 &&
        w->stats.refused == refused)
        return err;
    if ((err = perch__cap_flush_all(w)) != 0 || (err = perch__cap_write_end(w)) != 0)
        return err;
    w->finished = true;
    return 0;
}

static int on_finish(void *ctx)
{
    return perch_capture_writer_finish(ctx);
}

void perch_capture_writer_sink(perch_capture_writer *w, perch_sink *sink)
{
    static const perch_sink callbacks = {
        NULL,      on_trace_info, on_process, on_thread, on_module, on_counters, on_stack, on_slice,
        on_sample, on_lbr,        on_ledger,  on_stat,   on_finish, on_symbol,   false,    false,
    };
    *sink = callbacks;
    sink->ctx = w;
}
