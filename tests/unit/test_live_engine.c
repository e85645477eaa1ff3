/*
 * The live engine (src/core/live/engine.c) fed from the .etl reader on a producer thread, as
 * the ETW callback would feed it: the report it produces equals the offline pipeline's on every
 * real kernel trace and on two synthetic seeds; queue drops, session losses (across a counter
 * restart) and gaps land in the ledger; a failing sink is switched off while the others get
 * everything; calls run on the model thread, at once when it is idle; the rate follows the clock;
 * destroy does not hang when the producer never closes the queue; a stop that drops what is
 * still queued ends with what was fed and counts the rest; a sink's state read while sinks
 * come and go is always a whole name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/etl.h"
#include "perch/event_queue.h"
#include "perch/json.h"
#include "perch/live.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "perch/thread.h"
#include "testdata.h"

typedef perch_test_text text;

/* ---- an .etl source on its own thread ------------------------------------------------------ */

struct producer {
    perch_etl_reader *reader;
    perch_event_queue *queue;
    bool try_push;        /* drop when full, as the ETW callback does */
    bool no_close;        /* never close the queue (destroy test) */
    uint64_t pause_after; /* wait for resume after this many records (0: never) */
    atomic_bool resume;
    uint64_t pause2_after; /* and for resume2 after this many (0: never) */
    atomic_bool resume2;
    uint64_t pushed, refused;
};

static int produce(void *arg)
{
    struct producer *p = arg;
    perch_event ev;
    while (perch_etl_next(p->reader, &ev) == 0) {
        while (p->pause_after != 0 && p->pushed == p->pause_after && !atomic_load(&p->resume))
            perch_sleep_ms(1);
        while (p->pause2_after != 0 && p->pushed == p->pause2_after && !atomic_load(&p->resume2))
            perch_sleep_ms(1);
        int err = p->try_push ? perch_event_queue_try_push(p->queue, &ev)
                              : perch_event_queue_push(p->queue, &ev);
        if (err == 0)
            p->pushed++;
        else
            p->refused++;
    }
    if (!p->no_close)
        perch_event_queue_close(p->queue, 0);
    return 0;
}

struct trace {
    uint8_t *data; /* the whole .etl */
    size_t len;
};

static void load_real(const char *rel, struct trace *t)
{
    t->data = perch_test_read_file(perch_test_require_data(rel), &t->len);
}

static void load_synth(uint32_t seed, struct trace *t)
{
    perch_synth_options o;
    perch_memory_out mem;
    perch_output out;
    perch_synth_options_init(&o);
    o.seed = seed;
    o.target_bytes = 2u << 20;
    perch_output_memory(&out, &mem, 64u << 20);
    assert_int_equal(perch_synth_write(&o, &out, NULL), 0);
    t->data = perch_output_memory_take(&mem, &t->len);
}

static void free_trace(struct trace *t)
{
    perch_free(t->data); /* test_read_file data is malloc'd: both are the C allocator */
}

static void trace_info_of(const struct trace *t, perch_trace_info *info)
{
    perch_etl_reader *r = NULL;
    assert_int_equal(perch_etl_open_memory(t->data, t->len, NULL, &r, NULL), 0);
    perch_pipeline_trace_info(perch_etl_header_of(r), "etl:test", info);
    perch_etl_destroy(r);
}

static char *offline_json(const struct trace *t)
{
    perch_input in;
    perch_report *r = NULL;
    perch_sink sink;
    perch_input_memory(&in, t->data, t->len);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    assert_int_equal(perch_pipeline_etl(&in, "etl:test", &sink, NULL, NULL), 0);
    char *json = perch_test_report_json(r);
    perch_report_destroy(r);
    return json;
}

/* Runs the trace through producer thread -> queue -> engine -> report (+ extra sinks). */
struct run {
    perch_event_queue *queue;
    perch_live *live;
    perch_report *report;
    struct producer prod;
    perch_thread *thread;
    bool lazy; /* the trace info comes at the first record */
};

static void run_start(struct run *x, const struct trace *t, size_t queue_bytes,
                      const perch_live_options *opts)
{
    perch_live_options o;
    perch_trace_info info;
    perch_sink sink;
    memset(x, 0, sizeof *x);
    assert_int_equal(perch_event_queue_create(queue_bytes, &x->queue), 0);
    memset(&o, 0, sizeof o);
    if (opts != NULL)
        o = *opts;
    o.sz = sizeof o;
    o.queue = x->queue;
    x->lazy = o.trace_info != NULL;
    if (x->lazy)
        o.info_ctx = x;
    assert_int_equal(perch_live_create(&o, &x->live), 0);
    assert_int_equal(perch_report_create(NULL, &x->report), 0);
    perch_report_sink(x->report, &sink);
    assert_int_equal(perch_live_add_sink(x->live, "report", &sink, NULL), 0);
    trace_info_of(t, &info);
    x->prod.queue = x->queue;
    assert_int_equal(perch_etl_open_memory(t->data, t->len, NULL, &x->prod.reader, NULL), 0);
}

