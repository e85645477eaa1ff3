/*
 * Model: finding the group of (timestamp, thread) (groups.c): a ring of the newest groups, then
 * a bucket table of the older live ones, chained per hashed key. One test builds two groups on
 * one chain (threads 7 and 165580148 at timestamps whose XOR equals the XOR of the threads'
 * hash terms) and removes them head first and not head first; another makes more groups at one
 * timestamp than the ring holds, so the oldest move to the bucket table, and sends samples and
 * parts to them in and out of time order; one leaves groups of distinct timestamps behind the
 * ring, found by a search of the window queue; one closes a group's window while a key
 * reference waits, so it leaves the ring into the bucket table, and sends it a user part
 * before the definition; one gives groups their first (kernel) part, which moves them from
 * the kernel wait to the stack wait, in and out of time order, and one checks that the count
 * bound closes the oldest window of the two queues. Each checks that every part reaches its
 * samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model_synth.h"

#define K(x)  (0xfffff80000000000ull + (x))
#define TID_A 7u
#define TID_B 165580148u
/* (TID_A * G) ^ (TID_B * G), G the group-key multiplier: 0xc7044ae17 ticks (~5342 s). */
#define TS_A 0x1000000000ull
#define TS_B (TS_A ^ 0xc7044ae17ull)

/* A model with waits of stack_s (stack wait) and kernel_s (kernel wait) seconds and at most
 * max_pending samples waiting (0: each option's default). */
static perch_model *model_waits(recorder *r, perch_sink *sink, double stack_s, double kernel_s,
                                uint32_t max_pending)
{
    perch_model_options opts;
    memset(&opts, 0, sizeof opts);
    opts.sz = sizeof opts;
    opts.stack_wait_seconds = stack_s;
    opts.kernel_wait_seconds = kernel_s;
    opts.max_pending_samples = max_pending;
    perch_model *m = new_model_opts(r, sink, &opts);
    assert_non_null(m);
    return m;
}

/* Groups stay pending across the gap between TS_A and TS_B, before and after a first part. */
static perch_model *long_wait_model(recorder *r, perch_sink *sink)
{
    return model_waits(r, sink, 100000.0, 100000.0, 0);
}

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static const perch_sample_rec *sample_on(const recorder *r, uint16_t cpu)
{
    for (int i = 0; i < r->nsamples; i++)
        if (r->samples[i].cpu == cpu)
            return &r->samples[i];
    return NULL;
}

static void assert_stack(const recorder *r, uint16_t cpu, uint64_t frame)
{
    const perch_sample_rec *x = sample_on(r, cpu);
    assert_non_null(x);
    const rec_stack *st = find_stack(r, x->stack_id);
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, 2);
    assert_true(st->frames[1] == frame);
}

static void test_colliding_groups(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = long_wait_model(&r, &sink);
    uint64_t fa[] = {K(0x10), 0x7ff600000a00ull}, fb[] = {K(0x20), 0x7ff600000b00ull};
    feed(m, ev_sample(&s, TS_A, 0, K(0x10), TID_A));
    feed(m, ev_sample(&s, TS_B, 1, K(0x20), TID_B)); /* chain: B, A */
    assert_int_equal(r.nsamples, 0);
    feed(m, ev_walk(&s, TS_B + 1, TS_B, TID_B, fb, 2, 8)); /* B leaves: head with a next */
    assert_int_equal(r.nsamples, 1);
    assert_stack(&r, 1, fb[1]);
    feed(m, ev_sample(&s, TS_B, 2, K(0x20), TID_B));       /* a new group: chain B', A */
    feed(m, ev_walk(&s, TS_B + 2, TS_A, TID_A, fa, 2, 8)); /* A leaves: not the head */
    assert_int_equal(r.nsamples, 2);
    assert_stack(&r, 0, fa[1]);
    feed(m, ev_sample(&s, TS_B, 3, K(0x20), TID_B)); /* joins B' */
    assert_int_equal(r.nsamples, 2);
    feed(m, ev_walk(&s, TS_B + 3, TS_B, TID_B, fa, 2, 8)); /* B' leaves: the only one left */
    assert_int_equal(r.nsamples, 4);
    assert_stack(&r, 2, fa[1]);
    assert_stack(&r, 3, fa[1]);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 4);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 4);
    perch_model_destroy(m);
}

