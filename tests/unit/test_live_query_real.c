/*
 * The live query state agrees with `perch report` over the same window of a real trace
 * (perfview_net.4.5.2.x64.etl: samples, no context switches) and of a synthetic one (perch
 * synth: context switches, so CPU time too). The trace goes through the .etl pipeline into
 * the live state; the report runs over the same trace restricted to the window (samples by
 * timestamp, slices clipped to it: what "over a window" means for both). The window's
 * processes are then named by the report's rules (M3: pid and image of each thread's
 * process, "?" and -1 when unknown) from the entities the query plays back, and the top ten
 * and the totals must be the report's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_check.h"
#include "live/query.h"
#include "live_fixture.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

typedef struct trace {
    uint8_t *data; /* the .etl in memory */
    size_t len;
} trace;

static void run(const trace *t, const perch_sink *sink)
{
    perch_input in;
    perch_input_memory(&in, t->data, t->len);
    assert_int_equal(perch_pipeline_etl(&in, "etl:test", sink, NULL, NULL), 0);
}

/* The first and last timestamps of the samples and slices of the trace. */
typedef struct range {
    uint64_t lo, hi;
} range;

static int range_sample(void *ctx, const perch_sample_rec *r)
{
    range *g = ctx;
    g->lo = r->ts < g->lo ? r->ts : g->lo;
    g->hi = r->ts > g->hi ? r->ts : g->hi;
    return 0;
}

static int range_slice(void *ctx, const perch_slice_rec *r)
{
    range *g = ctx;
    g->lo = r->start_ts < g->lo ? r->start_ts : g->lo;
    g->hi = r->end_ts > g->hi ? r->end_ts : g->hi;
    return 0;
}

static char *report_over(const trace *t, uint64_t from, uint64_t to)
{
    perch_report *r;
    perch_sink rs, ws;
    window_filter wf;
    perch_test_text out = {NULL, 0, 0};
    perch_json w;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &rs);
    window_filter_sink(&wf, &rs, from, to, &ws);
    run(t, &ws);
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    perch_report_destroy(r);
    return out.data;
}

typedef struct prow {
    int64_t pid;
    const char *name;
    uint64_t samples;
} prow;

