/*
 * Chrome Trace Event export over the synthetic stream (two passes): valid JSON in the object
 * form with the documented fields, metadata naming processes and threads (pids learnt from
 * late records in pass 1), timer samples as per-thread CPU profiles (Profile/ProfileChunk:
 * nodes, samples, time deltas, gap samples, a span for sample-only threads), PMC samples as
 * instants, slice complete events whose ts/dur are exact microseconds from raw ticks and
 * perf_freq, args with PMC deltas under the counter names, the optional per-CPU tracks in CPU
 * order. Also the exact tick -> time conversion and the profile's reordering of late samples,
 * times 2^63 ticks or more from the trace start (or from the ready time) written exactly, and
 * a track shared by two processes (a pid and tid used again) naming each one's frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "export/chrome_profile.h"
#include "export_extreme.h"
#include "export_fixture.h"
#include "json_check.h"

static char *export_chrome_opt(struct jdoc *d, bool cpu_tracks, uint64_t interval_ns)
{
    perch_export_options opt;
    size_t len;
    int err;
    char *text;
    perch_export_options_init(&opt);
    opt.cpu_tracks = cpu_tracks;
    opt.sample_interval_ns = interval_ns;
    text = fx_export(PERCH_EXPORT_CHROME, &opt, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(d, text));
    return text;
}

static char *export_chrome(struct jdoc *d, bool cpu_tracks)
{
    return export_chrome_opt(d, cpu_tracks, 0);
}

/* The n-th event (0-based) with ph and tid (tid < 0: any), or -1. */
static long find_event(const struct jdoc *d, const char *ph, double pid, double tid, long n)
{
    long events = jget(d, 0, "traceEvents");
    for (long i = 0; i < jlen(d, events); i++) {
        long e = jat(d, events, i);
        if (!jstreq(d, jget(d, e, "ph"), ph) || (pid >= 0 && jnum(d, jget(d, e, "pid")) != pid) ||
            (tid >= 0 && jnum(d, jget(d, e, "tid")) != tid))
            continue;
        if (n-- == 0)
            return e;
    }
    return -1;
}

static long count_events(const struct jdoc *d, const char *ph, double pid, double tid)
{
    long n = 0;
    while (find_event(d, ph, pid, tid, n) >= 0)
        n++;
    return n;
}

static void test_document(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long events = jget(&d, 0, "traceEvents"), other = jget(&d, 0, "otherData");
    (void)state;
    assert_true(jstreq(&d, jget(&d, 0, "displayTimeUnit"), "ns"));
    assert_true(jnum(&d, jget(&d, other, "perf_freq")) == 1e7);
    assert_true(jnum(&d, jget(&d, other, "samples")) == 15); /* timer sample records */
    assert_true(jnum(&d, jget(&d, other, "pmc_samples")) == 2);
    assert_true(jnum(&d, jget(&d, other, "slices")) == 4);
    for (long i = 0; i < jlen(&d, events); i++) {
        long e = jat(&d, events, i);
        assert_int_equal(jtype_of(&d, jget(&d, e, "name")), J_STR);
        assert_int_equal(jtype_of(&d, jget(&d, e, "pid")), J_NUM);
        assert_int_equal(jtype_of(&d, jget(&d, e, "tid")), J_NUM);
        if (!jstreq(&d, jget(&d, e, "ph"), "M"))
            assert_true(jnum(&d, jget(&d, e, "ts")) >= 0);
        if (jstreq(&d, jget(&d, e, "ph"), "i")) { /* no scope: the thread's, by default */
            long sid = jget(&d, jget(&d, e, "args"), "stack_id");
            assert_int_equal(jget(&d, e, "s"), -1);
            assert_true(sid == -1 || jnum(&d, sid) > 0); /* only a stack that is there */
        }
    }
    /* 4 process/thread names + the unknown process (T4 has no thread record) + one idle
     * track per CPU, with its sort index */
    assert_int_equal(count_events(&d, "M", -1, -1), 9);
    assert_true(
        jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 1234, 1001, 0), "args"), "name"), "main"));
    assert_true(
        jstreq(&d, jget(&d, jget(&d, find_event(&d, "M", 5678, 0, 0), "args"), "name"), "svc.exe"));
    /* T4 is named by its samples alone (pass 1 reads no events): its process is named too,
     * after the events */
    assert_true(jstreq(&d,
                       jget(&d, jget(&d, find_event(&d, "M", 2147483646.0, 0, 0), "args"), "name"),
                       "unknown process"));
    jfree(&d);
    free(text);
}

