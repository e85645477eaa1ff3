/*
 * The model and the report on the real traces: `perch report --json` figures must equal the
 * independent reference (../shared/data/reference/model.json, rules in report-reference.md)
 * for perfview_net.4.5.2.x64.etl and airbus_ShutdownPerfDiagLogger.etl; every sample is
 * accounted for (a stack, or a ledger reason); the merged / kernel-only / user-only split is
 * explained sample by sample. (That a capture replays into the same report, for every real
 * trace: test_roundtrip.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "testdata.h"

typedef perch_test_text text;

/* Runs the pipeline over rel and returns the report JSON (caller frees). extra, when not NULL,
 * also receives every record (after the report). */
static char *report_json(const char *rel, const perch_sink *extra)
{
    perch_input in;
    perch_report *r = NULL;
    perch_sink sink;
    text out = {NULL, 0, 0};
    perch_json w;
    assert_int_equal(perch_input_open_file(&in, perch_test_require_data(rel)), 0);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    assert_int_equal(perch_pipeline_etl(&in, "etl:test", extra ? extra : &sink, NULL, NULL), 0);
    (void)sink;
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    perch_report_destroy(r);
    return out.data;
}

/* The JSON value after "key": at or after from, with whitespace outside strings removed. */
static char *value_of(const char *from, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(from, pat);
    if (p == NULL)
        return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == '\n')
        p++;
    int depth = 0;
    bool in_str = false;
    char *v = malloc(strlen(p) + 1), *o = v;
    for (; *p; p++) {
        if (in_str) {
            *o++ = *p;
            if (*p == '\\' && p[1])
                *o++ = *++p;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p == ' ' || *p == '\n')
            continue;
        if (depth == 0 && (*p == ',' || *p == '}' || *p == ']'))
            break;
        if (*p == '"')
            in_str = true;
        depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
        *o++ = *p;
        if (depth == 0 && (*p == '}' || *p == ']'))
            break;
    }
    *o = '\0';
    return v;
}

static char *reference_section(const char *name)
{
    size_t len;
    uint8_t *raw = perch_test_read_file(perch_test_require_data("reference/model.json"), &len);
    char *ref = malloc(len + 1), pat[128];
    assert_non_null(ref);
    memcpy(ref, raw, len);
    ref[len] = '\0'; /* the file is not NUL-terminated */
    free(raw);
    snprintf(pat, sizeof pat, "\"%s\":", name);
    char *sec = strstr(ref, pat);
    assert_non_null(sec);
    char *copy = malloc(strlen(sec) + 1);
    assert_non_null(copy);
    memcpy(copy, sec, strlen(sec) + 1);
    free(ref);
    return copy;
}

static void compare_with_reference(const char *file)
{
    static const char *const keys[] = {"samples",       "samples_with_stack", "stacks_merged",
                                       "stacks_kernel_only", "stacks_user_only", "frames_total",
                                       "stack_hash",    "top_processes",      "top_modules",
                                       "pdb_ids",       "header"};
    char rel[128];
    snprintf(rel, sizeof rel, "etl/%s", file);
    char *mine = report_json(rel, NULL), *ref = reference_section(file);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *a = value_of(mine, keys[i]), *b = value_of(ref, keys[i]);
        assert_non_null(a);
        assert_non_null(b);
        if (strcmp(a, b) != 0)
            fail_msg("%s %s: perch %s, reference %s", file, keys[i], a, b);
        free(a);
        free(b);
    }
    /* by_kind: every kind the reference counts (perch also names PmcCounterConfig) */
    char *ref_kinds = value_of(ref, "by_kind"), *my_kinds = value_of(mine, "by_kind");
    int compared = 0;
    for (char *p = strchr(ref_kinds, '"'); p != NULL; p = strchr(p, '"')) {
        char name[64];
        char *end = strchr(p + 1, '"');
        snprintf(name, sizeof name, "%.*s", (int)(end - p - 1), p + 1);
        char *a = value_of(my_kinds, name), *b = value_of(ref_kinds, name);
        assert_non_null(a);
        if (strcmp(a, b) != 0)
            fail_msg("%s by_kind.%s: perch %s, reference %s", file, name, a, b);
        free(a);
        free(b);
        compared++;
        p = strchr(end + 1, ',');
        if (p == NULL)
            break;
    }
    assert_true(compared >= 26);
    free(ref_kinds);
    free(my_kinds);
    free(mine);
    free(ref);
}