static void lazy_info(void *ctx, perch_trace_info *info)
{
    struct run *x = ctx;
    perch_pipeline_trace_info(perch_etl_header_of(x->prod.reader), "etl:test", info);
}

static void run_go(struct run *x)
{
    perch_trace_info info;
    perch_pipeline_trace_info(perch_etl_header_of(x->prod.reader), "etl:test", &info);
    assert_int_equal(perch_live_start(x->live, x->lazy ? NULL : &info), 0);
    assert_int_equal(perch_thread_start(produce, &x->prod, "producer", &x->thread), 0);
}

static void run_wait(struct run *x)
{
    assert_int_equal(perch_thread_join(x->thread, NULL), 0);
    int err;
    for (int i = 0; (err = perch_live_stop(x->live, 1000)) == PERCH_ETIMEDOUT && i < 120; i++)
        ;
    assert_int_equal(err, 0);
}

static void run_free(struct run *x)
{
    perch_live_destroy(x->live);
    perch_report_destroy(x->report);
    perch_etl_destroy(x->prod.reader);
    perch_event_queue_destroy(x->queue);
}

/* ---- the live report equals the offline one ------------------------------------------------ */

static void check_same_as_offline(struct trace *t, bool lazy)
{
    struct run x;
    perch_live_stats st;
    perch_live_options o;
    char *offline = offline_json(t);
    memset(&o, 0, sizeof o);
    o.trace_info = lazy ? lazy_info : NULL;
    run_start(&x, t, 4u << 20, &o);
    run_go(&x);
    run_wait(&x);
    perch_live_get_stats(x.live, &st);
    assert_true(st.finished);
    assert_int_equal(st.error, 0);
    assert_int_equal(st.events, x.prod.pushed);
    assert_int_equal(st.queue_dropped, 0);
    /* the reader's own losses (etl.*) are the pipeline's to add; these traces have none */
    assert_int_equal(perch_etl_stats_of(x.prod.reader)->skipped_records, 0);
    char *live = perch_test_report_json(x.report);
    assert_string_equal(live, offline);
    free(live);
    free(offline);
    run_free(&x);
    free_trace(t);
}

static void test_real_traces_match_offline(void **state)
{
    static const char *const traces[] = {
        "etl/perfview_net.4.5.2.x64.etl",  "etl/airbus_ShutdownPerfDiagLogger.etl",
        "etl/perfview_smallEtlFile.etl",   "etl/perfview_SelfDescribingSingleEvent.etl",
        "etl/airbus_lxcore_kernel.etl",    "etl/airbus_AMSITrace.etl",
        "etl/perfview_primitive-types.etl"};
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        struct trace t;
        load_real(traces[i], &t);
        check_same_as_offline(&t, i % 2 == 1);
    }
}

static void test_synth_traces_match_offline(void **state)
{
    for (uint32_t seed = 1; seed <= 2; seed++) {
        struct trace t;
        load_synth(seed, &t);
        check_same_as_offline(&t, seed == 2);
    }
}

/* ---- the books ----------------------------------------------------------------------------- */

/* The number named name in the report JSON's flat object "object" ("ledger", "stats"), -1
 * when absent. */
static long long figure_of(const char *json, const char *object, const char *name)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", object);
    const char *start = strstr(json, pat);
    assert_non_null(start);
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(start, pat);
    const char *end = strchr(start, '}');
    if (p == NULL || p > end)
        return -1;
    return atoll(p + strlen(pat));
}

/* The ledger count of reason in a report JSON, -1 when absent. */
static long long ledger_count(const char *json, const char *reason)
{
    return figure_of(json, "ledger", reason);
}

/* A sink slower than the reader, so a small queue overflows. */
static int slow_sample(void *ctx, const perch_sample_rec *rec)
{
    int *n = ctx;
    (void)rec;
    if (++*n % 256 == 0)
        perch_sleep_ms(1);
    return 0;
}

