/*
 * The live query state against a brute-force reference: a random record stream (samples
 * arriving out of order, slices spanning many buckets, an idle thread, PMC samples) is fed
 * to the sink, and hundreds of windows (explicit and "last N ms", aligned and not) are asked
 * for the top processes, threads and stacks by CPU and by samples; every row and total must
 * equal what the reference computes from the same records. Also: the span expiring old
 * buckets, the memory cap dropping and counting, late records, the entity sweep, the slices
 * and samples queries (filters, truncation, stacks renumbered before the samples), and a
 * reader thread querying while the model thread feeds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "live/query.h"
#include "live_fixture.h"
#include "perch/error.h"
#include "perch/thread.h"

#define FREQ     10000000ull  /* ticks per second: a bucket of 100 ms is 1e6 ticks */
#define T0       123456789ull /* not bucket aligned */
#define NTHREADS 20
#define NPROCS   5
#define NSTACKS  30

static uint64_t seed_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    seed_state ^= seed_state << 13;
    seed_state ^= seed_state >> 7;
    seed_state ^= seed_state << 17;
    return seed_state;
}

typedef struct world {
    perch_sample_rec *samples;
    perch_slice_rec *slices;
    size_t nsamples, nslices;
    uint64_t frames[NSTACKS + 1][4];
} world;

static uint64_t thread_key(int t)
{
    return t == NTHREADS ? 99 : (uint64_t)t + 1;
}

static uint32_t thread_tid(int t)
{
    return t == NTHREADS ? 0 : 2000u + (uint32_t)t;
}

static uint64_t proc_key_of_thread(uint64_t tk)
{
    return tk == 99 ? 100 + NPROCS : 100 + (tk - 1) % NPROCS;
}

static void feed_entities(const perch_sink *s, world *w)
{
    perch_trace_info info = {"test", 19041, 4, 8, 1, FREQ, 0, 0, T0, 0, 0, NULL};
    assert_int_equal(s->trace_info(s->ctx, &info), 0);
    for (int p = 0; p <= NPROCS; p++) {
        char name[32];
        snprintf(name, sizeof name, p == NPROCS ? "Idle" : "app%d.exe", p);
        perch_process_rec r = {100 + (uint64_t)p,
                               p == NPROCS ? 0 : 1000u + (uint32_t)p,
                               4,
                               1,
                               0,
                               0,
                               0,
                               0,
                               name,
                               "cmd"};
        assert_int_equal(s->process(s->ctx, &r), 0);
    }
    for (int t = 0; t <= NTHREADS; t++) {
        uint64_t tk = thread_key(t), pk = proc_key_of_thread(tk);
        perch_thread_rec r = {
            tk, pk, thread_tid(t), t == NTHREADS ? 0 : 1000u + (uint32_t)(pk - 100), 0,
            0,  0,  "worker"};
        assert_int_equal(s->thread(s->ctx, &r), 0);
    }
    perch_module_rec kmod = {500, 0, 0, 0xfffff80000000000ull,        0x100000, 0,
                             0,   0, 0, "\\SystemRoot\\ntoskrnl.exe", false,    {0, 0, 0, {0}},
                             0,   ""};
    perch_module_rec umod = {501, 100, 1000, 0x7ff600000000ull, 0x10000, 0,
                             0,   0,   0,    "C:\\app0.exe",    false,   {0, 0, 0, {0}},
                             0,   ""};
    assert_int_equal(s->module(s->ctx, &kmod), 0);
    assert_int_equal(s->module(s->ctx, &umod), 0);
    for (uint32_t id = 1; id <= NSTACKS; id++) {
        for (int f = 0; f < 4; f++)
            w->frames[id][f] = 0x7ff600001000ull + id * 16 + (uint64_t)f;
        perch_stack_rec st = {id, 4, id % 3 == 0 ? 1u : 0u, w->frames[id]};
        assert_int_equal(s->stack(s->ctx, &st), 0);
    }
}

/* A random stream over [T0, T0 + seconds): samples out of order by up to 0.4 s, slices on 4
 * CPUs back to back (1 .. 900 ms each, so most cross buckets). */
