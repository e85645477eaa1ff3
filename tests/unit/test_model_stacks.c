/*
 * Model: samples and stack assembly from synthesized records, per the report reference S1-S7:
 * a merged kernel+user stack (kernel segments then user segments), kernel-only when the user
 * part cannot come (time bound, thread exit, end of trace), user-only, orphan parts, key
 * references resolved to the first definition at or after the reference's own timestamp
 * (reused keys, same-timestamp definitions), unresolved keys, parts shared by samples with the
 * same (timestamp, thread), interning, WOW64 frames, PMC samples and LBR records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model_synth.h"

#define K(x) (0xfffff80000000000ull + (x))
#define SEC  10000000ull /* ticks per second of the synthesized clock */

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static const perch_sample_rec *sample_at(const recorder *r, uint64_t ts, uint16_t cpu)
{
    for (int i = 0; i < r->nsamples; i++)
        if (r->samples[i].ts == ts && r->samples[i].cpu == cpu)
            return &r->samples[i];
    return NULL;
}

static int sample_index(const recorder *r, const perch_sample_rec *s)
{
    return (int)(s - r->samples);
}

static void assert_frames(const rec_stack *st, const uint64_t *want, uint32_t n, uint32_t kernel)
{
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, n);
    assert_int_equal(st->r.kernel_frames, kernel);
    assert_memory_equal(st->frames, want, n * sizeof *want);
}

static void test_merged_kernel_then_user(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t kf[] = {K(0x100), K(0x200)}, uf[] = {0x7ff600001000ull, 0x7ff600002000ull};
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_sample(&s, 1000, 1, K(0x100), 7));
    feed(m, ev_walk(&s, 1001, 1000, 7, kf, 2, 8));
    feed(m, ev_keyref(&s, 38, 5000, 1000, 7, 0xabc)); /* deferred user part */
    assert_int_equal(r.nsamples, 0);                  /* waits for the definition */
    feed(m, ev_keydef(&s, 35, 6000, 0xabc, uf, 2));
    assert_int_equal(r.nsamples, 1); /* emitted as soon as the user part is complete */
    const perch_sample_rec *x = sample_at(&r, 1000, 1);
    assert_non_null(x);
    uint64_t want[] = {K(0x100), K(0x200), 0x7ff600001000ull, 0x7ff600002000ull};
    assert_frames(find_stack(&r, x->stack_id), want, 4, 2);
    assert_true(r.stack_order[0] < r.sample_order[sample_index(&r, x)]);
    assert_int_equal(x->tid, 7);
    assert_int_equal(x->kind, PERCH_SAMPLE_TIMER);
    assert_int_equal(x->flags, 0x58);
    assert_int_equal(x->count, 1);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "stack.merged"), 1);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 1);
    assert_int_equal(STAT(&r, "stack.frames_total"), 4);
    perch_model_destroy(m);
}

static void test_kernel_only_by_time_exit_and_end(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t kf[] = {K(0x10)};
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_thread(&s, 3, 11, 44, 8, NULL));
    feed(m, ev_sample(&s, 100, 0, K(0x10), 7)); /* waits out the time bound */
    feed(m, ev_walk(&s, 101, 100, 7, kf, 1, 8));
    feed(m, ev_sample(&s, 200, 1, K(0x10), 8)); /* its thread exits */
    feed(m, ev_walk(&s, 201, 200, 8, kf, 1, 8));
    feed(m, ev_ready(&s, 100 + 4 * SEC + 1, 0, 9));
    assert_non_null(sample_at(&r, 100, 0));
    assert_null(sample_at(&r, 200, 1));
    feed(m, ev_thread(&s, 2, 100 + 4 * SEC + 50, 44, 8, NULL));
    assert_non_null(sample_at(&r, 200, 1));
    feed(m, ev_sample(&s, 5 * SEC, 2, K(0x10), 7)); /* still waiting at the end */
    feed(m, ev_walk(&s, 5 * SEC + 1, 5 * SEC, 7, kf, 1, 8));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 3);
    for (int i = 0; i < 3; i++) {
        const rec_stack *st = find_stack(&r, r.samples[i].stack_id);
        assert_frames(st, kf, 1, 1);
    }
    assert_int_equal(r.nstacks, 1); /* interned once */
    assert_int_equal(STAT(&r, "stack.kernel_only"), 3);
    assert_int_equal(STAT(&r, "stack.emit.wait_time"), 1);
    assert_int_equal(STAT(&r, "stack.emit.thread_exit"), 1);
    assert_int_equal(STAT(&r, "stack.emit.end_of_trace"), 1);
    perch_model_destroy(m);
}

