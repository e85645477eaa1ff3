/*
 * The sink relay (include/perch/pipeline.h, perch_sink_relay): a sink whose work runs on a
 * thread of its own, so that in `perch import` the capture encoder, its CRCs and the writes
 * run beside the model instead of after each of its records.
 *
 * Every record but the first (trace info), the counter names and finish is copied, with its
 * arrays and strings, into a batch; a full batch is handed to the thread, which plays it into
 * the inner sink while the next ones fill (a ring of BATCHES batches, so memory is bounded by
 * that many batches and one record). The model thread therefore never waits for the writer except
 * when every batch of the ring is full: an entity or ledger record costs a copy, not a round trip
 * to the other thread. The three records left (trace info, counters, finish: once or twice a run)
 * first wait until the thread has played every batch, then call the inner sink on the calling
 * thread. The inner sink therefore sees exactly the records, in exactly the order, it would
 * have seen without the relay, never two calls at once, and each hand-over goes through the
 * mutex, which orders the two threads' accesses to it.
 *
 * The first error of the inner sink is kept: the thread plays nothing after it, and every
 * later call of the relay's sink returns it (so the model stops at its next record).
 *
 * The playing side is also open to a thread of the caller's (relay_play.h): the pipelined
 * import's reader thread plays the batches between its reads, so the relay needs no thread.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/thread.h"
#include "pipeline/relay_play.h"
#include "util/mem.h"

#define DEFAULT_BATCH (64u << 10)
/* Batches in the ring. The thread is woken once WAKE_AT of them wait (or at a drain), so it
 * plays several per wake-up, and the model thread keeps filling while it is not scheduled. */
#define BATCHES 8u
#define WAKE_AT (BATCHES / 2)

enum {
    REC_SAMPLE,
    REC_SLICE,
    REC_STACK,
    REC_LBR,
    REC_PROCESS, /* the records with strings: see shapes[] */
    REC_THREAD,
    REC_MODULE,
    REC_LEDGER,
    REC_STAT,
    REC_SYMBOL,
    REC_TYPES
};

/* A record copied with its strings: its size and where its string pointers are. In the batch
 * each string follows the record as a u32 length (UINT32_MAX: NULL) and its bytes and NUL. */
struct shape {
    uint16_t size;
    uint8_t strings;
    uint16_t at[2];
};

#define SHAPE1(T, a)                                                                               \
    {                                                                                              \
        sizeof(T), 1,                                                                              \
        {                                                                                          \
            offsetof(T, a), 0                                                                      \
        }                                                                                          \
    }
#define SHAPE2(T, a, b)                                                                            \
    {                                                                                              \
        sizeof(T), 2,                                                                              \
        {                                                                                          \
            offsetof(T, a), offsetof(T, b)                                                         \
        }                                                                                          \
    }
static const struct shape shapes[REC_TYPES] = {
    [REC_PROCESS] = SHAPE2(perch_process_rec, image_name, command_line),
    [REC_THREAD] = SHAPE1(perch_thread_rec, name),
    [REC_MODULE] = SHAPE2(perch_module_rec, path, pdb_name),
    [REC_LEDGER] = SHAPE1(perch_ledger_rec, reason),
    [REC_STAT] = SHAPE1(perch_stat_rec, name),
    [REC_SYMBOL] = SHAPE1(perch_symbol_rec, name),
};

union any_rec {
    perch_process_rec process;
    perch_thread_rec thread;
    perch_module_rec module;
    perch_ledger_rec ledger;
    perch_stat_rec stat;
    perch_symbol_rec symbol;
};

struct batch {
    uint8_t *data; /* records, each an 8-byte header then its bytes, padded to 8 */
    size_t len, cap;
};

/* The fields the two threads share are kept apart by how often they change: the ring's
 * fill lengths change with every record the filling thread copies, the positions with every
 * batch, the rest (read by both for every record) almost never; a line holding two of these
 * would move between the cores with every record. */
