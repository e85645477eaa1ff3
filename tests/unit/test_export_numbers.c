/*
 * The exporters' number formatting (export_util.c): perch__put_uint against printf's %llu at
 * every digit-count boundary (10^k - 1, 10^k, 10^k + 1), every power of two and its
 * neighbours, and pseudo-random values of every bit length; perch__put_digits' zero padding;
 * and the time text (perch__fmt_time, perch__fmt_time_since: ticks as us or ms) against an
 * oracle in 128-bit arithmetic, for every tick count and every pair of raw times, including
 * those whose nanoseconds pass 64 bits and pairs 2^63 ticks apart or more. And the varint
 * readers against a byte loop: perch__vnext (unchecked where ten bytes are left) for every
 * length from 1 to 10 bytes at every distance from the buffer's end, and random bytes read
 * through to the end, value and position after each; perch__varint8 (one 8-byte load) for
 * every length, declining those past 8 bytes. And a string's JSON text
 * (perch__json_string_text, which writes a string with nothing to escape itself) against the
 * JSON writer's, for every byte value at every place, and cut short when it does not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"
#include "perch/json.h"

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

typedef unsigned __int128 u128;

/* v in decimal (the 128-bit oracle's own printing: two halves of at most 19 digits). */
static void put_u128(char *out, u128 v)
{
    const uint64_t e19 = 10000000000000000000ull;
    if (v >= e19)
        sprintf(out, "%llu%019llu", (unsigned long long)(v / e19), (unsigned long long)(v % e19));
    else
        sprintf(out, "%llu", (unsigned long long)v);
}

/* The text of m ticks (neg: negative) of a freq Hz clock: whole seconds in nanoseconds plus
 * the rest's nanoseconds truncated, in us with 3 decimals or ms with 6, all in 128 bits. */
static void oracle(char *out, bool neg, uint64_t m, uint64_t freq, bool ms)
{
    u128 ns = (u128)(m / freq) * 1000000000u + (u128)(m % freq) * 1000000000u / freq;
    unsigned unit = ms ? 1000000u : 1000u;
    char whole[48];
    put_u128(whole, ns / unit);
    sprintf(out, "%s%s.%0*u", neg ? "-" : "", whole, ms ? 6 : 3, (unsigned)(ns % unit));
}

static void check_since(uint64_t t, uint64_t from, uint64_t freq, bool ms)
{
    char want[64], got[PERCH_TIME_TEXT_MAX + 1];
    oracle(want, t < from, t < from ? from - t : t - from, freq, ms);
    size_t n = perch__fmt_time_since(got, t, from, freq, ms);
    got[n] = '\0';
    assert_string_equal(got, want);
    if ((t >= from ? t - from : from - t) <= (uint64_t)INT64_MAX) {
        int64_t d = t >= from ? (int64_t)(t - from) : -(int64_t)(from - t);
        n = perch__fmt_time(got, d, freq, ms); /* the signed form of the same difference */
        got[n] = '\0';
        assert_string_equal(got, want);
    }
}

/* Clocks below 18 GHz, where the rest's nanoseconds are computed in integers. */
static const uint64_t freqs[] = {10000000u, 1u, 7u, 3000000u, 1000000000u, 3700000000ull};

static void test_time_text_extremes(void **state)
{
    static const uint64_t m[] = {0,
                                 1,
                                 9999999,
                                 (uint64_t)INT64_MAX,
                                 (uint64_t)INT64_MAX + 1,
                                 (uint64_t)INT64_MAX + 2,
                                 UINT64_MAX / 100u,
                                 UINT64_MAX / 100u + 1,
                                 UINT64_MAX - 1,
                                 UINT64_MAX};
    (void)state;
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++)
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
            for (int ms = 0; ms < 2; ms++) {
                check_since(m[i], 0, freqs[f], ms);          /* m ticks after */
                check_since(0, m[i], freqs[f], ms);          /* m ticks before */
                check_since(UINT64_MAX, m[i], freqs[f], ms); /* from the far end */
            }
    /* the review's case: 2^63 + 1 ticks after the start is not 2^63 - 1 ticks before it */
    char got[PERCH_TIME_TEXT_MAX + 1];
    size_t n = perch__fmt_time_since(got, ((uint64_t)1 << 63) + 1, 0, 10000000u, false);
    got[n] = '\0';
    assert_string_equal(got, "922337203685477580.900");
    /* a clock rate of 0 reads as 10 MHz (perch__clock_hz) */
    n = perch__fmt_time_since(got, 0, 25, 0, false);
    got[n] = '\0';
    assert_string_equal(got, "-2.500");
}

static void test_time_text_random(void **state)
{
    (void)state;
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t t = x >> (i % 64), from = (x * 0x9e3779b97f4a7c15ull) >> ((i / 64) % 64);
        check_since(t, from, freqs[i % (sizeof freqs / sizeof freqs[0])], i & 1);
    }
}

/* The reading perch__vnext must agree with, worked out another way: the varint's bytes are
 * those up to the first without its high bit (at most 10, never past len), and its value
 * their 7-bit groups taken from the last byte back, bits past 64 dropped. */
