/*
 * Model: the entity and module caps (perch_model_options.max_entities, max_modules_per_map)
 * drop by their documented rule, count it in the ledger under its own reason and go on, with
 * memory that stays flat however many entities the input makes. Crafted inputs: threads that
 * start and end (forgotten at the cap), threads that never end (evicted live), processes of
 * both kinds, and a process that loads more modules than its map holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "memcount.h"
#include "model_synth.h"

#define K(x) (0xfffff80000000000ull + (x))

static perch_model *capped_model(recorder *r, perch_sink *sink, uint32_t entities, uint32_t modules)
{
    perch_trace_info info;
    perch_model_options o;
    perch_model *m = NULL;
    memset(r, 0, sizeof *r);
    memset(&info, 0, sizeof info);
    memset(&o, 0, sizeof o);
    info.source = "caps";
    info.cpu_count = 4;
    info.pointer_size = 8;
    info.clock_type = 1;
    info.perf_freq = 10000000;
    o.sz = sizeof o;
    o.max_entities = entities;
    o.max_modules_per_map = modules;
    *sink = recorder_sink(r);
    assert_int_equal(perch_model_create(sink, &info, &o, &m), 0);
    return m;
}

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

/* Feeds n threads of process 10 from tid `first` on: start, a ReadyThread, and an end when
 * `end` is set. */
static void feed_threads(perch_model *m, uint32_t first, uint32_t n, uint64_t *ts, bool end)
{
    static synth_ev s;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tid = first + 4 * i;
        feed(m, ev_thread(&s, 1, ++*ts, 10, tid, "worker"));
        feed(m, ev_ready(&s, ++*ts, 0, tid));
        if (end)
            feed(m, ev_thread(&s, 2, ++*ts, 10, tid, NULL));
    }
}

/* Memory after `more` further entities is within 10% (plus 64 KiB) of memory after `warm`. */
static void assert_flat(size_t warm_peak, size_t later_peak)
{
    if (later_peak > warm_peak + warm_peak / 10 + (64u << 10))
        fail_msg("peak grew from %zu to %zu bytes", warm_peak, later_peak);
}

static void run_threads(bool end, const char *reason)
{
    recorder *r = calloc(1, sizeof *r);
    perch_sink sink;
    uint64_t ts = 100;
    assert_non_null(r);
    memcount_start();
    perch_model *m = capped_model(r, &sink, 128, 0);
    feed_threads(m, 1000, 2000, &ts, end);
    size_t warm = memcount_peak;
    memcount_reset_peak();
    feed_threads(m, 100000, 20000, &ts, end);
    assert_flat(warm, memcount_peak);
    assert_int_equal(perch_model_finish(m), 0);
    perch_model_destroy(m);
    memcount_stop();
    /* Every thread beyond the cap made room by the rule: 22000 threads, at most 128 live
     * slots (the idle thread and the process take none of them). */
    assert_true(LEDGER(r, reason) >= 22000 - 128);
    assert_true(LEDGER(r, reason) <= 22000);
    assert_int_equal(STAT(r, "threads.total"), 22000);
    assert_int_equal(r->unknown_refs, 0);
    free(r);
}

static void test_thread_cap_forgets_ended(void **state)
{
    (void)state;
    run_threads(true, "entity.thread_forgotten");
}

static void test_thread_cap_evicts_live(void **state)
{
    (void)state;
    run_threads(false, "entity.thread_evicted");
}

static void feed_processes(perch_model *m, uint32_t first, uint32_t n, uint64_t *ts, bool end)
{
    static synth_ev s;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pid = first + 4 * i;
        feed(m, ev_process(&s, 1, ++*ts, pid, 4, "app.exe", "app.exe --run"));
        if (end)
            feed(m, ev_process(&s, 2, ++*ts, pid, 4, "app.exe", "app.exe --run"));
    }
}

static void run_processes(bool end, const char *reason)
{
    recorder *r = calloc(1, sizeof *r);
    perch_sink sink;
    uint64_t ts = 100;
    assert_non_null(r);
    memcount_start();
    perch_model *m = capped_model(r, &sink, 64, 0);
    feed_processes(m, 1000, 1000, &ts, end);
    size_t warm = memcount_peak;
    memcount_reset_peak();
    feed_processes(m, 100000, 10000, &ts, end);
    assert_flat(warm, memcount_peak);
    assert_int_equal(perch_model_finish(m), 0);
    perch_model_destroy(m);
    memcount_stop();
    assert_true(LEDGER(r, reason) >= 11000 - 64);
    assert_int_equal(STAT(r, "processes.total"), 11000);
    free(r);
}

static void test_process_cap_forgets_ended(void **state)
{
    (void)state;
    run_processes(true, "entity.process_forgotten");
}

static void test_process_cap_evicts_live(void **state)
{
    (void)state;
    run_processes(false, "entity.process_evicted");
}

/* A map holds max_modules_per_map modules; later loads are records but not mapped. */
static void test_module_map_full(void **state)
{
    recorder *r = calloc(1, sizeof *r);
    perch_sink sink;
    static synth_ev s;
    (void)state;
    assert_non_null(r);
    memcount_start();
    perch_model *m = capped_model(r, &sink, 0, 16);
    feed(m, ev_process(&s, 3, 10, 40, 4, "big.exe", "big.exe"));
    feed(m, ev_thread(&s, 3, 11, 40, 44, NULL));
    for (uint32_t i = 0; i < 200; i++)
        feed(m, ev_image(&s, 10, 20 + i, 40, 0x10000000ull + 0x100000ull * i, 0x10000, "a.dll"));
    size_t warm = memcount_peak;
    memcount_reset_peak();
    for (uint32_t i = 200; i < 5000; i++)
        feed(m, ev_image(&s, 10, 20 + i, 40, 0x10000000ull + 0x100000ull * i, 0x10000, "a.dll"));
    assert_flat(warm, memcount_peak);
    /* A sample in a mapped module is attributed; one in a module past the cap is not. */
    feed(m, ev_sample(&s, 9000, 0, 0x10000000ull + 0x10, 44));
    feed(m, ev_sample(&s, 9001, 0, 0x10000000ull + 0x100000ull * 100 + 0x10, 44));
    assert_int_equal(perch_model_finish(m), 0);
    perch_model_destroy(m);
    memcount_stop();
    assert_int_equal(LEDGER(r, "module.map_full"), 5000 - 16);
    assert_int_equal(STAT(r, "modules.total"), 5000);
    assert_int_equal(r->nsamples, 2);
    assert_int_not_equal(r->samples[0].module_key, 0);
    assert_int_equal(r->samples[1].module_key, 0);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_cap_forgets_ended),
        cmocka_unit_test(test_thread_cap_evicts_live),
        cmocka_unit_test(test_process_cap_forgets_ended),
        cmocka_unit_test(test_process_cap_evicts_live),
        cmocka_unit_test(test_module_map_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
