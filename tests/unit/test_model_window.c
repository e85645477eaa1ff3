/*
 * The model's stack table window (STACK_WINDOW_FRAMES, src/core/model/intern.c): past the
 * window the table starts over, ids stay dense and in first-seen order, a stack interned again
 * after the reset gets a new id (and a new stack record before its use), and the frame pool
 * never grows past the window's frames and their stacks' header words (STACK_POOL_WORDS). And
 * the table's extremes: a window of a million one-frame stacks (the most pool offsets and
 * indexes a window holds, and the table growing through every size) and the longest stack,
 * each found again by its frames and kernel length alone.
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

struct counted {
    uint32_t count, last_id, last_frames, last_kernel;
};

static int count_stack(void *ctx, const perch_stack_rec *rec)
{
    struct counted *c = ctx;
    assert_int_equal(rec->id, c->last_id + 1);
    c->last_id = rec->id;
    c->last_frames = rec->frame_count;
    c->last_kernel = rec->kernel_frames;
    c->count++;
    return 0;
}

static perch_model *counting_model(struct counted *c)
{
    perch_sink sink;
    perch_trace_info info;
    perch_model *m = NULL;
    memset(&sink, 0, sizeof sink);
    memset(&info, 0, sizeof info);
    sink.ctx = c;
    sink.stack = count_stack;
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    assert_int_equal(perch_model_create(&sink, &info, NULL, &m), 0);
    return m;
}

/* Stack i of a window of one-frame stacks: frame i / 2, kernel length i % 2 (so two stacks
 * share each frame and differ only in it). */
static uint32_t one_frame_stack(uint32_t i, uint64_t *f)
{
    *f = 0xfffff80000000000ull + (uint64_t)(i / 2) * 16;
    return i % 2;
}

static void test_a_window_of_one_frame_stacks(void **state)
{
    struct counted c = {0, 0, 0, 0};
    perch_model *m = counting_model(&c);
    uint64_t f;
    (void)state;
    for (uint32_t i = 0; i < STACK_WINDOW_FRAMES; i++) {
        uint32_t k = one_frame_stack(i, &f);
        assert_int_equal(perch__stack_intern(m, &f, 1, k), i + 1);
    }
    assert_int_equal(c.count, STACK_WINDOW_FRAMES);
    for (uint32_t i = STACK_WINDOW_FRAMES; i-- > 0;) { /* every one found, none sent again */
        uint32_t k = one_frame_stack(i, &f);
        if (perch__stack_intern(m, &f, 1, k) != i + 1)
            fail_msg("stack %u of the window was not found again", i);
    }
    assert_int_equal(c.count, STACK_WINDOW_FRAMES);
    assert_int_equal(m->counters[MC_STACK_WINDOWS], 0);
    /* the window is full of frames: one more starts the next */
    f = 0x7ff600000000ull;
    assert_int_equal(perch__stack_intern(m, &f, 1, 0), STACK_WINDOW_FRAMES + 1);
    assert_int_equal(m->counters[MC_STACK_WINDOWS], 1);
    one_frame_stack(0, &f);
    assert_int_equal(perch__stack_intern(m, &f, 1, 0), STACK_WINDOW_FRAMES + 2);
    perch_model_destroy(m);
}

static void test_the_longest_stack(void **state)
{
    struct counted c = {0, 0, 0, 0};
    perch_model *m = counting_model(&c);
    uint64_t *f = malloc(sizeof *f * MAX_ASSEMBLED_FRAMES);
    (void)state;
    assert_non_null(f);
    for (uint32_t i = 0; i < MAX_ASSEMBLED_FRAMES; i++)
        f[i] = 0xfffff80000000000ull + i;
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES, MAX_ASSEMBLED_FRAMES), 1);
    assert_int_equal(c.last_frames, MAX_ASSEMBLED_FRAMES);
    assert_int_equal(c.last_kernel, MAX_ASSEMBLED_FRAMES);
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES, 0), 2);
    assert_int_equal(c.last_kernel, 0);
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES - 1, 7), 3);
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES, MAX_ASSEMBLED_FRAMES), 1);
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES, 0), 2);
    assert_int_equal(perch__stack_intern(m, f, MAX_ASSEMBLED_FRAMES - 1, 7), 3);
    assert_int_equal(c.count, 3);
    free(f);
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_resets_keep_ids_dense),
        cmocka_unit_test(test_a_window_of_one_frame_stacks),
        cmocka_unit_test(test_the_longest_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
