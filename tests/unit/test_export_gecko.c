/*
 * Firefox Profiler (processed profile, version 48) export over the synthetic stream: valid
 * JSON; the meta fields the profiler requires; one thread per (thread, PMC source); sample
 * counts and weights per thread; every table's columns as long as its "length"; stack table
 * consistency (every prefix null or below its own index, frames in range); frame -> func ->
 * stringArray and resource -> lib references in range; a stack walked back to its frame names;
 * slices as CSwitch interval markers, and the marker cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export_extreme.h"
#include "export_fixture.h"
#include "json_check.h"

static char *export_gecko_opt(struct jdoc *d, const perch_export_options *opt)
{
    size_t len;
    int err;
    char *text = fx_export(PERCH_EXPORT_GECKO, opt, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(d, text));
    return text;
}

static char *export_gecko(struct jdoc *d)
{
    return export_gecko_opt(d, NULL);
}

static void test_meta(void **state)
{
    struct jdoc d;
    char *text = export_gecko(&d);
    long meta = jget(&d, 0, "meta");
    (void)state;
    assert_true(jnum(&d, jget(&d, meta, "preprocessedProfileVersion")) == 48);
    assert_true(jnum(&d, jget(&d, meta, "version")) == 29);
    assert_true(jnum(&d, jget(&d, meta, "interval")) == 1.0);
    assert_true(jnum(&d, jget(&d, meta, "processType")) == 0);
    assert_true(jstreq(&d, jget(&d, meta, "product"), "perch"));
    /* start_filetime 133000000000000000 -> ms since 1970 */
    assert_true(jnum(&d, jget(&d, meta, "startTime")) ==
                (double)((133000000000000000ull - 116444736000000000ull) / 10000));
    assert_int_equal(jlen(&d, jget(&d, meta, "categories")), 4);
    assert_true(jstreq(&d, jget(&d, jat(&d, jget(&d, meta, "categories"), 3), "name"), "Idle"));
    assert_true(jstreq(&d, jget(&d, meta, "oscpu"), "Windows")); /* the fixture has no build */
    assert_true(jstreq(&d, jget(&d, jget(&d, meta, "sampleUnits"), "time"), "ms"));
    assert_int_equal(jtype_of(&d, jget(&d, jget(&d, meta, "sampleUnits"), "threadCPUDelta")),
                     J_STR);
    assert_true(jstreq(
        &d, jget(&d, jat(&d, jget(&d, jat(&d, jget(&d, meta, "extra"), 0), "entries"), 0), "label"),
        "Samples"));
    assert_int_equal(jtype_of(&d, jget(&d, 0, "libs")), J_ARR);
    /* libs used: ntdll (P1), app, ntoskrnl, hal, ntdll (P2), svc */
    assert_int_equal(jlen(&d, jget(&d, 0, "libs")), 6);
    jfree(&d);
    free(text);
}

/* Every column of a table (arrays) has "length" elements; returns the length. */
static long table_length(const struct jdoc *d, long table)
{
    long n = (long)jnum(d, jget(d, table, "length"));
    assert_true(n >= 0);
    for (long c = d->n[table].first; c >= 0; c = d->n[c].next)
        if (d->n[c].type == J_ARR)
            assert_int_equal(jlen(d, c), n);
    return n;
}

static void check_thread_tables(const struct jdoc *d, long t, long libs)
{
    long stacks = jget(d, t, "stackTable"), frames = jget(d, t, "frameTable");
    long funcs = jget(d, t, "funcTable"), res = jget(d, t, "resourceTable");
    long strings = jget(d, t, "stringArray"), samples = jget(d, t, "samples");
    long ns = table_length(d, stacks), nf = table_length(d, frames);
    long nfn = table_length(d, funcs), nr = table_length(d, res);
    long nsamples = table_length(d, samples);
    table_length(d, jget(d, t, "markers"));
    table_length(d, jget(d, t, "nativeSymbols"));
    for (long i = 0; i < ns; i++) {
        long prefix = jat(d, jget(d, stacks, "prefix"), i);
        assert_true(jtype_of(d, prefix) == J_NULL || (jnum(d, prefix) >= 0 && jnum(d, prefix) < i));
        assert_true(jnum(d, jat(d, jget(d, stacks, "frame"), i)) < nf);
    }
    for (long i = 0; i < nf; i++)
        assert_true(jnum(d, jat(d, jget(d, frames, "func"), i)) < nfn);
    for (long i = 0; i < nfn; i++) {
        double r = jnum(d, jat(d, jget(d, funcs, "resource"), i));
        assert_true(jnum(d, jat(d, jget(d, funcs, "name"), i)) < jlen(d, strings));
        assert_true(r >= -1 && r < nr);
    }
    for (long i = 0; i < nr; i++)
        assert_true(jnum(d, jat(d, jget(d, res, "lib"), i)) < jlen(d, libs));
    for (long i = 0; i < nsamples; i++)
        assert_true(jnum(d, jat(d, jget(d, samples, "stack"), i)) < ns);
    assert_true(jstreq(d, jget(d, samples, "weightType"), "samples"));
    assert_int_equal(jtype_of(d, jget(d, t, "pid")), J_STR);
}

