/*
 * The report in bounded memory gives the same bytes. For every real trace and two synthetic
 * ones, the JSON and text reports made with a 4 KiB memory limit (every stack entry page, the
 * frame spool and the stack hash's sort go through scratch stores, in memory and as temporary
 * files) equal the ones made with the default limit, and the JSON's stack_hash equals S7 of
 * shared/docs/report-reference.md computed here independently, the definition's way: every
 * distinct stack of a timer sample printed with "0x%x" frames, sorted with strcmp, joined by
 * "\n", SHA-256, 16 hex digits. A scratch store that cannot be opened is a clear error.
 */
#include <inttypes.h>
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
#include "perch/synth.h"
#include "testdata.h"
#include "util/sha256.h"

typedef perch_test_text text;

struct out {
    char *json, *text;
};

static char *read_back(FILE *f)
{
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* Writes r's JSON and text into o (unless err is set) and destroys r. */
static int write_out(perch_report *r, int err, struct out *o)
{
    text json = {NULL, 0, 0};
    perch_json w;
    FILE *f = tmpfile();
    assert_non_null(f);
    perch_json_init(&w, perch_test_text_sink, &json);
    if (err == 0)
        err = perch_report_write_json(r, &w);
    if (err == 0)
        err = perch_report_write_text(r, f);
    perch_report_destroy(r);
    o->json = json.data;
    o->text = read_back(f);
    return err;
}

/* Reports data (an .etl in memory) with the given options (NULL: defaults). */
static int report_of(const uint8_t *data, size_t len, const perch_report_options *ro, struct out *o)
{
    perch_input in;
    perch_report *r = NULL;
    perch_sink sink;
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_report_create(ro, &r), 0);
    perch_report_sink(r, &sink);
    return write_out(r, perch_pipeline_etl(&in, "etl:bounded", &sink, NULL, NULL), o);
}

/* ---- S7, independently ------------------------------------------------------------------ */

struct s7 {
    char **text;  /* by id - 1 */
    bool *used;   /* a timer sample refers to it */
    size_t count; /* ids */
};

static int s7_stack(void *ctx, const perch_stack_rec *rec)
{
    struct s7 *s = ctx;
    char *t = malloc((size_t)rec->frame_count * 19 + 1), *p = t;
    *p = '\0';
    for (uint32_t i = 0; i < rec->frame_count; i++)
        p += sprintf(p, "%s0x%" PRIx64, i ? "," : "", rec->frames[i]);
    assert_int_equal(rec->id, s->count + 1);
    s->text = realloc(s->text, sizeof *s->text * (s->count + 1));
    s->used = realloc(s->used, sizeof *s->used * (s->count + 1));
    s->text[s->count] = t;
    s->used[s->count++] = false;
    return 0;
}

static int s7_sample(void *ctx, const perch_sample_rec *rec)
{
    struct s7 *s = ctx;
    if (rec->kind == PERCH_SAMPLE_TIMER && rec->stack_id > 0 && rec->stack_id <= s->count)
        s->used[rec->stack_id - 1] = true;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void s7_of(const uint8_t *data, size_t len, char hex[17])
{
    struct s7 s = {NULL, NULL, 0};
    perch_sink sink = {.ctx = &s, .stack = s7_stack, .sample = s7_sample};
    perch_input in;
    perch__sha256 sha;
    uint8_t d[32];
    size_t n = 0;
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_pipeline_etl(&in, "etl:s7", &sink, NULL, NULL), 0);
    char **v = malloc(sizeof *v * (s.count + 1));
    for (size_t i = 0; i < s.count; i++)
        if (s.used[i])
            v[n++] = s.text[i];
    qsort(v, n, sizeof *v, cmp_str);
    perch__sha256_init(&sha);
    for (size_t i = 0, out = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i], v[i - 1]) == 0)
            continue;
        if (out++ > 0)
            perch__sha256_update(&sha, "\n", 1);
        perch__sha256_update(&sha, v[i], strlen(v[i]));
    }
    perch__sha256_final(&sha, d);
    for (int i = 0; i < 8; i++)
        sprintf(hex + 2 * i, "%02x", d[i]);
    for (size_t i = 0; i < s.count; i++)
        free(s.text[i]);
    free(s.text);
    free(s.used);
    free(v);
}

