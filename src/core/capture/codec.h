/*
 * Byte-level coding shared by the capture writer and reader: a capped growable output buffer,
 * a bounds-checked input cursor with a sticky error, LEB128 varints, zigzag for signed deltas
 * and little-endian fixed fields. Everything here is static inline: these are the innermost
 * loops of both sides.
 */
#ifndef PERCH_CAPTURE_CODEC_H
#define PERCH_CAPTURE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perch/error.h"

/* Longest LEB128 encoding of a uint64_t. */
#define CAP_VARINT_MAX 10

/* ---- output: the caller reserves room (cap_buf_reserve) before putting bytes ---------- */

typedef struct perch__cap_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} perch__cap_buf;

/* Makes room for `more` bytes after len, growing up to limit bytes in total. PERCH_ELIMIT or
 * PERCH_ENOMEM; the buffer is unchanged on error. */
int perch__cap_buf_reserve(perch__cap_buf *b, size_t more, size_t limit);
void perch__cap_buf_free(perch__cap_buf *b);

static inline void cap_put_u8(perch__cap_buf *b, uint8_t v)
{
    b->data[b->len++] = v;
}

static inline uint64_t cap_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t cap_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void cap_put_bytes(perch__cap_buf *b, const void *p, size_t n)
{
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void cap_put_le32(perch__cap_buf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

/* ---- output through a bare pointer into room already reserved --------------------------
 * The hot encoders (samples, slices, stacks, branches) write a record through a local pointer
 * into room reserved with CAP_VARINT_MAX bytes per varint and store the end back into the
 * buffer once, so neither the buffer's length nor its data pointer is reloaded after every
 * byte stored. (A varint written 8 bytes at a time without a branch on its length measured
 * slower here: more instructions than the mispredictions it saved.) */

static inline uint8_t *cap_w_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *cap_w_delta(uint8_t *p, uint64_t value, uint64_t base)
{
    return cap_w_varint(p, cap_zigzag((int64_t)(value - base)));
}

static inline void cap_put_varint(perch__cap_buf *b, uint64_t v)
{
    b->len = (size_t)(cap_w_varint(b->data + b->len, v) - b->data);
}

/* A signed delta of two unsigned values, wrapping modulo 2^64 (so every pair round-trips). */
static inline void cap_put_delta(perch__cap_buf *b, uint64_t value, uint64_t base)
{
    cap_put_varint(b, cap_zigzag((int64_t)(value - base)));
}

/* ---- input: every read checks bounds; the first failure sticks and reads return 0 ------- */

typedef struct perch__cap_cursor {
    const uint8_t *p;
    size_t len; /* bytes of input; cut back to pos when an error is set, so that every later
                 * read finds nothing left and the fast paths need no error check */
    size_t pos;
    int error; /* 0, PERCH_ETRUNC (ran off the end) or PERCH_EFORMAT (bad varint / value) */
} perch__cap_cursor;

static inline void cap_cursor_init(perch__cap_cursor *c, const uint8_t *p, size_t len)
{
    c->p = p;
    c->len = len;
    c->pos = 0;
    c->error = 0;
}

static inline void cap_fail(perch__cap_cursor *c, int err)
{
    if (!c->error)
        c->error = err;
    c->len = c->pos;
}

static inline uint8_t cap_get_u8(perch__cap_cursor *c)
{
    if (c->pos >= c->len) { /* also after an error (len was cut back to pos) */
        cap_fail(c, PERCH_ETRUNC);
        return 0;
    }
    return c->p[c->pos++];
}

/* The checked varint read, one byte at a time: used within CAP_VARINT_MAX bytes of the end. */
static inline uint64_t cap_get_varint_slow(perch__cap_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t byte = cap_get_u8(c);
        if (c->error)
            return 0;
        if (shift == 63 && byte > 1) {
            cap_fail(c, PERCH_EFORMAT); /* more than 64 bits */
            return 0;
        }
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    cap_fail(c, PERCH_EFORMAT); /* an eleventh byte */
    return 0;
}

/* A varint at *pp with no bounds check: CAP_VARINT_MAX bytes must be readable there. Advances
 * *pp past it; a value over 64 bits sets *bad (the value is then meaningless). Shared by the
 * cursor's fast path below and the replay's record loops (read_fast.c). A byte loop: most
 * varints are one or two bytes, and a branch-free word decode measured slower (its length is a
 * data dependency from one field to the next, where predicted branches are not). */
static inline uint64_t cap_varint_unchecked(const uint8_t **pp, unsigned *bad)
{
    const uint8_t *p = *pp;
    uint64_t v = p[0];
    if (v < 0x80) {
        *pp = p + 1;
        return v;
    }
    v &= 0x7f;
    for (unsigned i = 1; i < CAP_VARINT_MAX - 1; i++) {
        uint64_t byte = p[i];
        v |= (byte & 0x7f) << (7 * i);
        if (byte < 0x80) {
            *pp = p + i + 1;
            return v;
        }
    }
    *pp = p + CAP_VARINT_MAX;
    *bad |= p[CAP_VARINT_MAX - 1] > 1;
    return v | (uint64_t)p[CAP_VARINT_MAX - 1] << 63;
}

/* A varint. Where the cursor has CAP_VARINT_MAX bytes left no byte needs its own bounds check
 * (none are left after an error); the result, the position and any error are those of
 * cap_get_varint_slow. */
static inline uint64_t cap_get_varint(perch__cap_cursor *c)
{
    if (c->len - c->pos < CAP_VARINT_MAX)
        return cap_get_varint_slow(c);
    const uint8_t *start = c->p + c->pos, *p = start;
    unsigned bad = 0;
    uint64_t v = cap_varint_unchecked(&p, &bad);
    c->pos += (size_t)(p - start);
    if (bad) {
        cap_fail(c, PERCH_EFORMAT); /* more than 64 bits */
        return 0;
    }
    return v;
}

/* A varint that must fit max (inclusive); larger is PERCH_EFORMAT. */
static inline uint64_t cap_get_bounded(perch__cap_cursor *c, uint64_t max)
{
    uint64_t v = cap_get_varint(c);
    if (v > max) {
        cap_fail(c, PERCH_EFORMAT);
        return 0;
    }
    return v;
}

static inline uint64_t cap_get_delta(perch__cap_cursor *c, uint64_t base)
{
    return base + (uint64_t)cap_unzigzag(cap_get_varint(c));
}

static inline const uint8_t *cap_get_bytes(perch__cap_cursor *c, size_t n)
{
    if (c->error || n > c->len - c->pos) {
        cap_fail(c, PERCH_ETRUNC);
        return NULL;
    }
    c->pos += n;
    return c->p + c->pos - n;
}

static inline uint32_t cap_get_le32(perch__cap_cursor *c)
{
    const uint8_t *p = cap_get_bytes(c, 4);
    if (!p)
        return 0;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- fixed little-endian fields of the file and chunk headers --------------------------- */

static inline void cap_store_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t cap_load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
