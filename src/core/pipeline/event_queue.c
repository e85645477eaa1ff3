/*
 * The SPSC event queue (include/perch/event_queue.h): a ring of bytes written by one producer
 * and read by one consumer, with two monotonic 64-bit positions (tail: bytes ever written,
 * head: bytes ever released) and no lock on either fast path.
 *
 * Each record is a 16-byte header (aligned length, payload and ext lengths), the event's fixed
 * fields up to pebs_index, its pmc_count counter values, the payload and the ext bytes, padded
 * to 8. A record always lies contiguous at (tail mod capacity): the ring is allocated with a
 * quarter of its size as slack after the end, and no record is longer than that quarter, so
 * one that starts near the end runs into the slack instead of wrapping. The logical bytes it
 * covers past the end (physical [0, overrun)) are accounted as used but never written.
 *
 * Sleeping is the only place a lock is taken. A consumer that finds the ring empty sets
 * consumer_waiting under the mutex, re-reads tail and sleeps; a producer that publishes a
 * record reads consumer_waiting after storing tail (both sequentially consistent, so one of
 * them sees the other) and signals only when it is set. A blocking producer waits the same
 * way for space and is woken when the ring drains to half, so a full ring costs one wake-up
 * per half ring, not one per record. perch_event_queue_wake sets a flag under the same mutex
 * and broadcasts; a consumer about to sleep, or sleeping, takes the flag and returns.
 *
 * A queue put in batched mode (queue_batch.h; the .etl reader thread's) publishes tail only
 * once a batch of bytes is pending (and before the producer waits, and on flush), and the
 * consumer stores head only once a batch of popped bytes is held (and before it waits, and on
 * release): two sequentially consistent stores per batch instead of two per record, each of
 * which would wait for every store before it (the record just copied, the model's own work).
 * The records and their order are the same; only when the other side sees them moves.
 *
 * A producer that sleeps on a condition of its own (the import's reader thread, which also
 * plays the capture writer: feeder.c) pushes without waiting and arms the queue before it
 * sleeps, the same handshake on producer_waiting; the consumer then calls its wake hook
 * instead of signalling space_cond.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "perch/error.h"
#include "perch/event_queue.h"
#include "perch/platform.h"
#include "perch/thread.h"
#include "pipeline/queue_batch.h"
#include "util/mem.h"

#define HEAD_BYTES  16u
#define FIXED_BYTES offsetof(perch_event, pmc) /* provider .. pebs_index */

_Static_assert(FIXED_BYTES % 8 == 0, "the fixed part keeps the payload 8-aligned");

struct rec_head {
    uint32_t len; /* the whole record, padded to 8 */
    uint32_t payload_len;
    uint32_t ext_len;
    uint32_t reserved;
};

enum { OPEN = 0, CLOSED = 1, CANCELED = 2 };

struct perch_event_queue {
    uint8_t *ring; /* capacity + max_record bytes */
    uint64_t capacity, mask, max_record;
    perch_mutex *lock;
    perch_cond *data_cond;         /* consumer waits for records or the close */
    perch_cond *space_cond;        /* producer waits for room or the cancel */
    void (*space_wake)(void *ctx); /* perch__event_queue_space_hook: wakes instead of space_cond */
    void *space_ctx;
    _Atomic int state_bits; /* CLOSED | CANCELED */
    _Atomic int close_status;
    _Atomic int woken; /* perch_event_queue_wake: the next wait ends at once */
    char pad0[64];
    /* written by the producer */
    _Atomic uint64_t tail;
    _Atomic int producer_waiting;
    uint64_t head_cache;    /* the producer's last view of head */
    uint64_t write_pos;     /* the producer's end of what it wrote (tail, unless batched) */
    uint64_t publish_bytes; /* batched: publish once this much is pending (0: every push) */
    _Atomic uint64_t pushed, dropped, oversized, bytes_high, push_waits;
    char pad1[64];
    /* written by the consumer */
    _Atomic uint64_t head;
    _Atomic int consumer_waiting;
    uint64_t tail_cache;    /* the consumer's last view of tail */
    uint64_t read_pos;      /* where the next record is read: head + held */
    uint64_t held;          /* bytes popped and not released yet */
    uint64_t release_bytes; /* batched: release once this much is held (0: at every pop) */
    _Atomic uint64_t popped;
    char pad2[64];
};

