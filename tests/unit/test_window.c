/*
 * The time-window filter (include/perch/window.h): the window is placed from the trace info
 * (start_raw, perf_freq); samples and LBR records are kept in [from, to) only, with the
 * boundary ticks on the right side; slices are cut to the window, losing their ready time only
 * when their start was cut; everything untimed passes; a timed record before any trace info
 * is refused; a window far past any clock saturates instead of wrapping; the span of every
 * sample, in the window or not, for a report whose window holds none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/window.h"

struct seen {
    uint64_t samples[8], slices[8][2], lbrs, stacks, threads;
    uint16_t slice_flags[8];
    int nsamples, nslices;
};

static int on_sample(void *c, const perch_sample_rec *r)
{
    struct seen *s = c;
    s->samples[s->nsamples++] = r->ts;
    return 0;
}

static int on_slice(void *c, const perch_slice_rec *r)
{
    struct seen *s = c;
    s->slices[s->nslices][0] = r->start_ts;
    s->slices[s->nslices][1] = r->end_ts;
    s->slice_flags[s->nslices++] = r->flags;
    return 0;
}

static int on_lbr(void *c, const perch_lbr_rec *r)
{
    (void)r;
    ((struct seen *)c)->lbrs++;
    return 0;
}

static int on_stack(void *c, const perch_stack_rec *r)
{
    (void)r;
    ((struct seen *)c)->stacks++;
    return 0;
}

static int on_thread(void *c, const perch_thread_rec *r)
{
    (void)r;
    ((struct seen *)c)->threads++;
    return 0;
}

static perch_sink next_of(struct seen *s)
{
    perch_sink k;
    memset(&k, 0, sizeof k);
    memset(s, 0, sizeof *s);
    k.ctx = s;
    k.sample = on_sample;
    k.slice = on_slice;
    k.lbr = on_lbr;
    k.stack = on_stack;
    k.thread = on_thread;
    return k;
}

/* 10 MHz clock starting at raw 1000: 1 ms is 10000 ticks. */
static void info(const perch_sink *w)
{
    perch_trace_info i;
    memset(&i, 0, sizeof i);
    i.perf_freq = 10000000u;
    i.start_raw = 1000;
    assert_int_equal(w->trace_info(w->ctx, &i), 0);
}

static void sample(const perch_sink *w, uint64_t ts)
{
    perch_sample_rec r;
    memset(&r, 0, sizeof r);
    r.ts = ts;
    assert_int_equal(w->sample(w->ctx, &r), 0);
}

static void slice(const perch_sink *w, uint64_t a, uint64_t b)
{
    perch_slice_rec r;
    memset(&r, 0, sizeof r);
    r.start_ts = a;
    r.end_ts = b;
    r.ready_ts = a - 5;
    r.flags = PERCH_SLICE_HAS_READY;
    assert_int_equal(w->slice(w->ctx, &r), 0);
}

/* [1 ms, 2 ms) is raw [11000, 21000). */
static void test_samples_and_slices(void **state)
{
    struct seen s;
    perch_window win;
    perch_sink k = next_of(&s), w;
    (void)state;
    perch_window_sink(&win, &k, 1000000u, 2000000u, &w);
    info(&w);
    assert_int_equal(win.from_raw, 11000);
    assert_int_equal(win.to_raw, 21000);
    sample(&w, 10999);
    sample(&w, 11000);
    sample(&w, 20999);
    sample(&w, 21000);
    assert_int_equal(s.nsamples, 2);
    assert_int_equal(s.samples[0], 11000);
    assert_int_equal(s.samples[1], 20999);
    assert_int_equal(win.samples_in, 2);
    assert_int_equal(win.samples_out, 2);
    slice(&w, 5000, 11000);  /* ends where the window starts: nothing inside */
    slice(&w, 5000, 15000);  /* cut at the start: no ready time */
    slice(&w, 12000, 13000); /* inside: as it was */
    slice(&w, 20000, 30000); /* cut at the end: keeps its ready time */
    slice(&w, 21000, 22000); /* after */
    assert_int_equal(s.nslices, 3);
    assert_int_equal(s.slices[0][0], 11000);
    assert_int_equal(s.slices[0][1], 15000);
    assert_int_equal(s.slice_flags[0] & PERCH_SLICE_HAS_READY, 0);
    assert_int_equal(s.slices[1][0], 12000);
    assert_int_equal(s.slice_flags[1], PERCH_SLICE_HAS_READY);
    assert_int_equal(s.slices[2][1], 21000);
    assert_int_equal(s.slice_flags[2], PERCH_SLICE_HAS_READY);
}