static void test_drops_losses_and_gaps_in_ledger(void **state)
{
    struct trace t;
    struct run x;
    perch_live_stats st;
    perch_sink slow;
    int samples = 0;
    load_synth(3, &t);
    run_start(&x, &t, PERCH_EVENT_QUEUE_MIN_BYTES, NULL);
    memset(&slow, 0, sizeof slow);
    slow.ctx = &samples;
    slow.sample = slow_sample;
    assert_int_equal(perch_live_add_sink(x.live, "slow", &slow, NULL), 0);
    x.prod.try_push = true;
    perch_live_set_loss(x.live, "session.events_lost", 5);
    perch_live_set_loss(x.live, "session.events_lost", 7);
    perch_live_set_loss(x.live, "session.events_lost", 3); /* a new session: 7 + 3 */
    perch_live_note_gap(x.live, 1500);
    perch_live_note_gap(x.live, 250);
    run_go(&x);
    run_wait(&x);
    perch_live_get_stats(x.live, &st);
    char *json = perch_test_report_json(x.report);
    assert_int_equal(st.queue_dropped, x.prod.refused);
    assert_int_equal(st.events, x.prod.pushed);
    assert_true(x.prod.refused > 0);
    assert_int_equal(ledger_count(json, "live.queue_full"), (long long)x.prod.refused);
    assert_int_equal(ledger_count(json, "live.queue_oversized"), -1);
    assert_int_equal(ledger_count(json, "session.events_lost"), 10);
    assert_int_equal(st.losses, 10);
    assert_int_equal(ledger_count(json, "live.session_gap"), 2);
    assert_int_equal(ledger_count(json, "live.session_gap_ms"), 1750);
    assert_int_equal(st.gaps, 2);
    assert_int_equal(st.gap_ms, 1750);
    free(json);
    run_free(&x);
    free_trace(&t);
}

static void test_loss_reasons_are_bounded(void **state)
{
    struct trace t;
    struct run x;
    char reason[32];
    load_synth(1, &t);
    run_start(&x, &t, PERCH_EVENT_QUEUE_MIN_BYTES, NULL);
    for (int i = 0; i < PERCH_LIVE_MAX_LOSSES; i++) {
        snprintf(reason, sizeof reason, "r%d", i);
        assert_int_equal(perch_live_set_loss(x.live, reason, 1), 0);
    }
    assert_int_equal(perch_live_set_loss(x.live, "one.more", 1), PERCH_ELIMIT);
    assert_int_equal(perch_live_set_loss(x.live, "r0", 2), 0);
    memset(reason, 'x', sizeof reason);
    reason[sizeof reason - 1] = '\0';
    char longer[80];
    memset(longer, 'y', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(perch_live_set_loss(x.live, longer, 1), PERCH_EINVAL);
    run_free(&x);
    free_trace(&t);
}

/* ---- sinks --------------------------------------------------------------------------------- */

struct failing {
    int after; /* fail the sample callback once this many were seen */
    int samples;
};

static int failing_sample(void *ctx, const perch_sample_rec *rec)
{
    struct failing *f = ctx;
    (void)rec;
    return ++f->samples > f->after ? PERCH_EIO : 0;
}

static void test_failing_sink_is_switched_off(void **state)
{
    struct trace t;
    struct run x;
    struct failing f = {10, 0};
    perch_sink bad;
    perch_live_stats st;
    char name[PERCH_LIVE_SINK_NAME_MAX];
    int error;
    load_synth(1, &t);
    char *offline = offline_json(&t);
    run_start(&x, &t, 4u << 20, NULL);
    memset(&bad, 0, sizeof bad);
    bad.ctx = &f;
    bad.sample = failing_sample;
    assert_int_equal(perch_live_add_sink(x.live, "bad", &bad, NULL), 0);
    run_go(&x);
    assert_int_equal(perch_live_add_sink(x.live, "late", &bad, NULL), PERCH_ESTATE);
    run_wait(&x);
    perch_live_get_stats(x.live, &st);
    assert_int_equal(st.sinks, 2);
    assert_int_equal(st.failed_sinks, 1);
    assert_int_equal(st.error, 0);
    assert_true(st.finished);
    assert_int_equal(f.samples, 11); /* never called after its error */
    assert_int_equal(perch_live_sink_state(x.live, 0, name, &error), 0);
    assert_string_equal(name, "report");
    assert_int_equal(error, 0);
    assert_int_equal(perch_live_sink_state(x.live, 1, name, &error), 0);
    assert_string_equal(name, "bad");
    assert_int_equal(error, PERCH_EIO);
    assert_int_equal(perch_live_sink_state(x.live, 2, name, &error), PERCH_ERANGE);
    char *live = perch_test_report_json(x.report);
    assert_string_equal(live, offline);
    free(live);
    free(offline);
    run_free(&x);
    free_trace(&t);
}

/* ---- calls, rate, destroy ------------------------------------------------------------------ */

struct call_probe {
    atomic_int idle_calls;
    int in_call;
};

static void probe_idle(void *ctx)
{
    struct call_probe *p = ctx;
    atomic_fetch_add(&p->idle_calls, 1);
}

static int probe_call(void *ctx)
{
    struct call_probe *p = ctx;
    return 40 + (++p->in_call);
}

static _Atomic uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return atomic_load(&fake_now);
}