/* Single-writer counters: a relaxed load and store, no locked instruction. */
static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static uint64_t round_pow2(uint64_t v)
{
    uint64_t p = PERCH_EVENT_QUEUE_MIN_BYTES;
    while (p < v && p < PERCH_EVENT_QUEUE_MAX_BYTES)
        p <<= 1;
    return p;
}

int perch_event_queue_create(size_t capacity_bytes, perch_event_queue **out)
{
    struct perch_event_queue *q;
    if (out == NULL || capacity_bytes == 0 || capacity_bytes > PERCH_EVENT_QUEUE_MAX_BYTES)
        return PERCH_EINVAL;
    q = perch__calloc(1, sizeof *q);
    if (q == NULL)
        return PERCH_ENOMEM;
    q->capacity = round_pow2(capacity_bytes);
    q->mask = q->capacity - 1;
    q->max_record = q->capacity / 4;
    q->ring = perch__alloc((size_t)(q->capacity + q->max_record));
    if (q->ring == NULL || perch_mutex_create(&q->lock) < 0 ||
        perch_cond_create(&q->data_cond) < 0 || perch_cond_create(&q->space_cond) < 0) {
        perch_event_queue_destroy(q);
        return PERCH_ENOMEM;
    }
    *out = q;
    return 0;
}

void perch_event_queue_destroy(perch_event_queue *q)
{
    if (q == NULL)
        return;
    perch_cond_destroy(q->space_cond);
    perch_cond_destroy(q->data_cond);
    perch_mutex_destroy(q->lock);
    perch__free(q->ring);
    perch__free(q);
}

static unsigned pmc_count_of(const perch_event *ev)
{
    return ev->pmc_count < PERCH_EVENT_MAX_PMC ? ev->pmc_count : PERCH_EVENT_MAX_PMC;
}

/* The padded length of ev's record (64-bit: payload and ext lengths are u32 each). */
static uint64_t record_len(const perch_event *ev)
{
    uint64_t n =
        HEAD_BYTES + FIXED_BYTES + 8u * pmc_count_of(ev) + (uint64_t)ev->payload_len + ev->ext_len;
    return (n + 7u) & ~(uint64_t)7u;
}

static void write_record(uint8_t *p, const perch_event *ev, uint64_t len)
{
    struct rec_head h = {(uint32_t)len, ev->payload_len, ev->ext_len, 0};
    size_t npmc = 8u * pmc_count_of(ev);
    memcpy(p, &h, HEAD_BYTES);
    p += HEAD_BYTES;
    memcpy(p, ev, FIXED_BYTES);
    p += FIXED_BYTES;
    memcpy(p, ev->pmc, npmc);
    p += npmc;
    if (ev->payload_len > 0)
        memcpy(p, ev->payload, ev->payload_len);
    if (ev->ext_len > 0)
        memcpy(p + ev->payload_len, ev->ext, ev->ext_len);
}

/* Publishes everything written up to write_pos, and wakes a sleeping consumer. */
static void publish(struct perch_event_queue *q)
{
    uint64_t used;
    if (q->publish_bytes != 0) /* batched: perch__event_queue_behind looks at it */
        q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
    used = q->write_pos - q->head_cache;
    atomic_store(&q->tail, q->write_pos);
    if (used > atomic_load_explicit(&q->bytes_high, memory_order_relaxed))
        atomic_store_explicit(&q->bytes_high, used, memory_order_relaxed);
    if (atomic_load(&q->consumer_waiting)) {
        perch_mutex_lock(q->lock);
        perch_cond_signal(q->data_cond);
        perch_mutex_unlock(q->lock);
    }
}