/* The sum of column key of thread t's samples table. */
static double column_sum(const struct jdoc *d, long t, const char *key)
{
    long w = jget(d, jget(d, t, "samples"), key);
    double sum = 0;
    for (long i = 0; i < jlen(d, w); i++)
        sum += jnum(d, jat(d, w, i));
    return sum;
}

/* Sample i's time in thread t as the profiler has it: the sum of the timeDeltas column's
 * first i + 1 values (the 10 MHz clock of the fixture writes no time column). */
static double sample_time(const struct jdoc *d, long t, long i)
{
    long samples = jget(d, t, "samples"), deltas = jget(d, samples, "timeDeltas");
    double sum = 0;
    assert_true(jget(d, samples, "time") < 0);
    assert_true(i < jlen(d, deltas));
    for (long k = 0; k <= i; k++)
        sum += jnum(d, jat(d, deltas, k));
    return sum;
}

static bool near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

static double weight_sum(const struct jdoc *d, long t)
{
    return column_sum(d, t, "weight");
}

static double cpu_delta_sum(const struct jdoc *d, long t)
{
    return column_sum(d, t, "threadCPUDelta");
}

/* Every sample at its own time, after one leading empty sample (weight 0, no stack) that
 * makes the first sample's threadCPUDelta count; CPU = count x 1 ms, none for PMC. */
static void test_threads(void **state)
{
    static const struct {
        const char *name, *pid;
        double tid;
        long samples;
        double weight, cpu_us;
    } expect[] = {
        {"main (1001)", "1234", 1001, 1 + 5, 5, 5000},
        {"main (1001) pmc source 2", "1234", 1001, 1 + 2, 2, 0},
        {"worker (1002)", "1234", 1002, 1 + 4, 4, 4000},
        {"thread 2001", "5678", 2001, 1 + 5, 6, 6000},
        {"thread 3001", "?", 3001, 1 + 1, 1, 1000},
    };
    struct jdoc d;
    char *text = export_gecko(&d);
    long threads = jget(&d, 0, "threads");
    (void)state;
    assert_int_equal(jlen(&d, threads), 5);
    for (long i = 0; i < 5; i++) {
        long t = jat(&d, threads, i);
        check_thread_tables(&d, t, jget(&d, 0, "libs"));
        assert_true(jstreq(&d, jget(&d, t, "name"), expect[i].name));
        assert_true(jstreq(&d, jget(&d, t, "pid"), expect[i].pid));
        assert_true(jnum(&d, jget(&d, t, "tid")) == expect[i].tid);
        assert_int_equal(jnum(&d, jget(&d, jget(&d, t, "samples"), "length")), expect[i].samples);
        assert_true(weight_sum(&d, t) == expect[i].weight);
        assert_true(cpu_delta_sum(&d, t) == expect[i].cpu_us);
        assert_int_equal(jtype_of(&d, jat(&d, jget(&d, jget(&d, t, "samples"), "stack"), 0)),
                         J_NULL);
    }
    /* T1's timer samples at 0.1, 0.2, 0.35, 0.6, 0.8 ms (samples 0, 2, 5, 10, 14) */
    long t1 = jat(&d, threads, 0);
    assert_true(near(sample_time(&d, t1, 0), 0.1 - 1.0));
    assert_true(near(sample_time(&d, t1, 1), 0.1));
    assert_true(near(sample_time(&d, t1, 2), 0.2));
    assert_true(near(sample_time(&d, t1, 3), 0.35));
    assert_true(near(sample_time(&d, t1, 4), 0.6));
    assert_true(near(sample_time(&d, t1, 5), 0.8));
    jfree(&d);
    free(text);
}