static void make_world(world *w, double seconds, size_t nsamples)
{
    uint64_t end = T0 + (uint64_t)(seconds * FREQ);
    memset(w, 0, sizeof *w);
    w->samples = calloc(nsamples, sizeof *w->samples);
    for (size_t i = 0; i < nsamples; i++) {
        int t = (int)(rnd() % (NTHREADS + 1));
        perch_sample_rec *s = &w->samples[w->nsamples++];
        s->thread_key = thread_key(t);
        s->tid = thread_tid(t);
        s->cpu = (uint16_t)(rnd() % 4);
        s->kind = rnd() % 10 == 0 ? PERCH_SAMPLE_PMC : PERCH_SAMPLE_TIMER;
        s->ts = T0 + (end - T0) * i / nsamples;
        uint64_t jitter = rnd() % (4 * FREQ / 10);
        s->ts = s->ts > T0 + jitter ? s->ts - jitter : s->ts;
        s->ip = 0x7ff600001000ull + rnd() % 4096;
        s->module_key = 501;
        s->stack_id = (uint32_t)(rnd() % (NSTACKS + 1));
        s->count = 1;
    }
    w->slices = calloc(200000, sizeof *w->slices);
    for (uint16_t cpu = 0; cpu < 4; cpu++) {
        for (uint64_t ts = T0 + rnd() % FREQ; ts < end;) {
            uint64_t d = FREQ / 1000 + rnd() % (9 * FREQ / 10);
            int t = (int)(rnd() % (NTHREADS + 1));
            perch_slice_rec *s = &w->slices[w->nslices++];
            memset(s, 0, sizeof *s);
            s->thread_key = thread_key(t);
            s->tid = thread_tid(t);
            s->cpu = cpu;
            s->start_ts = ts;
            s->end_ts = ts + d;
            s->ready_ts = ts - 10;
            s->flags = PERCH_SLICE_HAS_READY;
            s->wait_reason = (int8_t)(rnd() % 30);
            s->pmc_count = (uint8_t)(rnd() % 3);
            for (int k = 0; k < s->pmc_count; k++)
                s->pmc_delta[k] = rnd();
            ts += d + rnd() % (FREQ / 100);
        }
    }
}

/* Feeds the records in end-time order, the way the model emits them. */
static void feed_world(const perch_sink *s, const world *w)
{
    size_t i = 0, j = 0;
    while (i < w->nsamples || j < w->nslices) {
        uint64_t si = i < w->nsamples ? w->samples[i].ts + 4 * FREQ / 10 : UINT64_MAX;
        uint64_t sj = j < w->nslices ? w->slices[j].end_ts : UINT64_MAX;
        if (si <= sj)
            assert_int_equal(s->sample(s->ctx, &w->samples[i++]), 0);
        else
            assert_int_equal(s->slice(s->ctx, &w->slices[j++]), 0);
    }
}

static void world_free(world *w)
{
    free(w->samples);
    free(w->slices);
}

/* ---- the reference ------------------------------------------------------------------------ */

typedef struct ref {
    perch_proto_top_row rows[64];
    uint32_t n;
    uint64_t samples, cpu, idle;
} ref;

static perch_proto_top_row *ref_row(ref *r, uint64_t key)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (r->rows[i].key == key)
            return &r->rows[i];
    assert_true(r->n < 64);
    memset(&r->rows[r->n], 0, sizeof r->rows[0]);
    r->rows[r->n].key = key;
    return &r->rows[r->n++];
}

static uint8_t sort_order;