/* True when len more bytes fit, refreshing the cached head only when they seem not to. */
static bool has_room(struct perch_event_queue *q, uint64_t tail, uint64_t len)
{
    if (tail + len - q->head_cache <= q->capacity)
        return true;
    q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
    return tail + len - q->head_cache <= q->capacity;
}

/* 0 when ev may be pushed; else the error of try_push and push alike. */
static int check_push(struct perch_event_queue *q, uint64_t len)
{
    if (atomic_load_explicit(&q->state_bits, memory_order_acquire) != OPEN)
        return PERCH_ESTATE;
    if (len > q->max_record) {
        bump(&q->oversized);
        return PERCH_ELIMIT;
    }
    return 0;
}

int perch_event_queue_try_push(perch_event_queue *q, const perch_event *ev)
{
    uint64_t len = record_len(ev), tail;
    int err = check_push(q, len);
    if (err < 0)
        return err;
    tail = q->write_pos;
    if (!has_room(q, tail, len)) {
        bump(&q->dropped);
        return PERCH_EBUSY;
    }
    write_record(q->ring + (tail & q->mask), ev, len);
    q->write_pos = tail + len;
    bump(&q->pushed);
    publish(q); /* never batched: the live callback's records are seen at once */
    return 0;
}

/* Sleeps until len bytes fit or the queue is canceled. 0 or PERCH_ECANCELED / ESTATE. */
static int wait_for_room(struct perch_event_queue *q, uint64_t tail, uint64_t len)
{
    int err = 0;
    bump(&q->push_waits);
    perch_mutex_lock(q->lock);
    atomic_store(&q->producer_waiting, 1);
    for (;;) {
        int bits;
        q->head_cache = atomic_load(&q->head); /* sequentially consistent: see the top */
        if (tail + len - q->head_cache <= q->capacity)
            break;
        bits = atomic_load(&q->state_bits);
        if (bits != OPEN) {
            err = bits & CANCELED ? PERCH_ECANCELED : PERCH_ESTATE;
            break;
        }
        perch_cond_wait(q->space_cond, q->lock, UINT32_MAX);
    }
    atomic_store(&q->producer_waiting, 0);
    perch_mutex_unlock(q->lock);
    return err;
}

/* Writes ev (len bytes, known to fit) at tail; publishes once a batch is pending. */
static void put_record(struct perch_event_queue *q, const perch_event *ev, uint64_t tail,
                       uint64_t len)
{
    write_record(q->ring + (tail & q->mask), ev, len);
    q->write_pos = tail + len;
    bump(&q->pushed);
    if (q->write_pos - atomic_load_explicit(&q->tail, memory_order_relaxed) >= q->publish_bytes)
        publish(q);
}

int perch__event_queue_push_nowait(perch_event_queue *q, const perch_event *ev)
{
    uint64_t len = record_len(ev), tail;
    int err = check_push(q, len);
    if (err < 0)
        return err;
    tail = q->write_pos;
    if (!has_room(q, tail, len)) {
        perch__event_queue_flush(q); /* the consumer must see everything before we sleep */
        return PERCH_EBUSY;
    }
    put_record(q, ev, tail, len);
    return 0;
}

int perch_event_queue_push(perch_event_queue *q, const perch_event *ev)
{
    int err;
    while ((err = perch__event_queue_push_nowait(q, ev)) == PERCH_EBUSY) {
        if ((err = wait_for_room(q, q->write_pos, record_len(ev))) < 0)
            return err; /* push_nowait made every record visible before this sleep */
    }
    return err;
}

void perch__event_queue_space_hook(perch_event_queue *q, void (*wake)(void *ctx), void *ctx)
{
    q->space_wake = wake;
    q->space_ctx = ctx;
}

