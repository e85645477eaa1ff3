/*
 * Exports of real and synthetic captures checked against the report and the model, and read by
 * a real tool where this machine has one:
 * - pprof of the real x64 PerfView capture: `go tool pprof -top` reads it, and its flat time
 *   summed by module (functions are `module!+0xoffset`) equals the report's top modules
 *   (skipped with a message when `go` is not installed).
 * - chrome and speedscope of the same capture parse as strict JSON with the documented fields,
 *   and their sample counts per thread equal the report's per-thread counts (text report with
 *   every thread listed: pid, tid, ..., samples, cpu ms).
 * - chrome of a synthetic capture: every slice the model emitted is one "X" event with the
 *   same start and duration (exact nanoseconds from ticks).
 * - gecko, pprof, speedscope and folded write the same bytes when their sample and slice logs
 *   move to scratch stores (a log cap of 4 KiB) as when the logs stay in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_check.h"
#include "perch/capture.h"
#include "perch/export.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

#define IDLE_TRACK 0x7fff0000u /* chrome: the idle thread's track of CPU n is this + n */

struct capture {
    uint8_t *data;
    size_t len;
};

static struct capture capture_of(const uint8_t *etl, size_t len)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_input in;
    struct capture c;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    perch_capture_writer_sink(w, &sink);
    perch_input_memory(&in, etl, len);
    assert_int_equal(perch_pipeline_etl(&in, "etl:test", &sink, NULL, NULL), 0);
    perch_capture_writer_destroy(w);
    c.data = perch_output_memory_take(&mem, &c.len);
    return c;
}

static struct capture real_capture(void)
{
    size_t len;
    uint8_t *etl =
        perch_test_read_file(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), &len);
    struct capture c = capture_of(etl, len);
    free(etl);
    return c;
}

static int replay(void *ctx, const perch_sink *sink)
{
    const struct capture *c = ctx;
    perch_capture_status st;
    return perch_capture_replay_memory(c->data, c->len, sink, &st);
}

/* The export of c as fmt, NUL-terminated (caller frees). */
static char *export_of(struct capture *c, perch_export_format fmt, size_t *len)
{
    perch_record_source src = {c, replay, NULL};
    perch_output out;
    perch_memory_out mem;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_export_run(fmt, NULL, &src, &out), 0);
    assert_int_equal(out.write(out.ctx, "", 1), 0);
    char *text = (char *)perch_output_memory_take(&mem, len);
    *len -= 1;
    return text;
}

/* ---- the report's figures ------------------------------------------------------------- */

/* Report text or JSON of c (caller frees). */
static char *report_of(struct capture *c, int json)
{
    perch_report_options ro = {.sz = sizeof ro, .top = 100000};
    perch_report *r = NULL;
    perch_sink sink;
    assert_int_equal(perch_report_create(&ro, &r), 0);
    perch_report_sink(r, &sink);
    assert_int_equal(replay(c, &sink), 0);
    FILE *f = tmpfile();
    assert_non_null(f);
    if (json) {
        perch_json w;
        perch_json_init(&w, perch_json_file_sink, f);
        assert_int_equal(perch_report_write_json(r, &w), 0);
    } else {
        assert_int_equal(perch_report_write_text(r, f), 0);
    }
    perch_report_destroy(r);
    long n = ftell(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Per-thread sample counts, compared as sorted (tid, samples) pairs: the idle thread is tid 0
 * on every CPU, one row per CPU in every source (report, chrome track, speedscope profile). */
struct counts {
    uint64_t pair[4096][2];
    size_t n;
};

static void counts_add(struct counts *c, uint64_t tid, uint64_t samples)
{
    assert_true(c->n < 4096);
    c->pair[c->n][0] = tid;
    c->pair[c->n][1] = samples;
    c->n++;
}

static int pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

static void counts_equal(struct counts *a, struct counts *b)
{
    qsort(a->pair, a->n, sizeof a->pair[0], pair_cmp);
    qsort(b->pair, b->n, sizeof b->pair[0], pair_cmp);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->pair[i][0], b->pair[i][0]);
        assert_int_equal(a->pair[i][1], b->pair[i][1]);
    }
}

