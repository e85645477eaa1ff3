/*
 * Tests for the SPSC event queue (include/perch/event_queue.h, src/core/pipeline/
 * event_queue.c): every field, payload, ext and PMC value survives the copy; the ring wraps
 * many times; try_push on a full ring drops and counts exactly; oversized records are refused
 * at exactly a quarter of the ring; close hands its status over after the last record; cancel
 * unblocks a waiting producer; timeouts; a wake ends the consumer's wait; and two threads pushing
 * hundreds of thousands of records, every one of them checked by a checksum of its bytes against
 * the generator, also in batched mode (pipeline/queue_batch.h), and the batched producer's view of
 * a consumer behind.
 *
 * Records are generated from a sequence number alone, so the consumer can rebuild what the
 * producer sent. Worker threads never call cmocka asserts: they record counts, the main
 * thread checks them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/event_queue.h"
#include "perch/platform.h"
#include "perch/thread.h"
#include "pipeline/queue_batch.h"
#include "util/mem.h"

#define MAX_PAYLOAD 3000u

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The record for sequence number seq, payload and ext written into buf (MAX_PAYLOAD + 64). */
static void make_event(uint64_t seq, uint32_t max_payload, uint8_t *buf, perch_event *ev)
{
    uint64_t r = mix(seq + 1);
    memset(ev, 0, sizeof *ev);
    ev->provider.data1 = (uint32_t)r;
    ev->provider.data4[7] = (uint8_t)(r >> 40);
    ev->timestamp = seq;
    ev->pid = (uint32_t)(r >> 8);
    ev->tid = (uint32_t)(r >> 16);
    ev->cpu = (uint16_t)(seq % 64);
    ev->group = (uint16_t)(r >> 24);
    ev->hook = (uint16_t)(r >> 3);
    ev->event_id = (uint16_t)(r >> 5);
    ev->flags = (uint16_t)(r >> 11) & 7u;
    ev->opcode = (uint8_t)(r >> 13);
    ev->version = (uint8_t)(r >> 17);
    ev->pointer_size = (r & 1) ? 8 : 4;
    ev->header_kind = (uint8_t)(1 + r % 7);
    ev->pmc_count = (uint8_t)(seq % (PERCH_EVENT_MAX_PMC + 1));
    ev->pebs_index = r * 3;
    for (unsigned i = 0; i < ev->pmc_count; i++)
        ev->pmc[i] = mix(r + i);
    ev->payload_len = (uint32_t)(mix(r) % (max_payload + 1));
    ev->ext_len = (r >> 50) % 4 == 0 ? (uint32_t)(r >> 54) % 64u : 0;
    uint64_t x = r; /* a cheap LCG stream for the bytes */
    for (uint32_t i = 0; i < ev->payload_len + ev->ext_len; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(x >> 56);
    }
    ev->payload = buf;
    ev->ext = ev->ext_len ? buf + ev->payload_len : NULL;
}

/* True when ev equals what make_event(seq) gave, byte for byte and by checksum. */
static bool same_event(uint64_t seq, uint32_t max_payload, const perch_event *ev)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    perch_event want;
    make_event(seq, max_payload, buf, &want);
    if (memcmp(ev, &want, offsetof(perch_event, payload)) != 0)
        return false; /* every fixed field and all pmc slots (unused ones zero) */
    if (ev->payload_len != want.payload_len || ev->ext_len != want.ext_len)
        return false;
    if (fnv(ev->payload, ev->payload_len) != fnv(want.payload, want.payload_len))
        return false;
    if ((ev->ext == NULL) != (want.ext == NULL))
        return false;
    return ev->ext_len == 0 || fnv(ev->ext, ev->ext_len) == fnv(want.ext, want.ext_len);
}

static perch_event_queue_stats stats_of(const perch_event_queue *q)
{
    perch_event_queue_stats st;
    perch_event_queue_get_stats(q, &st);
    return st;
}

