/*
 * Chrome Trace Event export over the synthetic stream (two passes): valid JSON in the object
 * form with the documented fields, metadata naming processes and threads (pids learnt from
 * late records in pass 1), per-thread sample instants, slice complete events whose ts/dur are
 * exact microseconds from raw ticks and perf_freq, args with PMC deltas under the counter
 * names, and the optional per-CPU tracks. Also the exact tick -> time conversion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export/export_internal.h"
#include "export_fixture.h"
#include "json_check.h"

static char *export_chrome(struct jdoc *d, bool cpu_tracks)
{
    perch_export_options opt;
    size_t len;
    int err;
    char *text;
    perch_export_options_init(&opt);
    opt.cpu_tracks = cpu_tracks;
    text = fx_export(PERCH_EXPORT_CHROME, &opt, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(d, text));
    return text;
}

/* The n-th event (0-based) with ph and tid (tid < 0: any), or -1. */
static long find_event(const struct jdoc *d, const char *ph, double pid, double tid, long n)
{
    long events = jget(d, 0, "traceEvents");
    for (long i = 0; i < jlen(d, events); i++) {
        long e = jat(d, events, i);
        if (!jstreq(d, jget(d, e, "ph"), ph) || (pid >= 0 && jnum(d, jget(d, e, "pid")) != pid) ||
            (tid >= 0 && jnum(d, jget(d, e, "tid")) != tid))
            continue;
        if (n-- == 0)
            return e;
    }
    return -1;
}

static long count_events(const struct jdoc *d, const char *ph, double pid, double tid)
{
    long n = 0;
    while (find_event(d, ph, pid, tid, n) >= 0)
        n++;
    return n;
}

static void test_document(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long events = jget(&d, 0, "traceEvents"), other = jget(&d, 0, "otherData");
    (void)state;
    assert_true(jstreq(&d, jget(&d, 0, "displayTimeUnit"), "ns"));
    assert_true(jnum(&d, jget(&d, other, "perf_freq")) == 1e7);
    assert_true(jnum(&d, jget(&d, other, "samples")) == 17);
    assert_true(jnum(&d, jget(&d, other, "slices")) == 4);
    for (long i = 0; i < jlen(&d, events); i++) {
        long e = jat(&d, events, i);
        assert_int_equal(jtype_of(&d, jget(&d, e, "name")), J_STR);
        assert_int_equal(jtype_of(&d, jget(&d, e, "pid")), J_NUM);
        assert_int_equal(jtype_of(&d, jget(&d, e, "tid")), J_NUM);
        if (!jstreq(&d, jget(&d, e, "ph"), "M"))
            assert_true(jnum(&d, jget(&d, e, "ts")) >= 0);
        if (jstreq(&d, jget(&d, e, "ph"), "i"))
            assert_true(jstreq(&d, jget(&d, e, "s"), "t"));
    }
    /* 4 process/thread names + the unknown process (T4 has no thread record) + one idle
     * track per CPU */
    assert_int_equal(count_events(&d, "M", -1, -1), 7);
    assert_true(jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 1234, 1001, 0), "args"), "name"),
                       "main"));
    assert_true(jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 5678, 0, 0), "args"), "name"),
                       "svc.exe"));
    jfree(&d);
    free(text);
}

static void test_samples(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long e;
    (void)state;
    /* per-thread sample events: T1 5 timer + 2 PMC, T2 4 (pid from its process record),
     * T3 5, T4 1 under the unknown-process pid */
    assert_int_equal(count_events(&d, "i", 1234, 1001), 7);
    assert_int_equal(count_events(&d, "i", 1234, 1002), 4);
    assert_int_equal(count_events(&d, "i", 5678, 2001), 5);
    assert_int_equal(count_events(&d, "i", 2147483646, 3001), 1);
    assert_int_equal(count_events(&d, "i", -1, -1), 17);
    /* sample 0: T1, S1 at 100 us, leaf frame named */
    e = find_event(&d, "i", 1234, 1001, 0);
    assert_true(jstreq(&d, jget(&d, e, "name"), "ntoskrnl.exe!+0x1000"));
    assert_true(jnum(&d, jget(&d, e, "ts")) == 100.0);
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "stack_id")) == 1);
    /* T2's stackless sample at app+0x400 (sample 7 at 450 us) */
    e = find_event(&d, "i", 1234, 1002, 2);
    assert_true(jstreq(&d, jget(&d, e, "name"), "app.exe!+0x400"));
    assert_true(jnum(&d, jget(&d, e, "ts")) == 450.0);
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "stack_id")) == 0);
    /* a PMC sample: T1's fourth event (samples 0, 2, 5, then 8 at 500 us) */
    e = find_event(&d, "i", 1234, 1001, 3);
    assert_true(jstreq(&d, jget(&d, e, "cat"), "pmc_sample"));
    assert_true(jnum(&d, jget(&d, e, "ts")) == 500.0);
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "pmc_source")) == 2);
    jfree(&d);
    free(text);
}