/* The "Threads" table of the text report: "pid tid process thread samples cpu-ms"; names may
 * hold spaces, so samples is the second number from the right. Rows with 0 samples skipped. */
static void report_thread_counts(const char *text, struct counts *c)
{
    const char *p = strstr(text, "\nThreads (top ");
    assert_non_null(p);
    p = strchr(p + 1, '\n') + 1;
    p = strchr(p, '\n') + 1; /* the column titles */
    while (*p == ' ') {
        const char *end = strchr(p, '\n');
        unsigned long long pid, tid, samples;
        assert_int_equal(sscanf(p, "%llu %llu", &pid, &tid), 2);
        const char *q = end;
        while (q[-1] != ' ')
            q--; /* cpu ms */
        while (q[-1] == ' ')
            q--;
        while (q[-1] != ' ')
            q--; /* samples */
        assert_int_equal(sscanf(q, "%llu", &samples), 1);
        if (samples > 0)
            counts_add(c, tid, samples);
        p = end + 1;
    }
    assert_true(c->n > 10);
}

/* ---- pprof ---------------------------------------------------------------------------- */

/* "  73096ms 91.91% 91.91%  73115ms 91.94%  ntoskrnl.exe!+0xa6552": module and flat ms. */
static int parse_top_line(const char *line, char *module, size_t cap, double *flat)
{
    char name[512];
    if (sscanf(line, " %lfms %*f%% %*f%% %*fms %*f%% %511s", flat, name) != 2)
        return -1;
    char *bang = strchr(name, '!');
    if (!bang)
        return -1;
    *bang = '\0';
    snprintf(module, cap, "%s", name);
    return 0;
}

struct module_ms {
    char name[512];
    double ms;
};

/* Sums the flat column of `pprof -top` by module, one pass over the lines (each copied out
 * first: sscanf on a long buffer measures all of it each call). Returns the module count. */
static size_t pprof_by_module(const char *top, struct module_ms *m, size_t cap)
{
    size_t n = 0;
    for (const char *p = top; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[600], mod[512];
        double flat;
        snprintf(line, sizeof line, "%.*s", (int)(len < 599 ? len : 599), p);
        p += len + (end != NULL);
        if (parse_top_line(line, mod, sizeof mod, &flat) < 0)
            continue;
        size_t i = 0;
        while (i < n && strcmp(m[i].name, mod) != 0)
            i++;
        if (i == n) {
            assert_true(n < cap);
            snprintf(m[n].name, sizeof m[n].name, "%s", mod);
            m[n++].ms = 0;
        }
        m[i].ms += flat;
    }
    return n;
}

static double module_ms(const struct module_ms *m, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return m[i].ms;
    return -1;
}

static char *run_pprof_top(const char *path)
{
    char cmd[512];
    size_t n;
    snprintf(cmd, sizeof cmd,
             "go tool pprof -top -unit=ms -nodecount=1000000 -nodefraction=0 -edgefraction=0 "
             "%s > test_export_real.top.tmp 2>&1",
             path);
    assert_int_equal(system(cmd), 0);
    char *top = (char *)perch_test_read_file("test_export_real.top.tmp", &n);
    top = realloc(top, n + 1);
    top[n] = '\0';
    remove("test_export_real.top.tmp");
    return top;
}

static void test_pprof_agrees_with_report(void **state)
{
    const char *path = "test_export_real.pb.tmp";
    struct capture c = real_capture();
    struct jdoc d;
    size_t len;
    (void)state;
    if (system("go version > /dev/null 2>&1") != 0) {
        print_message("go not installed: skipping the `go tool pprof -top` check\n");
        free(c.data);
        skip();
    }
    char *pb = export_of(&c, PERCH_EXPORT_PPROF, &len);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(pb, 1, len, f), len);
    fclose(f);
    char *top = run_pprof_top(path), *json = report_of(&c, 1);
    remove(path);
    assert_true(jparse(&d, json));
    long mods = jget(&d, 0, "top_modules");
    assert_true(jlen(&d, mods) >= 10);
    static struct module_ms by_module[1024];
    size_t nmod = pprof_by_module(top, by_module, 1024);
    assert_int_equal(nmod, (size_t)jlen(&d, mods)); /* the report lists every module */
    char total[64];
    snprintf(total, sizeof total, "of %llums total",
             (unsigned long long)jnum(&d, jget(&d, 0, "samples")));
    assert_non_null(strstr(top, total));
    for (long i = 0; i < jlen(&d, mods); i++) {
        long m = jat(&d, mods, i), name = jget(&d, m, "name");
        char mod[256];
        snprintf(mod, sizeof mod, "%.*s", (int)d.n[name].slen, d.n[name].s);
        double ms = module_ms(by_module, nmod, mod), want = jnum(&d, jget(&d, m, "samples"));
        if (i < 12)
            print_message("  %-24s report %6.0f  pprof %6.0f ms\n", mod, want, ms);
        assert_true(ms == want);
    }
    jfree(&d);
    free(json);
    free(top);
    free(pb);
    free(c.data);
}

