/*
 * Capture format version 2: entity records first, changes as small update records.
 * - a version 1 capture written by the version 1 writer (tests/fixtures/capture) still
 *   replays into the same report as the synthetic trace it was made from;
 * - every prefix of a capture that ends on a chunk boundary is self-describing: every thread,
 *   module and process key a record names was delivered before it;
 * - an update costs only the fields that changed, and replays the full current record
 *   (NULL and "" strings stay distinct);
 * - real traces stay within a few percent of their version 1 size.
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
#include "perch/error.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

typedef perch_test_text text;

static char *report_json(const perch_report *r)
{
    text out = {NULL, 0, 0};
    perch_json w;
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json((perch_report *)r, &w), 0);
    return out.data;
}

static char *report_of_capture(const uint8_t *cap, size_t len, int want_stop)
{
    perch_report *r = NULL;
    perch_sink sink;
    perch_capture_status st;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    perch_capture_replay_memory(cap, len, &sink, &st);
    assert_int_equal(st.stop, want_stop);
    char *json = report_json(r);
    perch_report_destroy(r);
    return json;
}

static uint8_t *synth(uint64_t seed, uint32_t cpus, uint64_t bytes, uint64_t ms, size_t *len)
{
    perch_synth_options o;
    perch_output out;
    perch_memory_out mem;
    perch_synth_options_init(&o);
    o.seed = seed;
    o.cpus = cpus;
    o.target_bytes = bytes;
    o.duration_ms = ms;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&o, &out, NULL), 0);
    return perch_output_memory_take(&mem, len);
}

static uint8_t *import(const uint8_t *etl, size_t len, const char *source, uint32_t chunk,
                       size_t *cap_len)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer_opts o;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_input in;
    perch_capture_writer_opts_default(&o);
    if (chunk)
        o.chunk_bytes = chunk;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_capture_writer_create(&out, &o, &w), 0);
    perch_capture_writer_sink(w, &sink);
    perch_input_memory(&in, etl, len);
    assert_int_equal(perch_pipeline_etl(&in, source, &sink, NULL, NULL), 0);
    perch_capture_writer_destroy(w);
    return perch_output_memory_take(&mem, cap_len);
}

/* The version 1 vector: `perch synth --seed 3 --cpus 2 --duration-ms 40` imported by the
 * version 1 writer. Its report equals the report of that .etl, kept beside it (the generator's
 * output differs between compilers, so the .etl is not made again here). */
static uint8_t *fixture(const char *name, size_t *len)
{
    char path[1024];
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/') ? strrchr(src, '/') : strrchr(src, '\\');
    assert_non_null(slash);
    snprintf(path, sizeof path, "%.*s/../fixtures/capture/%s", (int)(slash - src), src, name);
    uint8_t *data = perch_test_read_file(path, len);
    assert_non_null(data);
    return data;
}

static void test_reads_version_1(void **state)
{
    size_t len, want_len;
    (void)state;
    uint8_t *v1 = fixture("v1_synth_seed3.capture", &len);
    char *want = (char *)fixture("v1_synth_seed3.report.json", &want_len);
    assert_int_equal(v1[8], 1); /* version 1 */
    want[want_len] = '\0';      /* perch_test_read_file leaves room for it */
    char *got = report_of_capture(v1, len, PERCH_CAPTURE_STOP_END);
    assert_true(strlen(got) > 1000);
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(v1);
}

/* ---- prefixes are self-describing ------------------------------------------------------ */

typedef struct known {
    perch__hmap keys[3]; /* process, thread, module keys delivered so far */
    uint64_t checked, missing;
} known;

static void note(known *k, int kind, uint64_t key)
{
    assert_int_equal(perch__hmap_put(&k->keys[kind], key, 1), 0);
}

static void check(known *k, int kind, uint64_t key)
{
    uint32_t v;
    if (key == 0)
        return;
    k->checked++;
    k->missing += !perch__hmap_get(&k->keys[kind], key, &v);
}

static int k_process(void *ctx, const perch_process_rec *r)
{
    note(ctx, 0, r->key);
    return 0;
}
static int k_thread(void *ctx, const perch_thread_rec *r)
{
    check(ctx, 0, r->process_key);
    note(ctx, 1, r->key);
    return 0;
}
static int k_module(void *ctx, const perch_module_rec *r)
{
    check(ctx, 0, r->process_key);
    note(ctx, 2, r->key);
    return 0;
}
static int k_sample(void *ctx, const perch_sample_rec *r)
{
    check(ctx, 1, r->thread_key);
    check(ctx, 2, r->module_key);
    return 0;
}
static int k_slice(void *ctx, const perch_slice_rec *r)
{
    check(ctx, 1, r->thread_key);
    return 0;
}
static int k_lbr(void *ctx, const perch_lbr_rec *r)
{
    check(ctx, 1, r->thread_key);
    return 0;
}

typedef struct bounds {
    uint64_t off[4096];
    size_t n;
} bounds;

static int on_chunk(void *ctx, const perch_capture_chunk_info *ci)
{
    bounds *b = ctx;
    if (b->n < 4096)
        b->off[b->n++] = ci->offset + 12 + ci->payload_len;
    return 0;
}