/* ---- the comparisons -------------------------------------------------------------------- */

static unsigned opened; /* scratch stores the small reports opened */

static int counting_open(void *ctx, perch_scratch *s)
{
    opened++;
    return perch_scratch_open_memory(ctx, s);
}

static int counting_temp(void *ctx, perch_scratch *s)
{
    opened++;
    return perch_scratch_open_temp(ctx, s);
}

static void check_trace(const char *name, const uint8_t *data, size_t len)
{
    struct out def, mem, file;
    char want[17], pat[40];
    perch_report_options small = {
        .sz = sizeof small, .memory_limit = 4096, .scratch_open = counting_open};
    perch_report_options small_file = {
        .sz = sizeof small_file, .memory_limit = 4096, .scratch_open = counting_temp};
    assert_int_equal(report_of(data, len, NULL, &def), 0);
    opened = 0;
    assert_int_equal(report_of(data, len, &small, &mem), 0);
    unsigned in_memory = opened;
    assert_int_equal(report_of(data, len, &small_file, &file), 0);
    assert_int_equal(opened, 2 * in_memory); /* the same spills, once in files */
    assert_string_equal(mem.json, def.json);
    assert_string_equal(file.json, def.json);
    assert_string_equal(mem.text, def.text);
    assert_string_equal(file.text, def.text);
    s7_of(data, len, want);
    snprintf(pat, sizeof pat, "\"stack_hash\":\"%s\"", want);
    assert_non_null(strstr(def.json, pat));
    /* every trace with stacks spills them at 4 KiB (3 stores), and its per-IP counts (a 4th)
     * past 11 distinct sampled IPs */
    assert_true(in_memory == 4 || strstr(def.json, "\"stacks_distinct\":0,") != NULL);
    printf("  %-40s stack_hash %s, JSON %zu and text %zu bytes identical (%u scratch stores)\n",
           name, want, strlen(def.json), strlen(def.text), in_memory);
    free(def.json), free(def.text), free(mem.json), free(mem.text);
    free(file.json), free(file.text);
}

static void test_real_traces(void **state)
{
    static const char *const traces[] = {
        "perfview_net.4.5.2.x64.etl",
        "airbus_ShutdownPerfDiagLogger.etl",
        "airbus_AMSITrace.etl",
        "airbus_lxcore_kernel.etl",
        "perfview_SelfDescribingSingleEvent.etl",
        "perfview_primitive-types.etl",
        "perfview_smallEtlFile.etl",
    };
    (void)state;
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        char rel[128];
        size_t len;
        snprintf(rel, sizeof rel, "etl/%s", traces[i]);
        uint8_t *etl = perch_test_read_file(perch_test_require_data(rel), &len);
        check_trace(traces[i], etl, len);
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

static void test_synthetic_traces(void **state)
{
    static const uint64_t seeds[] = {1, 3, 11};
    (void)state;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char name[32];
        size_t len;
        uint8_t *etl = synth_trace(seeds[i], &len);
        snprintf(name, sizeof name, "synth seed %" PRIu64, seeds[i]);
        check_trace(name, etl, len);
        free(etl);
    }
}

static int no_scratch(void *ctx, perch_scratch *s)
{
    (void)ctx;
    (void)s;
    return PERCH_EACCES;
}

/* Past the limit with no scratch store to go to: the report says why, nothing crashes. */
static void test_scratch_refused(void **state)
{
    size_t len;
    struct out o;
    perch_report_options ro = {.sz = sizeof ro, .memory_limit = 4096, .scratch_open = no_scratch};
    (void)state;
    uint8_t *etl = synth_trace(3, &len);
    assert_int_equal(report_of(etl, len, &ro, &o), PERCH_EACCES);
    free(o.json);
    free(o.text);
    free(etl);
}