/* ---- chrome and speedscope ------------------------------------------------------------ */

static uint64_t track_of(uint64_t tid)
{
    return tid >= IDLE_TRACK ? 0 : tid;
}

/* Chrome samples per track (the non-root samples of its CPU profile chunks); also checks
 * the documented top-level and per-event fields. */
static void chrome_thread_counts(const char *json, struct counts *c)
{
    struct jdoc d;
    assert_true(jparse(&d, json));
    long ev = jget(&d, 0, "traceEvents");
    assert_true(jstreq(&d, jget(&d, 0, "displayTimeUnit"), "ns"));
    assert_int_equal(jtype_of(&d, jget(&d, 0, "otherData")), J_OBJ);
    uint64_t tids[4096], n[4096];
    size_t k = 0;
    for (long e = d.n[ev].first; e >= 0; e = d.n[e].next) { /* jat() is linear */
        assert_int_equal(jtype_of(&d, jget(&d, e, "ph")), J_STR);
        assert_int_equal(jtype_of(&d, jget(&d, e, "pid")), J_NUM);
        if (!jstreq(&d, jget(&d, e, "name"), "ProfileChunk"))
            continue;
        assert_true(jstreq(&d, jget(&d, e, "ph"), "P"));
        long data = jget(&d, jget(&d, e, "args"), "data");
        long samples = jget(&d, jget(&d, data, "cpuProfile"), "samples");
        assert_int_equal(jlen(&d, samples), jlen(&d, jget(&d, data, "timeDeltas")));
        uint64_t tid = (uint64_t)jnum(&d, jget(&d, e, "tid"));
        size_t j = 0;
        while (j < k && tids[j] != tid)
            j++;
        if (j == k) {
            assert_true(k < 4096);
            tids[k] = tid, n[k++] = 0;
        }
        for (long s = d.n[samples].first; s >= 0; s = d.n[s].next)
            n[j] += jnum(&d, s) != 1.0; /* node 1, the root, is a gap */
    }
    for (size_t j = 0; j < k; j++)
        counts_add(c, track_of(tids[j]), n[j]);
    jfree(&d);
}

/* The tid in a speedscope profile name: "image (pid) name (tid)", "image (pid) thread tid",
 * "Idle (CPU n)" (tid 0). */
static uint64_t profile_tid(const char *s, size_t n)
{
    const char *open = NULL, *space = NULL;
    if (n >= 4 && memcmp(s, "Idle", 4) == 0)
        return 0;
    for (size_t j = 0; j < n; j++) {
        if (s[j] == '(')
            open = s + j;
        if (s[j] == ' ')
            space = s + j;
    }
    if (s[n - 1] == ')') {
        assert_non_null(open);
        return strtoull(open + 1, NULL, 10);
    }
    assert_non_null(space);
    return strtoull(space + 1, NULL, 10);
}

/* Speedscope: one sampled profile per thread named "image (pid) thread (tid)", weights in ns
 * of 1 ms samples. */
