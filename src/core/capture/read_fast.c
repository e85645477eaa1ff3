/*
 * The capture reader's fast record loops for the four record types that make up nearly all of
 * a capture (samples, slices, stacks, LBR records). A record whose largest possible encoding
 * (every varint CAP_VARINT_MAX bytes) fits in what is left of the chunk is read through a
 * local pointer with one bounds check for the whole record (stacks and LBR records: one more
 * for their frames or branches); its values land in locals, and the coding state
 * (docs/capture-format.md 4.5-4.9, the same rules as decode.c) changes only once the whole
 * record has been read and found valid. The sample and slice loops also keep the chunk's
 * scalar state (previous timestamp, key, address, cpu, attributes, the thread list's order
 * word) in locals for the whole chunk, writing it back only where the checked decoder needs it.
 * Anything else -- a record near the chunk's end, a value out of range, a thread index past the
 * list, an over-long varint, a buffer that must grow -- goes to the checked decoder of decode.c
 * for that record, from its first byte and with the state untouched, so every record, every
 * error and every error offset is exactly the checked decoder's. The fuzz target and
 * test_capture_fast replay inputs both ways (perch__cap_replay_checked) and compare.
 */
#include <string.h>

#include "capture/reader.h"
#include "perch/error.h"

/* A varint at *pp with no bounds check (codec.h's cap_varint_unchecked): CAP_VARINT_MAX bytes
 * must be readable there; a value over 64 bits sets *bad (the record is then redone by the
 * checked decoder, which reports it). */
static inline uint64_t fv(const uint8_t **pp, unsigned *bad)
{
    return cap_varint_unchecked(pp, bad);
}

/* A varint that must not exceed max (the checked side's cap_get_bounded). */
static inline uint64_t fv_max(const uint8_t **pp, uint64_t max, unsigned *bad)
{
    uint64_t v = fv(pp, bad);
    *bad |= v > max;
    return v;
}

static inline uint64_t fv_delta(const uint8_t **pp, uint64_t base, unsigned *bad)
{
    return base + (uint64_t)cap_unzigzag(fv(pp, bad));
}

/* The largest encodings: mask, cpu, ts, key, tid, kind, flags, source, count, ip, module, stack. */
#define SAMPLE_MAX (1 + 4 * CAP_VARINT_MAX + 2 + 5 * CAP_VARINT_MAX)
/* mask, cpu, start, end, ready, key, tid, flags, 4 bytes, pmc count, PERCH_MAX_PMC deltas. */
#define SLICE_MAX (1 + 7 * CAP_VARINT_MAX + 4 + CAP_VARINT_MAX + PERCH_MAX_PMC * CAP_VARINT_MAX)
/* id, frame count, kernel frames, ring ref, shared frames (then the frames). */
#define STACK_HEAD_MAX (5 * CAP_VARINT_MAX)
/* key, tid, pid, ts, filters, branch count (then two varints per branch). */
#define LBR_HEAD_MAX (6 * CAP_VARINT_MAX)

static size_t left(const perch__cap_cursor *c, const uint8_t *p)
{
    return c->len - (size_t)(p - c->p);
}

/* The scalar part of perch__cap_state that samples and slices use, held in locals through a
 * chunk's loop (the thread slots stay in the state). */
typedef struct hot {
    uint64_t ts, key, addr;
    uint64_t order; /* the thread list's order word and count */
    unsigned count;
    uint16_t cpu;
    uint8_t attr_kind, attr_flags;
    uint16_t attr_source;
    uint32_t attr_count;
    uint16_t s_flags;
    int8_t s_prio, s_wait_reason, s_wait_mode, s_state;
} hot;

static inline void hot_load(hot *h, const perch__cap_state *st)
{
    h->ts = st->ts;
    h->key = st->key;
    h->addr = st->addr;
    h->order = st->mru.order;
    h->count = st->mru.count;
    h->cpu = st->cpu;
    h->attr_kind = st->attr_kind;
    h->attr_flags = st->attr_flags;
    h->attr_source = st->attr_source;
    h->attr_count = st->attr_count;
    h->s_flags = st->s_flags;
    h->s_prio = st->s_prio;
    h->s_wait_reason = st->s_wait_reason;
    h->s_wait_mode = st->s_wait_mode;
    h->s_state = st->s_state;
}