/* ---- a named stream: the top functions with the per-IP counts spilled --------------------- */

#define NAMED_FUNCS 40
#define NAMED_SPAN  0x100u
#define NAMED_BASE  0x7ff700000000ull

/* Feeds a module named by NAMED_FUNCS symbol runs and 20,000 timer samples at 4,000 distinct
 * IPs (function j = rva / NAMED_SPAN gets the samples whose IP falls in its run); want[j]
 * counts them independently. */
static void feed_named(perch_sink *k, uint64_t want[NAMED_FUNCS])
{
    perch_trace_info ti = {.source = "named", .cpu_count = 1, .pointer_size = 8, .perf_freq = 1};
    perch_module_rec m = {.key = 7,
                          .process_key = 3,
                          .pid = 30,
                          .base = NAMED_BASE,
                          .size = NAMED_FUNCS * NAMED_SPAN,
                          .path = "C:\\app\\Named.dll",
                          .pdb_name = ""};
    char name[NAMED_FUNCS][16];
    assert_int_equal(k->trace_info(k->ctx, &ti), 0);
    assert_int_equal(k->module(k->ctx, &m), 0);
    for (uint32_t j = 0; j < NAMED_FUNCS; j++) {
        snprintf(name[j], sizeof name[j], "func%02u", j);
        perch_symbol_rec sr = {.module_key = 7,
                               .span_rva = j * NAMED_SPAN,
                               .span_size = NAMED_SPAN,
                               .func_rva = j * NAMED_SPAN,
                               .func_size = NAMED_SPAN,
                               .source = 1,
                               .name = name[j]};
        assert_int_equal(k->symbol(k->ctx, &sr), 0);
        want[j] = 0;
    }
    for (uint32_t i = 0; i < 20000; i++) {
        uint32_t rva = (i * 2654435761u) % 4000u * (NAMED_FUNCS * NAMED_SPAN / 4000u);
        perch_sample_rec sm = {.thread_key = 5,
                               .tid = 50,
                               .kind = PERCH_SAMPLE_TIMER,
                               .ts = i,
                               .ip = NAMED_BASE + rva,
                               .module_key = 7,
                               .count = 1};
        assert_int_equal(k->sample(k->ctx, &sm), 0);
        want[rva / NAMED_SPAN]++;
    }
}

static void named_report(const perch_report_options *ro, struct out *o, uint64_t want[])
{
    perch_report *r = NULL;
    perch_sink sink;
    assert_int_equal(perch_report_create(ro, &r), 0);
    perch_report_sink(r, &sink);
    feed_named(&sink, want);
    assert_int_equal(write_out(r, 0, o), 0);
}

static void test_named_functions(void **state)
{
    struct out def, mem;
    uint64_t want[NAMED_FUNCS];
    perch_report_options small = {
        .sz = sizeof small, .memory_limit = 4096, .scratch_open = counting_open};
    char pat[96];
    uint32_t best = 0;
    (void)state;
    named_report(NULL, &def, want);
    opened = 0;
    named_report(&small, &mem, want);
    assert_true(opened >= 1); /* the per-IP counts went to a scratch store */
    assert_string_equal(mem.json, def.json);
    assert_string_equal(mem.text, def.text);
    for (uint32_t j = 1; j < NAMED_FUNCS; j++)
        if (want[j] > want[best])
            best = j;
    snprintf(pat, sizeof pat,
             "\"top_functions\":[{\"name\":\"named.dll!func%02u\",\"samples\":%" PRIu64, best,
             want[best]);
    assert_non_null(strstr(def.json, pat));
    free(def.json), free(def.text), free(mem.json), free(mem.text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_synthetic_traces),
        cmocka_unit_test(test_scratch_refused),
        cmocka_unit_test(test_named_functions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
