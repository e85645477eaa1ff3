/*
 * Tests for CRC-32C: the standard check values, every entry of the slicing-by-8 tables against
 * a bit-by-bit computation, and each path (perch__crc32c as dispatched, the portable code, and
 * the CPU instruction where this processor has it) against a bitwise reference over every
 * length and alignment up to 64 bytes and over a long buffer split at arbitrary points, and the
 * hardware path's three-chain blocks at every length around their sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/crc32c.h"
#include "capture/crc32c_table.h"

static uint32_t bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

typedef uint32_t (*crc_fn)(uint32_t crc, const void *data, size_t len);

static void check_values(crc_fn crc)
{
    static const uint8_t zeros[32] = {0};
    uint8_t ones[32], up[32], down[32];
    memset(ones, 0xff, sizeof ones);
    for (unsigned i = 0; i < 32; i++) {
        up[i] = (uint8_t)i;
        down[i] = (uint8_t)(31 - i);
    }
    assert_int_equal(crc(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc(0, "", 0), 0);
    /* RFC 3720 (iSCSI) appendix B.4 test vectors */
    assert_int_equal(crc(0, zeros, 32), 0x8a9136aau);
    assert_int_equal(crc(0, ones, 32), 0x62a8ab43u);
    assert_int_equal(crc(0, up, 32), 0x46dd794eu);
    assert_int_equal(crc(0, down, 32), 0x113fdb5cu);
}

static void test_check_values(void **state)
{
    check_values(perch__crc32c);
    check_values(perch__crc32c_portable);
    if (perch__crc32c_hw_ok())
        check_values(perch__crc32c_hw);
}

static void test_tables(void **state)
{
    for (unsigned i = 0; i < 256; i++) {
        /* table[0][i] is the raw (un-inverted) CRC register after shifting in byte i */
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
        assert_int_equal(crc32c_table[0][i], c);
        for (int t = 1; t < 8; t++) {
            c = (c >> 8) ^ crc32c_table[0][c & 0xff];
            assert_int_equal(crc32c_table[t][i], c);
        }
    }
}

static void against_bitwise(crc_fn crc)
{
    uint8_t buf[4096 + 8];
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 64; len++)
            assert_int_equal(crc(0, buf + off, len), bitwise(0, buf + off, len));
    uint32_t whole = crc(0, buf, 4096);
    assert_int_equal(whole, bitwise(0, buf, 4096));
    for (size_t cut = 0; cut <= 4096; cut += 333)
        assert_int_equal(crc(crc(0, buf, cut), buf + cut, 4096 - cut), whole);
    /* a non-zero starting value continues where another path left off */
    assert_int_equal(crc(bitwise(0, buf, 1000), buf + 1000, 3096), whole);
}

static void test_against_bitwise(void **state)
{
    against_bitwise(perch__crc32c);
    against_bitwise(perch__crc32c_portable);
    if (perch__crc32c_hw_ok())
        against_bitwise(perch__crc32c_hw);
}

/* The hardware and portable paths agree on every length and alignment of a larger buffer
 * (when this processor has no hardware path, the dispatched function must be the portable
 * one, which the same comparison checks). */
static void test_paths_agree(void **state)
{
    static uint8_t buf[70000];
    uint64_t x = 0x243f6a8885a308d3u;
    crc_fn other = perch__crc32c_hw_ok() ? perch__crc32c_hw : perch__crc32c;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)(x >> 24);
    }
    for (size_t off = 0; off < 16; off++)
        for (size_t len = 0; len < 300; len++)
            assert_int_equal(other(0x12345678u, buf + off, len),
                             perch__crc32c_portable(0x12345678u, buf + off, len));
    for (size_t len = 65000; len < sizeof buf; len += 977)
        assert_int_equal(other(0, buf + 3, len - 3), perch__crc32c_portable(0, buf + 3, len - 3));
    assert_int_equal(perch__crc32c(0, buf, sizeof buf), perch__crc32c_portable(0, buf, sizeof buf));
}

/* The hardware path runs three chains over blocks of 3 x 8192 and 3 x 256 bytes and joins
 * them: every length around those block sizes (and their sums), at several alignments and
 * starting values, against the portable code. */
static void test_block_boundaries(void **state)
{
    static uint8_t buf[3 * 8192 * 2 + 3 * 256 * 3 + 64];
    static const size_t base[] = {3 * 256,      2 * 3 * 256,
                                  3 * 8192,     3 * 8192 + 3 * 256,
                                  2 * 3 * 8192, 2 * 3 * 8192 + 2 * 3 * 256};
    uint64_t x = 0x13198a2e03707344u;
    (void)state;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t b = 0; b < sizeof base / sizeof base[0]; b++) {
        for (size_t len = base[b] - 9; len <= base[b] + 9; len++) {
            for (size_t off = 0; off < 3; off++) {
                uint32_t seed = (uint32_t)(0x9e3779b9u * (len + off));
                assert_int_equal(perch__crc32c(seed, buf + off, len),
                                 perch__crc32c_portable(seed, buf + off, len));
            }
        }
    }
    assert_int_equal(perch__crc32c(0, buf, sizeof buf), bitwise(0, buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_values),     cmocka_unit_test(test_tables),
        cmocka_unit_test(test_against_bitwise),  cmocka_unit_test(test_paths_agree),
        cmocka_unit_test(test_block_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