static void wait_for(perch_live *l, uint64_t events)
{
    perch_live_stats st;
    for (int i = 0; i < 5000; i++) {
        perch_live_get_stats(l, &st);
        if (st.events >= events)
            return;
        perch_sleep_ms(2);
    }
    fail_msg("the engine fed %llu of %llu records", (unsigned long long)st.events,
             (unsigned long long)events);
}

/* The rate is updated at the next tick after the clock moved: wait for it (a call may run in
 * the tick that read the clock just before). */
static void wait_rate(perch_live *l, double expected)
{
    perch_live_stats st;
    for (int i = 0; i < 2500; i++) {
        perch_live_get_stats(l, &st);
        if (st.events_per_second == expected)
            return;
        perch_sleep_ms(2);
    }
    fail_msg("events/s is %f, not %f", st.events_per_second, expected);
}

static void test_calls_rate_and_idle(void **state)
{
    struct trace t;
    struct run x;
    struct call_probe probe = {0, 0};
    perch_live_options o;
    perch_live_stats st;
    perch_sink none;
    memset(&o, 0, sizeof o);
    o.now_ns = fake_clock;
    o.tick_ms = 5;
    o.rate_window_s = 2;
    atomic_store(&fake_now, 10 * 1000000000ull);
    load_synth(1, &t);
    run_start(&x, &t, 4u << 20, &o);
    x.prod.no_close = true; /* closed below, once the rate was read */
    memset(&none, 0, sizeof none);
    none.ctx = &probe;
    assert_int_equal(perch_live_add_sink(x.live, "probe", &none, probe_idle), 0);
    assert_int_equal(perch_live_call(x.live, probe_call, &probe, 1000), 41); /* not started */
    run_go(&x);
    assert_int_equal(perch_thread_join(x.thread, NULL), 0);
    x.thread = NULL;
    wait_for(x.live, x.prod.pushed);
    /* one second later: the whole trace arrived in second 10 */
    atomic_store(&fake_now, 11 * 1000000000ull + 1);
    assert_int_equal(perch_live_call(x.live, probe_call, &probe, 5000), 42);
    wait_rate(x.live, (double)x.prod.pushed);
    perch_live_get_stats(x.live, &st);
    assert_true(st.running);
    atomic_store(&fake_now, 12 * 1000000000ull + 1);
    assert_int_equal(perch_live_call(x.live, probe_call, &probe, 5000), 43);
    wait_rate(x.live, (double)x.prod.pushed / 2.0); /* a window of 2 s, 1 of them empty */
    assert_true(atomic_load(&probe.idle_calls) > 0);
    perch_event_queue_close(x.queue, 0);
    int err;
    for (int i = 0; (err = perch_live_stop(x.live, 1000)) == PERCH_ETIMEDOUT && i < 60; i++)
        ;
    assert_int_equal(err, 0);
    perch_live_get_stats(x.live, &st);
    assert_false(st.running);
    assert_int_equal(perch_live_call(x.live, probe_call, &probe, 1000), 44); /* inline */
    run_free(&x);
    free_trace(&t);
}

static void test_destroy_while_running(void **state)
{
    struct trace t;
    struct run x;
    load_synth(2, &t);
    run_start(&x, &t, 4u << 20, NULL);
    x.prod.no_close = true;
    run_go(&x);
    assert_int_equal(perch_thread_join(x.thread, NULL), 0);
    assert_int_equal(perch_live_stop(x.live, 50), PERCH_ETIMEDOUT);
    perch_live_destroy(x.live); /* cancels the queue, joins */
    x.live = NULL;
    run_free(&x);
    free_trace(&t);
}

/* A sink whose first sample does not return until released (a capture write on a hung
 * disk), and which keeps what its ledger and finish said. */
struct stuck {
    atomic_bool blocked, release, finished;
    _Atomic uint64_t samples, stop_dropped;
};

static int stuck_sample(void *ctx, const perch_sample_rec *rec)
{
    struct stuck *k = ctx;
    (void)rec;
    if (atomic_fetch_add(&k->samples, 1) == 0) {
        atomic_store(&k->blocked, true);
        while (!atomic_load(&k->release))
            perch_sleep_ms(1);
    }
    return 0;
}

static int stuck_ledger(void *ctx, const perch_ledger_rec *rec)
{
    struct stuck *k = ctx;
    if (strcmp(rec->reason, "live.stop_dropped") == 0)
        atomic_store(&k->stop_dropped, rec->count);
    return 0;
}