/* Past gecko_max_samples: one sample per distinct stack at its first time, weighted, and
 * meta.extra says so; totals unchanged. */
static void test_sample_fallback(void **state)
{
    perch_export_options opt;
    struct jdoc d;
    char *text;
    long t;
    (void)state;
    perch_export_options_init(&opt);
    opt.gecko_max_samples = 3;
    text = export_gecko_opt(&d, &opt);
    t = jat(&d, jget(&d, 0, "threads"), 0);
    assert_int_equal(jnum(&d, jget(&d, jget(&d, t, "samples"), "length")), 1 + 2); /* S1, S2 */
    assert_true(weight_sum(&d, t) == 5);
    assert_true(cpu_delta_sum(&d, t) == 5000);
    assert_non_null(strstr(text, "one sample per distinct stack"));
    jfree(&d);
    free(text);
}

/* The name of the function of frame f in thread t, compared with s. */
static bool frame_is(const struct jdoc *d, long t, long f, const char *s)
{
    long func = (long)jnum(d, jat(d, jget(d, jget(d, t, "frameTable"), "func"), f));
    long name = (long)jnum(d, jat(d, jget(d, jget(d, t, "funcTable"), "name"), func));
    return jstreq(d, jat(d, jget(d, t, "stringArray"), name), s);
}

/* The resource (module) name of frame f's function in thread t, compared with s. */
static bool resource_is(const struct jdoc *d, long t, long f, const char *s)
{
    long func = (long)jnum(d, jat(d, jget(d, jget(d, t, "frameTable"), "func"), f));
    long res = (long)jnum(d, jat(d, jget(d, jget(d, t, "funcTable"), "resource"), func));
    long name = (long)jnum(d, jat(d, jget(d, jget(d, t, "resourceTable"), "name"), res));
    return jstreq(d, jat(d, jget(d, t, "stringArray"), name), s);
}

static void test_stack_walk(void **state)
{
    /* the function is named inside its module, the module is its resource: the profiler
     * shows "ntoskrnl.exe!+0x1000", not the module twice */
    static const char *const leaf_to_root[] = {"+0x1000", "+0x2000", "+0x100", "+0x50"};
    static const char *const modules[] = {"ntoskrnl.exe", "ntoskrnl.exe", "app.exe", "ntdll.dll"};
    static const double offsets[] = {0x1000, 0x2000, 0x100, 0x50};
    struct jdoc d;
    char *text = export_gecko(&d);
    long t = jat(&d, jget(&d, 0, "threads"), 0);
    long stacks = jget(&d, t, "stackTable"), frames = jget(&d, t, "frameTable");
    long s = (long)jnum(&d, jat(&d, jget(&d, jget(&d, t, "samples"), "stack"), 1));
    (void)state;
    /* T1's first sample: S1 at 0.1 ms; kernel frames in category 1 */
    assert_true(near(sample_time(&d, t, 1), 0.1));
    for (int i = 0; i < 4; i++) {
        long f = (long)jnum(&d, jat(&d, jget(&d, stacks, "frame"), s));
        assert_true(frame_is(&d, t, f, leaf_to_root[i]));
        assert_true(resource_is(&d, t, f, modules[i]));
        assert_true(jnum(&d, jat(&d, jget(&d, frames, "category"), f)) == (i < 2 ? 1 : 0));
        assert_true(jnum(&d, jat(&d, jget(&d, frames, "address"), f)) == offsets[i]);
        if (i == 3) /* the root has no prefix */
            assert_int_equal(jtype_of(&d, jat(&d, jget(&d, stacks, "prefix"), s)), J_NULL);
        else
            s = (long)jnum(&d, jat(&d, jget(&d, stacks, "prefix"), s));
    }
    jfree(&d);
    free(text);
}

static long markers_of(const struct jdoc *d, long thread)
{
    return jget(d, jat(d, jget(d, 0, "threads"), thread), "markers");
}