/* Frames of tid's stack: one kernel frame, one user frame naming tid. */
static void frames_of(uint32_t tid, uint64_t f[2])
{
    f[0] = K(0x100 + tid);
    f[1] = 0x7ff600000000ull + tid;
}

static const perch_sample_rec *sample_of(const recorder *r, uint32_t tid, int nth)
{
    for (int i = 0; i < r->nsamples; i++)
        if (r->samples[i].tid == tid && nth-- == 0)
            return &r->samples[i];
    return NULL;
}

static void assert_tid_stack(const recorder *r, uint32_t tid, int nth)
{
    const perch_sample_rec *x = sample_of(r, tid, nth);
    assert_non_null(x);
    const rec_stack *st = find_stack(r, x->stack_id);
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, 2);
    assert_true(st->frames[1] == 0x7ff600000000ull + tid);
}

#define MANY 150u /* groups at one timestamp: more than RECENT_GROUPS */

static void test_groups_past_the_ring(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t f[2];
    (void)state;
    perch_model *m = long_wait_model(&r, &sink);
    for (uint32_t i = 0; i < MANY; i++)
        feed(m, ev_sample(&s, TS_A, (uint16_t)(i % 4), K(0x10), 1000 + i));
    feed(m, ev_sample(&s, TS_A, 1, K(0x10), 1000));            /* joins the oldest group (hashed) */
    feed(m, ev_sample(&s, TS_A, 2, K(0x10), 1000 + MANY - 1)); /* joins the newest */
    feed(m, ev_sample(&s, TS_A + 10, 3, K(0x10), 7));
    feed(m, ev_sample(&s, TS_A + 5, 3, K(0x10), 8)); /* back in time: a group of its own */
    feed(m, ev_sample(&s, TS_A + 5, 0, K(0x10), 8)); /* and joins it */
    assert_int_equal(r.nsamples, 0);
    for (uint32_t i = 0; i < MANY; i++) { /* oldest first: the bucket table, then the ring */
        frames_of(1000 + i, f);
        feed(m, ev_walk(&s, TS_A + 20 + i, TS_A, 1000 + i, f, 2, 8));
    }
    frames_of(8, f);
    feed(m, ev_walk(&s, TS_A + 200, TS_A + 5, 8, f, 2, 8));
    frames_of(7, f);
    feed(m, ev_walk(&s, TS_A + 201, TS_A + 10, 7, f, 2, 8));
    assert_int_equal(r.nsamples, MANY + 5);
    for (uint32_t i = 0; i < MANY; i++)
        assert_tid_stack(&r, 1000 + i, 0);
    assert_tid_stack(&r, 1000, 1);
    assert_tid_stack(&r, 1000 + MANY - 1, 1);
    assert_tid_stack(&r, 8, 0);
    assert_tid_stack(&r, 8, 1);
    assert_tid_stack(&r, 7, 0);
    feed(m, ev_walk(&s, TS_A + 300, TS_A, 1000, f, 2, 8)); /* its group is gone: an orphan */
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, MANY + 5);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), MANY + 5);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 1);
    perch_model_destroy(m);
}

#define BEHIND 100u /* groups in time order: the oldest 36 end up behind the ring */

static void test_groups_behind_the_ring(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t f[2];
    (void)state;
    perch_model *m = long_wait_model(&r, &sink);
    for (uint32_t i = 0; i < BEHIND; i++)
        feed(m, ev_sample(&s, TS_A + 10 * i, (uint16_t)(i % 4), K(0x10), 2000 + i));
    feed(m, ev_sample(&s, TS_A, 1, K(0x10), 2000)); /* joins the oldest, found in the queue */
    for (uint32_t i = 0; i < BEHIND; i++) {         /* oldest first: the queue, then the ring */
        frames_of(2000 + i, f);
        feed(m, ev_walk(&s, TS_A + 5000 + i, TS_A + 10 * i, 2000 + i, f, 2, 8));
    }
    assert_int_equal(r.nsamples, BEHIND + 1);
    for (uint32_t i = 0; i < BEHIND; i++)
        assert_tid_stack(&r, 2000 + i, 0);
    assert_tid_stack(&r, 2000, 1);
    feed(m, ev_walk(&s, TS_A + 6000, TS_A + 10, 2001, f, 2, 8)); /* its group is gone */
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), BEHIND + 1);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 1);
    perch_model_destroy(m);
}