static void test_user_only_orphan_and_no_stack(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t uf[] = {0x401000, 0x402000}, kf[] = {K(1)};
    feed(m, ev_sample(&s, 100, 0, 0x401000, 7));
    feed(m, ev_walk(&s, 102, 100, 7, uf, 2, 8));  /* user frames: emitted at once */
    feed(m, ev_walk(&s, 103, 99, 7, kf, 1, 8));   /* no sample at (99, 7) */
    feed(m, ev_keyref(&s, 37, 104, 100, 8, 0x5)); /* no sample at (100, 8) */
    feed(m, ev_sample(&s, 150, 0, 0x401000, 7));  /* no part ever */
    assert_int_equal(perch_model_finish(m), 0);
    const perch_sample_rec *a = sample_at(&r, 100, 0), *b = sample_at(&r, 150, 0);
    assert_frames(find_stack(&r, a->stack_id), uf, 2, 0);
    assert_int_equal(b->stack_id, 0);
    assert_int_equal(STAT(&r, "stack.user_only"), 1);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 2);
    assert_int_equal(LEDGER(&r, "sample.no_stack"), 1);
    assert_int_equal(STAT(&r, "samples.with_stack") + LEDGER(&r, "sample.no_stack") +
                         LEDGER(&r, "sample.stack_unresolved"),
                     STAT(&r, "samples.total"));
    perch_model_destroy(m);
}

/* A walk that is a group's first part and has user frames is its whole stack, emitted at once:
 * past MAX_PART_FRAMES (4096) it is cut, counted once as stack.part_too_long, and a user frame
 * beyond the cut still makes it a user part (the kernel length is that of the frames kept).
 * A group that already has a part (an empty walk) assembles from all of its parts. */
static void test_walk_alone_and_cut(void **state)
{
    recorder r;
    perch_sink sink;
    static synth_ev s;
    static uint8_t big[16 + 8 * 4100];
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_sample(&s, 1000, 0, K(0x1000), 7));
    perch_event *ev = ev_walk(&s, 1001, 1000, 7, NULL, 0, 8);
    memcpy(big, s.buf, 16);
    for (unsigned i = 0; i < 4100; i++)
        perch_test_put_u64(big + 16 + 8 * i, i < 4096 ? K(0x1000 + i) : 0x7ff600001000ull + i);
    ev->payload = big;
    ev->payload_len = sizeof big;
    feed(m, ev);
    assert_int_equal(r.nsamples, 1); /* the user frames past the cut: a user part */
    const rec_stack *st = find_stack(&r, r.samples[0].stack_id);
    assert_non_null(st);
    assert_int_equal(st->r.frame_count, 4096);
    assert_int_equal(st->r.kernel_frames, 4096);
    assert_int_equal(st->frames[63], K(0x1000 + 63)); /* the recorder keeps 64 */
    uint64_t uf[] = {0x7ff600001000ull, 0x7ff600002000ull};
    feed(m, ev_sample(&s, 2000, 0, 0x7ff600001000ull, 7));
    feed(m, ev_walk(&s, 2001, 2000, 7, uf, 0, 8)); /* an empty first part */
    assert_int_equal(r.nsamples, 1);
    feed(m, ev_walk(&s, 2002, 2000, 7, uf, 2, 8));
    assert_int_equal(r.nsamples, 2);
    assert_frames(find_stack(&r, r.samples[1].stack_id), uf, 2, 0);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(LEDGER(&r, "stack.part_too_long"), 1);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 2);
    assert_int_equal(STAT(&r, "stack.kernel_only"), 1);
    assert_int_equal(STAT(&r, "stack.user_only"), 1);
    assert_int_equal(STAT(&r, "stack.parts_walk"), 3);
    perch_model_destroy(m);
}

/* S2: a reference resolves to the first definition at or after its own header timestamp,
 * even when an earlier definition of the (reused) key is at or after its EventTimeStamp. */