static void test_markers(void **state)
{
    struct jdoc d;
    char *text = export_gecko(&d);
    long schema = jat(&d, jget(&d, jget(&d, 0, "meta"), "markerSchema"), 0);
    long m = markers_of(&d, 0), data;
    long t0 = jat(&d, jget(&d, 0, "threads"), 0);
    (void)state;
    assert_true(jstreq(&d, jget(&d, schema, "name"), "CSwitch"));
    assert_int_equal(jtype_of(&d, jget(&d, schema, "tableLabel")), J_STR);
    assert_int_equal(jtype_of(&d, jget(&d, schema, "chartLabel")), J_STR);
    assert_true(
        jstreq(&d, jget(&d, jat(&d, jget(&d, schema, "data"), 4), "label"), "InstructionRetired"));
    /* T1: one slice [200, 1200) us = [0.2, 1.2] ms, ready 50 us before */
    assert_int_equal(jnum(&d, jget(&d, m, "length")), 1);
    assert_true(jnum(&d, jat(&d, jget(&d, m, "startTime"), 0)) == 0.2);
    assert_true(jnum(&d, jat(&d, jget(&d, m, "endTime"), 0)) == 1.2);
    assert_true(jnum(&d, jat(&d, jget(&d, m, "phase"), 0)) == 1);
    assert_true(jstreq(
        &d, jat(&d, jget(&d, t0, "stringArray"), (long)jnum(&d, jat(&d, jget(&d, m, "name"), 0))),
        "Running"));
    data = jat(&d, jget(&d, m, "data"), 0);
    assert_true(jstreq(&d, jget(&d, data, "type"), "CSwitch"));
    assert_true(jnum(&d, jget(&d, data, "cpu")) == 0);
    assert_true(jnum(&d, jget(&d, data, "waitReason")) == 5);
    assert_true(jnum(&d, jget(&d, data, "readyLatency")) == 0.05);
    assert_true(jnum(&d, jget(&d, data, "pmc0")) == 1000);
    assert_true(jnum(&d, jget(&d, data, "pmc1")) == 500);
    /* PMC thread and T2 have none; T3 one [0.3, 0.55] */
    assert_int_equal(jnum(&d, jget(&d, markers_of(&d, 1), "length")), 0);
    assert_int_equal(jnum(&d, jget(&d, markers_of(&d, 2), "length")), 0);
    assert_true(jnum(&d, jat(&d, jget(&d, markers_of(&d, 3), "endTime"), 0)) == 0.55);
    assert_true(jnum(&d, jget(&d, jget(&d, 0, "meta"), "perchMarkersDropped")) == 0);
    jfree(&d);
    free(text);
}

static void test_marker_cap(void **state)
{
    perch_export_options opt;
    struct jdoc d;
    char *text;
    long total = 0;
    (void)state;
    perch_export_options_init(&opt);
    opt.gecko_max_markers = 1;
    text = export_gecko_opt(&d, &opt);
    for (long i = 0; i < 5; i++)
        total += (long)jnum(&d, jget(&d, markers_of(&d, i), "length"));
    assert_int_equal(total, 1); /* T1's, the first slice of the stream */
    assert_true(jnum(&d, jget(&d, jget(&d, 0, "meta"), "perchMarkersDropped")) == 3);
    jfree(&d);
    free(text);
}

/* The gecko export of x, checked to be valid JSON; NULL (with *err) when it failed. */
static char *xt_gecko(const struct xt_stream *x, const perch_export_options *opt, int *err)
{
    size_t len;
    struct jdoc d;
    char *text = xt_export(PERCH_EXPORT_GECKO, opt, x, &len, err);
    if (text != NULL) {
        assert_true(jparse(&d, text));
        jfree(&d);
    }
    return text;
}

/* Sample times gecko cannot write exactly (more than INT64_MAX ticks or 64 bits of ns from
 * the trace start, either way) fail the export with PERCH_ERANGE; they used to wrap, out of
 * order, and the leading sample's time overflowed int64 (UB). 2026-12-06. */