static inline void hot_store(const hot *h, perch__cap_state *st)
{
    st->ts = h->ts;
    st->key = h->key;
    st->addr = h->addr;
    st->mru.order = h->order;
    st->mru.count = h->count;
    st->cpu = h->cpu;
    st->attr_kind = h->attr_kind;
    st->attr_flags = h->attr_flags;
    st->attr_source = h->attr_source;
    st->attr_count = h->attr_count;
    st->s_flags = h->s_flags;
    st->s_prio = h->s_prio;
    st->s_wait_reason = h->s_wait_reason;
    st->s_wait_mode = h->s_wait_mode;
    st->s_state = h->s_state;
}

/* The thread of a sample or slice before it is moved to the front: the slot at its position
 * in the list, or (a new thread, mask index 0) *fresh filled from the explicit key and tid.
 * NULL when the index is past the list. */
static inline perch__cap_thread_slot *peek_thread(const uint8_t **pp, const hot *h,
                                                  perch__cap_thread_slot *slots, unsigned idx,
                                                  perch__cap_thread_slot *fresh, unsigned *bad)
{
    if (idx)
        return idx <= h->count ? &slots[(h->order >> (4 * (idx - 1))) & 0xf] : NULL;
    fresh->key = fv_delta(pp, h->key, bad);
    fresh->tid = (uint32_t)fv_max(pp, UINT32_MAX, bad);
    fresh->cpu = h->cpu;
    fresh->ip = h->addr;
    fresh->module_key = 0;
    fresh->stack_id = 0;
    return fresh;
}

/* Makes the record's thread the front of the list, once the record is valid (decode.c's
 * get_thread: perch__cap_mru_promote or perch__cap_mru_insert). */
static inline perch__cap_thread_slot *take_thread(hot *h, perch__cap_thread_slot *slots,
                                                  unsigned idx, perch__cap_thread_slot *t)
{
    if (idx) {
        h->order = perch__cap_order_promote(h->order, idx - 1);
        return t;
    }
    unsigned s = perch__cap_order_victim(h->order, h->count);
    if (h->count < CAP_MRU)
        h->count++;
    h->order = perch__cap_order_push(h->order, s);
    h->key = t->key;
    slots[s] = *t;
    return &slots[s];
}

/* One sample record at p (SAMPLE_MAX bytes readable) into *s and the state; the end of the
 * record, or NULL (nothing changed) when the checked decoder must take it (also for a stack id
 * past `stacks`, perch__cap_stack_limit). */
static inline const uint8_t *fast_sample(const uint8_t *p, hot *h, perch__cap_thread_slot *slots,
                                         perch_sample_rec *s, uint64_t stacks)
{
    unsigned bad = 0, mask = *p++, idx = mask & M_THREAD;
    perch__cap_thread_slot fresh, *t;
    uint64_t cpu = 0;
    if (!(mask & S_CPU_SAME))
        cpu = fv_max(&p, UINT16_MAX, &bad);
    uint64_t ts = fv_delta(&p, h->ts, &bad);
    if (!(t = peek_thread(&p, h, slots, idx, &fresh, &bad)))
        return NULL;
    if (mask & S_CPU_SAME)
        cpu = t->cpu; /* a new thread's slot starts with the previous cpu */
    unsigned kind = h->attr_kind, flags = h->attr_flags;
    uint64_t source = h->attr_source, scount = h->attr_count;
    if (!(mask & S_ATTR_SAME)) {
        kind = p[0];
        flags = p[1];
        p += 2;
        source = fv_max(&p, UINT16_MAX, &bad);
        scount = fv_max(&p, UINT32_MAX, &bad);
    }
    uint64_t ip = fv_delta(&p, t->ip, &bad);
    uint64_t module = mask & S_MODULE_SAME ? t->module_key : fv_delta(&p, t->module_key, &bad);
    uint64_t stack = mask & S_STACK_SAME ? t->stack_id : fv_delta(&p, t->stack_id, &bad);
    if (bad | (stack > stacks))
        return NULL;
    t = take_thread(h, slots, idx, t);
    s->thread_key = t->key;
    s->tid = t->tid;
    s->cpu = (uint16_t)cpu;
    s->kind = h->attr_kind = (uint8_t)kind;
    s->flags = h->attr_flags = (uint8_t)flags;
    s->profile_source = h->attr_source = (uint16_t)source;
    s->count = h->attr_count = (uint32_t)scount;
    s->ts = h->ts = ts;
    s->ip = t->ip = h->addr = ip;
    s->module_key = t->module_key = module;
    s->stack_id = t->stack_id = (uint32_t)stack;
    t->cpu = h->cpu = (uint16_t)cpu;
    return p;
}