static void test_key_resolution_rules(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t a[] = {K(0xa)}, b[] = {K(0xb)}, c[] = {K(0xc)}, d[] = {K(0xd)};
    feed(m, ev_sample(&s, 40, 0, K(0xb), 7));
    feed(m, ev_keydef(&s, 35, 50, 0x77, a, 1));   /* after the sample, before the reference */
    feed(m, ev_keyref(&s, 37, 100, 40, 7, 0x77)); /* -> the next definition, b */
    feed(m, ev_keydef(&s, 35, 120, 0x77, b, 1));
    feed(m, ev_keydef(&s, 35, 130, 0x77, c, 1)); /* key reused */
    feed(m, ev_sample(&s, 200, 1, K(0xc), 9));
    feed(m, ev_keydef(&s, 36, 210, 0x88, d, 1));   /* same timestamp as the reference ... */
    feed(m, ev_keyref(&s, 37, 210, 200, 9, 0x88)); /* ... logged before it: it counts */
    feed(m, ev_keydef(&s, 36, 211, 0x88, a, 1));
    feed(m, ev_sample(&s, 300, 2, K(0xc), 9));
    feed(m, ev_keyref(&s, 37, 310, 300, 9, 0x99)); /* never defined */
    assert_int_equal(perch_model_finish(m), 0);
    assert_frames(find_stack(&r, sample_at(&r, 40, 0)->stack_id), b, 1, 1);
    assert_frames(find_stack(&r, sample_at(&r, 200, 1)->stack_id), d, 1, 1);
    assert_int_equal(sample_at(&r, 300, 2)->stack_id, 0);
    assert_int_equal(LEDGER(&r, "stack.key_unresolved"), 1);
    assert_int_equal(LEDGER(&r, "sample.stack_unresolved"), 1);
    perch_model_destroy(m);
}

/* S3: a part belongs to every sample with its (timestamp, thread); parts are not consumed. */
static void test_parts_shared_by_samples(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t kf[] = {K(0x30), K(0x40)};
    feed(m, ev_sample(&s, 500, 0, K(0x30), 0));
    feed(m, ev_sample(&s, 500, 3, K(0x30), 0));
    feed(m, ev_walk(&s, 501, 500, 0, kf, 2, 8));
    assert_int_equal(perch_model_finish(m), 0);
    const perch_sample_rec *a = sample_at(&r, 500, 0), *b = sample_at(&r, 500, 3);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->stack_id, b->stack_id);
    assert_int_not_equal(a->stack_id, 0);
    assert_int_not_equal(a->thread_key, b->thread_key); /* idle threads of two CPUs */
    assert_int_equal(STAT(&r, "stack.frames_total"), 4);
    perch_model_destroy(m);
}

/* S4: kernel segments of all parts, then user segments; a user part with kernel frames in its
 * middle (user-mode callback) keeps its order. WOW64 user frames in 8-byte slots are user. */
static void test_segments_callbacks_and_wow64(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t k1[] = {K(1), K(2), 0x77001000ull};          /* kernel, then a 32-bit user frame */
    uint64_t u1[] = {0x77002000ull, K(3), 0x77003000ull}; /* callback frame in the middle */
    feed(m, ev_sample(&s, 100, 0, K(1), 7));
    feed(m, ev_walk(&s, 101, 100, 7, k1, 3, 8));
    /* the first part already carried a user frame: the sample is emitted with it */
    feed(m, ev_sample(&s, 200, 0, K(1), 8));
    feed(m, ev_walk(&s, 201, 200, 8, k1, 2, 8));
    feed(m, ev_walk(&s, 202, 200, 8, u1, 3, 8));
    assert_int_equal(perch_model_finish(m), 0);
    uint64_t want1[] = {K(1), K(2), 0x77001000ull};
    assert_frames(find_stack(&r, sample_at(&r, 100, 0)->stack_id), want1, 3, 2);
    uint64_t want2[] = {K(1), K(2), 0x77002000ull, K(3), 0x77003000ull};
    assert_frames(find_stack(&r, sample_at(&r, 200, 0)->stack_id), want2, 5, 2);
    perch_model_destroy(m);
}

static void test_pointer_size_4_split(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t f[] = {0x80001000ull, 0x7fff0000ull};
    perch_event *ev = ev_sample(&s, 100, 0, 0x80001000ull, 7);
    feed(m, ev);
    feed(m, ev_walk(&s, 101, 100, 7, f, 2, 4));
    assert_int_equal(perch_model_finish(m), 0);
    assert_frames(find_stack(&r, r.samples[0].stack_id), f, 2, 1);
    perch_model_destroy(m);
}

static void test_pmc_sample_and_lbr(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t from[] = {0x401010, 0x401100}, to[] = {0x401200, 0x401300};
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_pmc_sample(&s, 100, 2, 0x401010, 7, 0x13));
    feed(m, ev_lbr(&s, 100, 44, 7, from, to, 2));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 1);
    assert_int_equal(r.samples[0].kind, PERCH_SAMPLE_PMC);
    assert_int_equal(r.samples[0].profile_source, 0x13);
    assert_int_equal(r.samples[0].ip, 0x401010);
    assert_int_equal(r.nlbrs, 1);
    assert_int_equal(r.lbrs[0].ts, 100);
    assert_int_equal(r.lbrs[0].tid, 7);
    assert_int_equal(r.lbrs[0].thread_key, r.samples[0].thread_key);
    assert_int_equal(r.lbrs[0].branch_count, 2);
    assert_int_equal(r.lbr_from[0][1], 0x401100);
    assert_int_equal(r.lbr_to[0][0], 0x401200);
    assert_int_equal(STAT(&r, "samples.pmc"), 1);
    assert_int_equal(STAT(&r, "samples.total"), 0);
    perch_model_destroy(m);
}

