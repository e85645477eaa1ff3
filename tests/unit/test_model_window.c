/*
 * The model's stack table window (STACK_WINDOW_FRAMES, src/core/model/intern.c): past the
 * window the table starts over, ids stay dense and in first-seen order, a stack interned again
 * after the reset gets a new id (and a new stack record before its use), and the frame pool
 * never grows past the window's frames and their stacks' header words (STACK_POOL_WORDS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model_internal.h"
#include "perch/model.h"

#define FRAMES 64u

struct seen {
    uint32_t count, last_id;
    uint64_t last_first_frame;
};

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    struct seen *s = ctx;
    assert_int_equal(rec->id, s->last_id + 1); /* dense, first-seen order */
    assert_int_equal(rec->frame_count, FRAMES);
    s->last_id = rec->id;
    s->last_first_frame = rec->frames[0];
    s->count++;
    return 0;
}

static void stack_of(uint64_t n, uint64_t *f)
{
    for (uint32_t i = 0; i < FRAMES; i++)
        f[i] = 0x7ff600000000ull + n * 0x1000 + i;
}

static void test_window_resets_keep_ids_dense(void **state)
{
    struct seen s = {0, 0, 0};
    perch_sink sink;
    perch_trace_info info;
    perch_model *m = NULL;
    uint64_t f[FRAMES];
    (void)state;
    memset(&sink, 0, sizeof sink);
    memset(&info, 0, sizeof info);
    sink.ctx = &s;
    sink.stack = on_stack;
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    assert_int_equal(perch_model_create(&sink, &info, NULL, &m), 0);
    uint32_t per_window = STACK_WINDOW_FRAMES / FRAMES, n = per_window + 10;
    for (uint32_t i = 0; i < n; i++) {
        stack_of(i, f);
        assert_int_equal(perch__stack_intern(m, f, FRAMES, 0), i + 1);
        uint32_t again = i >= per_window ? per_window + (i - per_window) / 2 : i / 2;
        stack_of(again, f); /* a stack of this window again: same id */
        assert_int_equal(perch__stack_intern(m, f, FRAMES, 0), again + 1);
    }
    assert_int_equal(s.count, n);
    /* stack 0 belonged to the first window: interned again it is a new stack record */
    stack_of(0, f);
    assert_int_equal(perch__stack_intern(m, f, FRAMES, 0), n + 1);
    assert_int_equal(s.count, n + 1);
    assert_int_equal(s.last_first_frame, f[0]);
    assert_int_equal(perch__stack_intern(m, f, FRAMES, 0), n + 1);
    /* the last stack of the second window is still known */
    stack_of(n - 1, f);
    assert_int_equal(perch__stack_intern(m, f, FRAMES, 0), n);
    assert_int_equal(s.count, n + 1);
    assert_true(m->frame_cap <= STACK_POOL_WORDS);
    assert_true(m->frame_cap >= STACK_WINDOW_FRAMES); /* the window's frames did fit */
    assert_int_equal(m->counters[MC_STACK_WINDOWS], 1); /* reported as stack.window_restarts */
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_resets_keep_ids_dense),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