/* The CPU profile of track (pid, tid) as a viewer rebuilds it: sample times (start + the sum
 * of time deltas), node ids, and the name of each sampled node. */
struct prof {
    long profiles, chunks, n; /* n: samples, gap samples (the root) included */
    double us[64];
    long node[64];
    char leaf[64][64];
};

static void node_name(const struct jdoc *d, long nodes, long id, char *out)
{
    for (long i = 0; i < jlen(d, nodes); i++) {
        long nd = jat(d, nodes, i);
        if (jnum(d, jget(d, nd, "id")) == (double)id) {
            long cf = jget(d, nd, "callFrame"), fn = jget(d, cf, "functionName");
            /* a native frame: its name alone (no url, scriptId, lineNumber, columnNumber) */
            assert_int_equal(jlen(d, cf), 1);
            snprintf(out, 64, "%.*s", (int)d->n[fn].slen, d->n[fn].s);
        }
    }
}

static void read_profile(const struct jdoc *d, double pid, double tid, struct prof *p)
{
    long events = jget(d, 0, "traceEvents"), all_nodes[8];
    double t = 0;
    memset(p, 0, sizeof *p);
    for (long i = 0; i < jlen(d, events); i++) {
        long e = jat(d, events, i), data = jget(d, jget(d, e, "args"), "data");
        if (!jstreq(d, jget(d, e, "ph"), "P") || jnum(d, jget(d, e, "pid")) != pid ||
            jnum(d, jget(d, e, "tid")) != tid)
            continue;
        if (jstreq(d, jget(d, e, "name"), "Profile")) {
            p->profiles++;
            t = jnum(d, jget(d, data, "startTime"));
            assert_true(jnum(d, jget(d, e, "ts")) == t);
            continue;
        }
        assert_true(jstreq(d, jget(d, e, "name"), "ProfileChunk"));
        assert_true(p->chunks < 8);
        long cpu = jget(d, data, "cpuProfile"), samples = jget(d, cpu, "samples");
        long deltas = jget(d, data, "timeDeltas");
        all_nodes[p->chunks++] = jget(d, cpu, "nodes");
        assert_int_equal(jlen(d, samples), jlen(d, deltas));
        for (long k = 0; k < jlen(d, samples); k++) {
            assert_true(p->n < 64);
            assert_true(jnum(d, jat(d, deltas, k)) >= 0);
            t += jnum(d, jat(d, deltas, k));
            p->us[p->n] = t;
            p->node[p->n] = (long)jnum(d, jat(d, samples, k));
            p->leaf[p->n][0] = 0;
            for (long c = 0; c < p->chunks; c++)
                node_name(d, all_nodes[c], p->node[p->n], p->leaf[p->n]);
            p->n++;
        }
    }
}

static long real_samples(const struct prof *p)
{
    long n = 0;
    for (long i = 0; i < p->n; i++)
        n += p->node[i] != 1;
    return n;
}