static int stuck_finish(void *ctx)
{
    atomic_store(&((struct stuck *)ctx)->finished, true);
    return 0;
}

/* perch_live_drop_queued: a model thread held up by a sink does not drain the queue once the
 * sink lets go; it counts what was left (stats and every sink's ledger: live.stop_dropped),
 * finishes the model with what it fed, and ends. Fed and dropped add up to what was pushed. */
static void test_drop_queued_ends_a_stop_early(void **state)
{
    struct trace t;
    struct run x;
    perch_live_stats st;
    perch_sink k;
    static struct stuck stuck; /* the model thread reads it until the engine is destroyed */
    memset(&stuck, 0, sizeof stuck);
    load_synth(1, &t);
    run_start(&x, &t, 64u << 20, NULL); /* holds the whole trace: the producer never waits */
    memset(&k, 0, sizeof k);
    k.ctx = &stuck;
    k.sample = stuck_sample;
    k.ledger = stuck_ledger;
    k.finish = stuck_finish;
    assert_int_equal(perch_live_add_sink(x.live, "stuck", &k, NULL), 0);
    run_go(&x);
    assert_int_equal(perch_thread_join(x.thread, NULL), 0); /* all pushed, the queue closed */
    for (int ms = 0; ms < 10000 && !atomic_load(&stuck.blocked); ms++)
        perch_sleep_ms(1);
    assert_true(atomic_load(&stuck.blocked));
    assert_int_equal(perch_live_stop(x.live, 50), PERCH_ETIMEDOUT);
    perch_live_drop_queued(x.live);
    assert_int_equal(perch_live_stop(x.live, 50), PERCH_ETIMEDOUT); /* still inside the sink */
    atomic_store(&stuck.release, true);
    int err;
    for (int i = 0; (err = perch_live_stop(x.live, 100)) == PERCH_ETIMEDOUT && i < 100; i++)
        ;
    assert_int_equal(err, 0);
    perch_live_get_stats(x.live, &st);
    printf("fed %llu of %llu records, %llu dropped at the stop\n", (unsigned long long)st.events,
           (unsigned long long)x.prod.pushed, (unsigned long long)st.stop_dropped);
    assert_true(st.stop_dropped > 1000); /* the sink held it up at its first sample */
    assert_int_equal(st.events + st.stop_dropped, x.prod.pushed);
    assert_int_equal(st.error, 0);
    assert_true(st.finished);
    assert_true(atomic_load(&stuck.finished));
    assert_int_equal(atomic_load(&stuck.stop_dropped), st.stop_dropped);
    char *json = perch_test_report_json(x.report);
    assert_int_equal(ledger_count(json, "live.stop_dropped"), (long long)st.stop_dropped);
    free(json);
    run_free(&x);
    free_trace(&t);
}

/* A stop that drains the queue drops nothing and says nothing of it. */
static void test_full_drain_drops_nothing(void **state)
{
    struct trace t;
    struct run x;
    perch_live_stats st;
    load_synth(1, &t);
    run_start(&x, &t, 4u << 20, NULL);
    run_go(&x);
    run_wait(&x);
    perch_live_get_stats(x.live, &st);
    assert_int_equal(st.stop_dropped, 0);
    assert_int_equal(st.events, x.prod.pushed);
    char *json = perch_test_report_json(x.report);
    assert_int_equal(ledger_count(json, "live.stop_dropped"), -1);
    free(json);
    perch_live_drop_queued(x.live); /* after the end: nothing changes */
    perch_live_get_stats(x.live, &st);
    assert_int_equal(st.stop_dropped, 0);
    run_free(&x);
    free_trace(&t);
}

/* ---- late sinks ---------------------------------------------------------------------------- */

/* A sink that only counts what it gets. */
struct checker {
    uint64_t records;
};

static int chk_info(void *ctx, const perch_trace_info *i)
{
    (void)i;
    ((struct checker *)ctx)->records++;
    return 0;
}

static void checker_sink(struct checker *c, perch_sink *k)
{
    memset(k, 0, sizeof *k);
    k->ctx = c;
    k->trace_info = chk_info;
}

static void test_attach_needs_attachable(void **state)
{
    struct trace t;
    struct run x;
    perch_sink k;
    struct checker *c = calloc(1, sizeof *c);
    load_synth(1, &t);
    run_start(&x, &t, 4u << 20, NULL);
    run_go(&x);
    checker_sink(c, &k);
    assert_int_equal(perch_live_attach(x.live, "late", &k, NULL), PERCH_ESTATE);
    run_wait(&x);
    run_free(&x);
    free_trace(&t);
    free(c);
}

/* Reads every sink's state over and over, as a status request does, while the test attaches
 * and detaches: a name is always one of those given, whole (a copy taken under the lock). */