/* One slice record at p (SLICE_MAX bytes readable), as fast_sample. */
static inline const uint8_t *fast_slice(const uint8_t *p, hot *h, perch__cap_thread_slot *slots,
                                        perch_slice_rec *s)
{
    unsigned bad = 0, mask = *p++, idx = mask & M_THREAD;
    perch__cap_thread_slot fresh, *t;
    uint64_t cpu = mask & L_CPU_SAME ? h->cpu : fv_max(&p, UINT16_MAX, &bad);
    uint64_t start = fv_delta(&p, h->ts, &bad);
    uint64_t end = fv_delta(&p, start, &bad);
    uint64_t ready = mask & L_READY_ZERO ? 0 : start - (uint64_t)cap_unzigzag(fv(&p, &bad));
    if (!(t = peek_thread(&p, h, slots, idx, &fresh, &bad)))
        return NULL;
    uint64_t flags = h->s_flags;
    const uint8_t *attrs = NULL;
    if (!(mask & L_ATTR_SAME)) {
        flags = fv_max(&p, UINT16_MAX, &bad);
        attrs = p;
        p += 4;
    }
    uint64_t pmc = 0;
    if (mask & L_PMC) {
        pmc = fv_max(&p, PERCH_MAX_PMC, &bad);
        bad |= pmc == 0;
    }
    if (bad)
        return NULL;
    memset(s->pmc_delta, 0, sizeof s->pmc_delta);
    for (unsigned i = 0; i < pmc; i++)
        s->pmc_delta[i] = fv(&p, &bad);
    if (bad)
        return NULL;
    t = take_thread(h, slots, idx, t);
    if (attrs) {
        h->s_flags = (uint16_t)flags;
        h->s_prio = (int8_t)attrs[0];
        h->s_wait_reason = (int8_t)attrs[1];
        h->s_wait_mode = (int8_t)attrs[2];
        h->s_state = (int8_t)attrs[3];
    }
    s->thread_key = t->key;
    s->tid = t->tid;
    s->cpu = (uint16_t)cpu;
    s->start_ts = start;
    s->end_ts = end;
    s->ready_ts = ready;
    s->flags = h->s_flags;
    s->priority = h->s_prio;
    s->wait_reason = h->s_wait_reason;
    s->wait_mode = h->s_wait_mode;
    s->state = h->s_state;
    s->pmc_count = (uint8_t)pmc;
    h->cpu = (uint16_t)cpu;
    h->ts = start;
    return p;
}

/* One stack record at p into *s and r->frames, as fast_sample (STACK_HEAD_MAX bytes readable;
 * the frames are checked against what is left). */