static void test_samples(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    struct prof p;
    long e;
    (void)state;
    /* timer samples: T1 5, T2 4 (pid from its process record), T3 6 (one sample has Count 2),
     * T4 1 under the unknown-process pid; each closed by one gap sample (the root) */
    read_profile(&d, 1234, 1001, &p);
    assert_int_equal(p.profiles, 1);
    assert_int_equal(real_samples(&p), 5);
    assert_int_equal(p.n, 6);
    assert_true(p.us[0] == 100.0); /* sample 0: T1, S1 at 100 us, its leaf frame */
    assert_string_equal(p.leaf[0], "ntoskrnl.exe!+0x1000");
    assert_string_equal(p.leaf[1], "app.exe!+0x200");
    assert_true(p.node[5] == 1 && p.us[5] == p.us[4] + 1000.0);
    read_profile(&d, 1234, 1002, &p);
    assert_int_equal(real_samples(&p), 4);
    assert_true(p.us[2] == 450.0); /* T2's stackless sample at app+0x400 (sample 7) */
    assert_string_equal(p.leaf[2], "app.exe!+0x400");
    read_profile(&d, 5678, 2001, &p);
    assert_int_equal(real_samples(&p), 6);
    assert_true(p.us[1] == p.us[2]);                /* the Count 2 sample twice at one time */
    assert_string_equal(p.leaf[3], "?!0x12345678"); /* S5 at 550 us (sample 9) */
    read_profile(&d, 2147483646, 3001, &p);
    assert_int_equal(real_samples(&p), 1);
    assert_string_equal(p.leaf[0], "ntoskrnl.exe!+0x5000");
    /* PMC samples stay instants: T1's two, at 500 and 850 us (samples 8 and 15) */
    assert_int_equal(count_events(&d, "i", -1, -1), 2);
    e = find_event(&d, "i", 1234, 1001, 0);
    assert_true(jstreq(&d, jget(&d, e, "cat"), "pmc_sample"));
    assert_true(jnum(&d, jget(&d, e, "ts")) == 500.0);
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "pmc_source")) == 2);
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "stack_id")) == 2); /* S2 */
    /* threads with samples and no slices (T2, T4) get a "CPU samples" span */
    e = find_event(&d, "X", 1234, 1002, 0);
    assert_true(jstreq(&d, jget(&d, e, "name"), "CPU samples"));
    assert_true(jnum(&d, jget(&d, e, "ts")) == 150.0);
    assert_true(jnum(&d, jget(&d, e, "dur")) == 650.0 - 150.0 + 1000.0);
    jfree(&d);
    free(text);
}

/* With a 100 us interval, a sample not followed within 150 us gets a gap sample 100 us
 * after it, so the flame chart shows T1 busy for 100 us per sample, not across the gap. */
static void test_sample_gaps(void **state)
{
    static const double want_us[] = {100, 200, 350, 450, 600, 700, 800, 900};
    static const long want_root[] = {0, 0, 0, 1, 0, 1, 0, 1};
    struct jdoc d;
    char *text = export_chrome_opt(&d, false, 100000);
    struct prof p;
    (void)state;
    read_profile(&d, 1234, 1001, &p);
    assert_int_equal(p.n, 8);
    for (long i = 0; i < 8; i++) {
        assert_true(p.us[i] == want_us[i]);
        assert_int_equal(p.node[i] == 1, want_root[i]);
    }
    jfree(&d);
    free(text);
}

/* A profile writer at 1 ms intervals into JSON on out, its entities empty. */
static void profiles_init(perch__profiles *p, perch__entities *e, perch__budget *b, perch_json *w,
                          perch_output *out)
{
    perch__entities_init(e, b);
    memset(p, 0, sizeof *p);
    p->budget = b;
    p->ents = e;
    p->w = w;
    p->interval_us = 1000;
    perch_json_init(w, perch__json_output_sink, out);
}

/* Samples of one thread that arrive out of time order (a stack waiting for its user half)
 * are written sorted, with no negative delta; one older than what was written is clamped. */