static void test_create_sizes(void **state)
{
    perch_event_queue *q = (perch_event_queue *)&q;
    (void)state;
    assert_int_equal(perch_event_queue_create(0, &q), PERCH_EINVAL);
    assert_int_equal(perch_event_queue_create((size_t)PERCH_EVENT_QUEUE_MAX_BYTES + 1, &q),
                     PERCH_EINVAL);
    assert_ptr_equal(q, (perch_event_queue *)&q);
    assert_int_equal(perch_event_queue_create(1, &q), 0);
    assert_int_equal(stats_of(q).capacity, PERCH_EVENT_QUEUE_MIN_BYTES);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES * 3, &q), 0);
    assert_int_equal(stats_of(q).capacity, PERCH_EVENT_QUEUE_MIN_BYTES * 4);
    perch_event_queue_destroy(q);
    perch_event_queue_destroy(NULL);
}

/* One thread: push and pop alternately on the smallest ring, so it wraps over a hundred times
 * with records of every size, and each pop sees exactly the record pushed. */
static void test_wrap_around(void **state)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    perch_event_queue *q;
    perch_event ev, got;
    uint64_t in = 0, out = 0, bytes = 0, round = 0;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    while (bytes < 150u * PERCH_EVENT_QUEUE_MIN_BYTES) {
        int n = (int)(mix(round++) % 7); /* bursts keep several records in the ring at a wrap */
        for (int i = 0; i < n; i++) {
            make_event(in, MAX_PAYLOAD, buf, &ev);
            if (perch_event_queue_try_push(q, &ev) != 0)
                break;
            bytes += ev.payload_len + 100;
            in++;
        }
        while (out + 2 < in || (n == 0 && out < in)) {
            assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
            assert_true(same_event(out, MAX_PAYLOAD, &got));
            out++;
        }
    }
    while (out < in) {
        assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
        assert_true(same_event(out++, MAX_PAYLOAD, &got));
    }
    assert_int_equal(perch_event_queue_pop(q, &got, 0), PERCH_ETIMEDOUT);
    perch_event_queue_stats st = stats_of(q);
    assert_int_equal(st.pushed, in);
    assert_int_equal(st.popped, in);
    assert_int_equal(st.dropped, 0);
    assert_true(st.bytes_high <= st.capacity);
    perch_event_queue_destroy(q);
}

/* An event of payload_len zero bytes of payload and nothing else: 72 + payload, padded. */
static perch_event plain_event(const uint8_t *payload, uint32_t payload_len)
{
    perch_event ev;
    memset(&ev, 0, sizeof ev);
    ev.payload = payload;
    ev.payload_len = payload_len;
    return ev;
}

/* The record length the queue uses for plain_event(len): 16 + 56 fixed + payload, to 8. */
static uint64_t plain_len(uint32_t payload_len)
{
    return (16u + offsetof(perch_event, pmc) + payload_len + 7u) & ~(uint64_t)7u;
}

static void test_full_drops_exactly(void **state)
{
    static uint8_t payload[1000];
    perch_event_queue *q;
    perch_event ev = plain_event(payload, 1000), got;
    uint64_t len = plain_len(1000), fit;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    fit = PERCH_EVENT_QUEUE_MIN_BYTES / len;
    for (uint64_t i = 0; i < fit; i++) {
        payload[0] = (uint8_t)i;
        assert_int_equal(perch_event_queue_try_push(q, &ev), 0);
    }
    for (int i = 0; i < 37; i++)
        assert_int_equal(perch_event_queue_try_push(q, &ev), PERCH_EBUSY);
    /* A record small enough for the bytes left still fits. */
    uint64_t left = PERCH_EVENT_QUEUE_MIN_BYTES - fit * len;
    perch_event small = plain_event(payload, 0);
    int small_ok = perch_event_queue_try_push(q, &small);
    assert_int_equal(small_ok, left >= plain_len(0) ? 0 : PERCH_EBUSY);
    perch_event_queue_stats st = stats_of(q);
    assert_int_equal(st.pushed, fit + (small_ok == 0));
    assert_int_equal(st.dropped, 37 + (small_ok != 0));
    assert_int_equal(st.bytes_high, fit * len + (small_ok == 0 ? plain_len(0) : 0));
    /* Popping one record frees its bytes only at the next pop (it is still borrowed). */
    assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
    assert_int_equal(got.payload[0], 0);
    assert_int_equal(perch_event_queue_try_push(q, &ev), PERCH_EBUSY);
    perch_event_queue_release(q);
    assert_int_equal(perch_event_queue_try_push(q, &ev), 0);
    perch_event_queue_release(q); /* nothing held: no effect */
    assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
    assert_int_equal(got.payload[0], 1);
    st = stats_of(q);
    assert_int_equal(st.dropped, 38 + (small_ok != 0));
    assert_int_equal(st.popped, 2);
    perch_event_queue_destroy(q);
}