static void test_prefixes_name_everything(void **state)
{
    size_t etl_len, len;
    static bounds b;
    perch_capture_status st;
    perch_capture_read_opts ro = {sizeof ro, on_chunk, &b, true, false};
    perch_input in;
    uint64_t checked = 0;
    (void)state;
    uint8_t *etl = synth(5, 4, 1u << 20, 0, &etl_len);
    uint8_t *cap = import(etl, etl_len, "synth", 4096, &len);
    perch_input_memory(&in, cap, len);
    assert_int_equal(perch_capture_replay_ex(&in, NULL, &ro, &st), 0);
    assert_true(b.n > 20);
    for (size_t i = 0; i < b.n; i++) {
        known k;
        memset(&k, 0, sizeof k);
        perch_sink sink = {&k,       NULL,  k_process, k_thread, k_module, NULL, NULL,  k_slice,
                           k_sample, k_lbr, NULL,      NULL,     NULL,     NULL, false, false};
        perch_capture_replay_memory(cap, (size_t)b.off[i], &sink, &st);
        assert_int_equal(st.good_bytes, b.off[i]);
        assert_int_equal(k.missing, 0);
        checked += k.checked;
        for (int t = 0; t < 3; t++)
            perch__hmap_free(&k.keys[t]);
    }
    assert_true(checked > 10000);
    perch_input_close(&in);
    free(cap);
    free(etl);
}

/* ---- update records -------------------------------------------------------------------- */

typedef struct last_thread {
    int n;
    perch_thread_rec r;
    char name[32];
    bool name_null;
} last_thread;

static int lt_thread(void *ctx, const perch_thread_rec *r)
{
    last_thread *l = ctx;
    l->n++;
    l->r = *r;
    l->name_null = r->name == NULL;
    snprintf(l->name, sizeof l->name, "%s", r->name ? r->name : "");
    return 0;
}

static size_t write_updates(unsigned updates, last_thread *out)
{
    perch_output o;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink s;
    perch_capture_status st;
    size_t len;
    perch_output_memory(&o, &mem, 1 << 20);
    assert_int_equal(perch_capture_writer_create(&o, NULL, &w), 0);
    perch_capture_writer_sink(w, &s);
    perch_thread_rec t = {77, 5, 1234, 40, PERCH_ENTITY_PROVISIONAL, 1000, 0, NULL};
    assert_int_equal(s.thread(s.ctx, &t), 0);
    for (unsigned i = 0; i < updates; i++) {
        t.flags = i % 2 ? PERCH_ENTITY_RUNDOWN : PERCH_ENTITY_STARTED;
        t.name = i + 1 == updates ? "" : NULL; /* the last update: NULL -> "" */
        assert_int_equal(s.thread(s.ctx, &t), 0);
    }
    assert_int_equal(perch_capture_writer_finish(w), 0);
    perch_capture_writer_destroy(w);
    uint8_t *data = perch_output_memory_take(&mem, &len);
    perch_sink back;
    memset(&back, 0, sizeof back);
    back.ctx = out;
    back.thread = lt_thread;
    assert_int_equal(perch_capture_replay_memory(data, len, &back, &st), 0);
    perch_free(data);
    return len;
}

static void test_updates_are_small(void **state)
{
    last_thread one = {0}, many = {0};
    (void)state;
    size_t base = write_updates(1, &one);
    size_t more = write_updates(201, &many);
    assert_int_equal(many.n, 202);
    /* 200 more updates of one field: a key delta, the mask and the flags byte each. */
    printf("  200 one-field updates: %zu bytes\n", more - base);
    assert_true(more - base <= 200 * 3 + 64);
    assert_int_equal(many.r.key, 77);
    assert_int_equal(many.r.process_key, 5);
    assert_int_equal(many.r.tid, 1234);
    assert_int_equal(many.r.pid, 40);
    assert_int_equal(many.r.start_ts, 1000);
    assert_int_equal(many.r.flags, PERCH_ENTITY_STARTED);
    assert_false(many.name_null);
    assert_string_equal(many.name, "");
    assert_true(one.name_null == false);
}

/* ---- sizes ----------------------------------------------------------------------------- */

/* Version 1 sizes of the same imports (source "etl:<file name>"), measured with the version 1
 * writer before the change (docs/capture-format.md, "Size"). */
static void check_size(const char *rel, const char *source, size_t v1, unsigned percent)
{
    size_t len, cap_len;
    uint8_t *etl = perch_test_read_file(perch_test_require_data(rel), &len);
    uint8_t *cap = import(etl, len, source, 0, &cap_len);
    printf("  %s: version 1 %zu bytes, version 2 %zu bytes (%+.2f %%)\n", rel, v1, cap_len,
           100.0 * ((double)cap_len - (double)v1) / (double)v1);
    assert_true(cap_len * 100 <= v1 * (100 + percent));
    free(cap);
    free(etl);
}

static void test_sizes_stay_close(void **state)
{
    (void)state;
    check_size("etl/perfview_net.4.5.2.x64.etl", "etl:perfview_net.4.5.2.x64.etl", 552366, 3);
    check_size("etl/airbus_ShutdownPerfDiagLogger.etl", "etl:airbus_ShutdownPerfDiagLogger.etl",
               321696, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_version_1),
        cmocka_unit_test(test_prefixes_name_everything),
        cmocka_unit_test(test_updates_are_small),
        cmocka_unit_test(test_sizes_stay_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
