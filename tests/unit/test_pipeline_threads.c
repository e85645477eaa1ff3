/*
 * The pipelined import (include/perch/pipeline.h): a reader thread ahead of the model must
 * give the same output byte for byte as one thread, on every real trace in the data folder
 * and on synthetic traces (with the default ring and with the smallest one, so the reader
 * waits all the time); progress is reported the same way; a sink error stops both threads
 * with that error; a reader that stops (allocation failure on its thread) ends the model with
 * what was read and "etl.read_error" in the ledger; an allocation-failure sweep over the whole
 * two-thread pipeline ends every run with 0 (and the same bytes: a thread or queue that cannot
 * be had falls back to one thread) or PERCH_ENOMEM. Also the two reusable pieces alone: the
 * feeder with a limit and stopped early, the model's feeder dropping the bytes of records the
 * model does not read, and perch_pipeline_consume's ticks and errors; and
 * perch_pipeline_etl_reader (a reader the caller opened) against perch_pipeline_etl.
 * Each two-thread case runs also with relay_sink (the sink played on the reader thread between
 * its reads, as perch import's capture writer), where the reader thread must outlive the
 * model's finish and a full queue must not keep it from playing the sink.
 *
 * The output compared is the capture (what perch import writes, every record and field).
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

#include "perch/capture.h"
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/model.h"
#include "perch/pipeline.h"
#include "perch/platform.h"
#include "perch/synth.h"
#include "perch/thread.h"
#include "pipeline/counted.h"
#include "pipeline/feeder_relay.h"
#include "testdata.h"
#include "util/mem.h"

struct bytes {
    uint8_t *p;
    size_t len;
};

struct progress_log {
    uint64_t calls, last_done, last_total;
    bool backwards;
};

static void log_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress_log *l = ctx;
    l->backwards |= l->calls > 0 && done < l->last_done;
    l->calls++;
    l->last_done = done;
    l->last_total = total;
}

/* Imports etl into a capture in memory with the given threads and ring; returns the pipeline's
 * result and the bytes (caller frees). */
static int import(const struct bytes *etl, unsigned threads, size_t queue_bytes, bool relay,
                  struct progress_log *log, struct bytes *cap)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_input in;
    perch_pipeline_options o = {.sz = sizeof o,
                                .progress = log ? log_progress : NULL,
                                .progress_ctx = log,
                                .threads = threads,
                                .queue_bytes = queue_bytes,
                                .relay_sink = relay};
    cap->p = NULL;
    cap->len = 0;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    int err = perch_capture_writer_create(&out, NULL, &w);
    if (err < 0)
        return err;
    perch_capture_writer_sink(w, &sink);
    perch_input_memory(&in, etl->p, etl->len);
    err = perch_pipeline_etl(&in, "etl:threads", &sink, &o, NULL);
    perch_capture_writer_destroy(w);
    cap->p = perch_output_memory_take(&mem, &cap->len);
    return err;
}

static void assert_same_bytes(const struct bytes *a, const struct bytes *b)
{
    assert_int_equal(a->len, b->len);
    assert_memory_equal(a->p, b->p, a->len);
}

/* Two threads (on the default ring or the smallest, with or without the relayed sink) against
 * one: the same capture and the same progress calls. */
static void check_two_threads(const struct bytes *etl, const struct bytes *one,
                              const struct progress_log *l1, size_t queue_bytes, bool relay)
{
    struct bytes two;
    struct progress_log l2 = {0};
    assert_int_equal(import(etl, queue_bytes ? 0 : 2, queue_bytes, relay, &l2, &two), 0);
    assert_same_bytes(one, &two);
    assert_int_equal(l1->calls, l2.calls);
    assert_false(l2.backwards);
    assert_int_equal(l2.last_done, etl->len); /* the last call: everything read */
    assert_int_equal(l2.last_total, etl->len);
    perch_free(two.p);
}

static void check_trace(const char *name, const struct bytes *etl)
{
    struct bytes one;
    struct progress_log l1 = {0};
    assert_int_equal(import(etl, 1, 0, false, &l1, &one), 0);
    assert_true(one.len > 100);
    for (unsigned relay = 0; relay <= 1; relay++) {
        check_two_threads(etl, &one, &l1, 0, relay);
        check_two_threads(etl, &one, &l1, PERCH_EVENT_QUEUE_MIN_BYTES, relay);
    }
    printf("  %-40s %9zu -> %7zu bytes, identical with 1 and 2 threads (%llu progress calls)\n",
           name, etl->len, one.len, (unsigned long long)l1.calls);
    perch_free(one.p);
}

