/*
 * Model: CPU slices from CSwitch/ReadyThread, built from synthesized records. Every case the
 * context-switch manager must get right: a matched slice with its ready time, the first switch
 * on a CPU (open start), a stale switch-out, an unknown pid, the idle thread kept apart, slices
 * open at the end, PMC deltas, and totals equal to the sum of the slices.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model_synth.h"

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static const perch_slice_rec *slice_of(const recorder *r, uint32_t tid, uint64_t start)
{
    for (int i = 0; i < r->nslices; i++)
        if (r->slices[i].tid == tid && r->slices[i].start_ts == start)
            return &r->slices[i];
    return NULL;
}

static void test_matched_slice_with_ready_and_open_ends(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    assert_non_null(m);
    feed(m, ev_thread(&s, 3, 50, 44, 10, "worker"));
    feed(m, ev_ready(&s, 90, 1, 10));
    feed(m, ev_cswitch(&s, 100, 0, 10, 0, 12, 0, 2));
    feed(m, ev_cswitch(&s, 300, 0, 0, 10, 0, 5, 5));
    feed(m, ev_ready(&s, 400, 1, 77));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nslices, 3);

    const perch_slice_rec *open = slice_of(&r, 0, 50); /* first event of the trace: ts 50 */
    assert_non_null(open);
    assert_int_equal(open->end_ts, 100);
    assert_true(open->flags & PERCH_SLICE_OPEN_START);

    const perch_slice_rec *w = slice_of(&r, 10, 100);
    assert_non_null(w);
    assert_int_equal(w->end_ts, 300);
    assert_int_equal(w->cpu, 0);
    assert_int_equal(w->priority, 12);
    assert_int_equal(w->wait_reason, 5);
    assert_int_equal(w->wait_mode, 1);
    assert_int_equal(w->state, 5);
    assert_int_equal(w->flags, PERCH_SLICE_HAS_READY);
    assert_int_equal(w->ready_ts, 90);
    const rec_thread *t = find_thread(&r, w->thread_key);
    assert_non_null(t);
    assert_int_equal(t->r.pid, 44);
    assert_string_equal(t->name, "worker");

    const perch_slice_rec *end = slice_of(&r, 0, 300);
    assert_non_null(end);
    assert_int_equal(end->end_ts, 400);
    assert_true(end->flags & PERCH_SLICE_OPEN_END);
    assert_int_equal(end->wait_reason, -1);
    assert_int_equal(STAT(&r, "slices.open_start"), 1);
    assert_int_equal(STAT(&r, "slices.open_end"), 1);
    assert_int_equal(r.finish_calls, 1);
    perch_model_destroy(m);
}

static void test_stale_switch_out_is_counted_and_closed(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_cswitch(&s, 100, 2, 10, 0, 8, 0, 2));
    feed(m, ev_cswitch(&s, 200, 2, 11, 12, 8, 0, 2)); /* 12 was not running: 10 was */
    feed(m, ev_cswitch(&s, 260, 2, 0, 11, 0, 7, 5));
    assert_int_equal(perch_model_finish(m), 0);
    const perch_slice_rec *stale = slice_of(&r, 10, 100);
    assert_non_null(stale);
    assert_int_equal(stale->end_ts, 200);
    assert_true(stale->flags & PERCH_SLICE_STALE);
    assert_int_equal(stale->state, -1);
    const perch_slice_rec *next = slice_of(&r, 11, 200);
    assert_non_null(next);
    assert_int_equal(next->end_ts, 260);
    assert_int_equal(next->flags & PERCH_SLICE_STALE, 0);
    assert_int_equal(LEDGER(&r, "cswitch.stale_old_thread"), 1);
    perch_model_destroy(m);
}

static void test_unknown_pid_and_idle_apart(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 10, 0, 0, "Idle", ""));
    feed(m, ev_cswitch(&s, 100, 0, 20, 0, 8, 0, 2)); /* tid 20: no Thread event ever */
    feed(m, ev_cswitch(&s, 110, 1, 21, 0, 8, 0, 2));
    feed(m, ev_cswitch(&s, 150, 0, 0, 20, 0, 1, 5));
    feed(m, ev_cswitch(&s, 170, 1, 0, 21, 0, 1, 5));
    assert_int_equal(perch_model_finish(m), 0);
    const perch_slice_rec *idle0 = slice_of(&r, 0, 150), *idle1 = slice_of(&r, 0, 170);
    assert_non_null(idle0);
    assert_non_null(idle1);
    assert_int_equal(idle0->cpu, 0);
    assert_int_equal(idle1->cpu, 1);
    assert_int_not_equal(idle0->thread_key, idle1->thread_key); /* one idle thread per CPU */
    const rec_thread *i0 = find_thread(&r, idle0->thread_key);
    assert_non_null(i0);
    assert_int_equal(i0->r.tid, 0);
    assert_int_equal(i0->r.pid, 0);
    const perch_slice_rec *w = slice_of(&r, 20, 100);
    const rec_thread *t = find_thread(&r, w->thread_key);
    assert_non_null(t);
    assert_int_equal(t->r.pid, UINT32_MAX);
    assert_int_equal(t->r.process_key, 0);
    assert_true(t->r.flags & PERCH_ENTITY_PROVISIONAL);
    assert_int_equal(LEDGER(&r, "thread.unknown_pid"), 2);
    perch_model_destroy(m);
}

