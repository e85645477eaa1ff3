/*
 * The sink relay (include/perch/pipeline.h, perch_sink_relay): a sink whose work runs on a
 * thread of its own, so that in `perch import` the capture encoder, its CRCs and the writes
 * run beside the model instead of after each of its records.
 *
 * The many records (samples, slices, stacks, LBR) are copied, arrays included, into a batch;
 * a full batch is handed to the thread, which plays it into the inner sink while the next one
 * fills (two batches in all, so memory is bounded by two batches and one record). Every other
 * record (entities, counters, ledger, statistics, symbols, trace info, finish) is rare: the
 * relay first waits until the thread has played every batch, then calls the inner sink on the
 * calling thread. The inner sink therefore sees exactly the records, in exactly the order, it
 * would have seen without the relay, never two calls at once, and each hand-over goes through
 * the mutex, which orders the two threads' accesses to it.
 *
 * The first error of the inner sink is kept: the thread plays nothing after it, and every
 * later call of the relay's sink returns it (so the model stops at its next record).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/thread.h"
#include "util/mem.h"

#define DEFAULT_BATCH (256u << 10)

enum { REC_SAMPLE, REC_SLICE, REC_STACK, REC_LBR };

struct batch {
    uint8_t *data; /* records, each an 8-byte header then its bytes, padded to 8 */
    size_t len, cap;
};

struct perch_sink_relay {
    perch_sink inner;
    size_t batch_bytes;
    perch_thread *thread;
    perch_mutex *mu;
    perch_cond *cv;
    struct batch fill;   /* the calling thread's */
    struct batch played; /* the relay thread's while handed */
    bool handed, stop;   /* under mu */
    _Atomic int error;
};

static int keep_error(perch_sink_relay *r, int err)
{
    int none = 0;
    if (err < 0)
        atomic_compare_exchange_strong(&r->error, &none, err);
    return atomic_load(&r->error);
}

/* Plays one record (at its header) into the inner sink; returns its result. */
static int play_one(perch_sink_relay *r, const uint8_t *p)
{
    uint32_t type;
    memcpy(&type, p, sizeof type);
    p += 8;
    if (type == REC_SAMPLE)
        return r->inner.sample ? r->inner.sample(r->inner.ctx, (const perch_sample_rec *)p) : 0;
    if (type == REC_SLICE)
        return r->inner.slice ? r->inner.slice(r->inner.ctx, (const perch_slice_rec *)p) : 0;
    if (type == REC_STACK) {
        perch_stack_rec s;
        memcpy(&s, p, sizeof s);
        s.frames = (const uint64_t *)(p + ((sizeof s + 7) & ~(size_t)7));
        return r->inner.stack ? r->inner.stack(r->inner.ctx, &s) : 0;
    }
    perch_lbr_rec l;
    memcpy(&l, p, sizeof l);
    l.from = (const uint64_t *)(p + ((sizeof l + 7) & ~(size_t)7));
    l.to = l.from + l.branch_count;
    return r->inner.lbr ? r->inner.lbr(r->inner.ctx, &l) : 0;
}

static void play(perch_sink_relay *r, const struct batch *b)
{
    for (size_t off = 0; off < b->len && atomic_load(&r->error) == 0;) {
        uint32_t len;
        memcpy(&len, b->data + off + 4, sizeof len);
        keep_error(r, play_one(r, b->data + off));
        off += len;
    }
}

static int relay_main(void *arg)
{
    perch_sink_relay *r = arg;
    perch_mutex_lock(r->mu);
    for (;;) {
        while (!r->handed && !r->stop)
            perch_cond_wait(r->cv, r->mu, UINT32_MAX);
        if (!r->handed)
            break;
        perch_mutex_unlock(r->mu);
        play(r, &r->played);
        perch_mutex_lock(r->mu);
        r->played.len = 0;
        r->handed = false;
        perch_cond_signal(r->cv);
    }
    perch_mutex_unlock(r->mu);
    return 0;
}

/* Waits until the thread has played the batch handed to it, if any; then, when hand is set
 * and the fill batch holds records, hands that one over. */
static void hand_over(perch_sink_relay *r, bool hand)
{
    perch_mutex_lock(r->mu);
    while (r->handed)
        perch_cond_wait(r->cv, r->mu, UINT32_MAX);
    if (hand && r->fill.len > 0) {
        struct batch t = r->played;
        r->played = r->fill;
        r->fill = t;
        r->handed = true;
        perch_cond_signal(r->cv);
    }
    perch_mutex_unlock(r->mu);
}

/* Every record given so far played: the inner sink may be called on this thread. */
static int drain(perch_sink_relay *r)
{
    hand_over(r, true);
    hand_over(r, false);
    return atomic_load(&r->error);
}

