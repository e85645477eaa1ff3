/*
 * Gecko's time text (gecko_markers.c): perch__gecko_time (a run of times whose integer part is
 * kept and counted up) and perch__gecko_ms against perch__run_time / perch__fmt_time, the
 * text they replace, for sequences of times with steps of 0, one tick, one millisecond (the
 * last digit counted up, and rolling over 9, 99, 999 ...), random jumps, times crossing zero
 * (negative ones take the general path), and other clocks than 10 MHz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/gecko_internal.h"

struct text {
    char *p;
    size_t len, cap;
};

static int text_sink(void *ctx, const char *data, size_t n)
{
    struct text *t = ctx;
    assert_true(t->len + n <= t->cap);
    memcpy(t->p + t->len, data, n);
    t->len += n;
    return 0;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* n times from start, each step one of the shapes above. */
static void fill(int64_t *t, size_t n, int64_t start, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd(seed) % 6;
        int64_t step = r == 0   ? 0
                       : r == 1 ? 1
                       : r == 2 ? 10000 /* one millisecond at 10 MHz */
                       : r == 3 ? 10000 - (int64_t)(rnd(seed) % 3)
                       : r == 4 ? (int64_t)(rnd(seed) % 5000000)
                                : -(int64_t)(rnd(seed) % 20000);
        t[i] = start;
        start += step;
    }
}

/* The array text of times t through perch__gecko_time and through perch__run_time. */
static void check(const int64_t *t, size_t n, uint64_t freq)
{
    size_t cap = n * 40 + 16;
    struct text a = {malloc(cap), 0, cap}, b = {malloc(cap), 0, cap};
    perch_json wa, wb;
    perch__ms_text c = {0};
    assert_non_null(a.p);
    assert_non_null(b.p);
    perch_json_init(&wa, text_sink, &a);
    perch_json_init(&wb, text_sink, &b);
    perch__run ra = {&wa, 0, {0}}, rb = {&wb, 0, {0}};
    perch_json_begin_array(&wa);
    perch_json_begin_array(&wb);
    for (size_t i = 0; i < n; i++) {
        char x[PERCH_TIME_TEXT_MAX], y[PERCH_TIME_TEXT_MAX];
        size_t lx = perch__gecko_ms(x, t[i], freq), ly = perch__fmt_time(y, t[i], freq, true);
        assert_int_equal(lx, ly);
        assert_memory_equal(x, y, lx);
        perch__gecko_time(&ra, &c, t[i], freq);
        perch__run_time(&rb, t[i], freq, true);
    }
    perch__run_flush(&ra);
    perch__run_flush(&rb);
    perch_json_end_array(&wa);
    perch_json_end_array(&wb);
    assert_int_equal(perch_json_flush(&wa), 0);
    assert_int_equal(perch_json_flush(&wb), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.p, b.p, a.len);
    free(a.p);
    free(b.p);
}

static void test_gecko_time(void **state)
{
    static const int64_t starts[] = {-50000, 0, 9 * 10000, 99 * 10000 - 3, 999 * 10000,
                                     123456789, 999999 * (int64_t)10000 + 5};
    static const uint64_t freqs[] = {10000000u, 3000000u, 1000000000u};
    enum { N = 20000 };
    int64_t *t = malloc(N * sizeof *t);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    (void)state;
    assert_non_null(t);
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++)
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            fill(t, N, starts[s], &seed);
            check(t, N, freqs[f]);
        }
    t[0] = INT64_MAX; /* past where ticks * 100 wraps: the general path */
    t[1] = (int64_t)(UINT64_MAX / 100u);
    t[2] = (int64_t)(UINT64_MAX / 100u) + 1;
    check(t, 3, 10000000u);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gecko_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
