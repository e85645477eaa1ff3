/*
 * What the MS-XCA Plain LZ77 decoder's loops share (etl/xpress.c, the checked loop and the
 * entry points; etl/xpress_fast.h, the fast loop, compiled once with portable copies and once
 * per processor-specific file under etl/cpu/): the decoder state (bytes read with etl/le.h),
 * the flag word, the word-wise match copy, and the fast loops' entry points.
 */
#ifndef PERCH_ETL_XPRESS_LOOP_H
#define PERCH_ETL_XPRESS_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etl/le.h"

#define XPRESS_MAX_OFFSET 8192u                /* 13 offset bits + 1 */
#define XPRESS_SHORT_MAX  (3 + 7 + 15 + 254)   /* the longest match without an explicit length */
#define XPRESS_COPY_OVER  64u /* xpress_copy_match writes at most max(len + 15, 64) bytes */
/* A literal run (32), its flag word (4), the longest match token (2 + 1 + 1 + 6). */
#define XPRESS_IN_SLACK 48u
/* A literal run (32), then a match of up to SHORT_MAX copied by words (+ 15). */
#define XPRESS_OUT_SLACK (32u + XPRESS_SHORT_MAX + 15u)
#define XPRESS_CLOSED    (1ull << 32) /* the bit after a flag word's 32 flags */

/* Flags: r holds the current word bit-reversed (flag i at bit i) with CLOSED set, and q
 * counts the flags used. The checked loop reads bit q; the fast loop also clears each match
 * flag it uses, so its next match is the lowest set bit. pend is 16 | the high nibble of a
 * half byte whose low nibble a long match used, or 0. */
struct xpress_state {
    const uint8_t *ip, *iend;
    uint8_t *out, *op, *oend;
    uint64_t r;
    unsigned q, pend;
};

/* The fast loop with portable copies (etl/xpress.c) and with the processor's
 * (etl/cpu/xpress_*.c, chosen by CMake): each runs tokens while both buffers have slack and
 * returns 0 (the checked loop continues from *s) or a negative PERCH_E*. The second may run
 * only when perch__xpress_simd_ok() is true (it asks the processor once); on a build without
 * one it is the first. */
int perch__xpress_fast_portable(struct xpress_state *s);
int perch__xpress_fast_simd(struct xpress_state *s);
bool perch__xpress_simd_ok(void);

static inline uint64_t xpress_load64(const uint8_t *p) /* native order: moved, never decoded */
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void xpress_store64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The flag word at p, reversed so that its first flag (the most significant bit) is bit 0. */
static inline uint64_t xpress_flag_word(const uint8_t *p)
{
    uint32_t v = perch__le32(p);
    v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
    v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
    v = ((v >> 4) & 0x0f0f0f0fu) | ((v & 0x0f0f0f0fu) << 4);
    return (uint64_t)__builtin_bswap32(v) | XPRESS_CLOSED;
}

/* Per offset below 8 (0 stands for 8 and more): the bytes of the pattern, the multiplier that
 * repeats them across a word (the copies' bit ranges are disjoint, so nothing carries), and
 * the distance, a multiple of the offset from 8 to 8 + offset, words are copied from. */
static const uint64_t xpress_pattern_mask[8] = {
    ~0ull, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull,
    0xffffffffffffffull};
static const uint64_t xpress_pattern_mul[8] = {
    1, 0x0101010101010101ull, 0x0001000100010001ull, 0x0001000001000001ull,
    0x0000000100000001ull, 0x0000010000000001ull, 0x0001000000000001ull, 0x0100000000000001ull};
static const uint8_t xpress_pattern_step[8] = {0, 8, 8, 9, 8, 10, 12, 14};

/* Copies len bytes from off back (off <= bytes already written) below 16 bytes of offset:
 * one 8-byte word of the pattern, then words from a multiple of the offset at least 8 back,
 * up to len + 7 bytes in all. */
__attribute__((always_inline)) static inline void xpress_copy_pattern(uint8_t *op, size_t off,
                                                                      size_t len)
{
    uint8_t *end = op + len;
    size_t k = off < 8 ? off : 0, step = off < 8 ? xpress_pattern_step[k] : off;
    xpress_store64(op, (xpress_load64(op - off) & xpress_pattern_mask[k]) * xpress_pattern_mul[k]);
    for (op += 8; op < end; op += 8)
        xpress_store64(op, xpress_load64(op - step));
}

/* 32 bytes from src (at least 16 bytes behind op) to op, as two 16-byte words. */
__attribute__((always_inline)) static inline void xpress_copy32(uint8_t *op, const uint8_t *src)
{
    memcpy(op, src, 16);
    memcpy(op + 16, src + 16, 16);
}

/* 16-byte words from src (at least 16 bytes behind op) to op until op reaches end (the last
 * word may run up to 15 bytes past it). */
__attribute__((always_inline)) static inline void xpress_copy_words(uint8_t *op, const uint8_t *src,
                                                                    const uint8_t *end)
{
    for (; op < end; op += 16, src += 16)
        memcpy(op, src, 16);
}

/* Copies len bytes from off back (off <= bytes already written): whole words that may run
 * past the end, up to max(len + 15, XPRESS_COPY_OVER) bytes in all. Always inlined: a call
 * costs as much as the copy of a typical match. */
__attribute__((always_inline)) static inline void xpress_copy_match(uint8_t *op, size_t off,
                                                                    size_t len)
{
    uint8_t *end = op + len;
    if (__builtin_expect(off >= 16, 1)) {
        const uint8_t *src = op - off;
        xpress_copy32(op, src);
        if (len > 32) {
            xpress_copy32(op + 32, src + 32);
            xpress_copy_words(op + 64, src + 64, end);
        }
    } else {
        xpress_copy_pattern(op, off, len);
    }
}

#endif
