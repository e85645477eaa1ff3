/*
 * Model limits on hostile traces (issue 11): each crafted record stream below used to grow the
 * model without bound until a cap stopped the whole import with PERCH_ELIMIT; now the model
 * stays within a bounded amount of memory, says in the ledger what it dropped (by the rules of
 * docs/model.md), and reaches the end of the trace.
 *
 *  1. Timestamps that stop advancing: no wait window ever expires, so every sample group that
 *     a user part finalizes leaves a stale entry behind the oldest waiting group in the
 *     pending queue. The queue now drops stale entries when it fills (nothing is lost).
 *  2. Stack-key references that are never defined: their groups waited forever, past the
 *     pending-sample bound. Past the bound they are now emitted without the definition
 *     (ledger stack.key_wait_dropped, stack.key_unresolved).
 *  3. Many distinct stack keys defined over time: the definition table kept one entry per key
 *     ever defined; it now keeps those of the latest definition time only.
 *
 * The streams are byte-built records (model_synth.h) fed to the model directly. Memory is
 * measured twice: the model's own live bytes through the allocator hook (every build), and the
 * process's peak RSS (builds without a sanitizer, whose shadow memory and quarantine would
 * hide the figure).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "memcount.h"
#include "model_synth.h"
#include "perch/platform.h"
#include "util/mem.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define K(x) (0xfffff80000000000ull + (x))
#define U(x) (0x00007ff600000000ull + (x))
#define MiB  (1024.0 * 1024.0)

/* ---- live bytes through the allocator hook (memcount.h) ---------------------------- */

struct measure {
    uint64_t rss0;
};

/* Every model allocation from here on is counted. */
static struct measure measure_start(void)
{
    struct measure ms = {perch_peak_rss_bytes()};
    memcount_start();
    return ms;
}

/* Stops counting; asserts the model's peak and (unsanitized) the process's RSS growth. The
 * model must have been destroyed already (its blocks carry the counting header). */
static void measure_check(const char *what, const struct measure *ms, double max_mib)
{
    uint64_t rss1 = perch_peak_rss_bytes();
    memcount_stop();
    printf("  %s: model peak %.2f MiB, peak RSS +%.2f MiB (limit %.0f MiB)\n", what,
           (double)memcount_peak / MiB, (double)(rss1 - ms->rss0) / MiB, max_mib);
    assert_true((double)memcount_peak < max_mib * MiB);
    if (!SANITIZED && ms->rss0 != 0)
        assert_true((double)(rss1 - ms->rss0) < max_mib * MiB);
}

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static perch_model *model_with(recorder *r, perch_sink *sink, uint32_t max_pending)
{
    perch_model_options o;
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    o.max_pending_samples = max_pending;
    perch_model *m = new_model_opts(r, sink, &o);
    assert_non_null(m);
    return m;
}

/* 1. One group waits forever at a timestamp that never moves on; a million and a half more
 * groups at that timestamp are each finalized by their user part right away. */
static void test_stuck_timestamps(void **state)
{
    static recorder r;
    static synth_ev s;
    perch_sink sink;
    uint64_t frames[] = {K(0x100), U(0x200)};
    const uint64_t n = 1500000, t = 5000;
    (void)state;
    struct measure ms = measure_start();
    perch_model *m = model_with(&r, &sink, 0);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_thread(&s, 3, 11, 44, 8, NULL));
    feed(m, ev_sample(&s, t, 0, K(0x100), 7)); /* no part ever comes for this one */
    for (uint64_t i = 0; i < n; i++) {
        feed(m, ev_sample(&s, t, 1, K(0x100), 8));
        feed(m, ev_walk(&s, t, t, 8, frames, 2, 8)); /* a user part: emitted at once */
    }
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "samples.total"), n + 1);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), n);
    assert_int_equal(STAT(&r, "stack.emit.end_of_trace"), 1);
    perch_model_destroy(m);
    measure_check("stuck timestamps", &ms, 8);
}

/* 2. Every sample names a stack key that is never defined. With a pending bound of 10000, all
 * but the last 10000 are emitted early, counted, and the model stays small. */