static void test_closed_window_behind_the_ring(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    const uint64_t t0 = 1000000, second = 10000000;
    uint64_t def[] = {K(0x900)}, user[] = {0x7ff600000009ull};
    (void)state;
    memset(&r, 0, sizeof r);
    perch_model *m = new_model(&r, &sink); /* a 4 s window */
    feed(m, ev_sample(&s, t0, 0, K(0x10), 9));
    feed(m, ev_keyref(&s, 37, t0 + 1, t0, 9, 0x99)); /* waits for its definition */
    for (uint32_t i = 0; i < 128; i++)               /* past the window, past the ring (64) */
        feed(m, ev_sample(&s, t0 + 5 * second + i, 1, K(0x10), 3000 + i));
    assert_int_equal(r.nsamples, 0);                               /* the window closed, */
    feed(m, ev_walk(&s, t0 + 6 * second, t0, 9, user, 1, 8));      /* a user part comes, */
    feed(m, ev_keydef(&s, 34, t0 + 6 * second + 1, 0x99, def, 1)); /* and the definition */
    /* the others had no stack part: their windows closed at the kernel wait, by then over */
    assert_int_equal(r.nsamples, 1 + 128);
    const perch_sample_rec *x = sample_of(&r, 9, 0);
    assert_non_null(x);
    assert_int_equal(r.samples[r.nsamples - 1].tid, 9); /* emitted by its definition, last */
    const rec_stack *st = find_stack(&r, x->stack_id);
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, 2);
    assert_int_equal(st->r.kernel_frames, 1);
    assert_true(st->frames[0] == def[0] && st->frames[1] == user[0]);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 0);
    assert_int_equal(STAT(&r, "stack.emit.wait_time"), 1 + 128);
    perch_model_destroy(m);
}

#define SEC     10000000ull /* ticks per second of the synthesized clock */
#define FILLERS 100u        /* groups between the two: A leaves the ring */

/* A group waits the kernel wait (0.1 s) until its first part; a kernel part moves it to the
 * stack wait (4 s), where its user part still finds it: B's in time order (a queue search
 * finds it), A's after B's (its queue key is B's timestamp, so it is found in the bucket
 * table, having left the ring). The groups that never get a part close at the kernel wait. */
static void test_first_part_moves_the_group(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t kf[] = {K(0x10)}, ua[] = {0x7ff60000000aull}, ub[] = {0x7ff60000000bull};
    (void)state;
    perch_model *m = model_waits(&r, &sink, 4.0, 0.1, 0);
    const uint64_t t0 = TS_A;
    feed(m, ev_sample(&s, t0, 0, K(0x10), 7));      /* A */
    feed(m, ev_sample(&s, t0 + 10, 1, K(0x10), 8)); /* B */
    for (uint32_t i = 0; i < FILLERS; i++)
        feed(m, ev_sample(&s, t0 + 20 + i, 2, K(0x10), 3000 + i));
    feed(m, ev_walk(&s, t0 + 200, t0 + 10, 8, kf, 1, 8)); /* B's kernel part */
    feed(m, ev_walk(&s, t0 + 201, t0, 7, kf, 1, 8));      /* A's, after B's */
    feed(m, ev_ready(&s, t0 + SEC / 10 + 1000, 0, 9));
    assert_int_equal(r.nsamples, FILLERS); /* no part in 0.1 s: closed */
    assert_null(sample_of(&r, 7, 0));
    assert_null(sample_of(&r, 8, 0));
    feed(m, ev_walk(&s, t0 + 2 * SEC, t0 + 10, 8, ub, 1, 8)); /* the user parts, 2 s later */
    feed(m, ev_walk(&s, t0 + 2 * SEC + 1, t0, 7, ua, 1, 8));
    assert_int_equal(r.nsamples, FILLERS + 2);
    const rec_stack *a = find_stack(&r, sample_of(&r, 7, 0)->stack_id);
    const rec_stack *b = find_stack(&r, sample_of(&r, 8, 0)->stack_id);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->r.frame_count, 2);
    assert_int_equal(a->r.kernel_frames, 1);
    assert_true(a->frames[0] == kf[0] && a->frames[1] == ua[0]);
    assert_true(b->frames[0] == kf[0] && b->frames[1] == ub[0]);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "stack.emit.wait_time"), FILLERS);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 2);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 0);
    perch_model_destroy(m);
}

