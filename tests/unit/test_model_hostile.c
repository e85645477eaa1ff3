/*
 * Model: records a hostile or damaged trace can contain must be counted or carried through,
 * never turn into a fatal model error that loses the rest of the trace. Found in review:
 * thread id 0xFFFFFFFF (the value the thread cache uses for an empty slot) and one
 * (timestamp, thread) group collecting more stack frames than the assembly buffer's cap, and
 * a ReadyThread later than the switch-in it is attached to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model_synth.h"

#define K(x) (0xfffff80000000000ull + (x))

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

/* A thread id equal to the empty-slot marker of the tid cache is still a thread. */
static void test_tid_all_ones(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_sample(&s, 100, 0, K(0x10), UINT32_MAX));
    feed(m, ev_cswitch(&s, 200, 0, UINT32_MAX, 8, 9, 0, 5));
    feed(m, ev_cswitch(&s, 300, 0, 8, UINT32_MAX, 9, 0, 5));
    feed(m, ev_sample(&s, 400, 1, K(0x20), 8));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 2);
    assert_int_equal(r.samples[0].tid, UINT32_MAX);
    int found = 0;
    for (int i = 0; i < r.nslices; i++)
        if (r.slices[i].tid == UINT32_MAX) {
            assert_int_equal(r.slices[i].start_ts, 200);
            assert_int_equal(r.slices[i].end_ts, 300);
            found++;
        }
    assert_int_equal(found, 1);
    assert_int_equal(LEDGER(&r, "cswitch.stale_old_thread"), 0);
    perch_model_destroy(m);
}

/* Many kernel-only walks naming one sample: the assembled stack is capped and counted, the
 * model keeps going. */
static void test_group_frames_over_cap(void **state)
{
    recorder r;
    perch_sink sink;
    static synth_ev s;
    static uint64_t kf[500];
    (void)state;
    perch_model *m = new_model(&r, &sink);
    for (unsigned i = 0; i < 500; i++)
        kf[i] = K(0x1000 + i);
    feed(m, ev_thread(&s, 3, 10, 44, 7, NULL));
    feed(m, ev_sample(&s, 1000, 0, K(0x1000), 7));
    for (unsigned w = 0; w < 600; w++) /* 300000 frames > the 262144 assembly cap */
        feed(m, ev_walk(&s, 1001 + w, 1000, 7, kf, 500, 8));
    feed(m, ev_sample(&s, 2000, 0, K(0x1000), 7));
    uint64_t one[] = {K(0x1000)};
    feed(m, ev_walk(&s, 2001, 2000, 7, one, 1, 8));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 2);
    assert_int_not_equal(r.samples[0].stack_id, 0);
    assert_int_not_equal(r.samples[1].stack_id, 0);
    assert_int_equal(LEDGER(&r, "stack.too_long"), 1);
    perch_model_destroy(m);
}

/* A ReadyThread stamped after the switch-in it would precede (out-of-order input, counted as
 * model.time_order) is not attached: ready_ts <= start_ts always holds for HAS_READY slices. */
static void test_ready_after_switch_in(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_cswitch(&s, 100, 0, 8, 0, 9, 0, 5));
    feed(m, ev_ready(&s, 500, 1, 12));
    feed(m, ev_cswitch(&s, 400, 0, 12, 8, 9, 0, 5)); /* earlier than the ReadyThread */
    feed(m, ev_cswitch(&s, 600, 0, 0, 12, 9, 0, 5));
    assert_int_equal(perch_model_finish(m), 0);
    int found = 0;
    for (int i = 0; i < r.nslices; i++) {
        if (r.slices[i].flags & PERCH_SLICE_HAS_READY)
            assert_true(r.slices[i].ready_ts <= r.slices[i].start_ts);
        if (r.slices[i].tid == 12) {
            assert_int_equal(r.slices[i].start_ts, 400);
            assert_int_equal(r.slices[i].flags & PERCH_SLICE_HAS_READY, 0);
            found++;
        }
    }
    assert_int_equal(found, 1);
    assert_int_equal(LEDGER(&r, "model.time_order"), 1);
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tid_all_ones),
        cmocka_unit_test(test_group_frames_over_cap),
        cmocka_unit_test(test_ready_after_switch_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