static int cmp_group(const prow *x, const prow *y)
{
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_prow(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return cmp_group(x, y);
}

/* The report's M3 row of a thread, from the entities the query played back. */
static prow name_thread(const kept *k, uint64_t thread_key, uint64_t samples)
{
    prow r = {-1, "?", samples};
    for (size_t i = 0; i < k->nthreads; i++) {
        const perch_thread_rec *t = &k->threads[i];
        if (t->key != thread_key)
            continue;
        r.pid = t->pid != UINT32_MAX ? (int64_t)t->pid : -1;
        for (size_t j = 0; j < k->nprocs && r.pid >= 0; j++)
            if (k->procs[j].key == t->process_key && k->procs[j].image_name[0])
                r.name = k->procs[j].image_name;
    }
    return r;
}

static void compare(perch_live_query *q, const trace *t, uint64_t from, uint64_t to,
                    const char *what)
{
    perch_proto_top_req req = {
        PERCH_TOP_THREADS, PERCH_ORDER_SAMPLES, PERCH_PROTO_MAX_TOP, false, 0, {0, from, to}};
    perch_live_top top;
    kept k;
    perch_sink ks;
    struct jdoc d;
    assert_int_equal(perch_live_query_top(q, &req, &top), 0);
    assert_true(top.span.complete);
    assert_true(top.row_count < PERCH_PROTO_MAX_TOP);
    kept_sink(&k, &ks);
    assert_int_equal(perch_live_query_top_entities(q, PERCH_TOP_THREADS, &top, &ks), 0);
    prow *rows = calloc(top.row_count + 1, sizeof *rows);
    uint32_t n = 0;
    for (uint32_t i = 0; i < top.row_count; i++)
        rows[n++] = name_thread(&k, top.rows[i].key, top.rows[i].samples);
    /* merge equal (pid, name), then the report's order */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (rows[j].samples != UINT64_MAX && cmp_group(&rows[i], &rows[j]) == 0 &&
                rows[i].samples != UINT64_MAX) {
                rows[i].samples += rows[j].samples;
                rows[j].samples = UINT64_MAX; /* merged away */
            }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].samples != UINT64_MAX)
            rows[m++] = rows[i];
    qsort(rows, m, sizeof *rows, cmp_prow);

    char *json = report_over(t, from, to);
    assert_true(jparse(&d, json));
    long tp = jget(&d, 0, "top_processes");
    assert_true(tp >= 0);
    assert_int_equal(jlen(&d, tp), m < 10 ? m : 10);
    for (long i = 0; i < jlen(&d, tp); i++) {
        long row = jat(&d, tp, i);
        if ((int64_t)jnum(&d, jget(&d, row, "pid")) != rows[i].pid ||
            !jstreq(&d, jget(&d, row, "name"), rows[i].name) ||
            (uint64_t)jnum(&d, jget(&d, row, "samples")) != rows[i].samples)
            fail_msg("%s row %ld: live %lld %s %llu, report %.*s", what, i, (long long)rows[i].pid,
                     rows[i].name, (unsigned long long)rows[i].samples, 80,
                     d.n[row].s ? d.n[row].s : "?");
    }
    long slices = jget(&d, 0, "slices");
    assert_int_equal((uint64_t)jnum(&d, jget(&d, 0, "samples")), top.samples);
    assert_int_equal((uint64_t)jnum(&d, jget(&d, slices, "run_ticks")), top.cpu_ticks);
    assert_int_equal((uint64_t)jnum(&d, jget(&d, slices, "idle_ticks")), top.idle_ticks);
    printf("%s [%llu, %llu): %llu samples, %llu cpu ticks, %u threads, %u process rows\n", what,
           (unsigned long long)from, (unsigned long long)to, (unsigned long long)top.samples,
           (unsigned long long)top.cpu_ticks, top.row_count, m);

    /* The process query adds the same thread rows up by process key. */
    perch_proto_top_req preq = req;
    perch_live_top pt;
    preq.what = PERCH_TOP_PROCESSES;
    assert_int_equal(perch_live_query_top(q, &preq, &pt), 0);
    uint64_t sum_p = 0, sum_t = 0;
    for (uint32_t i = 0; i < pt.row_count; i++)
        sum_p += pt.rows[i].samples;
    for (uint32_t i = 0; i < top.row_count; i++)
        sum_t += top.rows[i].samples;
    assert_int_equal(sum_p, sum_t);
    assert_int_equal(sum_t, top.samples);
    perch_free(pt.rows);

    jfree(&d);
    free(json);
    free(rows);
    kept_free(&k);
    perch_free(top.rows);
}

static void agree(const trace *t, const char *label)
{
    perch_live_query_opts o;
    perch_live_query *q;
    perch_sink qs, rs, ts;
    range g = {UINT64_MAX, 0};
    tee tt;
    perch_live_query_opts_default(&o);
    o.span_ms = 3600u * 1000u;
    assert_int_equal(perch_live_query_create(&o, &q), 0);
    perch_live_query_sink(q, &qs);
    memset(&rs, 0, sizeof rs);
    rs.ctx = &g;
    rs.sample = range_sample;
    rs.slice = range_slice;
    tee_sink(&tt, &qs, &rs, &ts);
    run(t, &ts);
    assert_true(g.hi > g.lo);
    uint64_t len = g.hi - g.lo;
    char what[96];
    snprintf(what, sizeof what, "%s whole", label);
    compare(q, t, g.lo, g.hi + 1, what);
    snprintf(what, sizeof what, "%s middle half", label);
    compare(q, t, g.lo + len / 4, g.hi - len / 4, what);
    snprintf(what, sizeof what, "%s odd tenth", label);
    compare(q, t, g.lo + len / 3 + 12345, g.lo + len / 3 + len / 10 + 777, what);
    perch_live_query_destroy(q);
}

static void test_real_trace(void **state)
{
    (void)state;
    trace t;
    t.data =
        perch_test_read_file(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), &t.len);
    agree(&t, "perfview_net");
    free(t.data);
}

static void test_synth_trace(void **state)
{
    (void)state;
    perch_synth_options opt;
    perch_output out;
    perch_memory_out mem;
    trace t;
    perch_synth_options_init(&opt);
    opt.seed = 3;
    opt.target_bytes = 3u << 20;
    perch_output_memory(&out, &mem, 64u << 20);
    assert_int_equal(perch_synth_write(&opt, &out, NULL), 0);
    t.data = perch_output_memory_take(&mem, &t.len);
    agree(&t, "synth seed 3");
    perch_free(t.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_trace),
        cmocka_unit_test(test_synth_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