static int ref_cmp(const void *pa, const void *pb)
{
    const perch_proto_top_row *a = pa, *b = pb;
    uint64_t a1 = sort_order == PERCH_ORDER_CPU ? a->cpu_ticks : a->samples;
    uint64_t b1 = sort_order == PERCH_ORDER_CPU ? b->cpu_ticks : b->samples;
    uint64_t a2 = sort_order == PERCH_ORDER_CPU ? a->samples : a->cpu_ticks;
    uint64_t b2 = sort_order == PERCH_ORDER_CPU ? b->samples : b->cpu_ticks;
    if (a1 != b1)
        return a1 > b1 ? -1 : 1;
    if (a2 != b2)
        return a2 > b2 ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

static uint64_t group_key(uint8_t what, uint64_t thread_key, uint32_t stack_id)
{
    if (what == PERCH_TOP_THREADS)
        return thread_key;
    if (what == PERCH_TOP_PROCESSES)
        return proc_key_of_thread(thread_key);
    return stack_id;
}

static void reference(const world *w, uint8_t what, uint8_t order, uint64_t from, uint64_t to,
                      uint64_t held_from, ref *r)
{
    memset(r, 0, sizeof *r);
    from = from > held_from ? from : held_from;
    for (size_t i = 0; i < w->nsamples; i++) {
        const perch_sample_rec *s = &w->samples[i];
        if (s->ts < from || s->ts >= to || s->kind != PERCH_SAMPLE_TIMER)
            continue;
        r->samples++;
        if (what == PERCH_TOP_STACKS && s->stack_id == 0)
            continue;
        ref_row(r, group_key(what, s->thread_key, s->stack_id))->samples++;
    }
    for (size_t i = 0; i < w->nslices; i++) {
        const perch_slice_rec *s = &w->slices[i];
        uint64_t lo = s->start_ts > from ? s->start_ts : from;
        uint64_t hi = s->end_ts < to ? s->end_ts : to;
        if (hi <= lo)
            continue;
        if (s->tid == 0) {
            r->idle += hi - lo;
            continue;
        }
        r->cpu += hi - lo;
        if (what != PERCH_TOP_STACKS)
            ref_row(r, group_key(what, s->thread_key, 0))->cpu_ticks += hi - lo;
    }
    sort_order = order;
    qsort(r->rows, r->n, sizeof r->rows[0], ref_cmp);
}

static void check_top(perch_live_query *q, const world *w, uint8_t what, uint8_t order,
                      perch_proto_window win, uint64_t held_from, bool expect_complete)
{
    perch_proto_top_req req = {what, order, 1000, false, 0, win};
    perch_live_top top;
    ref r;
    assert_int_equal(perch_live_query_top(q, &req, &top), 0);
    uint64_t to = win.last_ms ? UINT64_MAX : top.span.to_ts;
    reference(w, what, order, top.span.from_ts, to, held_from, &r);
    if (top.samples != r.samples || top.cpu_ticks != r.cpu || top.idle_ticks != r.idle)
        fail_msg("what %u window [%llu, %llu): totals %llu/%llu/%llu, reference %llu/%llu/%llu",
                 what, (unsigned long long)top.span.from_ts, (unsigned long long)top.span.to_ts,
                 (unsigned long long)top.samples, (unsigned long long)top.cpu_ticks,
                 (unsigned long long)top.idle_ticks, (unsigned long long)r.samples,
                 (unsigned long long)r.cpu, (unsigned long long)r.idle);
    assert_int_equal(top.row_count, r.n);
    for (uint32_t i = 0; i < r.n; i++) {
        if (top.rows[i].key != r.rows[i].key || top.rows[i].samples != r.rows[i].samples ||
            top.rows[i].cpu_ticks != r.rows[i].cpu_ticks)
            fail_msg("what %u order %u row %u: key %llu %llu/%llu, reference key %llu %llu/%llu",
                     what, order, i, (unsigned long long)top.rows[i].key,
                     (unsigned long long)top.rows[i].samples,
                     (unsigned long long)top.rows[i].cpu_ticks, (unsigned long long)r.rows[i].key,
                     (unsigned long long)r.rows[i].samples,
                     (unsigned long long)r.rows[i].cpu_ticks);
        if (what == PERCH_TOP_THREADS)
            assert_int_equal(top.rows[i].owner, proc_key_of_thread(top.rows[i].key));
    }
    assert_int_equal(top.span.complete, expect_complete);
    assert_int_equal(top.span.perf_freq, FREQ);
    perch_free(top.rows);
}

static perch_live_query *make_query(uint32_t span_ms, size_t cap)
{
    perch_live_query_opts o;
    perch_live_query *q;
    perch_live_query_opts_default(&o);
    o.span_ms = span_ms;
    o.bucket_ms = 100;
    if (cap)
        o.mem_cap = cap;
    assert_int_equal(perch_live_query_create(&o, &q), 0);
    return q;
}

/* A query of 20 s over a random world of seconds and nsamples samples, fed and published. */
static perch_live_query *fed_query(world *w, double seconds, size_t nsamples)
{
    perch_sink sink;
    perch_live_query *q = make_query(20000, 0);
    make_world(w, seconds, nsamples);
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, w);
    feed_world(&sink, w);
    perch_live_query_flush(q);
    return q;
}

