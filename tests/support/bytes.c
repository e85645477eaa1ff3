/*
 * Byte-building helpers for decoder and container tests; see bytes.h.
 */
#include "bytes.h"

static int nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long perch_test_hex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        int hi = nibble(hex[0]), lo = nibble(hex[1]);
        if (hi < 0 || lo < 0 || n >= cap)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return hex[0] ? -1 : (long)n;
}

uint8_t *perch_test_put_u8(uint8_t *p, uint8_t v)
{
    *p = v;
    return p + 1;
}

uint8_t *perch_test_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

uint8_t *perch_test_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

uint8_t *perch_test_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

uint8_t *perch_test_put_ptr(uint8_t *p, unsigned pointer_size, uint64_t v)
{
    return pointer_size == 4 ? perch_test_put_u32(p, (uint32_t)v) : perch_test_put_u64(p, v);
}

uint8_t *perch_test_put_utf16(uint8_t *p, const char *s)
{
    do {
        p = perch_test_put_u16(p, (uint8_t)*s);
    } while (*s++);
    return p;
}