static void test_x64_equals_reference(void **state)
{
    (void)state;
    compare_with_reference("perfview_net.4.5.2.x64.etl");
}

static void test_airbus_equals_reference(void **state)
{
    (void)state;
    compare_with_reference("airbus_ShutdownPerfDiagLogger.etl");
}

static uint64_t num(const char *json, const char *key)
{
    char *v = value_of(json, key);
    uint64_t n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* Every sample has a stack or a ledger reason. */
static void test_every_sample_accounted(void **state)
{
    (void)state;
    char *j = report_json("etl/perfview_net.4.5.2.x64.etl", NULL);
    char *ledger = value_of(j, "ledger");
    uint64_t samples = num(j, "samples"), with = num(j, "samples_with_stack");
    uint64_t none = num(ledger, "sample.no_stack"), unres = num(ledger, "sample.stack_unresolved");
    assert_true(samples > 0);
    assert_int_equal(with + none + unres, samples);
    assert_int_equal(num(j, "stacks_merged") + num(j, "stacks_kernel_only") +
                         num(j, "stacks_user_only"),
                     with);
    free(ledger);
    free(j);
}

/* The split explained sample by sample: a user-only stack belongs to a sample taken in user
 * mode (user IP), a merged or kernel-only stack to one taken in kernel mode (kernel IP); the
 * first frame is the IP. */
typedef struct split_check {
    uint32_t nstacks, cap;
    uint32_t *kernel, *count;
    uint64_t *first;
    uint64_t user_only_user_ip, kernel_part_kernel_ip, other, first_is_ip, stacked;
} split_check;

static int split_stack(void *ctx, const perch_stack_rec *s)
{
    split_check *c = ctx;
    if (c->nstacks == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->kernel = realloc(c->kernel, c->cap * sizeof *c->kernel);
        c->count = realloc(c->count, c->cap * sizeof *c->count);
        c->first = realloc(c->first, c->cap * sizeof *c->first);
    }
    assert_int_equal(s->id, c->nstacks + 1);
    c->kernel[c->nstacks] = s->kernel_frames;
    c->count[c->nstacks] = s->frame_count;
    c->first[c->nstacks] = s->frames[0];
    c->nstacks++;
    return 0;
}

static int split_sample(void *ctx, const perch_sample_rec *s)
{
    split_check *c = ctx;
    if (s->stack_id == 0)
        return 0;
    uint32_t i = s->stack_id - 1;
    bool kernel_ip = s->ip >= 0xFFFF800000000000ull;
    c->stacked++;
    c->first_is_ip += c->first[i] == s->ip;
    if (c->kernel[i] == 0 && !kernel_ip)
        c->user_only_user_ip++;
    else if (c->kernel[i] > 0 && kernel_ip)
        c->kernel_part_kernel_ip++;
    else
        c->other++;
    return 0;
}

static void test_split_explained(void **state)
{
    split_check c;
    perch_sink sink;
    (void)state;
    memset(&c, 0, sizeof c);
    memset(&sink, 0, sizeof sink);
    sink.ctx = &c;
    sink.stack = split_stack;
    sink.sample = split_sample;
    free(report_json("etl/perfview_net.4.5.2.x64.etl", &sink));
    assert_int_equal(c.stacked, 6318);
    assert_int_equal(c.other, 0);
    assert_int_equal(c.user_only_user_ip, 5556);
    assert_int_equal(c.kernel_part_kernel_ip, 458 + 304);
    assert_true(c.first_is_ip >= c.stacked - 2); /* S5: 6,316 of 6,318 */
    free(c.kernel);
    free(c.count);
    free(c.first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x64_equals_reference),
        cmocka_unit_test(test_airbus_equals_reference),
        cmocka_unit_test(test_every_sample_accounted),
        cmocka_unit_test(test_split_explained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
