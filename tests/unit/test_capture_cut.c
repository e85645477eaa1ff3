/*
 * A capture cut at every byte (issue 11): the reader delivers exactly the records of the
 * complete chunks before the cut, says where it stopped (good_bytes = the end of the last
 * complete chunk), never delivers a record naming a thread, process or module it has not named
 * first, and the report of any cut that holds samples names their processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/hmap.h"
#include "perch/capture.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

typedef struct cutter {
    perch__hmap keys[3];
    uint64_t records, missing, samples;
} cutter;

static void note(cutter *k, int kind, uint64_t key)
{
    k->records++;
    assert_int_equal(perch__hmap_put(&k->keys[kind], key, 1), 0);
}

static void check(cutter *k, int kind, uint64_t key)
{
    uint32_t v;
    k->missing += key != 0 && !perch__hmap_get(&k->keys[kind], key, &v);
}

static int c_any(void *ctx, const void *r)
{
    (void)r;
    ((cutter *)ctx)->records++;
    return 0;
}
static int c_info(void *ctx, const perch_trace_info *r)
{
    return c_any(ctx, r);
}
static int c_counters(void *ctx, const perch_counters_rec *r)
{
    return c_any(ctx, r);
}
static int c_stack(void *ctx, const perch_stack_rec *r)
{
    return c_any(ctx, r);
}
static int c_ledger(void *ctx, const perch_ledger_rec *r)
{
    return c_any(ctx, r);
}
static int c_stat(void *ctx, const perch_stat_rec *r)
{
    return c_any(ctx, r);
}
static int c_process(void *ctx, const perch_process_rec *r)
{
    note(ctx, 0, r->key);
    return 0;
}
static int c_thread(void *ctx, const perch_thread_rec *r)
{
    check(ctx, 0, r->process_key);
    note(ctx, 1, r->key);
    return 0;
}
static int c_module(void *ctx, const perch_module_rec *r)
{
    check(ctx, 0, r->process_key);
    note(ctx, 2, r->key);
    return 0;
}
static int c_sample(void *ctx, const perch_sample_rec *r)
{
    cutter *k = ctx;
    check(k, 1, r->thread_key);
    check(k, 2, r->module_key);
    k->samples++;
    return c_any(ctx, r);
}
static int c_slice(void *ctx, const perch_slice_rec *r)
{
    check(ctx, 1, r->thread_key);
    return c_any(ctx, r);
}
static int c_lbr(void *ctx, const perch_lbr_rec *r)
{
    check(ctx, 1, r->thread_key);
    return c_any(ctx, r);
}

static const perch_sink cutter_sink = {
    NULL,     c_info, c_process, c_thread, c_module, c_counters, c_stack, c_slice,
    c_sample, c_lbr,  c_ledger,  c_stat,   NULL,     NULL,       false,   false,
};

typedef struct chunks {
    uint64_t end[1024];     /* end offset of each complete chunk */
    uint64_t records[1024]; /* records delivered up to and including it */
    size_t n;
    uint64_t total;
} chunks;

static int on_chunk(void *ctx, const perch_capture_chunk_info *ci)
{
    chunks *c = ctx;
    assert_true(c->n < 1024);
    c->total += ci->type == PERCH_CHUNK_STRINGS ? 0 : ci->records;
    c->end[c->n] = ci->offset + 12 + ci->payload_len;
    c->records[c->n++] = c->total;
    return 0;
}

static uint8_t *small_capture(size_t *len)
{
    perch_synth_options o;
    perch_output out, cout;
    perch_memory_out mem, cmem;
    perch_capture_writer_opts wo;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_input in;
    size_t etl_len;
    perch_synth_options_init(&o);
    o.seed = 9;
    o.cpus = 2;
    o.duration_ms = 60;
    perch_output_memory(&out, &mem, (size_t)16 << 20);
    assert_int_equal(perch_synth_write(&o, &out, NULL), 0);
    uint8_t *etl = perch_output_memory_take(&mem, &etl_len);
    perch_capture_writer_opts_default(&wo);
    wo.chunk_bytes = 4096;
    perch_output_memory(&cout, &cmem, (size_t)16 << 20);
    assert_int_equal(perch_capture_writer_create(&cout, &wo, &w), 0);
    perch_capture_writer_sink(w, &sink);
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), 0);
    perch_capture_writer_destroy(w);
    perch_free(etl);
    return perch_output_memory_take(&cmem, len);
}

/* The report of data[0..n) names every process it lists. */
static void assert_report_names(const uint8_t *data, size_t n)
{
    perch_report *r = NULL;
    perch_sink sink;
    perch_capture_status st;
    perch_test_text out = {NULL, 0, 0};
    perch_json w;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    perch_capture_replay_memory(data, n, &sink, &st);
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    const char *top = strstr(out.data, "\"top_processes\":[{\"name\":\"");
    assert_non_null(top);
    assert_null(strstr(top, "\"name\":\"?\""));
    free(out.data);
    perch_report_destroy(r);
}

static void test_cut_at_every_byte(void **state)
{
    size_t len;
    static chunks c;
    perch_capture_status st;
    perch_input in;
    perch_capture_read_opts ro = {sizeof ro, on_chunk, &c, true, false};
    (void)state;
    uint8_t *data = small_capture(&len);
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_capture_replay_ex(&in, NULL, &ro, &st), 0);
    assert_true(c.n > 8);
    printf("  %zu bytes, %zu chunks: replaying every prefix\n", len, c.n);
    size_t at = 0; /* chunks complete in the prefix */
    uint64_t reported = 0;
    for (size_t n = 0; n <= len; n++) {
        cutter k;
        perch_sink sink = cutter_sink;
        memset(&k, 0, sizeof k);
        sink.ctx = &k;
        while (at < c.n && c.end[at] <= n)
            at++;
        perch_capture_replay_memory(data, n, &sink, &st);
        if (n < 64) {
            assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_HEADER);
            assert_int_equal(k.records, 0);
        } else {
            assert_int_equal(st.good_bytes, at ? c.end[at - 1] : 64);
            assert_int_equal(k.records, at ? c.records[at - 1] : 0);
            assert_int_equal(st.stop == PERCH_CAPTURE_STOP_END, at == c.n);
        }
        assert_int_equal(k.missing, 0);
        if (k.samples > 0 && at > 0 && n == c.end[at - 1]) {
            assert_report_names(data, n);
            reported++;
        }
        for (int t = 0; t < 3; t++)
            perch__hmap_free(&k.keys[t]);
    }
    assert_true(reported > 0);
    perch_input_close(&in);
    perch_free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_at_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
