/*
 * Tests for the error space: every code has a distinct name and message, and unknown values
 * are answered rather than crashing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"

static const int all_codes[] = {
#define CODE(name, value, msg) value,
    PERCH_ERRNO_MAP(CODE)
#undef CODE
};

static void test_codes_are_negative_and_distinct(void **state)
{
    size_t n = sizeof all_codes / sizeof all_codes[0];
    for (size_t i = 0; i < n; i++) {
        assert_true(all_codes[i] < 0);
        for (size_t j = i + 1; j < n; j++)
            assert_int_not_equal(all_codes[i], all_codes[j]);
    }
}

static void test_names_and_messages(void **state)
{
    assert_string_equal(perch_err_name(PERCH_EINVAL), "EINVAL");
    assert_string_equal(perch_strerror(PERCH_ENOMEM), "out of memory");
    assert_string_equal(perch_err_name(PERCH_ETRUNC), "ETRUNC");
    assert_string_equal(perch_strerror(0), "success");
    assert_string_equal(perch_err_name(-12345), "UNKNOWN");
    assert_string_equal(perch_strerror(42), "unknown error");
    for (size_t i = 0; i < sizeof all_codes / sizeof all_codes[0]; i++) {
        assert_string_not_equal(perch_err_name(all_codes[i]), "UNKNOWN");
        assert_string_not_equal(perch_strerror(all_codes[i]), "unknown error");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_are_negative_and_distinct),
        cmocka_unit_test(test_names_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