static struct bytes real_trace(const char *name)
{
    char rel[128];
    struct bytes b;
    snprintf(rel, sizeof rel, "etl/%s", name);
    b.p = perch_test_read_file(perch_test_require_data(rel), &b.len);
    return b;
}

static void test_real_traces(void **state)
{
    (void)state;
    for (size_t i = 0; i < perch_test_etl_trace_count; i++) {
        struct bytes etl = real_trace(perch_test_etl_traces[i]);
        check_trace(perch_test_etl_traces[i], &etl);
        free(etl.p);
    }
}

static struct bytes synth_trace(uint64_t seed, size_t target)
{
    perch_synth_options opt;
    perch_output out;
    perch_memory_out mem;
    struct bytes b;
    perch_synth_options_init(&opt);
    opt.seed = seed;
    opt.target_bytes = target;
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_synth_write(&opt, &out, NULL), 0);
    b.p = perch_output_memory_take(&mem, &b.len);
    return b;
}

static void test_synthetic_traces(void **state)
{
    static const uint64_t seeds[] = {1, 3, 11};
    (void)state;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char name[32];
        struct bytes etl = synth_trace(seeds[i], (size_t)(4u + 2u * i) << 20);
        snprintf(name, sizeof name, "synth seed %llu", (unsigned long long)seeds[i]);
        check_trace(name, &etl);
        perch_free(etl.p);
    }
}

/* The reader thread plays the capture writer while the model is merely behind only for a
 * trace whose buffers are mostly uncompressed: not for the real x64 trace (359 of its 360
 * buffers compressed), for a synthetic one (none). The edges: exactly half compressed
 * volunteers, one more does not. */
static void test_volunteer_policy(void **state)
{
    struct bytes x64 = real_trace("perfview_net.4.5.2.x64.etl"), syn = synth_trace(1, 1u << 20);
    perch_etl_reader *r = NULL;
    perch_etl_stats st;
    (void)state;
    assert_int_equal(perch_etl_open_memory(x64.p, x64.len, NULL, &r, NULL), 0);
    assert_true(perch_etl_stats_of(r)->compressed_buffers > 300);
    assert_false(perch__etl_feeder_volunteers(perch_etl_stats_of(r)));
    perch_etl_destroy(r);
    assert_int_equal(perch_etl_open_memory(syn.p, syn.len, NULL, &r, NULL), 0);
    assert_true(perch_etl_stats_of(r)->buffers > 10);
    assert_true(perch__etl_feeder_volunteers(perch_etl_stats_of(r)));
    perch_etl_destroy(r);
    memset(&st, 0, sizeof st);
    assert_true(perch__etl_feeder_volunteers(&st));
    st.buffers = 4;
    st.compressed_buffers = 2;
    assert_true(perch__etl_feeder_volunteers(&st));
    st.compressed_buffers = 3;
    assert_false(perch__etl_feeder_volunteers(&st));
    st.buffers = 3;
    st.compressed_buffers = 2;
    assert_false(perch__etl_feeder_volunteers(&st));
    free(x64.p);
    perch_free(syn.p);
}

/* perch_pipeline_etl_reader over a reader the caller opened gives the capture
 * perch_pipeline_etl gives (both thread counts); it takes the reader even when it refuses the
 * call (no leak under ASan). */