/* Threads that never run user mode (idle, System) wait only for their kernel part, and so
 * does every sample until its first stack part: a sample of a user thread with a kernel part
 * waits for its user part (the stack wait), one with no part at all closes at the kernel wait. */
static void test_kernel_threads_wait_short(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint64_t kf[] = {K(0x10)}, uf[] = {0x7ff600001000ull};
    feed(m, ev_thread(&s, 3, 10, 4, 8, NULL));  /* a System thread */
    feed(m, ev_thread(&s, 3, 11, 44, 7, NULL)); /* user process threads */
    feed(m, ev_thread(&s, 3, 12, 44, 6, NULL));
    feed(m, ev_sample(&s, 100, 0, K(0x10), 0));
    feed(m, ev_sample(&s, 100, 1, K(0x10), 8));
    feed(m, ev_sample(&s, 100, 2, K(0x10), 7));
    feed(m, ev_sample(&s, 100, 3, K(0x10), 6));
    feed(m, ev_walk(&s, 101, 100, 0, kf, 1, 8));
    feed(m, ev_walk(&s, 102, 100, 6, kf, 1, 8)); /* a kernel part: its user part is to come */
    feed(m, ev_ready(&s, 100 + SEC / 10 + 1, 0, 9));
    assert_int_equal(r.nsamples, 3); /* idle, System and the user thread with no part: done */
    assert_int_not_equal(sample_at(&r, 100, 0)->stack_id, 0);
    assert_int_equal(sample_at(&r, 100, 1)->stack_id, 0);
    assert_int_equal(sample_at(&r, 100, 2)->stack_id, 0);
    assert_null(sample_at(&r, 100, 3)); /* waits for its user part */
    feed(m, ev_walk(&s, 100 + 3 * SEC, 100, 6, uf, 1, 8));
    assert_int_equal(r.nsamples, 4);
    const rec_stack *st = find_stack(&r, sample_at(&r, 100, 3)->stack_id);
    uint64_t want[] = {K(0x10), 0x7ff600001000ull};
    assert_frames(st, want, 2, 1);
    feed(m, ev_walk(&s, 100 + 3 * SEC + 1, 100, 7, uf, 1, 8)); /* too late for the other */
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 4);
    assert_int_equal(STAT(&r, "stack.emit.wait_time"), 3);
    assert_int_equal(STAT(&r, "stack.emit.user_part"), 1);
    assert_int_equal(LEDGER(&r, "stack.orphan_part"), 1);
    perch_model_destroy(m);
}

static void test_count_bound_and_sink_error(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    perch_trace_info info;
    perch_model_options o = {sizeof o, 0, 4, 0, 0, 0};
    perch_model *m = NULL;
    (void)state;
    memset(&r, 0, sizeof r);
    memset(&info, 0, sizeof info);
    info.pointer_size = 8;
    info.perf_freq = SEC;
    sink = recorder_sink(&r);
    assert_int_equal(perch_model_create(&sink, &info, &o, &m), 0);
    for (uint64_t i = 0; i < 10; i++)
        feed(m, ev_sample(&s, 100 + i, 0, K(1), 7));
    assert_int_equal(r.nsamples, 10 - 4); /* at most 4 wait */
    r.fail_sample = PERCH_EIO;
    assert_int_equal(perch_model_finish(m), PERCH_EIO);
    assert_int_equal(perch_model_feed(m, ev_sample(&s, 300, 0, K(1), 7)), PERCH_EIO);
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_kernel_then_user),
        cmocka_unit_test(test_kernel_only_by_time_exit_and_end),
        cmocka_unit_test(test_user_only_orphan_and_no_stack),
        cmocka_unit_test(test_walk_alone_and_cut),
        cmocka_unit_test(test_key_resolution_rules),
        cmocka_unit_test(test_parts_shared_by_samples),
        cmocka_unit_test(test_segments_callbacks_and_wow64),
        cmocka_unit_test(test_pointer_size_4_split),
        cmocka_unit_test(test_pmc_sample_and_lbr),
        cmocka_unit_test(test_kernel_threads_wait_short),
        cmocka_unit_test(test_count_bound_and_sink_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
