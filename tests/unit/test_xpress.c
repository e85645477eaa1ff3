/*
 * MS-XCA Plain LZ77 decoder tests: hand-made streams (literals, matches, overlapping
 * matches, each long-length encoding, the shared half byte), the error cases (overrun,
 * offset before the start, truncated tokens), and random token sequences built with the test
 * encoder, checked against a byte-at-a-time model of the output; the fast path against the
 * checked byte-by-byte path (perch__xpress_decompress_slow) at every cut and capacity near the
 * end of a stream; the fast loop's copies at every offset class and length up to past the
 * longest short form, in both of its phases (before and after 8 KiB of output), and its
 * explicit-length and error paths, with guard bytes after the capacity. Each test runs with
 * the processor's fast loop (etl/cpu/xpress_*.c) and again with the portable one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etl/xpress.h"
#include "perch/error.h"
#include "xpress_encode.h"

static void test_literals_only(void **state)
{
    /* flags 0: 32 literals announced, only 5 present: the stream ends after them. */
    const uint8_t in[] = {0, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};
    uint8_t out[16];
    size_t n = 99;
    memset(out, 0xff, sizeof out);
    assert_int_equal(perch__xpress_decompress(in, sizeof in, out, sizeof out, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(out, "hello", 5);
    assert_int_equal(out[5], 0xff);
}

static void test_overlapping_match(void **state)
{
    /* [literal 'a'][match offset 1 length 5], remaining flags 1 = end. */
    const uint8_t in[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x02, 0x00};
    uint8_t out[6];
    size_t n = 0;
    assert_int_equal(perch__xpress_decompress(in, sizeof in, out, sizeof out, &n), 0);
    assert_int_equal(n, 6);
    assert_memory_equal(out, "aaaaaa", 6);
}

static void test_pattern_offset_3(void **state)
{
    /* "abc" then offset 3 length 9 -> "abcabcabcabc" (the match overlaps itself). */
    const uint8_t in[] = {0xff, 0xff, 0xff, 0x1f, 'a', 'b', 'c', (2 << 3) | 6, 0x00};
    uint8_t out[12];
    size_t n = 0;
    assert_int_equal(perch__xpress_decompress(in, sizeof in, out, sizeof out, &n), 0);
    assert_int_equal(n, 12);
    assert_memory_equal(out, "abcabcabcabc", 12);
}

/* Encodes 16 distinct literals and one match of length len at offset 16. */
static void check_long_length(size_t len, size_t expect_stream_len)
{
    uint8_t *stream = malloc(64), *out = malloc(16 + len), *want = malloc(16 + len);
    struct xenc e;
    size_t n = 0, sl;
    xenc_init(&e, stream, 64);
    for (int i = 0; i < 16; i++) {
        xenc_literal(&e, (uint8_t)('A' + i));
        want[i] = (uint8_t)('A' + i);
    }
    xenc_match(&e, 16, len);
    for (size_t i = 16; i < 16 + len; i++)
        want[i] = want[i - 16];
    sl = xenc_finish(&e);
    assert_int_equal(sl, expect_stream_len);
    assert_int_equal(perch__xpress_decompress(stream, sl, out, 16 + len, &n), 0);
    assert_int_equal(n, 16 + len);
    assert_memory_equal(out, want, n);
    free(stream);
    free(out);
    free(want);
}

static void test_length_encodings(void **state)
{
    check_long_length(9, 4 + 16 + 2);                     /* code 0..6 in the token */
    check_long_length(10 + 14, 4 + 16 + 2 + 1);           /* half byte */
    check_long_length(25 + 100, 4 + 16 + 2 + 1 + 1);      /* half byte 15, then a byte */
    check_long_length(1003, 4 + 16 + 2 + 1 + 1 + 2);      /* byte 255, then u16 */
    check_long_length(70003, 4 + 16 + 2 + 1 + 1 + 2 + 4); /* u16 0, then u32 */
}

static void test_shared_half_byte(void **state)
{
    /* Two long matches share one half-byte: low nibble for the first, high for the second. */
    uint8_t stream[32], out[64];
    struct xenc e;
    size_t n = 0, sl;
    xenc_init(&e, stream, sizeof stream);
    xenc_literal(&e, 'x');
    xenc_match(&e, 1, 12); /* l - 7 = 2 */
    xenc_match(&e, 1, 20); /* l - 7 = 10 */
    sl = xenc_finish(&e);
    assert_int_equal(sl, 4 + 1 + 2 + 1 + 2);
    assert_int_equal(stream[7], 0xA2);
    assert_int_equal(perch__xpress_decompress(stream, sl, out, 33, &n), 0);
    assert_int_equal(n, 33);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(out[i], 'x');
}

static void test_errors(void **state)
{
    const uint8_t aaa[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x02, 0x00};
    const uint8_t before_start[] = {0xff, 0xff, 0xff, 0x7f, 'a', (1 << 3) | 0, 0x00};
    const uint8_t cut_token[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x02};
    const uint8_t cut_long[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f};
    const uint8_t cut_flags[] = {0x00, 0x00};
    const uint8_t bad_u16[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f, 0xff, 0x05, 0x00};
    uint8_t out[8];
    size_t n = 1234;
    assert_int_equal(perch__xpress_decompress(aaa, sizeof aaa, out, 5, &n), PERCH_EOVERRUN);
    assert_int_equal(perch__xpress_decompress(aaa, sizeof aaa, out, 0, &n), PERCH_EOVERRUN);
    assert_int_equal(perch__xpress_decompress(before_start, sizeof before_start, out, 8, &n),
                     PERCH_EFORMAT);
    assert_int_equal(perch__xpress_decompress(cut_token, sizeof cut_token, out, 8, &n),
                     PERCH_ETRUNC);
    assert_int_equal(perch__xpress_decompress(cut_long, sizeof cut_long, out, 8, &n), PERCH_ETRUNC);
    assert_int_equal(perch__xpress_decompress(cut_flags, sizeof cut_flags, out, 8, &n),
                     PERCH_ETRUNC);
    assert_int_equal(perch__xpress_decompress(bad_u16, sizeof bad_u16, out, 8, &n), PERCH_EFORMAT);
    assert_int_equal(n, 1234); /* untouched on error */
    assert_int_equal(perch__xpress_decompress(aaa, 0, out, 8, &n), 0);
    assert_int_equal(n, 0);
}

static uint64_t rng = 0x243f6a8885a308d3u;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Random tokens: literal runs and matches of every offset class and length class. */
static void test_random_round_trips(void **state)
{
    enum { OUT = 1 << 20 };
    uint8_t *want = malloc(OUT), *got = malloc(OUT), *stream = malloc(OUT * 2);
    for (int round = 0; round < 40; round++) {
        struct xenc e;
        size_t len = 0, n = 0, sl;
        xenc_init(&e, stream, OUT * 2);
        while (len < OUT - 80000) {
            uint32_t r = next_rand();
            if (len < 8 || r % 3 == 0) {
                for (uint32_t k = 0; k <= r % 40; k++) {
                    want[len] = (uint8_t)next_rand();
                    xenc_literal(&e, want[len++]);
                }
            } else {
                size_t maxoff = len < 8192 ? len : 8192;
                size_t off = (r & 1) ? 1 + next_rand() % (maxoff < 16 ? maxoff : 16)
                                     : 1 + next_rand() % maxoff;
                size_t ml = 3 + (next_rand() % 8 == 0 ? next_rand() % 70000 : next_rand() % 40);
                xenc_match(&e, off, ml);
                for (size_t k = 0; k < ml; k++, len++)
                    want[len] = want[len - off];
            }
        }
        sl = xenc_finish(&e);
        assert_true(sl > 0);
        memset(got, 0xee, OUT);
        assert_int_equal(perch__xpress_decompress(stream, sl, got, len, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(got, want, len);
        /* One byte less of output room must be an overrun, never a write past it. */
        assert_int_equal(perch__xpress_decompress(stream, sl, got, len - 1, &n), PERCH_EOVERRUN);
        /* The checked byte-by-byte path gives the same bytes. */
        memset(got, 0xee, OUT);
        assert_int_equal(perch__xpress_decompress_slow(stream, sl, got, len, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(got, want, len);
    }
    free(want);
    free(got);
    free(stream);
}

/* Decodes in[0, len) into cap bytes both ways; the results must be the same. */
static void assert_paths_agree(const uint8_t *in, size_t len, size_t cap, uint8_t *a, uint8_t *b)
{
    size_t na = 1, nb = 2;
    int ra = perch__xpress_decompress(in, len, a, cap, &na);
    int rb = perch__xpress_decompress_slow(in, len, b, cap, &nb);
    assert_int_equal(ra, rb);
    if (ra == 0) {
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
    }
}

/* The fast path against the checked one where they meet: every cut of a stream near its end
 * (truncated tokens, a flag word cut short) and every output capacity near the size (the
 * fast loop hands over to the slow one at each possible point). */
static void test_fast_equals_checked_at_the_ends(void **state)
{
    enum { N = 3000 };
    uint8_t want[N + 64], stream[2 * N], *a = malloc(N + 64), *b = malloc(N + 64);
    struct xenc e;
    size_t len = 0, sl;
    xenc_init(&e, stream, sizeof stream);
    while (len < N) {
        uint32_t r = next_rand();
        if (len < 4 || r % 4 == 0) {
            want[len] = (uint8_t)r;
            xenc_literal(&e, want[len++]);
        } else {
            size_t off = 1 + next_rand() % (len < 40 ? len : 40), ml = 3 + next_rand() % 50;
            xenc_match(&e, off, ml);
            for (size_t k = 0; k < ml; k++, len++)
                want[len] = want[len - off];
        }
    }
    sl = xenc_finish(&e);
    assert_true(sl > 100);
    for (size_t cut = sl > 200 ? sl - 200 : 0; cut <= sl; cut++)
        assert_paths_agree(stream, cut, len, a, b);
    for (size_t cap = len - 100; cap <= len + 40; cap++)
        assert_paths_agree(stream, sl, cap, a, b);
    free(a);
    free(b);
}

/* Builds: lead distinct literals, one match (off, ml), then tail literals; the expected
 * output in want. Returns the stream length. */
static size_t one_match_stream(uint8_t *stream, size_t cap, uint8_t *want, size_t lead,
                               size_t off, size_t ml, size_t tail)
{
    struct xenc e;
    size_t n = 0;
    xenc_init(&e, stream, cap);
    for (size_t i = 0; i < lead; i++, n++) {
        want[n] = (uint8_t)(i * 7 + 1);
        xenc_literal(&e, want[n]);
    }
    xenc_match(&e, off, ml);
    for (size_t k = 0; k < ml; k++, n++)
        want[n] = want[n - off];
    for (size_t i = 0; i < tail; i++, n++) {
        want[n] = (uint8_t)(i * 13 + 5);
        xenc_literal(&e, want[n]);
    }
    return xenc_finish(&e);
}

/* Every offset class of the fast loop's copies (a match of 3-9 bytes: each offset below 16
 * has its own shuffle or pattern word, 16 and more the plain word; longer: a pattern word for
 * 1-7, 8-byte words for 8-15, 16-byte words from 16) at every length from 3 to past the
 * longest one without an explicit field (279), each match far enough from both ends that the
 * fast loop copies it, into a buffer of exactly the output size. */
static void test_fast_copy_every_offset_and_length(void **state)
{
    static const size_t offs[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,  12,   13,   14,
                                  15, 16, 17, 18, 24, 31, 32, 33, 47, 48, 63,  64,   65,   100,
                                  255, 1000, 4096, 8192};
    enum { LATE = 8300, TAIL = 400, MAXML = 300, CAP = 2 * (LATE + TAIL) + 64 };
    uint8_t *stream = malloc(CAP), *want = malloc(LATE + MAXML + TAIL);
    for (size_t i = 0; i < 2 * sizeof offs / sizeof offs[0]; i++) {
        size_t off = offs[i / 2], lead = i % 2 ? LATE : off + 40; /* both phases */
        for (size_t ml = 3; ml <= MAXML; ml++) {
            size_t sl = one_match_stream(stream, CAP, want, lead, off, ml, TAIL);
            size_t len = lead + ml + TAIL, n = 0;
            uint8_t *got = malloc(len);
            assert_int_equal(perch__xpress_decompress(stream, sl, got, len, &n), 0);
            assert_int_equal(n, len);
            assert_memory_equal(got, want, len);
            free(got);
        }
    }
    free(stream);
    free(want);
}

/* An explicit length inside the fast loop: copied by words with room to spare, exactly when
 * the match ends near the end of the output, an overrun when it does not fit; an offset
 * before the start of the output found by the fast loop. Both paths agree on each. */
static void test_fast_explicit_lengths_and_errors(void **state)
{
    enum { LEAD = 64, TAIL = 100, GUARD = 64 };
    static const size_t lens[] = {280, 281, 1003, 70003};
    uint8_t *stream = malloc(4096), *want = malloc(LEAD + 70003 + TAIL);
    uint8_t *a = malloc(LEAD + 70003 + TAIL + 70 + GUARD), *b = malloc(LEAD + 70003 + TAIL + 70);
    size_t sl;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        sl = one_match_stream(stream, 4096, want, LEAD, 40, lens[i], TAIL);
        size_t len = LEAD + lens[i] + TAIL, n = 0;
        for (size_t cap = len - TAIL - 2; cap <= len + 70; cap++) {
            memset(a, 0xee, len + 70 + GUARD);
            assert_paths_agree(stream, sl, cap, a, b);
            for (size_t k = cap; k < cap + GUARD && k < len + 70 + GUARD; k++)
                assert_int_equal(a[k], 0xee); /* nothing written past the capacity */
        }
        assert_int_equal(perch__xpress_decompress(stream, sl, a, len, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(a, want, len);
        assert_int_equal(perch__xpress_decompress(stream, sl, a, LEAD + lens[i] - 1, &n),
                         PERCH_EOVERRUN);
    }
    /* A match one byte further back than the 64 bytes written, with input enough after it
     * that the fast loop finds it (it checks offsets only in the first 8 KiB). */
    struct xenc e;
    size_t n = 7;
    xenc_init(&e, stream, 4096);
    for (int k = 0; k < 600; k++) {
        if (k == LEAD)
            xenc_match(&e, LEAD + 1, 10);
        xenc_literal(&e, (uint8_t)k);
    }
    sl = xenc_finish(&e);
    assert_int_equal(perch__xpress_decompress(stream, sl, a, 2000, &n), PERCH_EFORMAT);
    assert_int_equal(n, 7);
    assert_paths_agree(stream, sl, 2000, a, b);
    free(stream);
    free(want);
    free(a);
    free(b);
}

/* A match with an explicit length may end anywhere up to the end of the output, so the fast
 * loop must check the room again before the next token. Here an explicit length ends just
 * short of the capacity and the next match does not fit: both paths must say overrun and
 * nothing may be written past the capacity, with 0-3 short matches before the explicit one
 * (a loop that runs two tokens per check of the room, tried in docs/etl-format.md, wrote past
 * the capacity here when it did not check again after the first). */
static void test_fast_explicit_then_overrun(void **state)
{
    enum { LEAD = 40, XLEN = 1003, NEXT = 100, TAIL = 120, GUARD = 400 };
    uint8_t *stream = malloc(4096), *a = malloc(8192), *b = malloc(8192);
    for (size_t before = 0; before < 4; before++) {
        struct xenc e;
        size_t n = 0, sl, out = LEAD;
        xenc_init(&e, stream, 4096);
        for (int k = 0; k < LEAD; k++)
            xenc_literal(&e, (uint8_t)(k * 7 + 1));
        for (size_t k = 0; k < before; k++, out += 5)
            xenc_match(&e, 16, 5);
        xenc_match(&e, 40, XLEN);
        xenc_match(&e, 40, NEXT);
        for (int k = 0; k < TAIL; k++)
            xenc_literal(&e, (uint8_t)k);
        sl = xenc_finish(&e);
        out += XLEN;
        for (size_t cap = out; cap < out + NEXT; cap += 7) {
            memset(a, 0xee, cap + GUARD);
            assert_int_equal(perch__xpress_decompress(stream, sl, a, cap, &n), PERCH_EOVERRUN);
            for (size_t k = cap; k < cap + GUARD; k++)
                assert_int_equal(a[k], 0xee); /* nothing written past the capacity */
            assert_paths_agree(stream, sl, cap, a, b);
        }
    }
    free(stream);
    free(a);
    free(b);
}

/* Long matches across the fast loop's change of phase at 8 KiB of output: the second phase
 * starts with a half byte pending or not (the parity of the long matches before it), and
 * with a nibble of 15 or not, for every position of the change within a few tokens. */
static void test_fast_phase_change_with_pending_half_byte(void **state)
{
    enum { OUT = 9000, TAIL = 400, CAP = 16384 };
    uint8_t *stream = malloc(CAP), *a = malloc(OUT + TAIL + 64), *b = malloc(OUT + TAIL + 64);
    for (size_t lead = 16; lead < 16 + 24; lead++) {
        for (size_t mlen = 10; mlen <= 26; mlen += 16) { /* nibbles 0 and 15 (plus a byte) */
            struct xenc e;
            size_t out = lead, sl;
            xenc_init(&e, stream, CAP);
            for (size_t k = 0; k < lead; k++)
                xenc_literal(&e, (uint8_t)(k * 13 + 5));
            for (size_t k = 0; out < OUT; k++, out += mlen + 1) {
                xenc_match(&e, 16 + (k % 3), mlen);
                xenc_literal(&e, (uint8_t)k);
            }
            for (int k = 0; k < TAIL; k++, out++)
                xenc_literal(&e, (uint8_t)(k ^ 0x5a));
            sl = xenc_finish(&e);
            size_t n = 0;
            assert_int_equal(perch__xpress_decompress(stream, sl, a, out, &n), 0);
            assert_int_equal(n, out);
            assert_paths_agree(stream, sl, out, a, b);
        }
    }
    free(stream);
    free(a);
    free(b);
}

static int processor_loop(void **state)
{
    perch__xpress_set_portable(false);
    return 0;
}

static int portable_loop(void **state)
{
    perch__xpress_set_portable(true);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals_only),
        cmocka_unit_test(test_overlapping_match),
        cmocka_unit_test(test_pattern_offset_3),
        cmocka_unit_test(test_length_encodings),
        cmocka_unit_test(test_shared_half_byte),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_random_round_trips),
        cmocka_unit_test(test_fast_equals_checked_at_the_ends),
        cmocka_unit_test(test_fast_copy_every_offset_and_length),
        cmocka_unit_test(test_fast_explicit_lengths_and_errors),
        cmocka_unit_test(test_fast_explicit_then_overrun),
        cmocka_unit_test(test_fast_phase_change_with_pending_half_byte),
    };
    /* Every test twice: with the processor's fast loop (where this build has one) and with
     * the portable one. */
    int failed = cmocka_run_group_tests_name("xpress", tests, processor_loop, NULL);
    return failed + cmocka_run_group_tests_name("xpress portable", tests, portable_loop,
                                                processor_loop);
}