static uint64_t vnext_bytewise(const uint8_t *data, size_t len, size_t *off)
{
    size_t n = 0;
    uint64_t v = 0;
    while (n < 10 && *off + n < len && (n == 0 || data[*off + n - 1] & 0x80))
        n++;
    for (size_t i = n; i-- > 0;)
        v = v << 7 | (data[*off + i] & 0x7f);
    *off += n;
    return v;
}

static void check_vnext_all(const uint8_t *buf, size_t len)
{
    size_t a = 0, b = 0;
    while (a < len) {
        uint64_t want = vnext_bytewise(buf, len, &a), got = perch__vnext(buf, len, &b);
        assert_int_equal(got, want);
        assert_int_equal(b, a);
    }
    assert_int_equal(perch__vnext(buf, len, &b), 0); /* 0 past the end */
    assert_int_equal(b, len);
}

static void test_vnext_lengths(void **state)
{
    (void)state;
    uint8_t buf[32];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (unsigned bytes = 1; bytes <= 10; bytes++) {
        for (size_t tail = 0; tail <= 12; tail++) { /* bytes readable after the varint */
            for (int round = 0; round < 64; round++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                for (unsigned i = 0; i < bytes; i++) /* continuation on all but the last */
                    buf[i] = (uint8_t)((x >> (i * 5)) & 0x7f) | (i + 1 < bytes ? 0x80 : 0);
                if (round & 1) /* the top bits of the last byte set too (past 64 bits) */
                    buf[bytes - 1] |= 0x7e;
                for (size_t i = 0; i < tail; i++)
                    buf[bytes + i] = (uint8_t)(x >> (i % 8 * 8)) & 0x7f;
                check_vnext_all(buf, bytes + tail);
                if (bytes > 1) /* cut inside the varint */
                    check_vnext_all(buf, bytes - 1);
            }
        }
    }
    /* eleven continuation bytes: 10 read as one varint, then the rest */
    memset(buf, 0xff, 11);
    buf[11] = 0x05;
    check_vnext_all(buf, 12);
}

static void test_varint8(void **state)
{
    (void)state;
    if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
        skip(); /* perch__varint8 leaves every varint to the byte loop there */
    uint8_t buf[16];
    uint64_t x = 0x853c49e6748fea9bull;
    for (int round = 0; round < 20000; round++) {
        unsigned bytes = 1 + (unsigned)round % 10, n = 99;
        size_t off = 0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (unsigned i = 0; i < sizeof buf; i++) /* a final byte at `bytes`, the rest random */
            buf[i] = (uint8_t)(x >> (i % 8 * 8)) | (i + 1 < bytes ? 0x80 : 0);
        buf[bytes - 1] &= 0x7f;
        uint64_t want = vnext_bytewise(buf, sizeof buf, &off), got = perch__varint8(buf, &n);
        if (bytes <= 8) {
            assert_int_equal(n, bytes);
            assert_int_equal(got, want);
        } else {
            assert_int_equal(n, 0); /* left to the byte loop */
        }
    }
}

static void test_vnext_random(void **state)
{
    (void)state;
    static uint8_t buf[1 << 16];
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int round = 0; round < 64; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* mostly continuation bytes in some rounds, mostly final bytes in others */
            buf[i] = (uint8_t)x | ((x >> 32) % 8 < (uint64_t)(round % 9) ? 0x80 : 0);
        }
        check_vnext_all(buf, sizeof buf - (size_t)round);
    }
}

struct writer_text {
    char text[256];
    size_t len;
};

static int writer_sink(void *ctx, const char *data, size_t n)
{
    struct writer_text *t = ctx;
    assert_true(t->len + n <= sizeof t->text);
    memcpy(t->text + t->len, data, n);
    t->len += n;
    return 0;
}

static void test_json_string_text(void **state)
{
    char s[24], out[256];
    (void)state;
    for (size_t n = 0; n <= sizeof s; n += 3) {
        for (size_t at = 0; at < n; at++) {
            for (unsigned b = 0; b < 256; b++) {
                struct writer_text want = {.len = 0};
                perch_json w;
                memset(s, 'A' + (int)(at % 26), n);
                s[at] = (char)b;
                perch_json_init(&w, writer_sink, &want);
                perch_json_string_n(&w, s, n);
                assert_int_equal(perch_json_flush(&w), 0);
                assert_int_equal(perch__json_string_text(s, n, out, sizeof out), want.len);
                assert_memory_equal(out, want.text, want.len);
                /* one byte short: nothing */
                assert_int_equal(perch__json_string_text(s, n, out, want.len - 1), 0);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_uint_boundaries), cmocka_unit_test(test_put_uint_random),
        cmocka_unit_test(test_put_digits),          cmocka_unit_test(test_time_text_extremes),
        cmocka_unit_test(test_time_text_random),    cmocka_unit_test(test_vnext_lengths),
        cmocka_unit_test(test_vnext_random),        cmocka_unit_test(test_varint8),
        cmocka_unit_test(test_json_string_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