static void test_top_matches_reference(void **state)
{
    (void)state;
    world w;
    perch_live_query *q = fed_query(&w, 6.0, 20000);
    uint64_t end = T0 + 7 * FREQ;
    for (int i = 0; i < 150; i++) {
        perch_proto_window win = {0, 0, 0};
        if (i % 5 == 4) {
            win.last_ms = 1 + rnd() % 8000;
        } else {
            win.from_ts = T0 - FREQ + rnd() % (end - T0 + FREQ);
            win.to_ts = win.from_ts + 1 + rnd() % (3 * FREQ);
            if (i % 7 == 0) /* bucket aligned */
                win.from_ts -= win.from_ts % 1000000, win.to_ts -= win.to_ts % 1000000;
            if (win.to_ts <= win.from_ts)
                win.to_ts = win.from_ts + 1;
        }
        check_top(q, &w, (uint8_t)(i % 3), (uint8_t)(i / 3 % 2), win, 0, true);
    }
    perch_proto_top_req bad = {PERCH_TOP_THREADS, 0, 10, false, 0, {0, 500, 500}};
    perch_live_top top;
    assert_int_equal(perch_live_query_top(q, &bad, &top), PERCH_EINVAL);
    bad.what = 3;
    bad.window.to_ts = 501;
    assert_int_equal(perch_live_query_top(q, &bad, &top), PERCH_EINVAL);
    perch_live_query_destroy(q);
    world_free(&w);
}

static void test_pid_filter_and_limit(void **state)
{
    (void)state;
    world w;
    perch_sink sink;
    perch_live_query *q = make_query(20000, 0);
    make_world(&w, 3.0, 5000);
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    feed_world(&sink, &w);
    perch_live_query_flush(q);
    for (uint8_t what = 0; what < 3; what++) {
        perch_proto_top_req req = {
            what, PERCH_ORDER_SAMPLES, 1000, true, 1002, {0, T0 + FREQ / 3, T0 + 2 * FREQ}};
        perch_live_top top;
        assert_int_equal(perch_live_query_top(q, &req, &top), 0);
        uint64_t total = 0;
        for (uint32_t i = 0; i < top.row_count; i++) {
            total += top.rows[i].samples;
            if (what == PERCH_TOP_THREADS)
                assert_int_equal(top.rows[i].owner, 102);
            if (what == PERCH_TOP_PROCESSES)
                assert_int_equal(top.rows[i].key, 102);
        }
        uint64_t want = 0;
        for (size_t i = 0; i < w.nsamples; i++) {
            const perch_sample_rec *s = &w.samples[i];
            want += s->kind == PERCH_SAMPLE_TIMER && s->ts >= req.window.from_ts &&
                    s->ts < req.window.to_ts && s->thread_key != 99 &&
                    proc_key_of_thread(s->thread_key) == 102 &&
                    (what != PERCH_TOP_STACKS || s->stack_id != 0);
        }
        assert_int_equal(total, want);
        assert_true(want > 0);
        perch_free(top.rows);
        req.has_pid = false;
        req.limit = 3;
        assert_int_equal(perch_live_query_top(q, &req, &top), 0);
        assert_int_equal(top.row_count, what == PERCH_TOP_PROCESSES ? 3 : 3);
        perch_free(top.rows);
    }
    perch_live_query_destroy(q);
    world_free(&w);
}