static void test_time_range(void **state)
{
    static const struct {
        uint64_t start, ts;
    } bad[] = {
        {0, ((uint64_t)1 << 63) + 1}, /* the review's capture */
        {0, (uint64_t)1 << 62},       /* fits int64, its ns (x 100) do not */
        {UINT64_MAX, 0},              /* 2^64 - 1 ticks before the start */
        {(uint64_t)1 << 63, 0},       /* 2^63 ticks before: its ns do not fit either */
    };
    static const struct xt_sample ok[] = {{10000000000000000ull, 1}}; /* 10^9 s, 31.7 years */
    struct xt_stream x = {10000000, 0, ok, 1, 1};
    int err;
    char *text;
    (void)state;
    text = xt_gecko(&x, NULL, &err);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, "\"timeDeltas\":[999999999999,1]"));
    free(text);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct xt_sample one = {bad[i].ts, 1};
        struct xt_stream y = {10000000, bad[i].start, &one, 1, 1};
        assert_null(xt_gecko(&y, NULL, &err));
        assert_int_equal(err, PERCH_ERANGE);
    }
    /* A sample after the first is checked against bounds worked out once for the thread: at
     * 10 MHz the last time written is (18446744072 + 1) x 10^7 - 1 ticks after the start; at
     * 1 GHz that bound (about 1.8 x 10^19 ticks) passes INT64_MAX, which bounds instead. (A
     * later sample is never earlier: a thread's samples are sorted by time.) */
    static const struct {
        uint64_t freq, start, ts;
        int err;
    } later[] = {
        {10000000, 0, 184467440729999999ull, 0},
        {10000000, 0, 184467440730000000ull, PERCH_ERANGE},
        {10000000, 0, ((uint64_t)1 << 63) + 1, PERCH_ERANGE},
        {10000000, UINT64_MAX - 20000, UINT64_MAX, 0}, /* the bound past 2^64: any later time */
        {1000000000, 0, INT64_MAX, 0},
        {1000000000, 0, (uint64_t)1 << 63, PERCH_ERANGE},
    };
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        struct xt_sample two[] = {{later[i].start + 10000, 1}, {later[i].ts, 1}};
        struct xt_stream y = {later[i].freq, later[i].start, two, 2, 1};
        text = xt_gecko(&y, NULL, &err);
        assert_int_equal(err, later[i].err);
        assert_true((text != NULL) == (later[i].err == 0));
        free(text);
    }
    /* Two samples each within range of a start of 2^63 at 1 GHz, 2^64 - 10^6 - 2 ticks apart:
     * their delta passes INT64_MAX and is still written exactly, so the profiler's sums are
     * the times: 1 - 2^63 ns for the empty sample, 10^6 + 1 - 2^63 ns for the first and
     * 2^63 - 1 ns for the second. */
    {
        struct xt_sample two[] = {{1000001, 1}, {UINT64_MAX, 1}};
        struct xt_stream y = {1000000000, (uint64_t)1 << 63, two, 2, 1};
        text = xt_gecko(&y, NULL, &err);
        assert_int_equal(err, 0);
        assert_non_null(
            strstr(text, "\"timeDeltas\":[-9223372036854.775807,1,18446744073708.551614]"));
        free(text);
    }
}

/* A slice 2^63 + 1 ticks after the start, ready at the start: its marker's times and ready
 * latency are the exact positive milliseconds (before: the unsigned differences cast to
 * int64_t, negative). */
static void test_far_marker(void **state)
{
    static const struct xt_sample one[] = {{10000, 1}}; /* gecko shows threads with samples */
    struct xt_stream x = {10000000, 0, one, 1, 1};
    perch_record_source src = {&x, xt_far_slice_replay, NULL};
    size_t len;
    int err;
    (void)state;
    char *text = fx_export_from(PERCH_EXPORT_GECKO, NULL, &src, (size_t)16 << 20, &len, &err);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, "\"readyLatency\":922337203685477.5809"));
    assert_non_null(strstr(text, "\"startTime\":[922337203685477.5809]"));
    assert_non_null(strstr(text, "\"endTime\":[922337203685478.5809]"));
    assert_null(strstr(text, "-922"));
    free(text);
}

/* The empty sample one interval before a thread's first: interval x perf_freq no longer wraps
 * with a fast clock (2^62 Hz: 1e6 x 2^62 is 0 mod 2^64, which put it at the first's time). */
