/*
 * The exporters' number formatting (export_util.c): perch__put_uint against printf's %llu at
 * every digit-count boundary (10^k - 1, 10^k, 10^k + 1), every power of two and its
 * neighbours, and pseudo-random values of every bit length; perch__put_digits' zero padding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"

static void check_uint(uint64_t v)
{
    char want[32], got[32];
    int n = snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    memset(got, 'x', sizeof got);
    size_t len = perch__put_uint(got, v);
    assert_int_equal(len, (size_t)n);
    assert_memory_equal(got, want, (size_t)n);
    assert_int_equal(got[len], 'x'); /* nothing written past the digits */
}

static void test_put_uint_boundaries(void **state)
{
    (void)state;
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10) {
        check_uint(p - 1);
        check_uint(p);
        check_uint(p + 1);
    }
    check_uint(UINT64_MAX);
    check_uint(UINT64_MAX - 1);
    for (int b = 0; b < 64; b++) {
        uint64_t v = (uint64_t)1 << b;
        check_uint(v - 1);
        check_uint(v);
        check_uint(v + 1);
    }
}

static void test_put_uint_random(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check_uint(x >> (i % 64)); /* every bit length */
    }
}

static void test_put_digits(void **state)
{
    (void)state;
    char got[8];
    perch__put_digits(got, 42, 6);
    assert_memory_equal(got, "000042", 6);
    perch__put_digits(got, 7, 3);
    assert_memory_equal(got, "007", 3);
    perch__put_digits(got, 123456, 3); /* the low digits only */
    assert_memory_equal(got, "456", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_uint_boundaries),
        cmocka_unit_test(test_put_uint_random),
        cmocka_unit_test(test_put_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