static void test_profile_order(void **state)
{
    static const uint64_t ip = 0x1000;
    perch__budget b = {1u << 24, 0};
    perch__entities e;
    perch__profiles p;
    perch_json w;
    perch_memory_out mem;
    perch_output out;
    char *text;
    size_t len = 0;
    static const uint64_t times[] = {300, 100, 200};
    struct jdoc d;
    struct prof pr;
    (void)state;
    perch_output_memory(&out, &mem, 1u << 20);
    profiles_init(&p, &e, &b, &w, &out);
    perch_json_begin_object(&w);
    perch_json_key(&w, "traceEvents");
    perch_json_begin_array(&w);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(perch__profiles_sample(&p, 7, 8, 0, 0, &ip, 1, true, times[i], 1), 0);
    assert_int_equal(perch__profiles_finish(&p), 0);
    perch_json_end_array(&w);
    perch_json_end_object(&w);
    perch_json_newline(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_int_equal(out.write(out.ctx, "", 1), 0); /* NUL-terminated for the parser */
    text = (char *)perch_output_memory_take(&mem, &len);
    assert_true(jparse(&d, text));
    read_profile(&d, 7, 8, &pr);
    assert_int_equal(pr.n, 4);
    assert_true(pr.us[0] == 100 && pr.us[1] == 200 && pr.us[2] == 300 && pr.us[3] == 1300);
    assert_int_equal(p.samples, 3);
    perch__profiles_free(&p);
    perch__entities_free(&e);
    assert_int_equal(b.used, 0);
    jfree(&d);
    free(text);
}

/* The text of 20000 timer samples over three tracks with a marker event after every 2nd,
 * through perch__profiles_sample or held (perch__profiles_hold, drained before a marker). */
static char *held_run(bool hold)
{
    perch__budget b = {1u << 24, 0};
    perch__entities e;
    perch__profiles p;
    perch_json w;
    perch_memory_out mem;
    perch_output out;
    size_t len = 0;
    perch_output_memory(&out, &mem, 1u << 22);
    profiles_init(&p, &e, &b, &w, &out);
    perch_json_begin_array(&w);
    for (uint32_t i = 0; i < 20000; i++) {
        struct perch__pheld s = {
            0, 0, 0x1000 + i % 5, 1000 + i * 700 - i % 3 * 900, 7, 8 + i % 3, 0, 1 + i % 2, true};
        int err = hold
                      ? perch__profiles_hold(&p, &s)
                      : perch__profiles_sample(&p, s.pid, s.tid, 0, 0, &s.ip, 1, 0, s.us, s.weight);
        assert_int_equal(err, 0);
        if (i % 2 == 1) {
            assert_int_equal(perch__profiles_drain(&p), 0);
            perch_json_raw(&w, "{\"marker\":1}");
        }
    }
    assert_int_equal(perch__profiles_finish(&p), 0);
    perch_json_end_array(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_int_equal(out.write(out.ctx, "", 1), 0);
    perch__profiles_free(&p);
    perch__entities_free(&e);
    assert_int_equal(b.used, 0);
    return (char *)perch_output_memory_take(&mem, &len);
}

/* A held sample is written exactly where it would have been unheld: before the next event
 * written after a drain, chunks (every 1024 samples of a track) included. */
static void test_profile_held(void **state)
{
    char *direct = held_run(false), *held = held_run(true);
    (void)state;
    assert_true(strlen(direct) > 5000 && strstr(direct, "ProfileChunk"));
    assert_string_equal(held, direct);
    free(direct);
    free(held);
}

static void test_slices(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long e, args;
    (void)state;
    assert_int_equal(count_events(&d, "X", -1, -1), 6); /* 4 slices, 2 "CPU samples" spans */
    /* T1 [200, 1200) us ready at 150 */
    e = find_event(&d, "X", 1234, 1001, 0);
    args = jget(&d, e, "args");
    assert_true(jnum(&d, jget(&d, e, "ts")) == 200.0);
    assert_true(jnum(&d, jget(&d, e, "dur")) == 1000.0);
    assert_true(jnum(&d, jget(&d, args, "cpu")) == 0);
    assert_true(jnum(&d, jget(&d, args, "priority")) == 8);
    assert_true(jnum(&d, jget(&d, args, "wait_reason")) == 5);
    assert_true(jnum(&d, jget(&d, args, "ready_latency_us")) == 50.0);
    assert_true(jnum(&d, jget(&d, args, "InstructionRetired")) == 1000);
    assert_true(jnum(&d, jget(&d, args, "TotalCycles")) == 500);
    /* T3 [300, 550) us on CPU 1, no wait reason, no ready time */
    e = find_event(&d, "X", 5678, 2001, 0);
    args = jget(&d, e, "args");
    assert_true(jnum(&d, jget(&d, e, "ts")) == 300.0);
    assert_true(jnum(&d, jget(&d, e, "dur")) == 250.0);
    assert_true(jnum(&d, jget(&d, args, "cpu")) == 1);
    assert_int_equal(jget(&d, args, "wait_reason"), -1);
    assert_int_equal(jget(&d, args, "ready_latency_us"), -1);
    assert_true(jnum(&d, jget(&d, args, "InstructionRetired")) == 7);
    /* exact text: whole microseconds without a point, no binary float noise */
    assert_non_null(strstr(text, "\"ts\":200,"));
    assert_non_null(strstr(text, "\"dur\":250,"));
    assert_null(strstr(text, ".000"));
    jfree(&d);
    free(text);
}

/* A slice's time and ready latency 2^63 + 1 ticks from their origins: the exact positive
 * microseconds (before: the unsigned difference cast to int64_t, "-922337203685477580.700"). */
static void test_far_times(void **state)
{
    struct xt_stream x = {10000000, 0, NULL, 0, 0};
    perch_record_source src = {&x, xt_far_slice_replay, NULL};
    size_t len;
    int err;
    (void)state;
    char *text = fx_export_from(PERCH_EXPORT_CHROME, NULL, &src, (size_t)16 << 20, &len, &err);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, "\"ts\":922337203685477580.9,"));
    assert_non_null(strstr(text, "\"dur\":1000,"));
    assert_non_null(strstr(text, "\"ready_latency_us\":922337203685477580.9"));
    assert_null(strstr(text, "-922"));
    free(text);
}