bool perch__event_queue_room_or_arm(perch_event_queue *q, const perch_event *ev)
{
    uint64_t len = record_len(ev);
    bump(&q->push_waits);
    atomic_store(&q->producer_waiting, 1);
    q->head_cache = atomic_load(&q->head); /* sequentially consistent: see the top */
    if (q->write_pos + len - q->head_cache <= q->capacity || atomic_load(&q->state_bits) != OPEN) {
        atomic_store(&q->producer_waiting, 0);
        return true;
    }
    return false;
}

void perch__event_queue_disarm(perch_event_queue *q)
{
    atomic_store(&q->producer_waiting, 0);
}

void perch__event_queue_flush(perch_event_queue *q)
{
    if (q->write_pos != atomic_load_explicit(&q->tail, memory_order_relaxed))
        publish(q);
}

bool perch__event_queue_behind(const perch_event_queue *q)
{
    return q->write_pos - q->head_cache > q->capacity / 2;
}

void perch__event_queue_batch(perch_event_queue *q, uint64_t publish_bytes, uint64_t release_bytes)
{
    q->publish_bytes = publish_bytes;
    q->release_bytes = release_bytes < q->capacity / 4 ? release_bytes : q->capacity / 4;
}

/* Sets a state bit (CLOSED stores status first, once) and wakes both sides, which re-check
 * the state under the lock. */
static void set_state(struct perch_event_queue *q, int bit, int status)
{
    perch_mutex_lock(q->lock);
    if (!(atomic_load(&q->state_bits) & bit)) {
        if (bit == CLOSED)
            atomic_store(&q->close_status, status); /* the first status stays */
        atomic_fetch_or(&q->state_bits, bit);
    }
    perch_cond_broadcast(q->data_cond);
    perch_cond_broadcast(q->space_cond);
    perch_mutex_unlock(q->lock);
    if (q->space_wake != NULL)
        q->space_wake(q->space_ctx);
}

void perch_event_queue_close(perch_event_queue *q, int status)
{
    set_state(q, CLOSED, status);
}

void perch_event_queue_cancel(perch_event_queue *q)
{
    set_state(q, CANCELED, 0);
}

/* Releases the record popped last, waking a producer waiting for the ring to drain to half. */
static void release_held(struct perch_event_queue *q)
{
    uint64_t head;
    if (q->held == 0)
        return;
    head = q->read_pos;
    q->held = 0;
    atomic_store(&q->head, head);
    if (atomic_load(&q->producer_waiting) && atomic_load(&q->tail) - head <= q->capacity / 2) {
        if (q->space_wake != NULL) {
            q->space_wake(q->space_ctx);
            return;
        }
        perch_mutex_lock(q->lock);
        perch_cond_signal(q->space_cond);
        perch_mutex_unlock(q->lock);
    }
}

void perch_event_queue_release(perch_event_queue *q)
{
    release_held(q);
}

static void read_record(struct perch_event_queue *q, perch_event *ev)
{
    const uint8_t *p = q->ring + (q->read_pos & q->mask);
    struct rec_head h;
    unsigned npmc;
    /* The lines the producer wrote on the other core, a few records ahead: without this
     * each record's first line was a miss the consumer waited for (the 512 MB synthetic
     * import's model thread, the pipeline's critical path, ~10 % faster with it). */
    __builtin_prefetch(q->ring + ((q->read_pos + 512) & q->mask));
    __builtin_prefetch(q->ring + ((q->read_pos + 576) & q->mask));
    memcpy(&h, p, HEAD_BYTES);
    p += HEAD_BYTES;
    memcpy(ev, p, FIXED_BYTES);
    p += FIXED_BYTES;
    npmc = pmc_count_of(ev);
    memset(ev->pmc, 0, sizeof ev->pmc); /* fixed size: two stores, no call */
    for (unsigned i = 0; i < npmc; i++)
        memcpy(&ev->pmc[i], p + 8u * i, 8);
    p += 8u * npmc;
    ev->payload = p;
    ev->payload_len = h.payload_len;
    ev->ext = h.ext_len > 0 ? p + h.payload_len : NULL;
    ev->ext_len = h.ext_len;
    q->read_pos += h.len;
    q->held += h.len;
    bump(&q->popped);
}