struct state_reader {
    perch_live *live;
    atomic_bool stop;
    atomic_uint_fast64_t reads;
    uint64_t bad;
};

static int read_states(void *arg)
{
    struct state_reader *r = arg;
    char name[PERCH_LIVE_SINK_NAME_MAX];
    int error;
    while (!atomic_load(&r->stop)) {
        for (size_t i = 0; perch_live_sink_state(r->live, i, name, &error) == 0; i++) {
            bool known = strcmp(name, "report") == 0 || strcmp(name, "") == 0 ||
                         strcmp(name, "a-much-longer-name-0123") == 0 || strcmp(name, "b") == 0;
            r->bad += !known || error != 0;
            atomic_fetch_add(&r->reads, 1);
        }
    }
    return 0;
}

/* A sink attached to a running engine that fails (a recording on a full disk) is switched
 * off, and detaching it with finish says why instead of calling it done. */
static void test_detach_reports_the_sink_error(void **state)
{
    struct trace t;
    struct run x;
    perch_live_options o;
    struct failing f = {0, 0};
    perch_sink bad;
    (void)state;
    load_synth(1, &t);
    memset(&o, 0, sizeof o);
    o.attachable = true;
    run_start(&x, &t, 4u << 20, &o);
    x.prod.pause_after = 100;
    run_go(&x);
    memset(&bad, 0, sizeof bad);
    bad.ctx = &f;
    bad.sample = failing_sample;
    assert_int_equal(perch_live_attach(x.live, "bad", &bad, NULL), 0);
    atomic_store(&x.prod.resume, true);
    run_wait(&x);
    assert_int_equal(f.samples, 1); /* failed at its first sample, never called again */
    assert_int_equal(perch_live_detach(x.live, &f, true), PERCH_EIO);
    assert_int_equal(perch_live_detach(x.live, &f, true), PERCH_ENOENT); /* detached */
    run_free(&x);
    free_trace(&t);
}

/* A figure of the report's "stats" object, -1 when absent. */
static long long stat_value(const char *json, const char *name)
{
    return figure_of(json, "stats", name);
}

static int occurrences(const char *hay, const char *s)
{
    int n = 0;
    for (const char *p = strstr(hay, s); p != NULL; p = strstr(p + 1, s))
        n++;
    return n;
}

#define LATE_AT 5000u /* records fed before the first late sink comes, and between */

static perch_report *attach_report(struct run *x, const char *name)
{
    perch_report *r = NULL;
    perch_sink k;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &k);
    assert_int_equal(perch_live_attach(x->live, name, &k, NULL), 0);
    return r;
}

/* An attachable engine over synthetic trace 1, not started, whose books already hold 40
 * events lost and one gap of 1000 ms; lazy: the trace info comes with the first record. The
 * tick is 1 ms, so the books go into the model's ledger at once (a detach must skip them). */
static void start_with_early_losses(struct run *x, struct trace *t, bool lazy)
{
    perch_live_options o;
    load_synth(1, t);
    memset(&o, 0, sizeof o);
    o.attachable = true;
    o.tick_ms = 1;
    o.trace_info = lazy ? lazy_info : NULL;
    run_start(x, t, 4u << 20, &o);
    perch_live_set_loss(x->live, "session.events_lost", 40);
    perch_live_note_gap(x->live, 1000);
}

/* Sinks that come while the engine runs (recordings started while perchd runs) get the
 * ledger of their own window: a, from the first pause to the end; b, from the first pause to
 * the second, detached there with finish (`perch stop`); c, from the second pause to the end.
 * Before 2026-12-06 a and c got the session's whole ledger and statistics at the engine's
 * finish (losses from before they came), and b got the books but none of the model's own
 * ledger. */