/* A batched producer's view of whether the consumer is behind (queue_batch.h): false on an
 * empty ring, true once more than half the ring was published and not released, false again
 * once the consumer released it and the next batch was published. */
static void test_behind(void **state)
{
    static uint8_t payload[1000];
    perch_event_queue *q;
    perch_event ev = plain_event(payload, 1000), got;
    uint64_t len = plain_len(1000), half = PERCH_EVENT_QUEUE_MIN_BYTES / 2 / len + 1;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    perch__event_queue_batch(q, 4096, 4096);
    assert_false(perch__event_queue_behind(q));
    for (uint64_t i = 0; i < half; i++)
        assert_int_equal(perch__event_queue_push_nowait(q, &ev), 0);
    perch__event_queue_flush(q);
    assert_true(perch__event_queue_behind(q));
    for (uint64_t i = 0; i < half; i++)
        assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
    perch_event_queue_release(q);
    assert_true(perch__event_queue_behind(q)); /* not published since: the old view */
    assert_int_equal(perch__event_queue_push_nowait(q, &ev), 0);
    perch__event_queue_flush(q);
    assert_false(perch__event_queue_behind(q));
    perch_event_queue_destroy(q);
}

static void test_oversized(void **state)
{
    perch_event_queue *q;
    uint8_t *payload = calloc(1, PERCH_EVENT_QUEUE_MIN_BYTES);
    uint64_t quarter = PERCH_EVENT_QUEUE_MIN_BYTES / 4;
    uint32_t exact = (uint32_t)(quarter - plain_len(0));
    perch_event ev = plain_event(payload, exact), got;
    (void)state;
    assert_non_null(payload);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(plain_len(exact), quarter);
    assert_int_equal(perch_event_queue_try_push(q, &ev), 0);
    ev.payload_len = exact + 1;
    assert_int_equal(perch_event_queue_try_push(q, &ev), PERCH_ELIMIT);
    assert_int_equal(perch_event_queue_push(q, &ev), PERCH_ELIMIT);
    ev.payload_len = UINT32_MAX; /* no overflow in the length arithmetic */
    ev.ext_len = UINT32_MAX;
    assert_int_equal(perch_event_queue_try_push(q, &ev), PERCH_ELIMIT);
    perch_event_queue_stats st = stats_of(q);
    assert_int_equal(st.oversized, 3);
    assert_int_equal(st.pushed, 1);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(perch_event_queue_pop(q, &got, 0), 0);
    assert_int_equal(got.payload_len, exact);
    assert_null(got.ext);
    perch_event_queue_destroy(q);
    free(payload);
}

static void test_close_with_status(void **state)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    perch_event_queue *q;
    perch_event ev, got;
    (void)state;
    assert_int_equal(perch_event_queue_create(1 << 20, &q), 0);
    assert_int_equal(perch_event_queue_close_status(q), 0);
    for (uint64_t i = 0; i < 3; i++) {
        make_event(i, MAX_PAYLOAD, buf, &ev);
        assert_int_equal(perch_event_queue_push(q, &ev), 0);
    }
    perch_event_queue_close(q, PERCH_EIO);
    perch_event_queue_close(q, 0); /* the first status stays */
    assert_int_equal(perch_event_queue_try_push(q, &ev), PERCH_ESTATE);
    assert_int_equal(perch_event_queue_push(q, &ev), PERCH_ESTATE);
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(perch_event_queue_pop(q, &got, UINT32_MAX), 0);
        assert_true(same_event(i, MAX_PAYLOAD, &got));
    }
    memset(&got, 0x5a, sizeof got);
    perch_event ref = got;
    assert_int_equal(perch_event_queue_pop(q, &got, UINT32_MAX), PERCH_EOF);
    assert_int_equal(perch_event_queue_pop(q, &got, 0), PERCH_EOF);
    assert_memory_equal(&got, &ref, sizeof got); /* untouched on error */
    assert_int_equal(perch_event_queue_close_status(q), PERCH_EIO);
    perch_event_queue_destroy(q);
}