/* True when a record is ready at head, refreshing the cached tail when needed. */
static bool has_record(struct perch_event_queue *q, uint64_t head)
{
    if (q->tail_cache != head)
        return true;
    q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
    return q->tail_cache != head;
}

/* Milliseconds left before deadline_ns (UINT32_MAX: none), 0 when it has passed. */
static uint32_t ms_left(uint64_t deadline_ns)
{
    uint64_t now;
    if (deadline_ns == UINT64_MAX)
        return UINT32_MAX;
    now = perch_monotonic_ns();
    if (now >= deadline_ns)
        return 0;
    return (uint32_t)((deadline_ns - now + 999999u) / 1000000u);
}

/* Sleeps until a record, the close, the cancel or the deadline. 0 (look again), PERCH_EOF,
 * PERCH_ECANCELED or PERCH_ETIMEDOUT. */
static int wait_for_record(struct perch_event_queue *q, uint64_t head, uint32_t timeout_ms)
{
    uint64_t deadline =
        timeout_ms == UINT32_MAX ? UINT64_MAX : perch_monotonic_ns() + timeout_ms * 1000000ull;
    int err = 0;
    perch_mutex_lock(q->lock);
    atomic_store(&q->consumer_waiting, 1);
    for (;;) {
        int bits = atomic_load(&q->state_bits);
        uint32_t left;
        q->tail_cache = atomic_load(&q->tail); /* sequentially consistent: see the top */
        if (q->tail_cache != head)
            break;
        left = ms_left(deadline);
        if (atomic_load(&q->woken) && atomic_exchange(&q->woken, 0))
            left = 0;
        if (bits != OPEN || left == 0) {
            err = bits & CANCELED ? PERCH_ECANCELED : bits & CLOSED ? PERCH_EOF : PERCH_ETIMEDOUT;
            break;
        }
        perch_cond_wait(q->data_cond, q->lock, left);
    }
    atomic_store(&q->consumer_waiting, 0);
    perch_mutex_unlock(q->lock);
    return err;
}

void perch_event_queue_wake(perch_event_queue *q)
{
    perch_mutex_lock(q->lock);
    atomic_store(&q->woken, 1);
    perch_cond_broadcast(q->data_cond);
    perch_mutex_unlock(q->lock);
}

int perch_event_queue_pop(perch_event_queue *q, perch_event *ev, uint32_t timeout_ms)
{
    int bits;
    if (q->held >= q->release_bytes)
        release_held(q);
    bits = atomic_load_explicit(&q->state_bits, memory_order_acquire);
    if (bits & CANCELED)
        return PERCH_ECANCELED;
    if (!has_record(q, q->read_pos)) {
        int err;
        release_held(q); /* a producer waiting for room must get it before we sleep */
        if (bits & CLOSED)
            return PERCH_EOF; /* tail was read after the close: nothing more comes */
        if (timeout_ms == 0)
            return PERCH_ETIMEDOUT;
        err = wait_for_record(q, q->read_pos, timeout_ms);
        if (err < 0)
            return err;
    }
    read_record(q, ev);
    return 0;
}

int perch_event_queue_close_status(const perch_event_queue *q)
{
    return atomic_load(&q->close_status);
}

void perch_event_queue_get_stats(const perch_event_queue *q, perch_event_queue_stats *st)
{
    st->pushed = atomic_load_explicit(&q->pushed, memory_order_relaxed);
    st->popped = atomic_load_explicit(&q->popped, memory_order_relaxed);
    st->dropped = atomic_load_explicit(&q->dropped, memory_order_relaxed);
    st->oversized = atomic_load_explicit(&q->oversized, memory_order_relaxed);
    st->bytes_high = atomic_load_explicit(&q->bytes_high, memory_order_relaxed);
    st->capacity = q->capacity;
    st->push_waits = atomic_load_explicit(&q->push_waits, memory_order_relaxed);
}