static void speedscope_thread_counts(const char *json, struct counts *c)
{
    struct jdoc d;
    assert_true(jparse(&d, json));
    assert_int_equal(jtype_of(&d, jget(&d, 0, "$schema")), J_STR);
    assert_int_equal(jtype_of(&d, jget(&d, jget(&d, 0, "shared"), "frames")), J_ARR);
    long profiles = jget(&d, 0, "profiles");
    for (long i = 0; i < jlen(&d, profiles); i++) {
        long p = jat(&d, profiles, i), w = jget(&d, p, "weights"), name = jget(&d, p, "name");
        assert_true(jstreq(&d, jget(&d, p, "type"), "sampled"));
        assert_int_equal(jlen(&d, w), jlen(&d, jget(&d, p, "samples")));
        if (!jstreq(&d, jget(&d, p, "unit"), "nanoseconds"))
            continue; /* PMC profiles */
        double sum = 0;
        for (long j = d.n[w].first; j >= 0; j = d.n[j].next)
            sum += jnum(&d, j);
        assert_true(sum == jnum(&d, jget(&d, p, "endValue")));
        counts_add(c, profile_tid(d.n[name].s, d.n[name].slen), (uint64_t)(sum / 1e6));
    }
    jfree(&d);
}

static void test_samples_per_thread_equal_report(void **state)
{
    static struct counts report, chrome, speedscope;
    struct capture c = real_capture();
    size_t len;
    (void)state;
    char *text = report_of(&c, 0);
    report_thread_counts(text, &report);
    char *ch = export_of(&c, PERCH_EXPORT_CHROME, &len);
    chrome_thread_counts(ch, &chrome);
    char *ss = export_of(&c, PERCH_EXPORT_SPEEDSCOPE, &len);
    speedscope_thread_counts(ss, &speedscope);
    print_message("  %zu threads with samples in the report, chrome and speedscope\n", report.n);
    counts_equal(&report, &chrome);
    counts_equal(&report, &speedscope);
    free(text);
    free(ch);
    free(ss);
    free(c.data);
}

/* ---- slices of a synthetic trace ------------------------------------------------------ */

struct slice_log {
    perch_trace_info info;
    int64_t (*s)[3]; /* track, ts ns, dur ns */
    size_t n, cap;
};

static int64_t ticks_ns(int64_t ticks, uint64_t freq)
{
    uint64_t t = (uint64_t)(ticks < 0 ? -ticks : ticks);
    int64_t ns = (int64_t)((t / freq) * 1000000000u + (t % freq) * 1000000000u / freq);
    return ticks < 0 ? -ns : ns;
}

static int log_info(void *ctx, const perch_trace_info *info)
{
    ((struct slice_log *)ctx)->info = *info;
    return 0;
}

static int log_slice(void *ctx, const perch_slice_rec *r)
{
    struct slice_log *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->s = realloc(l->s, l->cap * sizeof l->s[0]);
        assert_non_null(l->s);
    }
    l->s[l->n][0] = r->tid == 0 ? IDLE_TRACK + r->cpu : r->tid;
    l->s[l->n][1] = ticks_ns((int64_t)(r->start_ts - l->info.start_raw), l->info.perf_freq);
    l->s[l->n][2] = ticks_ns(r->end_ts >= r->start_ts ? (int64_t)(r->end_ts - r->start_ts) : 0,
                             l->info.perf_freq);
    l->n++;
    return 0;
}

static int triple_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* The chrome "X" events of c, as (track, ts ns, dur ns). */
static void chrome_slices(const char *json, struct slice_log *out)
{
    struct jdoc d;
    assert_true(jparse(&d, json));
    long ev = jget(&d, 0, "traceEvents");
    for (long e = d.n[ev].first; e >= 0; e = d.n[e].next) { /* jat() is linear */
        if (!jstreq(&d, jget(&d, e, "ph"), "X") || jstreq(&d, jget(&d, e, "cat"), "sample"))
            continue; /* "CPU samples" spans of sample-only threads are not slices */
        assert_true(jstreq(&d, jget(&d, e, "cat"), "cpu"));
        perch_slice_rec r = {0};
        r.tid = (uint32_t)jnum(&d, jget(&d, e, "tid"));
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 4096;
            out->s = realloc(out->s, out->cap * sizeof out->s[0]);
        }
        out->s[out->n][0] = r.tid;
        out->s[out->n][1] = llround(jnum(&d, jget(&d, e, "ts")) * 1000.0);
        out->s[out->n][2] = llround(jnum(&d, jget(&d, e, "dur")) * 1000.0);
        out->n++;
    }
    jfree(&d);
}