static void test_cpu_tracks(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, true);
    long e;
    (void)state;
    assert_int_equal(count_events(&d, "X", 2147483647, -1), 4);
    e = find_event(&d, "X", 2147483647, 1, 0);
    assert_true(jstreq(&d, jget(&d, e, "name"), "svc.exe (5678) thread 2001"));
    assert_true(jnum(&d, jget(&d, e, "dur")) == 250.0);
    e = find_event(&d, "X", 2147483647, 1, 1); /* the idle thread's slice on CPU 1 */
    assert_true(jstreq(&d, jget(&d, e, "name"), "Idle (CPU 1)"));
    assert_true(jnum(&d, jget(&d, e, "dur")) == 300.0);
    e = find_event(&d, "M", 2147483647, 1, 0);
    assert_true(jstreq(&d, jget(&d, e, "name"), "thread_name"));
    assert_true(jstreq(&d, jget(&d, jget(&d, e, "args"), "name"), "CPU 1"));
    e = find_event(&d, "M", 2147483647, 1, 1); /* CPU tracks in CPU order */
    assert_true(jstreq(&d, jget(&d, e, "name"), "thread_sort_index"));
    assert_true(jnum(&d, jget(&d, jget(&d, e, "args"), "sort_index")) == 1);
    jfree(&d);
    free(text);
}

/* The idle thread is tid 0 on both CPUs at once: one track per CPU, never overlapping. */
static void test_idle_tracks(void **state)
{
    struct jdoc d;
    char *text = export_chrome(&d, false);
    long e0 = find_event(&d, "X", 0, 2147418112.0, 0), e1 = find_event(&d, "X", 0, 2147418113.0, 0);
    (void)state;
    assert_true(e0 >= 0 && e1 >= 0);
    assert_int_equal(count_events(&d, "X", 0, 0), 0);
    assert_true(jstreq(&d, jget(&d, e0, "name"), "idle"));
    assert_true(jnum(&d, jget(&d, e0, "dur")) == 200.0);
    assert_true(jnum(&d, jget(&d, e1, "dur")) == 300.0);
    assert_true(jstreq(&d,
                       jget(&d, jget(&d, find_event(&d, "M", 0, 2147418113.0, 0), "args"), "name"),
                       "Idle (CPU 1)"));
    jfree(&d);
    free(text);
}

/* A pid and tid used again by a later process: both threads share one track (1234, 1001),
 * and a node made by the second process's stack is named from that process's modules,
 * whichever thread names it (the nodes of a track's first process are resolved when named). */
enum { KEY_P3 = 300, KEY_T9 = 61, KEY_M_REUSED = 507 };

static int reused_replay(void *ctx, const perch_sink *s)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    static const uint64_t s7[] = {FX_APP + 0x240};
    perch_sample_rec r;
    int err = fx_head(s, names);
    (void)ctx;
    if (!err)
        err = fx_stack(s, 7, s7, 1, 0);
    for (uint32_t i = 0; !err && i < 4; i++) {
        memset(&r, 0, sizeof r);
        r.thread_key = i < 2 ? FX_KEY_T1 : KEY_T9;
        r.tid = 1001;
        r.kind = PERCH_SAMPLE_TIMER;
        r.ts = FX_US(100 + 1000 * (uint64_t)i);
        r.stack_id = i < 2 ? 2 : 7;
        r.count = 1;
        err = s->sample ? s->sample(s->ctx, &r) : 0; /* NULL in chrome's first pass */
    }
    if (!err)
        err = fx_entities(s);
    if (!err)
        err = fx_thread(s, KEY_T9, KEY_P3, 1001, 1234, "reused");
    if (!err)
        err = fx_module(s, KEY_M_REUSED, KEY_P3, 1234, FX_APP, 0x10000, "C:\\r\\reused.exe");
    if (!err)
        err = fx_process(s, KEY_P3, 1234, "reused.exe");
    return err ? err : fx_tail(s);
}

