/*
 * The report on hostile record streams (a review of `perch report` on crafted captures), fed
 * to its sink directly: slice times out of order count as 0, as the exports clamp them, and
 * sums that would pass 64 bits refuse the slice with PERCH_ELIMIT instead of wrapping; a table
 * of rows (threads, processes, modules) at its cap of keys says PERCH_ELIMIT, and only a failed
 * allocation PERCH_ENOMEM; a thread that never had a record shows the tid its samples carry.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/json.h"
#include "perch/report.h"
#include "failalloc.h"
#include "report/report_internal.h"
#include "testdata.h"

/* A report with the trace info (a clock of perf_freq ticks a second), process 1234 (key 100)
 * and its thread 5678 "main" (key 200). */
static perch_report *report_at(perch_sink *s, uint64_t perf_freq)
{
    perch_report *r = NULL;
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "hostile";
    info.pointer_size = 8;
    info.perf_freq = perf_freq;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, s);
    assert_int_equal(s->trace_info(s->ctx, &info), 0);
    perch_process_rec p = {100, 1234, 4, 1, 0, 0, 0, 0, "game.exe", ""};
    perch_thread_rec t = {200, 100, 5678, 1234, 0, 0, 0, "main"};
    assert_int_equal(s->process(s->ctx, &p), 0);
    assert_int_equal(s->thread(s->ctx, &t), 0);
    return r;
}

static perch_report *report_new(perch_sink *s)
{
    return report_at(s, 10000000);
}

static perch_slice_rec slice_of(uint64_t key, uint32_t tid, uint64_t start, uint64_t end)
{
    perch_slice_rec sl;
    memset(&sl, 0, sizeof sl);
    sl.thread_key = key;
    sl.tid = tid;
    sl.start_ts = start;
    sl.end_ts = end;
    sl.wait_reason = -1;
    sl.wait_mode = -1;
    sl.state = -1;
    return sl;
}

/* The report's text form (free it). */
static char *text_of(perch_report *r)
{
    /* A named file in the working directory: tmpfile() needs a writable drive root on Windows. */
    FILE *f = fopen("test_report_hostile.txt", "w+b");
    assert_non_null(f);
    assert_int_equal(perch_report_write_text(r, f), 0);
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    remove("test_report_hostile.txt");
    return s;
}

static void assert_has(const char *hay, const char *needle)
{
    if (hay == NULL) /* gcc -O2 with UBSan sees a path to here: say it, not print NULL */
        fail_msg("\"%s\" not in: no text", needle);
    else if (strstr(hay, needle) == NULL)
        fail_msg("\"%s\" not in:\n%s", needle, hay);
}

/* An end before the start is a run of 0, for a thread and for the idle thread, in the sums and
 * in the thread's row (before: 2^64 - 10^6 ticks, "1844674407370855.250 ms"). */
static void test_slice_end_before_start(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s);
    perch_slice_rec a = slice_of(200, 5678, 2000000, 1000000);
    perch_slice_rec idle = slice_of(300, 0, 3000000, 2500000);
    perch_slice_rec ok = slice_of(200, 5678, 4000000, 4100000);
    assert_int_equal(s.slice(s.ctx, &a), 0);
    assert_int_equal(s.slice(s.ctx, &idle), 0);
    assert_int_equal(s.slice(s.ctx, &ok), 0);
    char *json = perch_test_report_json(r), *text = text_of(r);
    assert_has(json, "\"slices\":{\"count\":3,\"run_ticks\":100000,\"idle_ticks\":0,");
    assert_has(json, "\"process\":\"game.exe\",\"run_ticks\":100000,");
    assert_has(text, "Slices: 3, run 10.000 ms, idle 0.000 ms,");
    free(json);
    free(text);
    perch_report_destroy(r);
}

/* A trace without a clock rate (perf_freq 0) reads its times at 10 MHz, as the model, the
 * exports and the HTML chart do, and says so (before: every time in the text was 0 ms). */
static void test_no_clock_rate_reads_100ns_ticks(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_at(&s, 0);
    perch_slice_rec a = slice_of(200, 5678, 1000000, 1250000);
    assert_int_equal(s.slice(s.ctx, &a), 0);
    char *text = text_of(r);
    assert_has(text, "clock type 0, 10000000 ticks/s\n");
    assert_has(text, "the trace gives no clock rate: its times are read as 10000000 ticks/s");
    assert_has(text, "Slices: 1, run 25.000 ms, idle 0.000 ms,");
    free(text);
    perch_report_destroy(r);
}

/* A ready time after the switch-in is a latency of 0 (the slice still counts as with_ready);
 * one before it counts as it did (before: 2^64 - 4 * 10^6 ticks). */
static void test_slice_ready_after_start(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s);
    perch_slice_rec late = slice_of(200, 5678, 1000000, 1100000);
    perch_slice_rec ok = slice_of(200, 5678, 2000000, 2100000);
    late.flags = ok.flags = PERCH_SLICE_HAS_READY;
    late.ready_ts = 5000000;
    ok.ready_ts = 1999000;
    assert_int_equal(s.slice(s.ctx, &late), 0);
    assert_int_equal(s.slice(s.ctx, &ok), 0);
    char *json = perch_test_report_json(r);
    assert_has(json, "\"with_ready\":2,\"ready_latency_ticks\":1000,");
    free(json);
    perch_report_destroy(r);
}

/* Two slices whose run times sum past 64 bits: the second is refused with PERCH_ELIMIT and
 * leaves the report as the first left it (before: run_ticks wrapped to 10). The same for the
 * idle time and for the ready latency. */