static void test_slices(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long e, args;
    (void)state;
    assert_int_equal(count_events(&d, "X", -1, -1), 4);
    /* T1 [200, 1200) us ready at 150 */
    e = find_event(&d, "X", 1234, 1001, 0);
    args = jget(&d, e, "args");
    assert_true(jnum(&d, jget(&d, e, "ts")) == 200.0);
    assert_true(jnum(&d, jget(&d, e, "dur")) == 1000.0);
    assert_true(jnum(&d, jget(&d, args, "cpu")) == 0);
    assert_true(jnum(&d, jget(&d, args, "priority")) == 8);
    assert_true(jnum(&d, jget(&d, args, "wait_reason")) == 5);
    assert_true(jnum(&d, jget(&d, args, "ready_latency_us")) == 50.0);
    assert_true(jnum(&d, jget(&d, args, "InstructionRetired")) == 1000);
    assert_true(jnum(&d, jget(&d, args, "TotalCycles")) == 500);
    /* T3 [300, 550) us on CPU 1, no wait reason, no ready time */
    e = find_event(&d, "X", 5678, 2001, 0);
    args = jget(&d, e, "args");
    assert_true(jnum(&d, jget(&d, e, "ts")) == 300.0);
    assert_true(jnum(&d, jget(&d, e, "dur")) == 250.0);
    assert_true(jnum(&d, jget(&d, args, "cpu")) == 1);
    assert_int_equal(jget(&d, args, "wait_reason"), -1);
    assert_int_equal(jget(&d, args, "ready_latency_us"), -1);
    assert_true(jnum(&d, jget(&d, args, "InstructionRetired")) == 7);
    /* exact text: 3 decimals, no binary float noise */
    assert_non_null(strstr(text, "\"ts\":200.000,"));
    assert_non_null(strstr(text, "\"dur\":250.000,"));
    jfree(&d);
    free(text);
}

static void test_cpu_tracks(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, true);
    long e;
    (void)state;
    assert_int_equal(count_events(&d, "X", 2147483647, -1), 4);
    e = find_event(&d, "X", 2147483647, 1, 0);
    assert_true(jstreq(&d, jget(&d, e, "name"), "svc.exe (5678) (2001)"));
    assert_true(jnum(&d, jget(&d, e, "dur")) == 250.0);
    assert_true(jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 2147483647, 1, 0), "args"),
                                "name"),
                       "CPU 1"));
    jfree(&d);
    free(text);
}

/* The idle thread is tid 0 on both CPUs at once: one track per CPU, never overlapping. */
static void test_idle_tracks(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long e0 = find_event(&d, "X", 0, 2147418112.0, 0), e1 = find_event(&d, "X", 0, 2147418113.0, 0);
    (void)state;
    assert_true(e0 >= 0 && e1 >= 0);
    assert_int_equal(count_events(&d, "X", 0, 0), 0);
    assert_true(jstreq(&d, jget(&d, e0, "name"), "idle"));
    assert_true(jnum(&d, jget(&d, e0, "dur")) == 200.0);
    assert_true(jnum(&d, jget(&d, e1, "dur")) == 300.0);
    assert_true(jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 0, 2147418113.0, 0), "args"),
                                "name"),
                       "Idle (CPU 1)"));
    jfree(&d);
    free(text);
}

static void test_tick_conversion(void **state)
{
    (void)state;
    assert_int_equal(perch__ticks_to_ns(3, 10000000), 300);
    /* 2.4 GHz cycle clock: 1.5 s + 1 tick (0.41 ns) */
    assert_int_equal(perch__ticks_to_ns(3600000001ull, 2400000000ull), 1500000000ull);
    /* QPC at 3.579545 MHz (ACPI PM timer): 1 tick = 279.365 ns */
    assert_int_equal(perch__ticks_to_ns(1, 3579545), 279);
    assert_int_equal(perch__ticks_to_ns(3579545ull * 86400 * 365, 3579545),
                     86400ull * 365 * 1000000000ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_cpu_tracks),
        cmocka_unit_test(test_idle_tracks),
        cmocka_unit_test(test_tick_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
