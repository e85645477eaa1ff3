/*
 * Import round trip at library level: .etl -> pipeline -> capture writer -> memory -> replay ->
 * report gives exactly the JSON of .etl -> pipeline -> report, for every real trace in the data
 * folder (the ones with kernel events and the ones without) and for two synthetic traces. Also
 * the size promise of docs/capture-format.md: the capture of the real x64 PerfView trace is
 * smaller than its XPRESS-compressed .etl and at most 15 % of its uncompressed size (the sum of
 * the decoded buffer sizes, read from the reader's buffer index).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etl/reader.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

typedef perch_test_text text;

/* The report JSON of whatever play() feeds into the report's sink (caller frees). */
typedef int (*play_fn)(const uint8_t *data, size_t len, const perch_sink *sink);

static char *report_of(play_fn play, const uint8_t *data, size_t len)
{
    perch_report *r = NULL;
    perch_sink sink;
    text out = {NULL, 0, 0};
    perch_json w;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    assert_int_equal(play(data, len, &sink), 0);
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    perch_report_destroy(r);
    return out.data;
}

static int play_etl(const uint8_t *data, size_t len, const perch_sink *sink)
{
    perch_input in;
    perch_input_memory(&in, data, len);
    return perch_pipeline_etl(&in, "etl:roundtrip", sink, NULL, NULL);
}

static int play_capture(const uint8_t *data, size_t len, const perch_sink *sink)
{
    perch_capture_status st;
    int err = perch_capture_replay_memory(data, len, sink, &st);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_END);
    return err;
}

/* What perch import does, into memory (caller frees). */
static uint8_t *import_of(const uint8_t *etl, size_t len, size_t *cap_len)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    perch_capture_writer_sink(w, &sink);
    assert_int_equal(play_etl(etl, len, &sink), 0);
    perch_capture_writer_destroy(w);
    return perch_output_memory_take(&mem, cap_len);
}

/* Imports the trace, reports both, asserts equality; returns the capture size. */
static size_t check_round_trip(const char *name, const uint8_t *etl, size_t len)
{
    size_t cap_len;
    uint8_t *cap = import_of(etl, len, &cap_len);
    char *direct = report_of(play_etl, etl, len);
    char *replayed = report_of(play_capture, cap, cap_len);
    assert_non_null(strstr(direct, "\"samples\":"));
    assert_string_equal(replayed, direct);
    printf("  %-40s %9zu -> %7zu bytes, report %zu bytes identical\n", name, len, cap_len,
           strlen(direct));
    free(cap);
    free(direct);
    free(replayed);
    return cap_len;
}

static void test_real_traces(void **state)
{
    (void)state;
    for (size_t i = 0; i < perch_test_etl_trace_count; i++) {
        char rel[128];
        size_t len;
        snprintf(rel, sizeof rel, "etl/%s", perch_test_etl_traces[i]);
        uint8_t *etl = perch_test_read_file(perch_test_require_data(rel), &len);
        check_round_trip(perch_test_etl_traces[i], etl, len);
        free(etl);
    }
}

static uint8_t *synth_trace(uint64_t seed, size_t *len)
{
    perch_synth_options opt;
    perch_output out;
    perch_memory_out mem;
    perch_synth_options_init(&opt);
    opt.seed = seed;
    opt.target_bytes = 3u << 20;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&opt, &out, NULL), 0);
    return perch_output_memory_take(&mem, len);
}

/* Two seeds (different scenarios, so different reports) both survive the round trip. */
static void test_synthetic_traces(void **state)
{
    size_t len3, len11;
    (void)state;
    uint8_t *a = synth_trace(3, &len3), *b = synth_trace(11, &len11);
    check_round_trip("synth seed 3", a, len3);
    check_round_trip("synth seed 11", b, len11);
    char *ra = report_of(play_etl, a, len3), *rb = report_of(play_etl, b, len11);
    assert_string_not_equal(ra, rb);
    free(ra);
    free(rb);
    free(a);
    free(b);
}

/* Sum of the decoded sizes of every buffer (headers included): the trace uncompressed. */
static uint64_t uncompressed_size(const uint8_t *etl, size_t len, uint64_t *compressed)
{
    perch_etl_reader *r = NULL;
    uint64_t sum = 0;
    assert_int_equal(perch_etl_open_memory(etl, len, NULL, &r, NULL), 0);
    for (uint32_t i = 0; i < r->count; i++)
        sum += r->index[i].used;
    *compressed = perch_etl_stats_of(r)->compressed_buffers;
    perch_etl_destroy(r);
    return sum;
}

static void test_x64_capture_size(void **state)
{
    size_t len;
    uint64_t compressed;
    (void)state;
    uint8_t *etl =
        perch_test_read_file(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), &len);
    uint64_t raw = uncompressed_size(etl, len, &compressed);
    size_t cap = check_round_trip("perfview_net.4.5.2.x64.etl", etl, len);
    printf("  x64 capture %zu bytes = %.2f %% of the .etl (%zu, %llu compressed buffers), "
           "%.2f %% of it uncompressed (%llu)\n",
           cap, 100.0 * (double)cap / (double)len, len, (unsigned long long)compressed,
           100.0 * (double)cap / (double)raw, (unsigned long long)raw);
    assert_true(compressed > 0); /* the XPRESS-compressed trace this promise is about */
    assert_true(raw > len);
    assert_true(cap < len);
    assert_true((uint64_t)cap * 100 <= raw * 15);
    free(etl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_synthetic_traces),
        cmocka_unit_test(test_x64_capture_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