static void test_late_sinks_count_their_own_window(void **state)
{
    struct trace t;
    struct run x;
    (void)state;
    start_with_early_losses(&x, &t, false);
    x.prod.pause_after = LATE_AT;
    x.prod.pause2_after = 2 * LATE_AT;
    run_go(&x);
    wait_for(x.live, LATE_AT);
    perch_report *a = attach_report(&x, "a"), *b = attach_report(&x, "b");
    perch_live_set_loss(x.live, "session.events_lost", 47);
    perch_live_note_gap(x.live, 500);
    atomic_store(&x.prod.resume, true);
    wait_for(x.live, 2 * LATE_AT);
    perch_sleep_ms(50); /* ticks of the idle engine apply the books */
    assert_int_equal(perch_live_detach(x.live, b, true), 0);
    perch_report *c = attach_report(&x, "c");
    perch_live_set_loss(x.live, "session.events_lost", 100);
    atomic_store(&x.prod.resume2, true);
    run_wait(&x);
    char *all = perch_test_report_json(x.report), *ja = perch_test_report_json(a),
         *jb = perch_test_report_json(b), *jc = perch_test_report_json(c);
    assert_int_equal(ledger_count(all, "session.events_lost"), 100);
    assert_int_equal(ledger_count(ja, "session.events_lost"), 60);
    assert_int_equal(ledger_count(jb, "session.events_lost"), 7);
    assert_int_equal(ledger_count(jc, "session.events_lost"), 53);
    assert_int_equal(ledger_count(all, "live.session_gap_ms"), 1500);
    assert_int_equal(ledger_count(ja, "live.session_gap_ms"), 500);
    assert_int_equal(ledger_count(jb, "live.session_gap_ms"), 500);
    assert_int_equal(ledger_count(jc, "live.session_gap_ms"), -1);
    /* each reason once: the detach wrote the books' reasons from the books only */
    assert_int_equal(occurrences(jb, "\"session.events_lost\":"), 1);
    assert_int_equal(occurrences(jb, "\"live.session_gap\":"), 1);
    assert_int_equal(occurrences(jb, "\"live.session_gap_ms\":"), 1);
    /* the model's own ledger: a's window is b's and c's together, and less than the whole */
    long long na = ledger_count(ja, "sample.no_stack"), nb = ledger_count(jb, "sample.no_stack"),
              nc = ledger_count(jc, "sample.no_stack");
    assert_true(nb > 0 && nc > 0);
    assert_int_equal(na, nb + nc);
    assert_true(na < ledger_count(all, "sample.no_stack"));
    /* the statistics describe the session: the sink there from the start has them */
    assert_int_equal(stat_value(all, "records.total"), (long long)x.prod.pushed);
    assert_int_equal(stat_value(ja, "records.total"), -1);
    assert_int_equal(stat_value(jb, "records.total"), -1);
    assert_int_equal(stat_value(jc, "records.total"), -1);
    free(all);
    free(ja);
    free(jb);
    free(jc);
    perch_report_destroy(a);
    perch_report_destroy(b);
    perch_report_destroy(c);
    run_free(&x);
    free_trace(&t);
}

/* A session described lazily has no model until its first record. Losses and gaps reported
 * before it must still reach the ledger (before 2026-12-06 the ticks marked them applied and
 * they vanished: 60 instead of 100), and a sink that comes before it gets only what came after
 * it (without its copy of the waiting books it got 100). */
static void test_losses_before_the_first_record(void **state)
{
    struct trace t;
    struct run x;
    (void)state;
    start_with_early_losses(&x, &t, true);
    assert_int_equal(perch_live_start(x.live, NULL), 0);
    perch_sleep_ms(50); /* ticks with no model yet */
    perch_report *late = attach_report(&x, "late");
    perch_live_set_loss(x.live, "session.events_lost", 100);
    perch_sleep_ms(50);
    assert_int_equal(perch_thread_start(produce, &x.prod, "producer", &x.thread), 0);
    run_wait(&x);
    char *all = perch_test_report_json(x.report), *jl = perch_test_report_json(late);
    assert_int_equal(ledger_count(all, "session.events_lost"), 100);
    assert_int_equal(ledger_count(all, "live.session_gap"), 1);
    assert_int_equal(ledger_count(all, "live.session_gap_ms"), 1000);
    assert_int_equal(ledger_count(jl, "session.events_lost"), 60);
    assert_int_equal(ledger_count(jl, "live.session_gap"), -1);
    assert_int_equal(ledger_count(jl, "live.session_gap_ms"), -1);
    /* the late sink saw the whole trace: it came before the first record */
    assert_int_equal(stat_value(all, "records.total"), (long long)x.prod.pushed);
    assert_int_equal(ledger_count(jl, "sample.no_stack"), ledger_count(all, "sample.no_stack"));
    free(all);
    free(jl);
    perch_report_destroy(late);
    run_free(&x);
    free_trace(&t);
}