struct perch_sink_relay {
    perch_sink inner;
    size_t batch_bytes;
    perch_thread *thread; /* NULL: played by a thread of the caller's (relay_play.h) */
    perch_mutex *mu;
    perch_cond *player_cv; /* the playing thread sleeps here */
    perch_cond *model_cv;  /* the filling thread waits here for a free batch or a drain */
    _Atomic int error;
    char pad0[64];
    /* Batches handed to the player (written under mu by the filling thread; the player reads it
     * without the lock only as a hint, then under mu) and played (under mu). */
    _Atomic uint64_t handed;
    _Atomic uint64_t played;      /* written under mu; read without it only as a hint */
    _Atomic bool drain;           /* the filling thread waits until every batch is played */
    bool sleeping, waiting, stop; /* player asleep, filler waiting, stop asked (under mu) */
    bool playing;                 /* a thread plays a batch now (under mu) */
    char pad1[64];
    struct batch ring[BATCHES]; /* ring[handed % BATCHES] fills; [played, handed) are handed */
};

static int keep_error(perch_sink_relay *r, int err)
{
    int none = 0;
    if (err < 0)
        atomic_compare_exchange_strong(&r->error, &none, err);
    return atomic_load(&r->error);
}

static size_t padded(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Rebuilds a record with strings (type's shape) from the batch at p into *u, its strings
 * pointing into the batch. */
static void unpack_strings(uint32_t type, const uint8_t *p, union any_rec *u)
{
    const struct shape *sh = &shapes[type];
    memcpy(u, p, sh->size);
    p += padded(sh->size);
    for (unsigned i = 0; i < sh->strings; i++) {
        uint32_t len;
        const char *str = NULL;
        memcpy(&len, p, sizeof len);
        p += sizeof len;
        if (len != UINT32_MAX) {
            str = (const char *)p;
            p += len + 1;
        }
        memcpy((char *)u + sh->at[i], &str, sizeof str);
    }
}

/* Plays a record with strings into the inner sink. */
static int play_strings(perch_sink_relay *r, uint32_t type, const uint8_t *p)
{
    const perch_sink *k = &r->inner;
    union any_rec u;
    unpack_strings(type, p, &u);
    switch (type) {
    case REC_PROCESS:
        return k->process ? k->process(k->ctx, &u.process) : 0;
    case REC_THREAD:
        return k->thread ? k->thread(k->ctx, &u.thread) : 0;
    case REC_MODULE:
        return k->module ? k->module(k->ctx, &u.module) : 0;
    case REC_LEDGER:
        return k->ledger ? k->ledger(k->ctx, &u.ledger) : 0;
    case REC_STAT:
        return k->stat ? k->stat(k->ctx, &u.stat) : 0;
    default:
        return k->symbol ? k->symbol(k->ctx, &u.symbol) : 0;
    }
}

/* Plays one record (at its header) into the inner sink; returns its result. */
static int play_one(perch_sink_relay *r, const uint8_t *p)
{
    uint32_t type;
    memcpy(&type, p, sizeof type);
    p += 8;
    if (type >= REC_PROCESS)
        return play_strings(r, type, p);
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

/* A relaxed look at handed from the player (only the filling thread writes it). */
static uint64_t handed_hint(const perch_sink_relay *r)
{
    return atomic_load_explicit(&r->handed, memory_order_relaxed);
}

bool perch__sink_relay_wanted(const perch_sink_relay *r)
{
    uint64_t waiting = handed_hint(r) - atomic_load_explicit(&r->played, memory_order_relaxed);
    return waiting >= WAKE_AT ||
           (waiting > 0 && atomic_load_explicit(&r->drain, memory_order_relaxed));
}

/* Under mu: true when a handed batch waits and nobody plays now. */
static bool playable(const perch_sink_relay *r)
{
    return !r->playing && handed_hint(r) != r->played;
}

/* Under mu, with playable(r): plays the oldest handed batch (outside mu), then wakes whoever
 * waits for it: the filling thread for a free batch or the drain, a sleeping player to look
 * again (it does not play while another thread does). */
static void play_oldest(perch_sink_relay *r)
{
    struct batch *b = &r->ring[r->played % BATCHES];
    r->playing = true;
    perch_mutex_unlock(r->mu);
    play(r, b);
    b->len = 0;
    perch_mutex_lock(r->mu);
    r->played++;
    r->playing = false;
    if (r->waiting)
        perch_cond_signal(r->model_cv);
    if (r->sleeping)
        perch_cond_signal(r->player_cv);
}

void perch__sink_relay_play(perch_sink_relay *r)
{
    perch_mutex_lock(r->mu);
    while (playable(r)) /* handed read under mu: the batches' bytes are visible */
        play_oldest(r);
    perch_mutex_unlock(r->mu);
}

bool perch__sink_relay_play_one(perch_sink_relay *r)
{
    bool played = false;
    if (handed_hint(r) == atomic_load_explicit(&r->played, memory_order_relaxed))
        return false; /* a look without the lock: only the filling thread hands batches */
    perch_mutex_lock(r->mu);
    if (playable(r)) {
        play_oldest(r);
        played = true;
    }
    perch_mutex_unlock(r->mu);
    return played;
}

bool perch__sink_relay_wait(perch_sink_relay *r, bool (*ready)(void *ctx), void *ctx)
{
    bool more = true;
    perch_mutex_lock(r->mu);
    for (;;) {
        if (playable(r) || (ready != NULL && ready(ctx)))
            break;
        if (r->stop) {
            more = false;
            break;
        }
        r->sleeping = true;
        perch_cond_wait(r->player_cv, r->mu, UINT32_MAX);
        r->sleeping = false;
    }
    perch_mutex_unlock(r->mu);
    return more;
}

void perch__sink_relay_wake(perch_sink_relay *r)
{
    perch_mutex_lock(r->mu);
    if (r->sleeping)
        perch_cond_signal(r->player_cv);
    perch_mutex_unlock(r->mu);
}

void perch__sink_relay_stop_player(perch_sink_relay *r)
{
    perch_mutex_lock(r->mu);
    r->stop = true;
    perch_cond_signal(r->player_cv);
    perch_mutex_unlock(r->mu);
}

/* The relay's own thread: plays every handed batch in order; sleeps when there is none.
 * Handed batches are played before it stops. */
static int relay_main(void *arg)
{
    perch_sink_relay *r = arg;
    while (perch__sink_relay_wait(r, NULL, NULL))
        perch__sink_relay_play(r);
    return 0;
}

static struct batch *fill_batch(perch_sink_relay *r)
{
    return &r->ring[handed_hint(r) % BATCHES]; /* only the filling thread moves handed */
}

/* Hands the fill batch over when it holds records (waking the player once enough wait, or at
 * once when all must be played), then waits until the next fill batch is free, or (all) until
 * every batch has been played. */
static void hand_over(perch_sink_relay *r, bool all)
{
    perch_mutex_lock(r->mu);
    uint64_t handed = handed_hint(r);
    if (fill_batch(r)->len > 0)
        atomic_store_explicit(&r->handed, ++handed, memory_order_relaxed);
    if (all)
        atomic_store_explicit(&r->drain, true, memory_order_relaxed);
    if (r->sleeping && handed != r->played && (all || handed - r->played >= WAKE_AT))
        perch_cond_signal(r->player_cv);
    while (all ? r->played != handed : handed - r->played >= BATCHES) {
        if (playable(r)) { /* the player is busy elsewhere: play the oldest here */
            play_oldest(r);
            continue;
        }
        r->waiting = true;
        perch_cond_wait(r->model_cv, r->mu, UINT32_MAX);
        r->waiting = false;
    }
    if (all)
        atomic_store_explicit(&r->drain, false, memory_order_relaxed);
    perch_mutex_unlock(r->mu);
}

/* Every record given so far played: the inner sink may be called on this thread. */
static int drain(perch_sink_relay *r)
{
    hand_over(r, true);
    return atomic_load(&r->error);
}

/* Room for a record of len bytes (header and padding included) in the fill batch. */
static uint8_t *reserve(perch_sink_relay *r, uint32_t type, size_t len)
{
    struct batch *b = fill_batch(r);
    if (b->len > 0 && b->len + len > r->batch_bytes) {
        hand_over(r, false);
        b = fill_batch(r);
    }
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

/* Copies a record with strings (type's shape) into the fill batch. */
static int put_strings(perch_sink_relay *r, uint32_t type, const void *rec)
{
    const struct shape *sh = &shapes[type];
    const char *str[2];
    size_t slen[2], len = 8 + padded(sh->size);
    int err = atomic_load(&r->error);
    if (err < 0)
        return err;
    for (unsigned i = 0; i < sh->strings; i++) {
        memcpy(&str[i], (const char *)rec + sh->at[i], sizeof str[i]);
        slen[i] = str[i] != NULL ? strlen(str[i]) : 0;
        if (slen[i] >= UINT32_MAX / 4)
            return PERCH_ELIMIT;
        len += sizeof(uint32_t) + (str[i] != NULL ? slen[i] + 1 : 0);
    }
    uint8_t *p = reserve(r, type, padded(len));
    if (p == NULL)
        return PERCH_ENOMEM;
    memcpy(p, rec, sh->size);
    p += padded(sh->size);
    for (unsigned i = 0; i < sh->strings; i++) {
        uint32_t l32 = str[i] != NULL ? (uint32_t)slen[i] : UINT32_MAX;
        memcpy(p, &l32, sizeof l32);
        p += sizeof l32;
        if (str[i] != NULL) {
            memcpy(p, str[i], slen[i] + 1);
            p += slen[i] + 1;
        }
    }
    return 0;
}

#define RELAY_STRINGS(name, type, rec_type)                                                        \
    static int relay_##name(void *ctx, const rec_type *rec)                                        \
    {                                                                                              \
        return put_strings(ctx, type, rec);                                                        \
    }
RELAY_STRINGS(process, REC_PROCESS, perch_process_rec)
RELAY_STRINGS(thread, REC_THREAD, perch_thread_rec)
RELAY_STRINGS(module, REC_MODULE, perch_module_rec)
RELAY_STRINGS(ledger, REC_LEDGER, perch_ledger_rec)
RELAY_STRINGS(stat, REC_STAT, perch_stat_rec)
RELAY_STRINGS(symbol, REC_SYMBOL, perch_symbol_rec)

/* The records played on the calling thread once every batch has been (once or twice a run). */
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
RELAY_INLINE(counters, perch_counters_rec)

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

int perch__sink_relay_create(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out)
{
    perch_sink_relay *r = perch__calloc(1, sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    r->inner = *inner;
    r->batch_bytes = batch_bytes ? batch_bytes : DEFAULT_BATCH;
    atomic_init(&r->error, 0);
    atomic_init(&r->handed, 0);
    atomic_init(&r->played, 0);
    atomic_init(&r->drain, false);
    int err = perch_mutex_create(&r->mu);
    err = err ? err : perch_cond_create(&r->player_cv);
    err = err ? err : perch_cond_create(&r->model_cv);
    if (err < 0) {
        perch_sink_relay_stop(r);
        return err;
    }
    *out = r;
    return 0;
}

int perch_sink_relay_start(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out)
{
    perch_sink_relay *r = NULL;
    int err = perch__sink_relay_create(inner, batch_bytes, &r);
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
        perch__sink_relay_stop_player(r);
        perch_thread_join(r->thread, NULL);
    }
    int err = atomic_load(&r->error);
    perch_cond_destroy(r->model_cv);
    perch_cond_destroy(r->player_cv);
    perch_mutex_destroy(r->mu);
    for (unsigned i = 0; i < BATCHES; i++)
        perch__free(r->ring[i].data);
    perch__free(r);
    return err;
}
