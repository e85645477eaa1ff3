/*
 * Allocation-failure sweeps (tests/support/failalloc.h) of the report: the sink that
 * aggregates the record stream and its three writers (text, --json, --html), on the model's
 * output for a real trace slice and for a small synthetic trace. With the N-th allocation
 * failing, for every N, each run ends with PERCH_ENOMEM or writes the reference bytes, and
 * nothing stays allocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/report.h"
#include "sweep_inputs.h"

enum report_kind { REPORT_TEXT, REPORT_JSON, REPORT_HTML, REPORT_KINDS };
static const char *const kind_names[REPORT_KINDS] = {"text", "json", "html"};

struct report_run {
    synth_rec stream;
    enum report_kind kind;
    FILE *f;
    uint8_t *ref;
    size_t ref_len;
};

static int write_report(struct report_run *r, perch_report *rep)
{
    perch_json w;
    switch (r->kind) {
    case REPORT_TEXT:
        return perch_report_write_text(rep, r->f);
    case REPORT_JSON:
        perch_json_init(&w, perch_json_file_sink, r->f);
        return perch_report_write_json(rep, &w);
    default:
        return perch_report_write_html(rep, r->f);
    }
}

static int report_run(void *ctx)
{
    struct report_run *r = ctx;
    perch_report *rep = NULL;
    perch_sink sink;
    int err = perch_report_create(NULL, &rep);
    if (err == 0 && r->kind == REPORT_HTML)
        err = perch_report_enable_html(rep);
    if (err == 0) {
        perch_report_sink(rep, &sink);
        err = sweep_replay_rec(&r->stream, &sink);
    }
    if (err == 0)
        err = write_report(r, rep);
    perch_report_destroy(rep);
    return err;
}

/* The bytes in r->f (malloc'd); rewinds and empties it for the next run. */
static uint8_t *take_file(struct report_run *r, size_t *len)
{
    long n = ftell(r->f);
    assert_true(n >= 0);
    uint8_t *data = malloc((size_t)n + 1);
    assert_non_null(data);
    rewind(r->f);
    *len = fread(data, 1, (size_t)n, r->f);
    assert_int_equal(*len, (size_t)n);
    fclose(r->f);
    r->f = fopen("sweep_report.tmp", "w+b");
    assert_non_null(r->f);
    return data;
}

static perch_sweep_outcome report_verify(void *ctx, int err, uint64_t fail_at)
{
    struct report_run *r = ctx;
    size_t len = 0;
    uint8_t *data = take_file(r, &len);
    perch_sweep_outcome o = PERCH_SWEEP_OUTCOMES;
    if (err == 0 && fail_at == 0 && r->ref == NULL) {
        r->ref = data;
        r->ref_len = len;
        return PERCH_SWEEP_BENIGN;
    }
    if (err == 0 && len == r->ref_len && memcmp(data, r->ref, len) == 0)
        o = PERCH_SWEEP_BENIGN;
    free(data);
    return o;
}

static void sweep_reports(sweep_input in)
{
    struct report_run r;
    memset(&r, 0, sizeof r);
    sweep_record(&in, &r.stream);
    r.f = fopen("sweep_report.tmp", "w+b");
    assert_non_null(r.f);
    for (int k = 0; k < REPORT_KINDS; k++) {
        char name[64];
        r.kind = (enum report_kind)k;
        snprintf(name, sizeof name, "report %s (%s)", kind_names[k], in.name);
        perch_sweep s = {name, report_run, report_verify, &r, true, 1};
        perch_sweep_alloc(&s);
        assert_true(r.ref_len > 0);
        free(r.ref);
        r.ref = NULL;
    }
    fclose(r.f);
    remove("sweep_report.tmp");
    synth_free(&r.stream);
    sweep_input_free(&in);
}

static void test_reports_x64(void **state)
{
    sweep_reports(sweep_x64_slice());
}

static void test_reports_synth(void **state)
{
    sweep_reports(sweep_synth(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reports_x64),
        cmocka_unit_test(test_reports_synth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
