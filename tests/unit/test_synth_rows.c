/*
 * Tests of the generator's per-process sample rows when they run out (a trace with more
 * processes than rows): only the row of an ended process that can no longer reach the top 10
 * is reused, so the top list stays exact. Drives the internal functions directly, because a
 * trace that fills every row would take tens of gigabytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "synth/synth_internal.h"

/* A full table: every row alive with no samples, except those the test sets. */
static struct synth_sim *full_table(void)
{
    struct synth_sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->nrows = SYNTH_MAX_ROWS;
    for (uint32_t i = 0; i < SYNTH_MAX_ROWS; i++)
        s->rows[i] = (struct synth_row){1000 + 4 * i, TPL_COMPILER, 0, 0};
    return s;
}

static void test_rows_grow_until_full(void **state)
{
    struct synth_sim *s = calloc(1, sizeof *s);
    (void)state;
    assert_non_null(s);
    assert_int_equal(perch__synth_new_row(s, 8, TPL_GAME), 0);
    assert_int_equal(perch__synth_new_row(s, 12, TPL_GAME), 1);
    assert_int_equal(s->nrows, 2);
    assert_int_equal(s->rows[1].pid, 12);
    free(s);
}

static void test_ended_row_without_samples_is_reused(void **state)
{
    struct synth_sim *s = full_table();
    (void)state;
    s->rows[77].ended = 1; /* no samples: it can never be listed */
    assert_int_equal(perch__synth_new_row(s, 4242, TPL_COMPILER), 77);
    assert_int_equal(s->rows[77].pid, 4242);
    assert_int_equal(s->rows[77].ended, 0);
    free(s);
}

static void test_ranked_rows_are_kept(void **state)
{
    struct synth_sim *s = full_table();
    perch_synth_stats before, after;
    (void)state;
    /* ten ended rows hold the top ten; an eleventh ended row ranks after them */
    for (uint32_t i = 0; i < 11; i++) {
        s->rows[100 + i].samples = 500 - i;
        s->rows[100 + i].ended = 1;
    }
    perch__synth_top_lists(s, &before);
    assert_int_equal(perch__synth_new_row(s, 9999, TPL_COMPILER), 110);
    perch__synth_top_lists(s, &after);
    assert_memory_equal(before.top_processes, after.top_processes, sizeof before.top_processes);
    assert_int_equal(after.top_processes[9].samples, 491);
    /* now every ended row with samples is in the top ten: nothing may be reused */
    assert_int_equal(perch__synth_new_row(s, 10003, TPL_COMPILER), UINT32_MAX);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_grow_until_full),
        cmocka_unit_test(test_ended_row_without_samples_is_reused),
        cmocka_unit_test(test_ranked_rows_are_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