static void test_keys_never_defined(void **state)
{
    static recorder r;
    static synth_ev s;
    perch_sink sink;
    const uint64_t n = 300000;
    const uint32_t bound = 10000;
    (void)state;
    struct measure ms = measure_start();
    perch_model *m = model_with(&r, &sink, bound);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t ts = 100 + i * 1000; /* 0.1 ms apart: windows close by time and by count */
        feed(m, ev_sample(&s, ts, 0, K(0x100), 7));
        feed(m, ev_keyref(&s, 37, ts + 1, ts, 7, 0xABC000 + i));
    }
    assert_int_equal(perch_model_finish(m), 0);
    uint64_t dropped = LEDGER(&r, "stack.key_wait_dropped");
    printf("  stack.key_wait_dropped %llu, stack.key_unresolved %llu, at the end %llu\n",
           (unsigned long long)dropped, (unsigned long long)LEDGER(&r, "stack.key_unresolved"),
           (unsigned long long)STAT(&r, "stack.emit.end_of_trace"));
    assert_true(dropped >= n - bound - 1 && dropped < n);
    assert_int_equal(dropped + STAT(&r, "stack.emit.end_of_trace"), n);
    assert_int_equal(LEDGER(&r, "stack.key_unresolved"), n); /* every reference, early or late */
    assert_int_equal(LEDGER(&r, "sample.stack_unresolved"), n);
    assert_int_equal(STAT(&r, "samples.total"), n);
    perch_model_destroy(m);
    measure_check("keys never defined", &ms, 16);
}

/* A reference that waits while others are dropped still gets its definition: the drop only
 * takes groups over the bound, oldest first. */
static void test_key_wait_drop_keeps_the_newest(void **state)
{
    static recorder r;
    static synth_ev s;
    perch_sink sink;
    uint64_t kf[] = {K(0x500), K(0x501)};
    (void)state;
    perch_model *m = model_with(&r, &sink, 2);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    for (uint64_t i = 0; i < 4; i++) {
        feed(m, ev_sample(&s, 100 + i, 0, K(0x100), 7));
        feed(m, ev_keyref(&s, 37, 100 + i, 100 + i, 7, 0x77));
    }
    /* 4 samples wait on key 0x77 with a bound of 2: the two oldest were dropped. */
    assert_int_equal(r.nsamples, 2);
    feed(m, ev_keydef(&s, 35, 200, 0x77, kf, 2));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 4);
    assert_int_equal(r.samples[0].stack_id, 0);
    assert_int_equal(r.samples[1].stack_id, 0);
    assert_int_not_equal(r.samples[2].stack_id, 0);
    assert_int_equal(r.samples[2].stack_id, r.samples[3].stack_id);
    assert_int_equal(LEDGER(&r, "stack.key_wait_dropped"), 2);
    assert_int_equal(LEDGER(&r, "stack.key_unresolved"), 2);
    perch_model_destroy(m);
}

/* 3. Half a million distinct keys, each defined once at its own timestamp; a reference at
 * the same timestamp after its definition still resolves to it. */
static void test_many_definitions(void **state)
{
    static recorder r;
    static synth_ev s;
    perch_sink sink;
    const uint64_t n = 500000;
    uint64_t kf[8];
    (void)state;
    for (int i = 0; i < 8; i++)
        kf[i] = K(0x1000 + i);
    struct measure ms = measure_start();
    perch_model *m = model_with(&r, &sink, 0);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    for (uint64_t i = 0; i < n; i++)
        feed(m, ev_keydef(&s, 36, 100 + i, 0x500000 + i, kf, 8));
    uint64_t t = 100 + n - 1; /* the last definition's timestamp */
    feed(m, ev_sample(&s, t, 0, K(0x100), 7));
    feed(m, ev_keyref(&s, 37, t, t, 7, 0x500000 + n - 1));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 1);
    assert_int_not_equal(r.samples[0].stack_id, 0);
    assert_int_equal(LEDGER(&r, "stack.key_unresolved"), 0);
    perch_model_destroy(m);
    measure_check("many definitions", &ms, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_timestamps),
        cmocka_unit_test(test_keys_never_defined),
        cmocka_unit_test(test_key_wait_drop_keeps_the_newest),
        cmocka_unit_test(test_many_definitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