static void test_slice_sums_do_not_wrap(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s);
    uint64_t big = (UINT64_C(1) << 63) + 5;
    perch_slice_rec run = slice_of(200, 5678, 0, big);
    perch_slice_rec idle = slice_of(300, 0, 0, big);
    perch_slice_rec ready = slice_of(200, 5678, big, big);
    ready.flags = PERCH_SLICE_HAS_READY;
    for (int i = 0; i < 2; i++) {
        int want = i == 0 ? 0 : PERCH_ELIMIT;
        assert_int_equal(s.slice(s.ctx, &run), want);
        assert_int_equal(s.slice(s.ctx, &idle), want);
        assert_int_equal(s.slice(s.ctx, &ready), want);
    }
    char *json = perch_test_report_json(r);
    assert_has(json, "\"slices\":{\"count\":3,\"run_ticks\":9223372036854775813,"
                     "\"idle_ticks\":9223372036854775813,");
    assert_has(json, "\"with_ready\":1,\"ready_latency_ticks\":9223372036854775813,");
    assert_has(json, "\"process\":\"game.exe\",\"run_ticks\":9223372036854775813,");
    free(json);
    perch_report_destroy(r);
}

static perch_sample_rec sample_of(uint64_t key, uint32_t tid)
{
    perch_sample_rec sm;
    memset(&sm, 0, sizeof sm);
    sm.thread_key = key;
    sm.tid = tid;
    sm.kind = PERCH_SAMPLE_TIMER;
    sm.ip = 0x140001000;
    sm.count = 1;
    return sm;
}

/* Samples of RPT_MAX_ROWS distinct unknown threads fill the thread table; a sample of one key
 * more is refused with PERCH_ELIMIT, not "out of memory" (before: PERCH_ENOMEM), and samples of
 * keys it holds still count. */
static void test_rows_cap_is_a_limit(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s); /* thread key 200 is the first row */
    for (uint64_t k = 1; k < RPT_MAX_ROWS; k++) {
        perch_sample_rec sm = sample_of(1000 + k, 7);
        if (s.sample(s.ctx, &sm) != 0)
            fail_msg("sample of key %" PRIu64 " refused", 1000 + k);
    }
    perch_sample_rec more = sample_of(1000 + RPT_MAX_ROWS, 7), known = sample_of(200, 5678);
    assert_int_equal(s.sample(s.ctx, &more), PERCH_ELIMIT);
    assert_int_equal(s.sample(s.ctx, &known), 0);
    perch_report_destroy(r);
}

/* A failed allocation for a table's first row is PERCH_ENOMEM, in each table, and leaves the
 * table as it was: the same records pass once memory is back. */
static void test_rows_alloc_failure_is_enomem(void **state)
{
    perch_report *r = NULL;
    perch_sink s;
    (void)state;
    perch_sample_rec sm = sample_of(999, 4242);
    perch_process_rec p = {101, 99, 4, 1, 0, 0, 0, 0, "x.exe", ""};
    perch_module_rec m;
    memset(&m, 0, sizeof m);
    m.key = 300;
    m.path = m.pdb_name = "";
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &s);
    perch_failalloc_begin(1, true);
    assert_int_equal(s.sample(s.ctx, &sm), PERCH_ENOMEM);
    assert_int_equal(s.process(s.ctx, &p), PERCH_ENOMEM);
    assert_int_equal(s.module(s.ctx, &m), PERCH_ENOMEM);
    perch_failalloc_end();
    assert_int_equal(s.sample(s.ctx, &sm), 0);
    assert_int_equal(s.process(s.ctx, &p), 0);
    assert_int_equal(s.module(s.ctx, &m), 0);
    char *json = perch_test_report_json(r);
    assert_has(json, "\"samples\":1,");
    free(json);
    perch_report_destroy(r);
}

/* Samples and slices of threads that never had a record: their rows keep the tid the records
 * carry, in the text (before: 0, which reads as the idle thread) and in the JSON (before: -1),
 * as the folded export says "thread 4242"; the pid stays unknown (-1). */
static void test_unknown_thread_keeps_tid(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s);
    perch_sample_rec sm = sample_of(999, 4242);
    perch_slice_rec sl = slice_of(998, 4343, 1000000, 1100000);
    assert_int_equal(s.sample(s.ctx, &sm), 0);
    assert_int_equal(s.slice(s.ctx, &sl), 0);
    char *json = perch_test_report_json(r), *text = text_of(r);
    assert_has(json, "{\"name\":\"\",\"pid\":-1,\"process\":\"?\",\"run_ticks\":0,"
                     "\"samples\":1,\"tid\":4242}");
    assert_has(json, "{\"name\":\"\",\"pid\":-1,\"process\":\"?\",\"run_ticks\":100000,"
                     "\"samples\":0,\"tid\":4343}");
    assert_has(text, "\n        -1     4242 ?      ");
    assert_has(text, "\n        -1     4343 ?      ");
    free(json);
    free(text);
    perch_report_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slice_end_before_start),
        cmocka_unit_test(test_slice_ready_after_start),
        cmocka_unit_test(test_no_clock_rate_reads_100ns_ticks),
        cmocka_unit_test(test_slice_sums_do_not_wrap),
        cmocka_unit_test(test_rows_cap_is_a_limit),
        cmocka_unit_test(test_rows_alloc_failure_is_enomem),
        cmocka_unit_test(test_unknown_thread_keeps_tid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
