/*
 * The exporters' time order (sort.c): perch__time_order's keys, read as an order, against a
 * stable qsort by (time, index) for sorted, reversed, random, nearly sorted (a few samples
 * late) and half-shuffled times, with ties, around the short-sort size (insertion sort below
 * it, radix sort from it) and large; and perch__permute moving records into that order.
 * perch__time_order_late (the late records sorted and merged with the run in order) against
 * the same qsort on the same shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"

struct rec {
    uint64_t t;
    uint32_t index;
};

static int cmp_rec(const void *x, const void *y)
{
    const struct rec *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

enum shape { SORTED, REVERSED, RANDOM, LATE, HALF, TIES, SHAPES };

static void fill(struct rec *r, size_t n, enum shape s, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        r[i].index = (uint32_t)i;
        r[i].t = s == REVERSED ? 1000000 - i * 3 : s == RANDOM ? rnd(seed) % 100000 : 5000 + i * 7;
        if (s == TIES)
            r[i].t = 100 + rnd(seed) % 4;
    }
    if (s == LATE) /* every 50th sample a little late */
        for (size_t i = 10; i < n; i += 50)
            r[i].t -= 7 * (1 + rnd(seed) % 5);
    if (s == HALF) /* the second half shuffled */
        for (size_t i = n / 2; i + 1 < n; i++) {
            size_t j = i + rnd(seed) % (n - i);
            uint64_t t = r[i].t;
            r[i].t = r[j].t;
            r[j].t = t;
        }
}

static void check(size_t n, enum shape s)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull + n * 31 + s;
    struct rec *r = malloc(n * sizeof *r), *want = malloc(n * sizeof *r);
    uint64_t *keys = malloc(n * sizeof *keys), *tmp = malloc(n * sizeof *tmp);
    unsigned bits = 0;
    assert_non_null(r);
    assert_non_null(want);
    assert_non_null(keys);
    assert_non_null(tmp);
    fill(r, n, s, &seed);
    memcpy(want, r, n * sizeof *r);
    qsort(want, n, sizeof *want, cmp_rec);
    assert_true(perch__time_order(keys, tmp, r, sizeof *r, offsetof(struct rec, t), n, &bits));
    for (size_t i = 0; i < n; i++) {
        uint64_t idx = keys[i] & (((uint64_t)1 << bits) - 1);
        assert_int_equal(r[idx].index, want[i].index);
        keys[i] = idx;
    }
    perch__permute(r, sizeof *r, keys, n);
    assert_memory_equal(r, want, n * sizeof *r);
    fill(r, n, s, &seed); /* the same times again (the seed went on: other random ones) */
    memcpy(want, r, n * sizeof *r);
    qsort(want, n, sizeof *want, cmp_rec);
    assert_true(perch__time_order_late(keys, tmp, r, sizeof *r, offsetof(struct rec, t), n));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(r[tmp[i]].index, want[i].index);
    perch__permute(r, sizeof *r, tmp, n);
    assert_memory_equal(r, want, n * sizeof *r);
    free(r);
    free(want);
    free(keys);
    free(tmp);
}

static void test_time_order(void **state)
{
    static const size_t sizes[] = {1, 2, 47, 48, 49, 300, 5000, 100000};
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int s = 0; s < SHAPES; s++)
            check(sizes[k], (enum shape)s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