static void test_reader_entry(void **state)
{
    struct bytes etl = real_trace("perfview_net.4.5.2.x64.etl");
    (void)state;
    for (unsigned threads = 1; threads <= 2; threads++) {
        struct bytes want, got;
        perch_output out;
        perch_memory_out mem;
        perch_capture_writer *w = NULL;
        perch_etl_reader *r = NULL;
        perch_sink sink;
        perch_pipeline_options o = {.sz = sizeof o, .threads = threads, .relay_sink = 1};
        assert_int_equal(import(&etl, threads, 0, true, NULL, &want), 0);
        assert_int_equal(perch_etl_open_memory(etl.p, etl.len, NULL, &r, NULL), 0);
        perch_output_memory(&out, &mem, (size_t)1 << 30);
        assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
        perch_capture_writer_sink(w, &sink);
        assert_int_equal(perch_pipeline_etl_reader(r, "etl:threads", &sink, &o), 0);
        perch_capture_writer_destroy(w);
        got.p = perch_output_memory_take(&mem, &got.len);
        assert_same_bytes(&want, &got);
        perch_free(want.p);
        perch_free(got.p);
    }
    perch_etl_reader *r = NULL;
    assert_int_equal(perch_etl_open_memory(etl.p, etl.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_pipeline_etl_reader(r, "etl:threads", NULL, NULL), PERCH_EINVAL);
    free(etl.p);
}

/* A sink whose slice callback fails at the n-th slice, forwarding the rest to a capture. */
struct failing_sink {
    perch_sink inner;
    uint64_t slices, fail_at;
};

static int fail_slice(void *ctx, const perch_slice_rec *s)
{
    struct failing_sink *f = ctx;
    if (++f->slices == f->fail_at)
        return PERCH_EIO;
    return f->inner.slice ? f->inner.slice(f->inner.ctx, s) : 0;
}

/* A sink error stops the model and the reader (no hang, the same error with either). */
static void test_sink_error_stops_both(void **state)
{
    struct bytes etl = synth_trace(2, 8u << 20);
    (void)state;
    for (unsigned threads = 1; threads <= 3; threads++) { /* 3: two, the sink relayed */
        struct failing_sink f = {{0}, 0, 1000};
        perch_sink sink;
        perch_input in;
        perch_pipeline_options o = {.sz = sizeof o,
                                    .threads = threads > 1 ? 2 : 1,
                                    .queue_bytes = PERCH_EVENT_QUEUE_MIN_BYTES,
                                    .relay_sink = threads == 3};
        memset(&sink, 0, sizeof sink);
        sink.ctx = &f;
        sink.slice = fail_slice;
        perch_input_memory(&in, etl.p, etl.len);
        assert_int_equal(perch_pipeline_etl(&in, "etl:fail", &sink, &o, NULL), PERCH_EIO);
        assert_int_equal(f.slices, 1000);
    }
    perch_free(etl.p);
}

/* ---- allocation failures on the reader's thread or anywhere ------------------------- */

static _Thread_local bool on_main_thread;
static atomic_int fail_countdown; /* the allocation that fails, counted down; < 0: none */
static atomic_bool reader_only;
static atomic_int failures;

static void *failing_realloc(void *p, size_t n)
{
    if (n != 0 && p == NULL && (!atomic_load(&reader_only) || !on_main_thread) &&
        atomic_fetch_sub(&fail_countdown, 1) == 0) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    return perch__default_realloc(p, n);
}

static void arm(int countdown, bool reader)
{
    atomic_store(&reader_only, reader);
    atomic_store(&fail_countdown, countdown);
    atomic_store(&failures, 0);
    perch__realloc_hook = failing_realloc;
}

static void disarm(void)
{
    perch__realloc_hook = perch__default_realloc;
    atomic_store(&fail_countdown, -1);
}

struct ledger_probe {
    bool finished;
    uint64_t read_error;
};

static int probe_ledger(void *ctx, const perch_ledger_rec *l)
{
    struct ledger_probe *p = ctx;
    if (strcmp(l->reason, "etl.read_error") == 0)
        p->read_error = l->count;
    return 0;
}

static int probe_finish(void *ctx)
{
    ((struct ledger_probe *)ctx)->finished = true;
    return 0;
}

/* The reader fails on its own thread (the XPRESS scratch buffer grows as larger compressed
 * buffers come): the pipeline returns PERCH_ENOMEM after finishing the model, whose ledger
 * says the reading stopped. */
static void reader_error_ends_model(const struct bytes *etl, bool relay)
{
    struct ledger_probe p = {false, 0};
    perch_sink sink;
    perch_input in;
    perch_pipeline_options o = {.sz = sizeof o, .threads = 2, .relay_sink = relay};
    memset(&sink, 0, sizeof sink);
    sink.ctx = &p;
    sink.ledger = probe_ledger;
    sink.finish = probe_finish;
    perch_input_memory(&in, etl->p, etl->len);
    on_main_thread = true;
    arm(0, true);
    int err = perch_pipeline_etl(&in, "etl:reader-error", &sink, &o, NULL);
    disarm();
    assert_int_equal(atomic_load(&failures), 1);
    assert_int_equal(err, PERCH_ENOMEM);
    assert_true(p.finished);
    assert_int_equal(p.read_error, 1);
}

static void test_reader_error_ends_model(void **state)
{
    struct bytes etl = real_trace("perfview_net.4.5.2.x64.etl");
    (void)state;
    reader_error_ends_model(&etl, false);
    reader_error_ends_model(&etl, true);
    free(etl.p);
}

/* Every allocation of a two-thread import fails once in turn (stepping through them): each
 * run ends with PERCH_ENOMEM, or with 0 and exactly the bytes of the one-thread import. */
static void allocation_failure_sweep(const struct bytes *etl, const struct bytes *ref, bool relay)
{
    struct bytes got;
    int ok = 0, nomem = 0;
    on_main_thread = true;
    for (int n = 0; n < 4000; n += n < 200 ? 1 : 37) {
        arm(n, false);
        int err = import(etl, 2, 0, relay, NULL, &got);
        bool failed = atomic_load(&failures) > 0;
        disarm();
        assert_true(err == 0 || err == PERCH_ENOMEM);
        assert_true(err == 0 || failed);
        if (err == 0) {
            ok++;
            assert_same_bytes(&got, ref);
        } else {
            nomem++;
        }
        perch_free(got.p);
        if (!failed)
            break; /* past the last allocation */
    }
    printf("  %s: %d runs ended with PERCH_ENOMEM, %d succeeded with identical bytes\n",
           relay ? "sink relayed" : "sink on the model thread", nomem, ok);
    assert_true(nomem > 10);
    assert_true(ok > 0);
}

static void test_allocation_failure_sweep(void **state)
{
    struct bytes etl = synth_trace(5, 1u << 20), ref;
    (void)state;
    assert_int_equal(import(&etl, 1, 0, false, NULL, &ref), 0);
    allocation_failure_sweep(&etl, &ref, false);
    allocation_failure_sweep(&etl, &ref, true);
    perch_free(ref.p);
    perch_free(etl.p);
}

/* ---- the two pieces alone ------------------------------------------------------------ */

static void test_feeder_limit_and_early_stop(void **state)
{
    struct bytes etl = synth_trace(7, 8u << 20);
    perch_etl_reader *r = NULL;
    perch_etl_feeder *f = NULL;
    perch_event ev;
    uint64_t n = 0, last_ts = 0;
    int err;
    (void)state;
    assert_int_equal(perch_etl_open_memory(etl.p, etl.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_feeder_start(r, 0, 1000, &f), 0);
    while ((err = perch_event_queue_pop(perch_etl_feeder_queue(f), &ev, UINT32_MAX)) == 0) {
        assert_true(ev.timestamp >= last_ts);
        last_ts = ev.timestamp;
        n++;
    }
    assert_int_equal(err, PERCH_EOF);
    assert_int_equal(n, 1000);
    assert_int_equal(perch_event_queue_close_status(perch_etl_feeder_queue(f)), 0);
    assert_true(perch_etl_feeder_position(f) > 0);
    assert_int_equal(perch_etl_feeder_finish(f), 0);
    assert_int_equal(perch_etl_stats_of(r)->records, 1000); /* it read no further */
    /* Stopped after 10 records of a trace far larger than the ring: the reader was waiting. */
    assert_int_equal(perch_etl_feeder_start(r, PERCH_EVENT_QUEUE_MIN_BYTES, 0, &f), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(perch_event_queue_pop(perch_etl_feeder_queue(f), &ev, UINT32_MAX), 0);
    assert_int_equal(perch_etl_feeder_finish(f), PERCH_ECANCELED);
    assert_int_equal(perch_etl_feeder_finish(NULL), 0);
    perch_etl_destroy(r);
    perch_free(etl.p);
}

/* The model's feeder hands over every record the plain reader yields, in the same order: a
 * record the model reads whole (fixed fields, PMC values, payload and ext bytes), a run of
 * records perch_decode calls unknown as one queue record of their timestamps, groups and
 * opcodes (pipeline/counted.h), each run as long as it can be (it ends at a record the model
 * reads, at PERCH__COUNTED_MAX or at the end). The real x64 trace has tens of thousands of
 * each. */
static void test_model_feeder_sheds_unread(void **state)
{
    struct bytes etl = real_trace("perfview_net.4.5.2.x64.etl");
    perch_etl_reader *r = NULL, *plain = NULL;
    perch_etl_feeder *f = NULL;
    perch_event ev, want;
    perch_decoded d;
    uint64_t kept = 0, counted = 0, runs = 0, full = 0, shed_bytes = 0;
    bool after_short_run = false;
    int err;
    (void)state;
    assert_int_equal(perch_etl_open_memory(etl.p, etl.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_open_memory(etl.p, etl.len, NULL, &plain, NULL), 0);
    assert_int_equal(perch__etl_feeder_start_model(r, 0, NULL, false, &f), 0);
    while ((err = perch_event_queue_pop(perch_etl_feeder_queue(f), &ev, UINT32_MAX)) == 0) {
        if (ev.flags & PERCH__EVENT_COUNTED) {
            size_t n = ev.payload_len / sizeof(perch__counted);
            assert_int_equal(ev.payload_len % sizeof(perch__counted), 0);
            assert_true(n >= 1 && n <= PERCH__COUNTED_MAX);
            assert_false(after_short_run); /* two runs in a row: the first was full */
            for (size_t i = 0; i < n; i++) {
                perch__counted c;
                memcpy(&c, ev.payload + i * sizeof c, sizeof c);
                assert_int_equal(perch_etl_next(plain, &want), 0);
                assert_false(perch_model_reads_payload(&want));
                assert_int_equal(perch_decode(&want, &d, NULL), PERCH_EUNKNOWN);
                assert_int_equal(c.timestamp, want.timestamp);
                assert_int_equal(c.group, want.group);
                assert_int_equal(c.opcode, want.opcode);
                shed_bytes += want.payload_len + want.ext_len;
            }
            counted += n;
            runs++;
            full += n == PERCH__COUNTED_MAX;
            after_short_run = n < PERCH__COUNTED_MAX;
            continue;
        }
        after_short_run = false;
        assert_int_equal(perch_etl_next(plain, &want), 0);
        assert_true(perch_model_reads_payload(&want));
        assert_memory_equal(&ev, &want, offsetof(perch_event, pmc)); /* provider .. pebs_index */
        assert_memory_equal(ev.pmc, want.pmc, sizeof want.pmc);
        assert_int_equal(ev.payload_len, want.payload_len);
        assert_int_equal(ev.ext_len, want.ext_len);
        if (want.payload_len > 0)
            assert_memory_equal(ev.payload, want.payload, want.payload_len);
        if (want.ext_len > 0)
            assert_memory_equal(ev.ext, want.ext, want.ext_len);
        kept++;
    }
    assert_int_equal(err, PERCH_EOF);
    assert_int_equal(perch_etl_next(plain, &want), PERCH_EOF);
    assert_true(kept > 10000 && counted > 10000);
    assert_true(runs < counted / 2); /* runs, not one record each */
    assert_true(shed_bytes > 1000000);
    printf("  x64: %llu records whole, %llu counted in %llu runs (%llu full)\n",
           (unsigned long long)kept, (unsigned long long)counted, (unsigned long long)runs,
           (unsigned long long)full);
    assert_int_equal(perch_etl_feeder_finish(f), 0);
    perch_etl_destroy(plain);
    perch_etl_destroy(r);
    free(etl.p);
}

struct tick_log {
    uint64_t calls, last_records;
    int fail_at; /* the call that returns an error, 0: never */
};

static int count_tick(void *ctx, uint64_t records)
{
    struct tick_log *t = ctx;
    t->calls++;
    t->last_records = records;
    return t->fail_at != 0 && t->calls == (uint64_t)t->fail_at ? PERCH_ELIMIT : 0;
}

/* A producer that pushes the records of a trace, pausing for a while halfway. */
struct slow_producer {
    perch_etl_reader *r;
    perch_event_queue *q;
    uint64_t pause_at;
    uint32_t pause_ms;
    bool wake; /* wake the consumer's queue during the pause */
    int err;
};

static int produce_slowly(void *arg)
{
    struct slow_producer *p = arg;
    perch_event ev;
    uint64_t n = 0;
    int err = 0;
    while ((err = perch_etl_next(p->r, &ev)) == 0) {
        if (n++ == p->pause_at) {
            perch_sleep_ms(p->pause_ms / 2);
            if (p->wake)
                perch_event_queue_wake(p->q);
            perch_sleep_ms(p->pause_ms / 2);
        }
        if ((err = perch_event_queue_push(p->q, &ev)) < 0)
            break;
    }
    p->err = err == PERCH_EOF ? 0 : err;
    perch_event_queue_close(p->q, p->err);
    return p->err;
}

/* t NULL: no consume options, and the producer wakes the queue during its pause. */
static int consume_with(const struct bytes *etl, struct tick_log *t, uint32_t tick_ms,
                        uint32_t pause_ms, uint64_t *fed, int *producer_err)
{
    perch_etl_reader *r = NULL;
    perch_model *m = NULL;
    perch_thread *th = NULL;
    perch_sink sink;
    perch_trace_info info;
    struct slow_producer p = {NULL, NULL, 5000, pause_ms, t == NULL, 0};
    perch_consume_options co = {sizeof co, count_tick, t, 4096, tick_ms};
    memset(&sink, 0, sizeof sink);
    assert_int_equal(perch_etl_open_memory(etl->p, etl->len, NULL, &r, NULL), 0);
    perch_pipeline_trace_info(perch_etl_header_of(r), "etl:consume", &info);
    assert_int_equal(perch_model_create(&sink, &info, NULL, &m), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &p.q), 0);
    p.r = r;
    assert_int_equal(perch_thread_start(produce_slowly, &p, "producer", &th), 0);
    int err = perch_pipeline_consume(p.q, m, t != NULL ? &co : NULL, fed);
    assert_int_equal(perch_thread_join(th, producer_err), 0);
    perch_event_queue_destroy(p.q);
    perch_model_destroy(m);
    perch_etl_destroy(r);
    return err;
}

static void test_consume_ticks_and_errors(void **state)
{
    struct bytes etl = synth_trace(9, 4u << 20);
    struct tick_log t = {0, 0, 0};
    uint64_t fed = 0, records;
    int perr = 1;
    (void)state;
    /* Idle for 300 ms halfway with tick_ms 20: ticks by time besides those by count. */
    assert_int_equal(consume_with(&etl, &t, 20, 300, &fed, &perr), 0);
    assert_int_equal(perr, 0);
    records = fed;
    assert_true(records > 20000);
    assert_true(t.calls >= records / 4096 + 1); /* at least one by time, however late woken */
    /* A tick that fails stops the loop with its error and cancels the producer. */
    t = (struct tick_log){0, 0, 3};
    assert_int_equal(consume_with(&etl, &t, 0, 0, &fed, &perr), PERCH_ELIMIT);
    assert_int_equal(t.calls, 3);
    assert_int_equal(fed, 3 * 4096);
    /* Canceled waiting (ECANCELED) or between pushes (ESTATE); 0 only if it had finished. */
    assert_true(perr == PERCH_ECANCELED || perr == PERCH_ESTATE || perr == 0);
    /* Without options the wait has no limit; a wake ends it (there is no tick to call) and the
     * loop goes on: every record is fed. */
    assert_int_equal(consume_with(&etl, NULL, 0, 200, &fed, &perr), 0);
    assert_int_equal(perr, 0);
    assert_int_equal(fed, records);
    assert_int_equal(perch_pipeline_consume(NULL, NULL, NULL, NULL), PERCH_EINVAL);
    perch_free(etl.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_synthetic_traces),
        cmocka_unit_test(test_reader_entry),
        cmocka_unit_test(test_sink_error_stops_both),
        cmocka_unit_test(test_reader_error_ends_model),
        cmocka_unit_test(test_allocation_failure_sweep),
        cmocka_unit_test(test_feeder_limit_and_early_stop),
        cmocka_unit_test(test_model_feeder_sheds_unread),
        cmocka_unit_test(test_consume_ticks_and_errors),
        cmocka_unit_test(test_volunteer_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
