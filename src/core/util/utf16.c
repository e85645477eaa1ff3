/*
 * UTF-16LE to UTF-8; see include/perch/utf16.h. Both directions are bounded: the input by its
 * byte length, the output by its capacity, and a character is written whole or not at all.
 * perch_utf8_seq_len at the end is the shared UTF-8 validity check, and perch_utf8_make_valid
 * repairs a text cut by a bounded formatter before it goes where only UTF-8 is accepted.
 */
#include <string.h>

#include "perch/utf16.h"

#define REPLACEMENT 0xFFFDu

/* Decodes the code point at src[*i] (advancing *i); invalid sequences give U+FFFD. */
static uint32_t next_code_point(const uint8_t *src, size_t len, size_t *i)
{
    if (len - *i < 2) {
        *i = len; /* a lone trailing byte */
        return REPLACEMENT;
    }
    uint32_t u = (uint32_t)src[*i] | (uint32_t)src[*i + 1] << 8;
    *i += 2;
    if (u < 0xD800u || u > 0xDFFFu)
        return u;
    if (u >= 0xDC00u || len - *i < 2)
        return REPLACEMENT; /* a low surrogate first, or a high one at the end */
    uint32_t lo = (uint32_t)src[*i] | (uint32_t)src[*i + 1] << 8;
    if (lo < 0xDC00u || lo > 0xDFFFu)
        return REPLACEMENT; /* leave lo to be decoded on its own */
    *i += 2;
    return 0x10000u + ((u - 0xD800u) << 10) + (lo - 0xDC00u);
}

/* Encodes cp into buf (4 bytes); returns its length. */
static size_t encode(uint32_t cp, char *buf)
{
    if (cp < 0x80u) {
        buf[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800u) {
        buf[0] = (char)(0xC0u | cp >> 6);
        buf[1] = (char)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp < 0x10000u) {
        buf[0] = (char)(0xE0u | cp >> 12);
        buf[1] = (char)(0x80u | (cp >> 6 & 0x3Fu));
        buf[2] = (char)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    buf[0] = (char)(0xF0u | cp >> 18);
    buf[1] = (char)(0x80u | (cp >> 12 & 0x3Fu));
    buf[2] = (char)(0x80u | (cp >> 6 & 0x3Fu));
    buf[3] = (char)(0x80u | (cp & 0x3Fu));
    return 4;
}

size_t perch_utf16le_to_utf8(const uint8_t *src, size_t src_len, char *dst, size_t cap)
{
    size_t i = 0, out = 0;
    char buf[4];
    while (i < src_len) {
        size_t n = encode(next_code_point(src, src_len, &i), buf);
        if (cap - out < n)
            break;
        for (size_t k = 0; k < n; k++)
            dst[out + k] = buf[k];
        out += n;
    }
    return out;
}

size_t perch_utf16le_utf8_len(const uint8_t *src, size_t src_len)
{
    size_t i = 0, out = 0;
    char buf[4];
    while (i < src_len)
        out += encode(next_code_point(src, src_len, &i), buf);
    return out;
}

size_t perch_utf8_seq_len(const uint8_t *p, size_t n)
{
    size_t len = p[0] < 0xC2 ? 0 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : p[0] < 0xF5 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))
        return 0; /* overlong, surrogate or above U+10FFFF */
    return len;
}

char *perch_utf8_make_valid(char *s)
{
    uint8_t *u = (uint8_t *)s;
    size_t n = strlen(s);
    /* a lead byte in the last three whose sequence runs past the end: cut there */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t c = u[n - back];
        if ((c & 0xC0) == 0x80)
            continue;
        size_t want = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        if (want > back) {
            n -= back;
            u[n] = '\0';
        }
        break;
    }
    for (size_t i = 0; i < n;) {
        size_t k = u[i] < 0x80 ? 1 : perch_utf8_seq_len(u + i, n - i);
        if (k == 0) {
            u[i] = '?';
            k = 1;
        }
        i += k;
    }
    return s;
}
