/*
 * Tests for CRC-32C: the standard check value, every entry of the slicing-by-8 tables against
 * a bit-by-bit computation, and the sliced path against a bitwise reference over every length
 * and alignment up to 64 bytes and over a long buffer split at arbitrary points.
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

static void test_check_values(void **state)
{
    static const uint8_t zeros[32] = {0};
    uint8_t ones[32];
    memset(ones, 0xff, sizeof ones);
    assert_int_equal(perch__crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(perch__crc32c(0, "", 0), 0);
    /* RFC 3720 (iSCSI) appendix B.4 test vectors */
    assert_int_equal(perch__crc32c(0, zeros, 32), 0x8a9136aau);
    assert_int_equal(perch__crc32c(0, ones, 32), 0x62a8ab43u);
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

static void test_against_bitwise(void **state)
{
    uint8_t buf[4096 + 8];
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 64; len++)
            assert_int_equal(perch__crc32c(0, buf + off, len), bitwise(0, buf + off, len));
    uint32_t whole = perch__crc32c(0, buf, 4096);
    assert_int_equal(whole, bitwise(0, buf, 4096));
    for (size_t cut = 0; cut <= 4096; cut += 333)
        assert_int_equal(perch__crc32c(perch__crc32c(0, buf, cut), buf + cut, 4096 - cut), whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_values),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_against_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
