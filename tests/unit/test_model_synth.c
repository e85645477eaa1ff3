/*
 * The model against the synthetic trace generator (include/perch/synth.h): a trace written in
 * memory goes through the .etl reader, the model and the report, and every figure the
 * generator reports must come back: samples and their stack split, frames, completed and idle
 * slices (which no public trace has), processes, threads, images, PDB identities, LBR and PMC
 * samples, top processes and modules. The generator is not ground truth (it shares the
 * layouts doc with the reader), but it is an independent writer of events real traces lack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

typedef struct tee {
    perch_sink report;
    uint64_t slices_closed, idle_closed, threads, processes, modules, lbr, pmc, counters;
    uint64_t ready_slices;
} tee;

/* Entity records are upserts: count each key once. */
#define KEY_BITS (1u << 20)
static uint8_t key_seen[3][KEY_BITS / 8];
static uint64_t first_time(int kind, uint64_t key)
{
    assert_true(key < KEY_BITS);
    uint8_t bit = (uint8_t)(1u << (key % 8));
    uint64_t fresh = (key_seen[kind][key / 8] & bit) == 0;
    key_seen[kind][key / 8] |= bit;
    return fresh;
}

static int t_info(void *c, const perch_trace_info *i)
{
    tee *t = c;
    return t->report.trace_info(t->report.ctx, i);
}
static int t_process(void *c, const perch_process_rec *r)
{
    tee *t = c;
    t->processes += first_time(0, r->key);
    return t->report.process(t->report.ctx, r);
}
static int t_thread(void *c, const perch_thread_rec *r)
{
    tee *t = c;
    t->threads += first_time(1, r->key);
    return t->report.thread(t->report.ctx, r);
}
static int t_module(void *c, const perch_module_rec *r)
{
    tee *t = c;
    t->modules += first_time(2, r->key);
    return t->report.module(t->report.ctx, r);
}
static int t_counters(void *c, const perch_counters_rec *r)
{
    tee *t = c;
    t->counters += r->count;
    return 0;
}
static int t_stack(void *c, const perch_stack_rec *r)
{
    tee *t = c;
    return t->report.stack(t->report.ctx, r);
}
static int t_slice(void *c, const perch_slice_rec *r)
{
    tee *t = c;
    if ((r->flags & (PERCH_SLICE_OPEN_START | PERCH_SLICE_OPEN_END)) == 0) {
        t->slices_closed++;
        t->idle_closed += r->tid == 0;
    }
    t->ready_slices += (r->flags & PERCH_SLICE_HAS_READY) != 0;
    return t->report.slice(t->report.ctx, r);
}
static int t_sample(void *c, const perch_sample_rec *r)
{
    tee *t = c;
    t->pmc += r->kind == PERCH_SAMPLE_PMC;
    return t->report.sample(t->report.ctx, r);
}
static int t_lbr(void *c, const perch_lbr_rec *r)
{
    tee *t = c;
    t->lbr++;
    return t->report.lbr(t->report.ctx, r);
}
static int t_ledger(void *c, const perch_ledger_rec *r)
{
    tee *t = c;
    return t->report.ledger(t->report.ctx, r);
}
static int t_stat(void *c, const perch_stat_rec *r)
{
    tee *t = c;
    return t->report.stat(t->report.ctx, r);
}

typedef perch_test_text text;

static void expect(const char *json, const char *key, uint64_t want)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":%llu,", key, (unsigned long long)want);
    if (strstr(json, pat) == NULL)
        fail_msg("report lacks %s", pat);
}

static void expect_rows(const char *json, const char *key, const perch_synth_top_row *rows,
                        uint32_t n, bool with_pid)
{
    text want = {NULL, 0, 0};
    char row[128];
    snprintf(row, sizeof row, "\"%s\":[", key);
    perch_test_text_sink(&want, row, strlen(row));
    for (uint32_t i = 0; i < n; i++) {
        if (with_pid)
            snprintf(row, sizeof row, "%s{\"name\":\"%s\",\"pid\":%u,\"samples\":%llu}",
                     i ? "," : "", rows[i].name, rows[i].pid,
                     (unsigned long long)rows[i].samples);
        else
            snprintf(row, sizeof row, "%s{\"name\":\"%s\",\"samples\":%llu}", i ? "," : "",
                     rows[i].name, (unsigned long long)rows[i].samples);
        perch_test_text_sink(&want, row, strlen(row));
    }
    perch_test_text_sink(&want, "]", 1);
    if (strstr(json, want.data) == NULL)
        fail_msg("report lacks %s", want.data);
    free(want.data);
}

static void test_synth_figures_come_back(void **state)
{
    perch_synth_options o;
    perch_synth_stats st;
    perch_output out;
    perch_memory_out mem;
    perch_input in;
    perch_report *r = NULL;
    perch_json w;
    text json = {NULL, 0, 0};
    size_t len;
    tee t;
    (void)state;
    perch_synth_options_init(&o);
    o.target_bytes = 4u << 20;
    o.cpus = 4;
    o.seed = 7;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&o, &out, &st), 0);
    uint8_t *bytes = perch_output_memory_take(&mem, &len);
    assert_true(st.samples > 1000 && st.cswitches > 1000);

    memset(&t, 0, sizeof t);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &t.report);
    perch_sink sink = {&t,      t_info,  t_process, t_thread, t_module, t_counters,
                       t_stack, t_slice, t_sample,  t_lbr,    t_ledger, t_stat,
                       NULL,    NULL,    false,     false};
    perch_input_memory(&in, bytes, len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), 0);
    perch_json_init(&w, perch_test_text_sink, &json);
    assert_int_equal(perch_report_write_json(r, &w), 0);

    expect(json.data, "samples", st.samples);
    expect(json.data, "samples_with_stack", st.samples_with_stack);
    expect(json.data, "stacks_merged", st.stacks_merged);
    expect(json.data, "stacks_kernel_only", st.stacks_kernel_only);
    expect(json.data, "stacks_user_only", st.stacks_user_only);
    expect(json.data, "frames_total", st.frames_total);
    expect(json.data, "pdb_ids", st.pdb_ids);
    expect(json.data, "pmc_samples", st.pmc_samples);
    expect_rows(json.data, "top_processes", st.top_processes, st.top_process_count, true);
    expect_rows(json.data, "top_modules", st.top_modules, st.top_module_count, false);
    assert_int_equal(t.slices_closed, st.slices);
    assert_int_equal(t.idle_closed, st.idle_slices);
    assert_int_equal(t.threads, st.threads);
    assert_int_equal(t.processes, st.processes);
    assert_int_equal(t.modules, st.images);
    assert_int_equal(t.lbr, st.lbr_records);
    assert_int_equal(t.pmc, st.pmc_samples);
    assert_true(t.counters >= 2);     /* PmcCounterConfig names the CSwitch counters */
    assert_true(t.ready_slices > 0);  /* ReadyThread gave slices their ready time */
    expect(json.data, "stale", 0);    /* the generator never mismatches switches */
    perch_report_destroy(r);
    free(json.data);
    free(bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synth_figures_come_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