/* Room for a record of len bytes (header and padding included) in the fill batch. */
static uint8_t *reserve(perch_sink_relay *r, uint32_t type, size_t len)
{
    struct batch *b = &r->fill;
    if (b->len > 0 && b->len + len > r->batch_bytes)
        hand_over(r, true);
    if (b->len + len > b->cap) {
        size_t cap = b->len + len > r->batch_bytes ? b->len + len : r->batch_bytes;
        uint8_t *p = perch__realloc(b->data, cap);
        if (p == NULL)
            return NULL;
        b->data = p;
        b->cap = cap;
    }
    uint8_t *p = b->data + b->len;
    uint32_t len32 = (uint32_t)len;
    memcpy(p, &type, 4);
    memcpy(p + 4, &len32, 4);
    b->len += len;
    return p + 8;
}

static size_t padded(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Copies a record of rec_len bytes and two arrays of u64 (a, then b; either may be empty). */
static int put(perch_sink_relay *r, uint32_t type, const void *rec, size_t rec_len,
               const uint64_t *a, const uint64_t *b, size_t count)
{
    int err = atomic_load(&r->error);
    if (err < 0)
        return err;
    size_t arrays = (a ? count : 0) + (b ? count : 0);
    if (count > (UINT32_MAX - 64) / 16)
        return PERCH_ELIMIT;
    uint8_t *p = reserve(r, type, 8 + padded(rec_len) + arrays * sizeof(uint64_t));
    if (p == NULL)
        return PERCH_ENOMEM;
    memcpy(p, rec, rec_len);
    p += padded(rec_len);
    if (a && count)
        memcpy(p, a, count * sizeof *a);
    if (b && count)
        memcpy(p + count * sizeof *a, b, count * sizeof *b);
    return 0;
}

static int relay_sample(void *ctx, const perch_sample_rec *rec)
{
    return put(ctx, REC_SAMPLE, rec, sizeof *rec, NULL, NULL, 0);
}

static int relay_slice(void *ctx, const perch_slice_rec *rec)
{
    return put(ctx, REC_SLICE, rec, sizeof *rec, NULL, NULL, 0);
}

static int relay_stack(void *ctx, const perch_stack_rec *rec)
{
    return put(ctx, REC_STACK, rec, sizeof *rec, rec->frames, NULL, rec->frame_count);
}

static int relay_lbr(void *ctx, const perch_lbr_rec *rec)
{
    return put(ctx, REC_LBR, rec, sizeof *rec, rec->from, rec->to, rec->branch_count);
}

/* The rare records: played on the calling thread once every batch has been. */
#define RELAY_INLINE(name, type)                                                                   \
    static int relay_##name(void *ctx, const type *rec)                                            \
    {                                                                                              \
        perch_sink_relay *r = ctx;                                                                 \
        int err = drain(r);                                                                        \
        if (err == 0 && r->inner.name)                                                             \
            err = keep_error(r, r->inner.name(r->inner.ctx, rec));                                 \
        return err;                                                                                \
    }
RELAY_INLINE(trace_info, perch_trace_info)
RELAY_INLINE(process, perch_process_rec)
RELAY_INLINE(thread, perch_thread_rec)
RELAY_INLINE(module, perch_module_rec)
RELAY_INLINE(counters, perch_counters_rec)
RELAY_INLINE(ledger, perch_ledger_rec)
RELAY_INLINE(stat, perch_stat_rec)
RELAY_INLINE(symbol, perch_symbol_rec)

static int relay_finish(void *ctx)
{
    perch_sink_relay *r = ctx;
    int err = drain(r);
    if (err == 0 && r->inner.finish)
        err = keep_error(r, r->inner.finish(r->inner.ctx));
    return err;
}

void perch_sink_relay_sink(perch_sink_relay *r, perch_sink *out)
{
    perch_sink s = {
        .ctx = r,
        .trace_info = relay_trace_info,
        .process = relay_process,
        .thread = relay_thread,
        .module = relay_module,
        .counters = relay_counters,
        .stack = relay_stack,
        .slice = relay_slice,
        .sample = relay_sample,
        .lbr = relay_lbr,
        .ledger = relay_ledger,
        .stat = relay_stat,
        .finish = relay_finish,
        .symbol = relay_symbol,
    };
    *out = s;
}

int perch_sink_relay_start(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out)
{
    perch_sink_relay *r = perch__calloc(1, sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    r->inner = *inner;
    r->batch_bytes = batch_bytes ? batch_bytes : DEFAULT_BATCH;
    atomic_init(&r->error, 0);
    int err = perch_mutex_create(&r->mu);
    err = err ? err : perch_cond_create(&r->cv);
    err = err ? err : perch_thread_start(relay_main, r, "perch-sink", &r->thread);
    if (err < 0) {
        perch_sink_relay_stop(r);
        return err;
    }
    *out = r;
    return 0;
}

int perch_sink_relay_stop(perch_sink_relay *r)
{
    if (r == NULL)
        return 0;
    if (r->thread) {
        perch_mutex_lock(r->mu);
        r->stop = true;
        perch_cond_signal(r->cv);
        perch_mutex_unlock(r->mu);
        perch_thread_join(r->thread, NULL);
    }
    int err = atomic_load(&r->error);
    perch_cond_destroy(r->cv);
    perch_mutex_destroy(r->mu);
    perch__free(r->fill.data);
    perch__free(r->played.data);
    perch__free(r);
    return err;
}