static void test_lead_fast_clock(void **state)
{
    static const struct xt_sample one[] = {{(uint64_t)1 << 62, 3}}; /* 1 s */
    struct xt_stream x = {(uint64_t)1 << 62, 0, one, 1, 1};
    int err;
    char *text;
    (void)state;
    text = xt_gecko(&x, NULL, &err);
    assert_int_equal(err, 0);
    /* a tick of 2^-62 s is no whole number of ns: the times themselves, not their deltas */
    assert_non_null(strstr(text, "\"time\":[999,1000]"));
    assert_null(strstr(text, "timeDeltas"));
    free(text);
}

/* A sample of the stream's as a PMC overflow sample (source 1), for xt_pmc_replay. */
static int as_pmc(void *ctx, const perch_sample_rec *r)
{
    const perch_sink *k = ctx;
    perch_sample_rec p = *r;
    p.kind = PERCH_SAMPLE_PMC;
    p.profile_source = 1;
    return k->sample(k->ctx, &p);
}

/* xt_replay with every sample a PMC sample (gecko makes them a thread of their own). */
static int xt_pmc_replay(void *ctx, const perch_sink *k)
{
    const struct xt_stream *x = ctx;
    perch_sink pmc = {0};
    int err = xt_head(x, k);
    pmc.ctx = (void *)k;
    pmc.sample = as_pmc;
    for (size_t i = 0; !err && i < x->n; i++)
        err = xt_sample_out(&pmc, &x->samples[i]);
    return err ? err : xt_tail(k);
}

/* Past gecko_max_samples a row's weight is its summed count, which may pass 32 bits (it was
 * truncated to them); threadCPUDelta, count x interval us, past 64 bits fails the export with
 * PERCH_ELIMIT (it wrapped). 2026-12-06. */
static void test_weight_limit(void **state)
{
    static const struct xt_sample max[] = {{10000000, UINT32_MAX}, {20000000, UINT32_MAX}};
    struct xt_stream x = {10000000, 0, max, 2, 1};
    perch_export_options opt;
    int err;
    char *text;
    (void)state;
    perch_export_options_init(&opt);
    opt.gecko_max_samples = 1;
    text = xt_gecko(&x, &opt, &err);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, "\"weight\":[0,8589934590]"));
    assert_non_null(strstr(text, "\"threadCPUDelta\":[0,8589934590000]"));
    free(text);
    perch_export_options_init(&opt);
    opt.sample_interval_ns = ((uint64_t)1 << 42) * 1000; /* 2^42 us: x (2^32 - 1) > 2^64 */
    x.n = 1;
    assert_null(xt_gecko(&x, &opt, &err));
    assert_int_equal(err, PERCH_ELIMIT);
    /* the same limit on a later sample: 2^22 - 1 x 2^42 us fits 64 bits, 2^22 x 2^42 does not */
    for (uint32_t k = (1u << 22) - 1; k <= 1u << 22; k++) {
        struct xt_sample two[] = {{10000000, 1}, {20000000, k}};
        struct xt_stream y = {10000000, 0, two, 2, 1};
        text = xt_gecko(&y, &opt, &err);
        assert_int_equal(err, k < 1u << 22 ? 0 : PERCH_ELIMIT);
        free(text);
    }
    /* a time out of range is named before a count past the limit, on a later sample too */
    struct xt_sample both[] = {{10000000, 1}, {((uint64_t)1 << 63) + 1, 1u << 22}};
    struct xt_stream z = {10000000, 0, both, 2, 1};
    assert_null(xt_gecko(&z, &opt, &err));
    assert_int_equal(err, PERCH_ERANGE);
    /* PMC samples stand for no CPU time: no count is past the limit */
    struct xt_sample big[] = {{10000000, 1}, {20000000, UINT32_MAX}};
    struct xt_stream q = {10000000, 0, big, 2, 1};
    perch_record_source src = {&q, xt_pmc_replay, NULL};
    size_t len;
    text = fx_export_from(PERCH_EXPORT_GECKO, &opt, &src, (size_t)16 << 20, &len, &err);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, "\"weight\":[0,1,4294967295]"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_sample_fallback),
        cmocka_unit_test(test_stack_walk),
        cmocka_unit_test(test_markers),
        cmocka_unit_test(test_marker_cap),
        cmocka_unit_test(test_time_range),
        cmocka_unit_test(test_lead_fast_clock),
        cmocka_unit_test(test_far_marker),
        cmocka_unit_test(test_weight_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