/* Too many samples wait: the oldest open window closes first, whichever queue holds it. */
static void test_count_bound_takes_the_oldest(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t kf[] = {K(0x10)};
    (void)state;
    perch_model *m = model_waits(&r, &sink, 0, 0, 2);
    feed(m, ev_sample(&s, 1000, 0, K(0x10), 7));
    feed(m, ev_walk(&s, 1001, 1000, 7, kf, 1, 8)); /* the oldest: in the stack wait */
    feed(m, ev_sample(&s, 1005, 1, K(0x10), 8));   /* then two in the kernel wait */
    assert_int_equal(r.nsamples, 0);
    feed(m, ev_sample(&s, 1006, 2, K(0x10), 9));
    assert_int_equal(r.nsamples, 1);
    assert_int_equal(r.samples[0].tid, 7);
    assert_int_not_equal(r.samples[0].stack_id, 0); /* with its kernel part */
    feed(m, ev_sample(&s, 1007, 3, K(0x10), 10));
    assert_int_equal(r.nsamples, 2);
    assert_int_equal(r.samples[1].tid, 8);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "stack.emit.count_bound"), 2);
    perch_model_destroy(m);
}

/* The entity a group's sample named leaves its slot before the group's first part: the tid
 * starts again (a new entity), or the entity cap evicts it for a System thread. Its pid cannot
 * be read from the slot then; the group still waits for its user part, which comes 0.5 s
 * later (a review found the slot's new occupant read instead: pid 0 or 4, a 0.1 s wait, an
 * orphan part). */
static void first_part_after_the_entity_left(bool evict)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t kf[] = {K(0x10)}, ua[] = {0x7ff60000000aull};
    perch_model_options opts;
    memset(&opts, 0, sizeof opts);
    opts.sz = sizeof opts;
    opts.max_entities = evict ? 2 : 0; /* two at most: a third evicts one */
    perch_model *m = new_model_opts(&r, &sink, &opts);
    assert_non_null(m);
    const uint64_t t0 = TS_A;
    feed(m, ev_thread(&s, 3, t0 - 100, 44, 7, NULL)); /* a user thread (rundown) */
    feed(m, ev_thread(&s, 3, t0 - 99, 44, 8, NULL));
    feed(m, ev_sample(&s, t0, 0, K(0x10), 7));
    if (evict)
        feed(m, ev_thread(&s, 1, t0 + 1, 4, 99, NULL)); /* a System thread takes a slot */
    else
        feed(m, ev_thread(&s, 1, t0 + 1, 44, 7, NULL)); /* tid 7 starts again */
    feed(m, ev_walk(&s, t0 + 2, t0, 7, kf, 1, 8));      /* the sample's kernel part */
    feed(m, ev_ready(&s, t0 + SEC / 5, 0, 9));          /* past the kernel wait */
    assert_int_equal(r.nsamples, 0);
    feed(m, ev_walk(&s, t0 + SEC / 2, t0, 7, ua, 1, 8));
    assert_int_equal(r.nsamples, 1);
    const rec_stack *st = find_stack(&r, r.samples[0].stack_id);
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, 2);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 1);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 0);
    perch_model_destroy(m);
}

static void test_first_part_after_a_restart(void **state)
{
    (void)state;
    first_part_after_the_entity_left(false);
}

static void test_first_part_after_an_eviction(void **state)
{
    (void)state;
    first_part_after_the_entity_left(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colliding_groups),
        cmocka_unit_test(test_groups_past_the_ring),
        cmocka_unit_test(test_groups_behind_the_ring),
        cmocka_unit_test(test_closed_window_behind_the_ring),
        cmocka_unit_test(test_first_part_moves_the_group),
        cmocka_unit_test(test_count_bound_takes_the_oldest),
        cmocka_unit_test(test_first_part_after_a_restart),
        cmocka_unit_test(test_first_part_after_an_eviction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