struct producer {
    perch_event_queue *q;
    uint64_t count, accepted, busy;
    uint32_t max_payload;
    bool try_only;
    int err; /* the first push error */
    uint64_t err_at;
    bool batched; /* flush before close, and pause now and then so the consumer waits */
};

static int produce(void *arg)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    struct producer *p = arg;
    for (uint64_t i = 0; i < p->count; i++) {
        perch_event ev;
        int err;
        make_event(i, p->max_payload, buf, &ev);
        err =
            p->try_only ? perch_event_queue_try_push(p->q, &ev) : perch_event_queue_push(p->q, &ev);
        if (err == PERCH_EBUSY && p->try_only) {
            p->busy++;
            continue;
        }
        if (err < 0) {
            p->err = err;
            p->err_at = i;
            break;
        }
        p->accepted++;
        if (p->batched && i % 40000 == 39999)
            perch_sleep_ms(3); /* the consumer empties the ring and sleeps, holding bytes */
    }
    if (p->batched)
        perch__event_queue_flush(p->q);
    perch_event_queue_close(p->q, p->err != 0 ? p->err : 7);
    return p->err;
}

/* Blocking pushes against a consumer that checks every record: nothing lost, nothing
 * reordered, every byte as sent; the producer had to wait (the ring is small). Batched
 * (queue_batch.h): positions exchanged once per few KiB, and both sides had to sleep (the
 * producer with records not yet published, the consumer with bytes not yet released). */
static void two_thread_blocking(bool batched)
{
    struct producer p = {NULL, 200000, 0, 0, 600, false, 0, 0, batched};
    perch_thread *t;
    perch_event ev;
    uint64_t seq = 0, bad = 0;
    int err, result = -1;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &p.q), 0);
    if (batched)
        perch__event_queue_batch(p.q, 4096, 8192);
    assert_int_equal(perch_thread_start(produce, &p, "producer", &t), 0);
    while ((err = perch_event_queue_pop(p.q, &ev, UINT32_MAX)) == 0) {
        bad += !same_event(seq, p.max_payload, &ev);
        seq++;
        if (seq % 30000 == 0)
            perch_sleep_ms(2); /* let the ring fill so the producer waits */
    }
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(err, PERCH_EOF);
    assert_int_equal(result, 0);
    assert_int_equal(bad, 0);
    assert_int_equal(seq, p.count);
    assert_int_equal(perch_event_queue_close_status(p.q), 7);
    perch_event_queue_stats st = stats_of(p.q);
    assert_int_equal(st.pushed, p.count);
    assert_int_equal(st.popped, p.count);
    assert_int_equal(st.dropped, 0);
    assert_true(st.push_waits > 0);
    assert_true(st.bytes_high <= st.capacity);
    perch_event_queue_release(p.q);
    perch_event_queue_destroy(p.q);
}

static void test_two_thread_blocking(void **state)
{
    (void)state;
    two_thread_blocking(false);
}

static void test_two_thread_batched(void **state)
{
    (void)state;
    two_thread_blocking(true);
}

/* try_push against a slow consumer: each record either arrives intact in order or is
 * counted as dropped, exactly. */