static void test_span_expiry_and_late(void **state)
{
    (void)state;
    world w;
    perch_sink sink;
    perch_live_query *q = make_query(2000, 0); /* 2 s: 21 buckets */
    perch_live_query_stats st;
    make_world(&w, 8.0, 8000);
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    feed_world(&sink, &w);
    perch_live_query_flush(q);
    perch_live_query_get_stats(q, &st);
    uint64_t newest_index = st.newest_ts / 1000000;
    uint64_t held_from = (newest_index - 20) * 1000000;
    assert_true(st.span_ticks <= 21 * 1000000ull);
    assert_true(st.span_ticks >= 19 * 1000000ull);
    /* A window from the start is cut: not complete, and counts only what is held. */
    perch_proto_window all = {0, T0, 0};
    for (uint8_t what = 0; what < 3; what++)
        check_top(q, &w, what, PERCH_ORDER_CPU, all, held_from, false);
    perch_proto_window recent = {0, held_from + 1000000, 0};
    check_top(q, &w, PERCH_TOP_THREADS, PERCH_ORDER_SAMPLES, recent, 0, true);
    /* Late records are counted, never stored. */
    uint64_t late = st.dropped_late;
    perch_sample_rec old = w.samples[0];
    old.ts = T0;
    assert_int_equal(sink.sample(sink.ctx, &old), 0);
    perch_live_query_flush(q);
    perch_live_query_get_stats(q, &st);
    assert_int_equal(st.dropped_late, late + 1);
    perch_live_query_destroy(q);
    world_free(&w);
}

static void test_memory_cap(void **state)
{
    (void)state;
    world w;
    perch_sink sink;
    perch_live_query *q = make_query(60000, (size_t)1 << 20);
    perch_live_query_stats st;
    make_world(&w, 5.0, 120000);
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    feed_world(&sink, &w);
    perch_live_query_flush(q);
    perch_live_query_get_stats(q, &st);
    assert_true(st.dropped_records > 0);
    assert_true(st.bytes <= ((size_t)1 << 20) + (256u << 10));
    assert_int_equal(st.published + st.dropped_late, w.nsamples + w.nslices);
    assert_true(st.samples + st.slices < w.nsamples + w.nslices);
    perch_proto_top_req req = {PERCH_TOP_THREADS, 0, 10, false, 0, {0, T0, 0}};
    perch_live_top top;
    assert_int_equal(perch_live_query_top(q, &req, &top), 0);
    assert_false(top.span.complete);
    assert_true(top.samples > 0);
    perch_free(top.rows);
    perch_live_query_destroy(q);
    world_free(&w);
}

static void test_sweep_drops_ended_entities(void **state)
{
    (void)state;
    perch_sink sink;
    perch_live_query *q = make_query(1000, 0);
    perch_live_query_stats st;
    world w;
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    perch_thread_rec ended = {777, 100, 4444, 1000, PERCH_ENTITY_ENDED, T0, T0 + 10, "gone"};
    assert_int_equal(sink.thread(sink.ctx, &ended), 0);
    perch_live_query_get_stats(q, &st);
    uint64_t before = st.entities;
    for (uint64_t i = 0; i < 100; i++) {
        perch_sample_rec s = {1, 2000, 0, 0, 0, 0, T0 + i * FREQ / 10, 0, 0, 0, 1};
        assert_int_equal(sink.sample(sink.ctx, &s), 0);
    }
    perch_live_query_flush(q);
    perch_live_query_get_stats(q, &st);
    assert_int_equal(st.entities, before - 1);
    assert_true(st.stacks < NSTACKS); /* unused stacks older than the window went too */
    perch_live_query_destroy(q);
}

/* Every sample k got carries the stack its world sample had (renumbered): all 4 frames. */
static void check_sample_stacks(const kept *k, const world *w)
{
    for (size_t i = 0; i < k->nsamples; i++) {
        size_t j = 0;
        while (!(w->samples[j].ts == k->samples[i].ts && w->samples[j].ip == k->samples[i].ip))
            j++;
        uint32_t orig = w->samples[j].stack_id, got = k->samples[i].stack_id;
        assert_int_equal(orig == 0, got == 0);
        if (got) {
            assert_int_equal(k->stacks[got - 1].frame_count, 4);
            assert_memory_equal(k->stacks[got - 1].frames, w->frames[orig], 4 * sizeof(uint64_t));
        }
    }
}