static inline const uint8_t *fast_stack(perch__cap_reader *r, const perch__cap_cursor *c,
                                        const uint8_t *p, perch_stack_rec *s)
{
    perch__cap_state *st = &r->state;
    unsigned bad = 0;
    uint32_t shared = 0, ref_len = 0;
    const uint64_t *ref_frames = NULL;
    uint64_t id = fv_delta(&p, st->id + 1, &bad);
    uint64_t n = fv_max(&p, PERCH_CAPTURE_MAX_FRAMES, &bad);
    uint64_t kernel = fv_max(&p, n, &bad);
    uint64_t ref = fv_max(&p, r->ring.count, &bad);
    if (ref && !bad) {
        ref_frames = perch__cap_ring_get(&r->ring, (unsigned)ref - 1, &ref_len);
        shared = (uint32_t)fv_max(&p, ref_len < n ? ref_len : n, &bad);
    }
    uint32_t lead = (uint32_t)n - shared;
    if (bad || id > UINT32_MAX || (id != r->stacks + 1 && !r->stacks_elsewhere) ||
        n > r->frame_cap || !r->frames || left(c, p) < (size_t)lead * CAP_VARINT_MAX)
        return NULL;
    uint64_t *f = r->frames, prev = st->addr;
    for (uint32_t i = 0; i < lead; i++)
        f[i] = prev = fv_delta(&p, prev, &bad);
    if (bad)
        return NULL;
    if (shared)
        memcpy(f + lead, ref_frames + ref_len - shared, shared * sizeof *f);
    if (n)
        st->addr = f[0];
    st->id = r->stacks = id;
    perch__cap_ring_push(&r->ring, f, (uint32_t)n);
    s->id = (uint32_t)id;
    s->frame_count = (uint32_t)n;
    s->kernel_frames = (uint32_t)kernel;
    s->frames = f;
    return p;
}

/* One LBR record at p into *l, r->from and r->to, as fast_stack. */
static inline const uint8_t *fast_lbr(perch__cap_reader *r, const perch__cap_cursor *c,
                                      const uint8_t *p, perch_lbr_rec *l)
{
    perch__cap_state *st = &r->state;
    unsigned bad = 0;
    uint64_t key = fv_delta(&p, st->key, &bad);
    uint64_t tid = fv_max(&p, UINT32_MAX, &bad);
    uint64_t pid = fv_max(&p, UINT32_MAX, &bad);
    uint64_t ts = fv_delta(&p, st->ts, &bad);
    uint64_t filters = fv_max(&p, UINT32_MAX, &bad);
    uint64_t n = fv_max(&p, PERCH_CAPTURE_MAX_BRANCHES, &bad);
    if (bad || n > r->branch_cap || !r->from || !r->to ||
        left(c, p) < (size_t)n * 2 * CAP_VARINT_MAX)
        return NULL;
    uint64_t prev = st->addr;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t from = fv_delta(&p, prev, &bad);
        r->from[i] = from;
        r->to[i] = prev = fv_delta(&p, from, &bad);
    }
    if (bad)
        return NULL;
    if (n)
        st->addr = r->from[0];
    l->thread_key = st->key = key;
    l->tid = (uint32_t)tid;
    l->pid = (uint32_t)pid;
    l->ts = st->ts = ts;
    l->filters = (uint32_t)filters;
    l->branch_count = (uint32_t)n;
    l->from = r->from;
    l->to = r->to;
    return p;
}

/* The loop of the sample and slice chunks: FAST(p) decodes the record at p into rec (with the
 * state in h) and returns its end or NULL; ROOM the bytes it needs readable; CB the sink
 * callback; CHECKED the checked decoder that takes the records FAST declines (with the state
 * written back for it and read again after it). */