static void test_sink_state_while_attaching(void **state)
{
    struct trace t;
    struct run x;
    perch_live_options o;
    perch_sink k;
    perch_thread *reader;
    char name[PERCH_LIVE_SINK_NAME_MAX];
    struct checker *c = calloc(1, sizeof *c);
    struct state_reader *r = calloc(1, sizeof *r);
    load_synth(1, &t);
    memset(&o, 0, sizeof o);
    o.attachable = true;
    run_start(&x, &t, 4u << 20, &o);
    x.prod.pause_after = 100; /* the engine runs, waiting for more */
    run_go(&x);
    checker_sink(c, &k);
    r->live = x.live;
    assert_int_equal(perch_thread_start(read_states, r, "states", &reader), 0);
    /* the reader must be reading while the slots change, not start after the loop ended */
    for (int waited = 0; atomic_load(&r->reads) == 0 && waited < 10000; waited++)
        perch_sleep_ms(1);
    assert_true(atomic_load(&r->reads) > 0);
    for (int i = 0; i < 200; i++) {
        const char *given = i % 2 ? "b" : "a-much-longer-name-0123";
        assert_int_equal(perch_live_attach(x.live, given, &k, NULL), 0);
        assert_int_equal(perch_live_sink_state(x.live, 1, name, NULL), 0);
        assert_string_equal(name, given); /* the slot the detach emptied is reused */
        assert_int_equal(perch_live_detach(x.live, c, false), 0);
        assert_int_equal(perch_live_sink_state(x.live, 1, name, NULL), 0);
        assert_string_equal(name, "");
    }
    atomic_store(&r->stop, true);
    assert_int_equal(perch_thread_join(reader, NULL), 0);
    assert_int_equal(r->bad, 0);
    assert_int_equal(perch_live_sink_state(x.live, 0, name, NULL), 0);
    assert_string_equal(name, "report");
    assert_int_equal(perch_live_sink_state(x.live, 2, name, NULL), PERCH_ERANGE);
    atomic_store(&x.prod.resume, true);
    run_wait(&x);
    run_free(&x);
    free_trace(&t);
    free(c);
    free(r);
}

static int count_call(void *ctx)
{
    (*(int *)ctx)++;
    return 7;
}

static void count_idle(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

/* A call to an idle engine runs at once: with a one-minute tick, each of 50 calls returns its
 * result within its 10 s timeout. A wake of the queue alone brings the sinks' idle calls (the
 * flight recorder's seal for a snapshot) without waiting for the tick either. */
static void test_call_wakes_idle_engine(void **state)
{
    struct trace t;
    struct run x;
    perch_live_options o;
    perch_sink k;
    static int calls; /* a call that timed out would still run later */
    static atomic_int idles;
    calls = 0;
    atomic_store(&idles, 0);
    load_synth(1, &t);
    memset(&o, 0, sizeof o);
    o.tick_ms = 60000;
    run_start(&x, &t, 4u << 20, &o);
    memset(&k, 0, sizeof k);
    k.ctx = &idles; /* no callback: only its idle function */
    assert_int_equal(perch_live_add_sink(x.live, "idler", &k, count_idle), 0);
    x.prod.pause_after = 100;
    run_go(&x);
    for (int i = 0; i < 50; i++)
        assert_int_equal(perch_live_call(x.live, count_call, &calls, 10000), 7);
    assert_int_equal(calls, 50);
    int seen = -1; /* the idle call after the last call: let it pass before waking */
    while (seen != atomic_load(&idles)) {
        seen = atomic_load(&idles);
        perch_sleep_ms(50);
    }
    for (int i = 0; i < 5; i++) {
        int before = atomic_load(&idles);
        perch_event_queue_wake(x.queue);
        for (int ms = 0; ms < 10000 && atomic_load(&idles) == before; ms++)
            perch_sleep_ms(1);
        assert_true(atomic_load(&idles) > before);
    }
    atomic_store(&x.prod.resume, true);
    run_wait(&x);
    run_free(&x);
    free_trace(&t);
}

static void test_bad_arguments(void **state)
{
    perch_live_options o;
    perch_live *l = (perch_live *)0x1;
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    assert_int_equal(perch_live_create(&o, &l), PERCH_EINVAL); /* no queue */
    assert_ptr_equal(l, (perch_live *)0x1);
    assert_int_equal(perch_live_create(NULL, &l), PERCH_EINVAL);
    assert_int_equal(perch_live_stop(NULL, 0), PERCH_EINVAL);
    perch_live_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces_match_offline),
        cmocka_unit_test(test_synth_traces_match_offline),
        cmocka_unit_test(test_drops_losses_and_gaps_in_ledger),
        cmocka_unit_test(test_loss_reasons_are_bounded),
        cmocka_unit_test(test_failing_sink_is_switched_off),
        cmocka_unit_test(test_detach_reports_the_sink_error),
        cmocka_unit_test(test_calls_rate_and_idle),
        cmocka_unit_test(test_destroy_while_running),
        cmocka_unit_test(test_drop_queued_ends_a_stop_early),
        cmocka_unit_test(test_full_drain_drops_nothing),
        cmocka_unit_test(test_attach_needs_attachable),
        cmocka_unit_test(test_call_wakes_idle_engine),
        cmocka_unit_test(test_late_sinks_count_their_own_window),
        cmocka_unit_test(test_losses_before_the_first_record),
        cmocka_unit_test(test_sink_state_while_attaching),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