static void test_totals_equal_sum_of_slices(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t busy[3] = {0}, idle[3] = {0};
    (void)state;
    perch_model *m = new_model(&r, &sink);
    uint32_t running[3] = {0, 0, 0};
    for (uint64_t i = 0; i < 60; i++) {
        uint16_t cpu = (uint16_t)(i % 3);
        uint32_t next = (uint32_t)((i * 7) % 5) * 4; /* 0 (idle), 4, 8, 12, 16 */
        feed(m, ev_cswitch(&s, 1000 + i * 37, cpu, next, running[cpu], 8, (int8_t)(i % 30), 5));
        running[cpu] = next;
    }
    feed(m, ev_ready(&s, 5000, 0, 4));
    assert_int_equal(perch_model_finish(m), 0);
    for (int i = 0; i < r.nslices; i++) {
        const perch_slice_rec *x = &r.slices[i];
        assert_true(x->end_ts >= x->start_ts);
        if (x->tid == 0)
            idle[x->cpu] += x->end_ts - x->start_ts;
        else
            busy[x->cpu] += x->end_ts - x->start_ts;
    }
    uint64_t all = 0;
    for (uint16_t c = 0; c < 3; c++) {
        uint64_t b, d;
        assert_int_equal(perch_model_cpu_totals(m, c, &b, &d), 0);
        assert_int_equal(b, busy[c]);
        assert_int_equal(d, idle[c]);
        all += b + d;
        /* every CPU is covered from the trace start (1000) to its end (5000) */
        assert_int_equal(b + d, 5000 - 1000);
    }
    assert_int_equal(STAT(&r, "cpu.busy_ticks") + STAT(&r, "cpu.idle_ticks"), all);
    assert_int_equal(STAT(&r, "slices.total"), (uint64_t)r.nslices);
    uint64_t b, d;
    assert_int_equal(perch_model_cpu_totals(m, 3, &b, &d), PERCH_ERANGE);
    perch_model_destroy(m);
}

static void test_pmc_deltas_per_slice(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    static const char *const names[] = {"TotalCycles", "InstructionRetired"};
    feed(m, ev_pmc_config(&s, 50, names, 2));
    assert_int_equal(r.counters_calls, 1);
    assert_int_equal(r.ncounters, 2);
    assert_string_equal(r.counter_names[0], "TotalCycles");
    assert_string_equal(r.counter_names[1], "InstructionRetired");
    perch_event *ev = ev_cswitch(&s, 100, 0, 10, 0, 8, 0, 2);
    ev->pmc_count = 2;
    ev->pmc[0] = 1000;
    ev->pmc[1] = 500;
    feed(m, ev);
    ev = ev_cswitch(&s, 200, 0, 0, 10, 0, 5, 5);
    ev->pmc_count = 2;
    ev->pmc[0] = 5000; /* cycles */
    ev->pmc[1] = 2500; /* instructions */
    feed(m, ev);
    assert_int_equal(perch_model_finish(m), 0);
    const perch_slice_rec *w = slice_of(&r, 10, 100);
    assert_non_null(w);
    assert_int_equal(w->pmc_count, 2);
    assert_int_equal(w->pmc_delta[0], 4000);
    assert_int_equal(w->pmc_delta[1], 2000);
    const perch_slice_rec *first = NULL;
    for (int i = 0; i < r.nslices; i++)
        if (r.slices[i].flags & PERCH_SLICE_OPEN_START)
            first = &r.slices[i];
    assert_non_null(first);
    assert_int_equal(first->pmc_count, 0); /* no counter values at its (unseen) start */
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matched_slice_with_ready_and_open_ends),
        cmocka_unit_test(test_stale_switch_out_is_counted_and_closed),
        cmocka_unit_test(test_unknown_pid_and_idle_apart),
        cmocka_unit_test(test_totals_equal_sum_of_slices),
        cmocka_unit_test(test_pmc_deltas_per_slice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
