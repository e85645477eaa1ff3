/*
 * Tests for the log-line budget (src/core/util/log_budget.c): lines within the budget are
 * written, the first past it becomes a notice, the rest are counted, and the first line of a
 * later window is written with the count of those left out; a clock that goes back starts a
 * new window rather than stalling the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/log_budget.h"

static void test_budget_per_window(void **state)
{
    (void)state;
    perch_log_budget b;
    uint64_t left = 99;
    perch__log_budget_init(&b, 3, 1000);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(perch__log_budget_take(&b, 100 + (uint64_t)i, &left),
                         PERCH_LOG_BUDGET_WRITE);
        assert_int_equal(left, 0);
    }
    assert_int_equal(perch__log_budget_take(&b, 200, &left), PERCH_LOG_BUDGET_NOTICE);
    for (int i = 0; i < 10; i++)
        assert_int_equal(perch__log_budget_take(&b, 300, &left), PERCH_LOG_BUDGET_SKIP);
    assert_int_equal(perch__log_budget_take(&b, 1099, &left), PERCH_LOG_BUDGET_SKIP);
    /* the window began at the first line (100): 1100 is the next one */
    assert_int_equal(perch__log_budget_take(&b, 1100, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(left, 12); /* the notice's line, ten, and the one at 1099 */
    assert_int_equal(perch__log_budget_take(&b, 1101, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(left, 0);
    assert_int_equal(perch__log_budget_take(&b, 1102, &left), PERCH_LOG_BUDGET_WRITE);
    /* the budget runs out again in this window: a notice again, once */
    assert_int_equal(perch__log_budget_take(&b, 1103, &left), PERCH_LOG_BUDGET_NOTICE);
    assert_int_equal(perch__log_budget_take(&b, 1104, &left), PERCH_LOG_BUDGET_SKIP);
}

static void test_budget_clock_back(void **state)
{
    (void)state;
    perch_log_budget b;
    uint64_t left;
    perch__log_budget_init(&b, 1, 1000);
    assert_int_equal(perch__log_budget_take(&b, 5000, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(perch__log_budget_take(&b, 5001, &left), PERCH_LOG_BUDGET_NOTICE);
    assert_int_equal(perch__log_budget_take(&b, 10, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(left, 1);
}

static void test_budget_zero_arguments(void **state)
{
    (void)state;
    perch_log_budget b;
    uint64_t left;
    perch__log_budget_init(&b, 0, 0); /* taken as 1 line per 1 ms */
    assert_int_equal(perch__log_budget_take(&b, 0, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(perch__log_budget_take(&b, 0, &left), PERCH_LOG_BUDGET_NOTICE);
    assert_int_equal(perch__log_budget_take(&b, 1, &left), PERCH_LOG_BUDGET_WRITE);
    assert_int_equal(left, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_per_window),
        cmocka_unit_test(test_budget_clock_back),
        cmocka_unit_test(test_budget_zero_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
