/*
 * The exports' trimmed time texts. Gecko's (gecko_markers.c): perch__gecko_time (a run of
 * times whose integer part is kept and counted up), perch__gecko_ms and perch__gecko_ms_since
 * against perch__fmt_time / perch__fmt_time_since with the fraction's trailing zeros cut (the
 * same number), for sequences of times with steps of 0, one tick, one millisecond (the last
 * digit counted up, and rolling over 9, 99, 999 ...), random jumps, times crossing zero
 * (negative ones take the general path), other clocks than 10 MHz, and differences of 2^63
 * ticks and more. Chrome's microseconds (perch__fmt_us_since, collect.c) the same way: texts
 * worked out by hand, and its 10 MHz path against the general one cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"
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

/* Whether x (n bytes) is y (m bytes, perch__fmt_time's text with its decimals) cut after
 * its last nonzero decimal, or before the point when every decimal is 0: what follows x in
 * y is zeros, or the point and zeros, and x ends in neither a point nor a decimal 0. */
static void assert_trimmed(const char *x, size_t n, const char *y, size_t m)
{
    const char *dot = memchr(y, '.', m);
    size_t point;
    assert_non_null(dot);
    point = (size_t)(dot - y);
    assert_true(n >= point && n <= m && n > 0);
    assert_memory_equal(x, y, n);
    for (size_t i = n; i < m; i++)
        assert_true(y[i] == '0' || i == point);
    assert_true(x[n - 1] != '.');
    assert_true(n == point || x[n - 1] != '0');
}

/* The array text of times t through perch__gecko_time; each value and perch__gecko_ms of it
 * against perch__fmt_time. */
static void check(const int64_t *t, size_t n, uint64_t freq)
{
    size_t cap = n * 40 + 16, at = 1;
    struct text a = {malloc(cap), 0, cap};
    perch_json wa;
    perch__ms_text c = {0};
    assert_non_null(a.p);
    perch_json_init(&wa, text_sink, &a);
    perch__run ra = {&wa, 0, {0}};
    perch_json_begin_array(&wa);
    for (size_t i = 0; i < n; i++) {
        char x[PERCH_TIME_TEXT_MAX], y[PERCH_TIME_TEXT_MAX];
        size_t lx = perch__gecko_ms(x, t[i], freq), ly = perch__fmt_time(y, t[i], freq, true);
        assert_trimmed(x, lx, y, ly);
        perch__gecko_time(&ra, &c, t[i], freq);
    }
    perch__run_flush(&ra);
    perch_json_end_array(&wa);
    assert_int_equal(perch_json_flush(&wa), 0);
    assert_true(a.len >= 2 && a.p[0] == '[' && a.p[a.len - 1] == ']');
    for (size_t i = 0; i < n; i++) { /* the run: the values, comma-separated, in order */
        char y[PERCH_TIME_TEXT_MAX];
        const char *end = memchr(a.p + at, i + 1 < n ? ',' : ']', a.len - at);
        assert_non_null(end);
        assert_trimmed(a.p + at, (size_t)(end - (a.p + at)), y,
                       perch__fmt_time(y, t[i], freq, true));
        at = (size_t)(end - a.p) + 1;
    }
    assert_int_equal(at, a.len);
    free(a.p);
}