static void test_slices_and_samples_queries(void **state)
{
    (void)state;
    world w;
    perch_sink sink, out;
    kept k;
    perch_live_records info;
    perch_live_query *q = make_query(20000, 0);
    make_world(&w, 4.0, 6000);
    for (size_t i = 0; i < w.nslices; i++) /* shorter slices: more of them per thread */
        w.slices[i].end_ts = w.slices[i].start_ts + (w.slices[i].end_ts - w.slices[i].start_ts) / 8;
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    feed_world(&sink, &w);
    perch_live_query_flush(q);
    perch_proto_window win = {0, T0 + FREQ, T0 + 3 * FREQ};
    size_t want = 0;
    uint32_t tid = 0;
    for (uint32_t t = 2000; t < 2000 + NTHREADS; t++) { /* the busiest thread */
        size_t n = 0;
        for (size_t i = 0; i < w.nslices; i++)
            n += w.slices[i].tid == t && w.slices[i].start_ts < win.to_ts &&
                 w.slices[i].end_ts > win.from_ts;
        if (n > want)
            want = n, tid = t;
    }
    assert_true(want > 2);
    kept_sink(&k, &out);
    assert_int_equal(perch_live_query_slices(q, tid, &win, 0, &out, &info), 0);
    assert_int_equal(k.nslices, want);
    assert_int_equal(info.matched, want);
    assert_false(info.truncated);
    assert_int_equal(k.got_info, 1);
    assert_int_equal(k.finished, 1);
    assert_int_equal(k.nthreads, 1);
    assert_int_equal(k.threads[0].tid, tid);
    assert_int_equal(k.nprocs, 1);
    assert_int_equal(k.procs[0].key, proc_key_of_thread(k.threads[0].key));
    for (size_t i = 0; i < k.nslices; i++) {
        size_t j = 0;
        while (j < w.nslices && !(w.slices[j].start_ts == k.slices[i].start_ts &&
                                  w.slices[j].cpu == k.slices[i].cpu))
            j++;
        assert_true(j < w.nslices);
        assert_memory_equal(&w.slices[j].pmc_delta, &k.slices[i].pmc_delta,
                            sizeof(uint64_t) * w.slices[j].pmc_count);
        assert_int_equal(w.slices[j].end_ts, k.slices[i].end_ts);
        assert_int_equal(w.slices[j].wait_reason, k.slices[i].wait_reason);
    }
    kept_free(&k);

    kept_sink(&k, &out);
    assert_int_equal(perch_live_query_slices(q, tid, &win, 2, &out, &info), 0);
    assert_int_equal(k.nslices, 2);
    assert_true(info.truncated);
    assert_int_equal(info.matched, want);
    kept_free(&k);

    kept_sink(&k, &out);
    assert_int_equal(perch_live_query_samples(q, 1001, &win, 0, &out, &info), 0);
    want = 0;
    for (size_t i = 0; i < w.nsamples; i++)
        want += w.samples[i].ts >= win.from_ts && w.samples[i].ts < win.to_ts &&
                w.samples[i].thread_key != 99 && proc_key_of_thread(w.samples[i].thread_key) == 101;
    assert_true(want > 10);
    assert_int_equal(k.nsamples, want);
    assert_int_equal(k.order_errors, 0);
    assert_int_equal(k.nprocs, 1);
    assert_int_equal(k.procs[0].pid, 1001);
    assert_int_equal(k.nmods, 1); /* the kernel's; app1 has none */
    for (size_t i = 0; i < k.nstacks; i++)
        assert_int_equal(k.stacks[i].id, i + 1); /* dense, first-use order */
    check_sample_stacks(&k, &w);
    kept_free(&k);
    perch_live_query_destroy(q);
    world_free(&w);
}

static void test_readers_see_staged_records(void **state)
{
    (void)state;
    perch_sink sink;
    world w;
    perch_live_query_opts o;
    perch_live_query *q;
    perch_live_query_opts_default(&o);
    o.batch = 4096;
    assert_int_equal(perch_live_query_create(&o, &q), 0);
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    for (uint64_t i = 0; i < 10; i++) { /* fewer than a batch: still staged */
        perch_sample_rec s = {1, 2000, 0, 0, 0, 0, T0 + i * 1000, 0, 0, 0, 1};
        assert_int_equal(sink.sample(sink.ctx, &s), 0);
    }
    perch_proto_top_req req = {PERCH_TOP_THREADS, PERCH_ORDER_SAMPLES, 5, false, 0, {0, 0, 0}};
    perch_live_top top;
    assert_int_equal(perch_live_query_top(q, &req, &top), 0);
    assert_int_equal(top.samples, 10);
    assert_int_equal(top.row_count, 1);
    assert_int_equal(top.rows[0].samples, 10);
    perch_free(top.rows);
    perch_live_query_destroy(q);
}