#define HOT_LOOP(r, c, count, ROOM, FAST, rec, CB, CHECKED)                                        \
    do {                                                                                           \
        perch__cap_state *st_ = &(r)->state;                                                       \
        perch__cap_thread_slot *slots = st_->mru.slot;                                             \
        void *ctx_ = (r)->sink->ctx;                                                               \
        const uint8_t *p_ = (c)->p + (c)->pos, *end_ = (c)->p + (c)->len;                          \
        uint64_t i_ = 0;                                                                           \
        int err_ = 0;                                                                              \
        hot h;                                                                                     \
        hot_load(&h, st_);                                                                         \
        for (; i_ < (count); i_++) {                                                               \
            const uint8_t *q_ = (size_t)(end_ - p_) >= (ROOM) ? FAST(p_, &h, slots) : NULL;        \
            if (q_) {                                                                              \
                p_ = q_;                                                                           \
                if ((CB) != NULL && (err_ = (CB)(ctx_, &(rec))) != 0) {                            \
                    (r)->sink_error = err_;                                                        \
                    break;                                                                         \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            hot_store(&h, st_);                                                                    \
            (c)->pos = (size_t)(p_ - (c)->p);                                                      \
            if ((err_ = CHECKED((r), (c), st_)) != 0) {                                            \
                (r)->records += i_;                                                                \
                return err_;                                                                       \
            }                                                                                      \
            hot_load(&h, st_);                                                                     \
            p_ = (c)->p + (c)->pos;                                                                \
        }                                                                                          \
        hot_store(&h, st_);                                                                        \
        (c)->pos = (size_t)(p_ - (c)->p);                                                          \
        (r)->records += i_;                                                                        \
        return err_;                                                                               \
    } while (0)

/* The loop of the stack and LBR chunks: as HOT_LOOP with the state left in r->state. */
#define FAST_LOOP(r, c, count, ROOM, FAST, rec, CB, CHECKED)                                       \
    do {                                                                                           \
        void *ctx_ = (r)->sink->ctx;                                                               \
        for (uint64_t i_ = 0; i_ < (count); i_++) {                                                \
            const uint8_t *q_ = NULL;                                                              \
            if ((c)->len - (c)->pos >= (ROOM))                                                     \
                q_ = FAST((c)->p + (c)->pos);                                                      \
            if (!q_) {                                                                             \
                int err_ = CHECKED((r), (c), &(r)->state);                                         \
                if (err_)                                                                          \
                    return err_;                                                                   \
                (r)->records++;                                                                    \
                continue;                                                                          \
            }                                                                                      \
            (c)->pos = (size_t)(q_ - (c)->p);                                                      \
            if ((CB) != NULL) {                                                                    \
                int err_ = (CB)(ctx_, &(rec));                                                     \
                if (err_)                                                                          \
                    return (r)->sink_error = err_;                                                 \
            }                                                                                      \
            (r)->records++;                                                                        \
        }                                                                                          \
        return 0;                                                                                  \
    } while (0)

int perch__cap_fast_samples(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count)
{
    int (*cb)(void *, const perch_sample_rec *) = r->sink->sample;
    const uint64_t stacks = perch__cap_stack_limit(r); /* no stack record in a sample chunk */
    perch_sample_rec s;
#define FAST(p, h, slots) fast_sample(p, h, slots, &s, stacks)
    HOT_LOOP(r, c, count, SAMPLE_MAX, FAST, s, cb, perch__cap_dec_sample);
#undef FAST
}

int perch__cap_fast_slices(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count)
{
    int (*cb)(void *, const perch_slice_rec *) = r->sink->slice;
    perch_slice_rec s;
#define FAST(p, h, slots) fast_slice(p, h, slots, &s)
    HOT_LOOP(r, c, count, SLICE_MAX, FAST, s, cb, perch__cap_dec_slice);
#undef FAST
}

int perch__cap_fast_stacks(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count)
{
    int (*cb)(void *, const perch_stack_rec *) = r->sink->stack;
    perch_stack_rec s;
#define FAST(p) fast_stack(r, c, p, &s)
    FAST_LOOP(r, c, count, STACK_HEAD_MAX, FAST, s, cb, perch__cap_dec_stack);
#undef FAST
}

int perch__cap_fast_lbrs(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count)
{
    int (*cb)(void *, const perch_lbr_rec *) = r->sink->lbr;
    perch_lbr_rec l;
#define FAST(p) fast_lbr(r, c, p, &l)
    FAST_LOOP(r, c, count, LBR_HEAD_MAX, FAST, l, cb, perch__cap_dec_lbr);
#undef FAST
}