static void test_two_thread_try_push(void **state)
{
    struct producer p = {NULL, 200000, 0, 0, 200, true, 0, 0, false};
    perch_thread *t;
    perch_event ev;
    uint64_t popped = 0, bad = 0, last = 0;
    int err;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &p.q), 0);
    assert_int_equal(perch_thread_start(produce, &p, "producer", &t), 0);
    while ((err = perch_event_queue_pop(p.q, &ev, UINT32_MAX)) == 0) {
        /* The sequence number is the timestamp: check the record is the one sent then. */
        bad +=
            (popped > 0 && ev.timestamp <= last) || !same_event(ev.timestamp, p.max_payload, &ev);
        last = ev.timestamp;
        if (++popped % 20000 == 0)
            perch_sleep_ms(1);
    }
    assert_int_equal(perch_thread_join(t, NULL), 0);
    assert_int_equal(err, PERCH_EOF);
    assert_int_equal(bad, 0);
    perch_event_queue_stats st = stats_of(p.q);
    assert_int_equal(st.pushed, p.accepted);
    assert_int_equal(st.dropped, p.busy);
    assert_int_equal(st.pushed + st.dropped, p.count);
    assert_int_equal(st.popped, popped);
    assert_int_equal(popped, p.accepted);
    assert_int_equal(st.push_waits, 0);
    assert_true(st.dropped > 0); /* the consumer's pauses made the ring overflow */
    perch_event_queue_destroy(p.q);
}

static void wait_for_push_waits(const perch_event_queue *q, uint64_t n)
{
    for (int i = 0; i < 5000 && stats_of(q).push_waits < n; i++)
        perch_sleep_ms(1);
    assert_true(stats_of(q).push_waits >= n);
    perch_sleep_ms(20); /* let it reach the condition variable */
}

/* A producer blocked on a full ring returns PERCH_ECANCELED when the consumer cancels. */
static void test_cancel_unblocks_producer(void **state)
{
    struct producer p = {NULL, 1000000, 0, 0, 2000, false, 0, 0, false};
    perch_thread *t;
    perch_event ev;
    int result = 0;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &p.q), 0);
    assert_int_equal(perch_thread_start(produce, &p, "producer", &t), 0);
    wait_for_push_waits(p.q, 1);
    perch_event_queue_cancel(p.q);
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, PERCH_ECANCELED);
    assert_int_equal(p.err_at, p.accepted);
    assert_true(p.accepted > 0 && p.accepted < p.count);
    assert_int_equal(perch_event_queue_close_status(p.q), PERCH_ECANCELED);
    assert_int_equal(perch_event_queue_pop(p.q, &ev, UINT32_MAX), PERCH_ECANCELED);
    assert_int_equal(perch_event_queue_push(p.q, &ev), PERCH_ESTATE);
    assert_int_equal(perch_event_queue_try_push(p.q, &ev), PERCH_ESTATE);
    perch_event_queue_destroy(p.q);
}

/* A producer blocked on a full ring resumes once the consumer drains it. */
static void test_blocked_producer_resumes(void **state)
{
    struct producer p = {NULL, 2000, 0, 0, 2000, false, 0, 0, false};
    perch_thread *t;
    perch_event ev;
    uint64_t n = 0, bad = 0;
    int result = -1;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &p.q), 0);
    assert_int_equal(perch_thread_start(produce, &p, "producer", &t), 0);
    wait_for_push_waits(p.q, 1);
    while (perch_event_queue_pop(p.q, &ev, UINT32_MAX) == 0)
        bad += !same_event(n++, p.max_payload, &ev);
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, 0);
    assert_int_equal(n, p.count);
    assert_int_equal(bad, 0);
    perch_event_queue_destroy(p.q);
}

struct late_pusher {
    perch_event_queue *q;
    uint32_t delay_ms;
    bool close_only;
    bool wake_only;
};

static int push_late(void *arg)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    struct late_pusher *lp = arg;
    perch_event ev;
    perch_sleep_ms(lp->delay_ms);
    if (lp->close_only) {
        perch_event_queue_close(lp->q, 0);
        return 0;
    }
    if (lp->wake_only) {
        perch_event_queue_wake(lp->q);
        return 0;
    }
    make_event(42, MAX_PAYLOAD, buf, &ev);
    return perch_event_queue_try_push(lp->q, &ev);
}