/* More stacks and frames than one hold of the lock copies (4096 stacks, 65536 frames): each
 * sample still gets its own stack, whole, in first-use order. */
static void test_many_stacks_in_batches(void **state)
{
    enum { EXTRA = 9000, FIRST = NSTACKS + 1 };
    (void)state;
    world w;
    perch_sink sink, out;
    kept k;
    perch_live_records info;
    perch_live_query *q = make_query(20000, 0);
    uint64_t frames[64];
    perch_live_query_sink(q, &sink);
    feed_entities(&sink, &w);
    for (uint32_t i = 0; i < EXTRA; i++) {
        uint32_t n = 1 + (i * 7) % 40;
        for (uint32_t f = 0; f < n; f++)
            frames[f] = 0x7ff600000000ull + (uint64_t)i * 64 + f;
        perch_stack_rec st = {FIRST + i, n, 0, frames};
        assert_int_equal(sink.stack(sink.ctx, &st), 0);
    }
    for (uint32_t i = 0; i < EXTRA; i++) { /* used in reverse: renumbered */
        perch_sample_rec sm = {
            1, 2000, 0, 0, 0, 0, T0 + i * 100, 0x7ff600001000ull, 0, FIRST + EXTRA - 1 - i, 1};
        assert_int_equal(sink.sample(sink.ctx, &sm), 0);
    }
    perch_live_query_flush(q);
    kept_sink(&k, &out);
    perch_proto_window win = {0, T0, T0 + FREQ};
    assert_int_equal(perch_live_query_samples(q, 1000, &win, 0, &out, &info), 0);
    assert_int_equal(k.nsamples, EXTRA);
    assert_int_equal(k.nstacks, EXTRA);
    assert_int_equal(k.order_errors, 0);
    for (uint32_t i = 0; i < EXTRA; i++) {
        const perch_sample_rec *sm = &k.samples[i];
        uint32_t orig = FIRST + EXTRA - 1 - (uint32_t)((sm->ts - T0) / 100) - FIRST;
        const perch_stack_rec *st = &k.stacks[sm->stack_id - 1];
        assert_int_equal(st->id, sm->stack_id);
        assert_int_equal(st->frame_count, 1 + (orig * 7) % 40);
        for (uint32_t f = 0; f < st->frame_count; f++)
            assert_int_equal(st->frames[f], 0x7ff600000000ull + (uint64_t)orig * 64 + f);
    }
    kept_free(&k);
    perch_live_query_destroy(q);
}

/* ---- concurrency -------------------------------------------------------------------------- */

/* A sink that passes records on to a kept one and, at the first stack, checks from another
 * thread that the query's lock is free (a stats read takes it), waiting at most 5 s. */
typedef struct lock_probe {
    perch_sink inner;
    perch_live_query *q;
    perch_thread *t;
    atomic_int got_stats;
    int stacks, free_at_first;
} lock_probe;

static int read_stats(void *arg)
{
    lock_probe *p = arg;
    perch_live_query_stats st;
    perch_live_query_get_stats(p->q, &st);
    atomic_store(&p->got_stats, 1);
    return 0;
}

static int probe_stack(void *ctx, const perch_stack_rec *rec)
{
    lock_probe *p = ctx;
    if (p->stacks++ == 0 && perch_thread_start(read_stats, p, "probe", &p->t) == 0) {
        for (int ms = 0; ms < 5000 && !atomic_load(&p->got_stats); ms++)
            perch_sleep_ms(1);
        p->free_at_first = atomic_load(&p->got_stats);
    }
    return p->inner.stack(p->inner.ctx, rec);
}

#define PROBE_PASS(name, type)                                                                     \
    static int probe_##name(void *ctx, const type *rec)                                            \
    {                                                                                              \
        lock_probe *p = ctx;                                                                       \
        return p->inner.name ? p->inner.name(p->inner.ctx, rec) : 0;                               \
    }
PROBE_PASS(trace_info, perch_trace_info)
PROBE_PASS(process, perch_process_rec)
PROBE_PASS(thread, perch_thread_rec)
PROBE_PASS(module, perch_module_rec)
PROBE_PASS(sample, perch_sample_rec)