static void test_chrome_slices_equal_model(void **state)
{
    perch_synth_options opt;
    perch_output out;
    perch_memory_out mem;
    struct slice_log model = {0}, chrome = {0};
    perch_sink sink = {0};
    size_t len;
    (void)state;
    perch_synth_options_init(&opt);
    opt.seed = 5;
    opt.target_bytes = 2u << 20;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&opt, &out, NULL), 0);
    uint8_t *etl = perch_output_memory_take(&mem, &len);
    struct capture c = capture_of(etl, len);
    sink.ctx = &model;
    sink.trace_info = log_info;
    sink.slice = log_slice;
    assert_int_equal(replay(&c, &sink), 0);
    char *json = export_of(&c, PERCH_EXPORT_CHROME, &len);
    chrome_slices(json, &chrome);
    print_message("  %zu slices from the model, %zu X events in chrome\n", model.n, chrome.n);
    assert_true(model.n > 1000);
    assert_int_equal(chrome.n, model.n);
    qsort(model.s, model.n, sizeof model.s[0], triple_cmp);
    qsort(chrome.s, chrome.n, sizeof chrome.s[0], triple_cmp);
    for (size_t i = 0; i < model.n; i++) {
        assert_int_equal(chrome.s[i][0], model.s[i][0]);
        assert_true(llabs(chrome.s[i][1] - model.s[i][1]) <= 1);
        assert_true(llabs(chrome.s[i][2] - model.s[i][2]) <= 1);
    }
    free(model.s);
    free(chrome.s);
    free(json);
    free(c.data);
    free(etl);
}

/* ---- logs moved to scratch stores --------------------------------------------------- */

static unsigned scratch_opens;

/* A memory scratch store that counts how many were opened. */
static int counting_open(void *ctx, perch_scratch *s)
{
    scratch_opens++;
    return perch_scratch_open_memory(ctx, s);
}

/* The export of c as fmt with opt (caller frees). */
static uint8_t *export_opt(struct capture *c, perch_export_format fmt,
                           const perch_export_options *opt, size_t *len)
{
    perch_record_source src = {c, replay, NULL};
    perch_output out;
    perch_memory_out mem;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_export_run(fmt, opt, &src, &out), 0);
    return perch_output_memory_take(&mem, len);
}

/* With a log cap of a few KiB the sample and slice logs go to scratch stores many times
 * over; every format that logs writes the same bytes as with the logs in memory. */
static void check_spilled_same(struct capture *c)
{
    static const perch_export_format fmts[] = {PERCH_EXPORT_GECKO, PERCH_EXPORT_PPROF,
                                               PERCH_EXPORT_SPEEDSCOPE, PERCH_EXPORT_FOLDED};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        perch_export_options opt;
        size_t len_mem, len_spill;
        perch_export_options_init(&opt);
        uint8_t *in_memory = export_opt(c, fmts[i], &opt, &len_mem);
        opt.log_memory = 4096;
        opt.scratch_open = counting_open;
        opt.scratch_ctx = NULL;
        scratch_opens = 0;
        uint8_t *spilled = export_opt(c, fmts[i], &opt, &len_spill);
        print_message("  %s: %zu bytes, %u scratch stores\n", perch_export_format_name(fmts[i]),
                      len_spill, scratch_opens);
        assert_true(scratch_opens >= 1);
        assert_true(len_mem > 0);
        assert_int_equal(len_spill, len_mem);
        assert_memory_equal(spilled, in_memory, len_mem);
        free(in_memory);
        free(spilled);
    }
}

static void test_spilled_logs_same_bytes(void **state)
{
    perch_synth_options so;
    perch_output out;
    perch_memory_out mem;
    size_t len;
    (void)state;
    struct capture real = real_capture();
    check_spilled_same(&real);
    free(real.data);
    perch_synth_options_init(&so); /* PMC samples, slices with counters */
    so.seed = 3;
    so.target_bytes = 2u << 20;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&so, &out, NULL), 0);
    uint8_t *etl = perch_output_memory_take(&mem, &len);
    struct capture syn = capture_of(etl, len);
    check_spilled_same(&syn);
    free(syn.data);
    free(etl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pprof_agrees_with_report),
        cmocka_unit_test(test_samples_per_thread_equal_report),
        cmocka_unit_test(test_chrome_slices_equal_model),
        cmocka_unit_test(test_spilled_logs_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