static void test_pop_timeouts_and_wakeups(void **state)
{
    perch_event_queue *q;
    perch_event ev;
    perch_thread *t;
    struct late_pusher lp;
    uint64_t t0, ns;
    int result = -1;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_pop(q, &ev, 0), PERCH_ETIMEDOUT);
    assert_int_equal(perch_event_queue_pop(q, &ev, 80), PERCH_ETIMEDOUT);
    ns = perch_monotonic_ns() - t0;
    assert_true(ns >= 70000000u);
    assert_true(ns < 5000000000u);
    /* A consumer waiting forever is woken by a try_push... */
    lp = (struct late_pusher){q, 50, false, false};
    assert_int_equal(perch_thread_start(push_late, &lp, "late", &t), 0);
    assert_int_equal(perch_event_queue_pop(q, &ev, UINT32_MAX), 0);
    assert_true(same_event(42, MAX_PAYLOAD, &ev));
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, 0);
    /* ... and by a close, with a timeout pending too. */
    lp = (struct late_pusher){q, 50, true, false};
    assert_int_equal(perch_thread_start(push_late, &lp, "late", &t), 0);
    t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_pop(q, &ev, 20000), PERCH_EOF);
    assert_true(perch_monotonic_ns() - t0 < 10000000000ull);
    assert_int_equal(perch_thread_join(t, NULL), 0);
    perch_event_queue_destroy(q);
}

/* A wake ends a wait at once, even one that never times out; one sent before the wait is kept
 * for it (not lost); a record queued is still popped first; a wake is used once. */
static void test_wake(void **state)
{
    static uint8_t buf[MAX_PAYLOAD + 64];
    perch_event_queue *q;
    perch_event ev;
    perch_thread *t;
    struct late_pusher lp;
    uint64_t t0, ns;
    (void)state;
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    lp = (struct late_pusher){q, 50, false, true};
    assert_int_equal(perch_thread_start(push_late, &lp, "late", &t), 0);
    t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_pop(q, &ev, UINT32_MAX), PERCH_ETIMEDOUT);
    assert_true(perch_monotonic_ns() - t0 < 10000000000ull);
    assert_int_equal(perch_thread_join(t, NULL), 0);
    perch_event_queue_wake(q);
    assert_int_equal(perch_event_queue_pop(q, &ev, 0), PERCH_ETIMEDOUT); /* no wait: kept */
    t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_pop(q, &ev, 20000), PERCH_ETIMEDOUT);
    assert_true(perch_monotonic_ns() - t0 < 10000000000ull);
    t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_pop(q, &ev, 80), PERCH_ETIMEDOUT); /* used up */
    ns = perch_monotonic_ns() - t0;
    assert_true(ns >= 70000000u);
    perch_event_queue_wake(q);
    make_event(7, 100, buf, &ev);
    assert_int_equal(perch_event_queue_push(q, &ev), 0);
    assert_int_equal(perch_event_queue_pop(q, &ev, 20000), 0);
    assert_true(same_event(7, 100, &ev));
    perch_event_queue_destroy(q);
}

static int fail_after;
static void *failing_realloc(void *p, size_t n)
{
    if (n == 0 || p != NULL)
        return perch__default_realloc(p, n);
    if (fail_after-- <= 0)
        return NULL;
    return perch__default_realloc(p, n);
}

static void test_allocation_failures(void **state)
{
    perch__realloc_fn saved = perch__realloc_hook;
    int failures = 0;
    (void)state;
    for (int limit = 0; limit < 10; limit++) {
        perch_event_queue *q = NULL;
        fail_after = limit;
        perch__realloc_hook = failing_realloc;
        int err = perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q);
        perch__realloc_hook = saved;
        assert_true(err == 0 || err == PERCH_ENOMEM);
        assert_true((err == 0) == (q != NULL));
        failures += err != 0;
        perch_event_queue_destroy(q);
    }
    assert_int_equal(failures, 5); /* queue, ring, mutex and two condition variables */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_sizes),
        cmocka_unit_test(test_wrap_around),
        cmocka_unit_test(test_full_drops_exactly),
        cmocka_unit_test(test_behind),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_close_with_status),
        cmocka_unit_test(test_two_thread_blocking),
        cmocka_unit_test(test_two_thread_batched),
        cmocka_unit_test(test_two_thread_try_push),
        cmocka_unit_test(test_cancel_unblocks_producer),
        cmocka_unit_test(test_blocked_producer_resumes),
        cmocka_unit_test(test_pop_timeouts_and_wakeups),
        cmocka_unit_test(test_wake),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