static void test_gecko_time(void **state)
{
    static const int64_t starts[] = {
        -50000, 0, 9 * 10000, 99 * 10000 - 3, 999 * 10000, 123456789, 999999 * (int64_t)10000 + 5};
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

/* Texts worked out by hand: whole milliseconds have no point, the 10 MHz clock's tick is
 * 0.0001 ms, and other clocks keep up to six decimals. */
static void test_known_texts(void **state)
{
    static const struct {
        int64_t ticks;
        uint64_t freq;
        const char *text;
    } cases[] = {
        {0, 10000000u, "0"},
        {1, 10000000u, "0.0001"},
        {10000, 10000000u, "1"},
        {15000, 10000000u, "1.5"},
        {10010, 10000000u, "1.001"},
        {1234560, 10000000u, "123.456"},
        {9999999, 10000000u, "999.9999"},
        {-1, 10000000u, "-0.0001"},
        {-20000, 10000000u, "-2"},
        {1, 1000000000u, "0.000001"},
        {1500, 1000000000u, "0.0015"},
        {3000000, 1000000000u, "3"},
        {1, 3000000u, "0.000333"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char x[PERCH_TIME_TEXT_MAX];
        size_t n = perch__gecko_ms(x, cases[i].ticks, cases[i].freq);
        assert_int_equal(n, strlen(cases[i].text));
        assert_memory_equal(x, cases[i].text, n);
    }
}

/* perch__gecko_ms_since and perch__gecko_time_since for pairs of raw times near each other
 * and 2^63 ticks and more apart either way (the general path, perch__fmt_time_since). */
static void test_time_since(void **state)
{
    static const uint64_t from[] = {
        0, 1, 12345678, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX - 5, UINT64_MAX};
    static const uint64_t freqs[] = {10000000u, 1000000000u};
    uint64_t seed = 0x2545f4914f6cdd1dull;
    (void)state;
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++)
        for (size_t k = 0; k < sizeof from / sizeof from[0]; k++)
            for (size_t j = 0; j < 2000; j++) {
                uint64_t t = j < 7 ? from[j] : j % 2 ? from[k] + rnd(&seed) % 100000 : rnd(&seed);
                char x[PERCH_TIME_TEXT_MAX], y[PERCH_TIME_TEXT_MAX], z[PERCH_TIME_TEXT_MAX + 2];
                size_t lx = perch__gecko_ms_since(x, t, from[k], freqs[f]);
                size_t ly = perch__fmt_time_since(y, t, from[k], freqs[f], true);
                struct text a = {z, 0, sizeof z};
                perch_json w;
                perch__ms_text c = {0};
                perch__run r = {&w, 0, {0}};
                assert_trimmed(x, lx, y, ly);
                perch_json_init(&w, text_sink, &a);
                perch__gecko_time_since(&r, &c, t, from[k], freqs[f]);
                perch__run_flush(&r);
                assert_int_equal(perch_json_flush(&w), 0);
                assert_int_equal(a.len, lx);
                assert_memory_equal(z, x, lx);
            }
}

/* Chrome's microseconds, worked out by hand: whole microseconds have no point, the 10 MHz
 * clock's tick is 0.1 us, other clocks keep up to three decimals, and a time before its
 * origin is negative (the general path). */
static void test_us_known_texts(void **state)
{
    static const struct {
        uint64_t t, from, freq;
        const char *text;
    } cases[] = {
        {0, 0, 10000000u, "0"},
        {1, 0, 10000000u, "0.1"},
        {10, 0, 10000000u, "1"},
        {15, 0, 10000000u, "1.5"},
        {1234567, 7, 10000000u, "123456"},
        {1000, 1001, 10000000u, "-0.1"},
        {5, 25, 10000000u, "-2"},
        {UINT64_MAX, 0, 10000000u, "1844674407370955161.5"},
        {UINT64_MAX, 0, 0, "1844674407370955161.5"}, /* freq 0: the default 10 MHz clock */
        {1, 0, 1000000000u, "0.001"},
        {1500, 0, 1000000000u, "1.5"},
        {3000, 0, 1000000000u, "3"},
        {1, 0, 3000000u, "0.333"},
        {3, 0, 3000000u, "1"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char x[PERCH_TIME_TEXT_MAX];
        size_t n = perch__fmt_us_since(x, cases[i].t, cases[i].from, cases[i].freq);
        assert_int_equal(n, strlen(cases[i].text));
        assert_memory_equal(x, cases[i].text, n);
    }
}

/* perch__fmt_us_since against perch__fmt_time_since's microseconds cut, for times near their
 * origin, far from it, before it, and 2^63 ticks and more apart, at 10 MHz (its own path) and
 * other clocks. */
static void test_us_since(void **state)
{
    static const uint64_t from[] = {
        0, 1, 12345678, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX - 5, UINT64_MAX};
    static const uint64_t freqs[] = {10000000u, 0, 1000000000u, 3579545u, 2400000000u};
    uint64_t seed = 0x853c49e6748fea9bull;
    (void)state;
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++)
        for (size_t k = 0; k < sizeof from / sizeof from[0]; k++)
            for (size_t j = 0; j < 4000; j++) {
                uint64_t t = j < 7        ? from[j]
                             : j % 3 == 0 ? from[k] + rnd(&seed) % 100000
                             : j % 3 == 1 ? from[k] - rnd(&seed) % 100
                                          : rnd(&seed);
                char x[PERCH_TIME_TEXT_MAX], y[PERCH_TIME_TEXT_MAX];
                size_t lx = perch__fmt_us_since(x, t, from[k], freqs[f]);
                size_t ly = perch__fmt_time_since(y, t, from[k], freqs[f], false);
                assert_trimmed(x, lx, y, ly);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gecko_time), cmocka_unit_test(test_known_texts),
        cmocka_unit_test(test_time_since), cmocka_unit_test(test_us_known_texts),
        cmocka_unit_test(test_us_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