static void test_untimed_pass_and_lbr(void **state)
{
    struct seen s;
    perch_window win;
    perch_sink k = next_of(&s), w;
    perch_stack_rec st = {1, 0, 0, NULL};
    perch_thread_rec th;
    perch_lbr_rec l;
    (void)state;
    memset(&th, 0, sizeof th);
    memset(&l, 0, sizeof l);
    perch_window_sink(&win, &k, 1000000u, PERCH_WINDOW_END, &w);
    info(&w);
    assert_int_equal(w.stack(w.ctx, &st), 0);
    assert_int_equal(w.thread(w.ctx, &th), 0);
    l.ts = 10999;
    assert_int_equal(w.lbr(w.ctx, &l), 0);
    l.ts = UINT64_MAX - 1; /* open end: kept however late */
    assert_int_equal(w.lbr(w.ctx, &l), 0);
    assert_int_equal(s.stacks, 1);
    assert_int_equal(s.threads, 1);
    assert_int_equal(s.lbrs, 1);
    assert_int_equal(w.finish(w.ctx), 0); /* next has no finish: nothing to call */
}

/* Where the samples lay, in the window or not: from the earliest to the latest, in ns from
 * the trace's start (one before the start counts as 0); nothing to say before any sample. */
static void test_sample_span(void **state)
{
    struct seen s;
    perch_window win;
    perch_sink k = next_of(&s), w;
    uint64_t first = 7, last = 7;
    (void)state;
    perch_window_sink(&win, &k, 1000000u, 2000000u, &w);
    assert_false(perch_window_sample_span(&win, &first, &last)); /* no trace info yet */
    info(&w);
    assert_false(perch_window_sample_span(&win, &first, &last)); /* no sample yet */
    assert_int_equal(first, 7);
    sample(&w, 31000); /* 3 ms: after the window */
    assert_true(perch_window_sample_span(&win, &first, &last));
    assert_int_equal(first, 3000000u);
    assert_int_equal(last, 3000000u);
    sample(&w, 41005); /* 4.0005 ms */
    sample(&w, 6000);  /* 0.5 ms: before the window, and the earliest */
    sample(&w, 500);   /* before the trace's start: 0 */
    assert_true(perch_window_sample_span(&win, &first, &last));
    assert_int_equal(first, 0);
    assert_int_equal(last, 4000500u);
    assert_int_equal(win.samples_in, 0);
    sample(&w, 15000); /* inside: the span covers every sample */
    assert_true(perch_window_sample_span(&win, &first, &last));
    assert_int_equal(first, 0);
    assert_int_equal(last, 4000500u);
    assert_int_equal(win.samples_in, 1);
}

static void test_refused_before_info(void **state)
{
    struct seen s;
    perch_window win;
    perch_sink k = next_of(&s), w;
    perch_sample_rec r;
    (void)state;
    memset(&r, 0, sizeof r);
    perch_window_sink(&win, &k, 0, 1000u, &w);
    assert_int_equal(w.sample(w.ctx, &r), PERCH_EFORMAT);
    assert_int_equal(s.nsamples, 0);
}

static void test_saturates(void **state)
{
    struct seen s;
    perch_window win;
    perch_sink k = next_of(&s), w;
    perch_trace_info i;
    (void)state;
    memset(&i, 0, sizeof i);
    i.perf_freq = 3000000000u; /* a CPU-cycle clock */
    i.start_raw = UINT64_MAX - 100;
    perch_window_sink(&win, &k, 999999999999999999ull, PERCH_WINDOW_END - 1, &w);
    assert_int_equal(w.trace_info(w.ctx, &i), 0);
    assert_int_equal(win.from_raw, UINT64_MAX);
    assert_int_equal(win.to_raw, UINT64_MAX);
    sample(&w, UINT64_MAX - 1);
    assert_int_equal(s.nsamples, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_and_slices), cmocka_unit_test(test_untimed_pass_and_lbr),
        cmocka_unit_test(test_sample_span),        cmocka_unit_test(test_refused_before_info),
        cmocka_unit_test(test_saturates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