static void test_pid_reused(void **state)
{
    perch_record_source src = {NULL, reused_replay, NULL};
    perch_export_options opt;
    char *text[2];
    size_t len;
    int err;
    (void)state;
    for (unsigned threads = 0; threads < 2; threads++) {
        perch_export_options_init(&opt);
        opt.threads = threads;
        text[threads] =
            fx_export_from(PERCH_EXPORT_CHROME, &opt, &src, (size_t)1 << 20, &len, &err);
        assert_int_equal(err, 0);
        assert_int_equal(fx_count(text[threads], "\"functionName\":\"reused.exe!+0x240\""), 1);
        assert_int_equal(fx_count(text[threads], "\"functionName\":\"app.exe!+0x200\""), 1);
        assert_int_equal(fx_count(text[threads], "app.exe!+0x240"), 0);
        assert_int_equal(fx_count(text[threads], "\"ProfileChunk\""), 1);
    }
    assert_string_equal(text[0], text[1]);
    free(text[0]);
    free(text[1]);
}

/* An idle thread (tid 0) that only its slice names, with no thread record: its track is on
 * the idle track of its CPU, named with the other CPUs' idle tracks and the unknown process
 * after the events (pass 1 reads no events, so the header did not know of it). */
static int idle_only_replay(void *ctx, const perch_sink *s)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    perch_slice_rec r;
    int err = fx_head(s, names);
    (void)ctx;
    memset(&r, 0, sizeof r);
    r.thread_key = 77;
    r.cpu = 1;
    r.start_ts = FX_US(100);
    r.end_ts = FX_US(400);
    r.priority = 0;
    r.wait_reason = r.wait_mode = r.state = -1;
    if (!err && s->slice)
        err = s->slice(s->ctx, &r);
    return err ? err : fx_tail(s);
}

static void test_idle_late(void **state)
{
    perch_record_source src = {NULL, idle_only_replay, NULL};
    struct jdoc d;
    size_t len;
    int err;
    (void)state;
    char *text = fx_export_from(PERCH_EXPORT_CHROME, NULL, &src, (size_t)1 << 20, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(&d, text));
    long slice = find_event(&d, "X", 2147483646.0, 2147418113.0, 0); /* unknown pid, CPU 1 */
    long name = find_event(&d, "M", 2147483646.0, 2147418113.0, 0);
    assert_true(slice >= 0 && name > slice);
    assert_true(jstreq(&d, jget(&d, jget(&d, name, "args"), "name"), "Idle (CPU 1)"));
    assert_true(jstreq(&d,
                       jget(&d, jget(&d, find_event(&d, "M", 2147483646.0, 0, 0), "args"), "name"),
                       "unknown process"));
    jfree(&d);
    free(text);
}

static void test_tick_conversion(void **state)
{
    (void)state;
    assert_int_equal(perch__ticks_to_ns(3, 10000000), 300);
    /* 2.4 GHz cycle clock: 1.5 s + 1 tick (0.41 ns) */
    assert_int_equal(perch__ticks_to_ns(3600000001ull, 2400000000ull), 1500000000ull);
    /* QPC at 3.579545 MHz (ACPI PM timer): 1 tick = 279.365 ns */
    assert_int_equal(perch__ticks_to_ns(1, 3579545), 279);
    assert_int_equal(perch__ticks_to_ns(3579545ull * 86400 * 365, 3579545),
                     86400ull * 365 * 1000000000ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_sample_gaps),     cmocka_unit_test(test_profile_order),
        cmocka_unit_test(test_slices),          cmocka_unit_test(test_far_times),
        cmocka_unit_test(test_cpu_tracks),      cmocka_unit_test(test_idle_tracks),
        cmocka_unit_test(test_tick_conversion), cmocka_unit_test(test_profile_held),
        cmocka_unit_test(test_pid_reused),      cmocka_unit_test(test_idle_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