static int probe_finish(void *ctx)
{
    lock_probe *p = ctx;
    return p->inner.finish ? p->inner.finish(p->inner.ctx) : 0;
}

/* The samples query plays its stacks without the state's lock (a capture writer's sink
 * encodes them, and the model thread waits for the lock), and they still arrive whole,
 * renumbered, before the samples. */
static void test_stacks_played_without_the_lock(void **state)
{
    (void)state;
    world w;
    perch_sink out;
    kept k;
    perch_live_records info;
    perch_live_query *q = fed_query(&w, 4.0, 6000);
    kept_sink(&k, &out);
    lock_probe p = {out, q, NULL, 0, 0, 0};
    perch_sink probe = {0};
    probe.ctx = &p;
    probe.trace_info = probe_trace_info;
    probe.process = probe_process;
    probe.thread = probe_thread;
    probe.module = probe_module;
    probe.stack = probe_stack;
    probe.sample = probe_sample;
    probe.finish = probe_finish;
    perch_proto_window win = {0, T0, T0 + 4 * FREQ};
    assert_int_equal(perch_live_query_samples(q, 1001, &win, 0, &probe, &info), 0);
    assert_non_null(p.t);
    assert_int_equal(perch_thread_join(p.t, NULL), 0);
    assert_true(p.free_at_first);
    assert_true(k.nstacks > 1);
    assert_int_equal(p.stacks, k.nstacks);
    assert_int_equal(k.order_errors, 0);
    check_sample_stacks(&k, &w);
    kept_free(&k);
    perch_live_query_destroy(q);
    world_free(&w);
}

typedef struct race {
    perch_live_query *q;
    atomic_int stop;    /* set by the test */
    atomic_int queries; /* counted by the reader, watched by the test */
} race;

static int reader(void *arg)
{
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        perch_proto_top_req req = {(uint8_t)(r->queries % 3), 0, 20, false, 0, {500, 0, 0}};
        perch_live_top top;
        if (perch_live_query_top(r->q, &req, &top) == 0)
            perch_free(top.rows);
        perch_proto_window win = {300, 0, 0};
        kept k;
        perch_sink out;
        perch_live_records info;
        kept_sink(&k, &out);
        perch_live_query_samples(r->q, 1001, &win, 50, &out, &info);
        kept_free(&k);
        atomic_fetch_add(&r->queries, 1);
    }
    return 0;
}

static void test_readers_while_feeding(void **state)
{
    (void)state;
    world w;
    perch_sink sink;
    perch_thread *t[2];
    race r = {make_query(1000, 0), 0, 0};
    race r2 = {r.q, 0, 0};
    make_world(&w, 10.0, 200000);
    perch_live_query_sink(r.q, &sink);
    feed_entities(&sink, &w);
    assert_int_equal(perch_thread_start(reader, &r, "reader", &t[0]), 0);
    assert_int_equal(perch_thread_start(reader, &r2, "reader2", &t[1]), 0);
    feed_world(&sink, &w);
    perch_live_query_flush(r.q);
    while (atomic_load(&r.queries) < 3 || atomic_load(&r2.queries) < 3)
        perch_sleep_ms(1);
    atomic_store(&r.stop, 1);
    atomic_store(&r2.stop, 1);
    assert_int_equal(perch_thread_join(t[0], NULL), 0);
    assert_int_equal(perch_thread_join(t[1], NULL), 0);
    perch_live_query_stats st;
    perch_live_query_get_stats(r.q, &st);
    assert_int_equal(st.published + st.dropped_late, w.nsamples + w.nslices);
    perch_live_query_destroy(r.q);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_matches_reference),
        cmocka_unit_test(test_pid_filter_and_limit),
        cmocka_unit_test(test_span_expiry_and_late),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_sweep_drops_ended_entities),
        cmocka_unit_test(test_slices_and_samples_queries),
        cmocka_unit_test(test_readers_see_staged_records),
        cmocka_unit_test(test_stacks_played_without_the_lock),
        cmocka_unit_test(test_many_stacks_in_batches),
        cmocka_unit_test(test_readers_while_feeding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
