/*
 * The bounds-checked little-endian cursor every decoder reads payloads through.
 *
 * A cursor walks [base, base + len). Every read checks that its bytes lie inside; a read that
 * would cross the end returns 0, reads nothing, and makes the cursor "bad", remembering the
 * offset and the byte count that failed. Later reads on a bad cursor also return 0, so a
 * decoder can read a run of fields and check once. Pointer-sized reads use the record's pointer
 * size (4 or 8), never the reader's. Strings are returned as borrowed views; the terminator
 * search never leaves the payload. Everything is static inline: decoding SampledProfile or
 * CSwitch must cost a handful of instructions.
 */
#ifndef PERCH_DECODE_CURSOR_H
#define PERCH_DECODE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/decode.h"

typedef struct cursor {
    const uint8_t *base;
    uint32_t len;
    uint32_t pos;
    uint8_t psize;     /* 4 or 8 */
    bool bad;          /* a read crossed the end */
    uint32_t bad_at;   /* offset of the first failed read */
    uint32_t bad_need; /* bytes that read needed */
} cursor;

static inline void cur_init(cursor *c, const uint8_t *p, uint32_t len, uint8_t psize)
{
    c->base = p;
    c->len = len;
    c->pos = 0;
    c->psize = psize;
    c->bad = false;
    c->bad_at = 0;
    c->bad_need = 0;
}

static inline uint32_t cur_left(const cursor *c)
{
    return c->len - c->pos;
}

static inline void cur_fail(cursor *c, uint32_t need)
{
    if (!c->bad) {
        c->bad = true;
        c->bad_at = c->pos;
        c->bad_need = need;
    }
}

/* The next n bytes, advancing past them, or NULL (cursor made bad) when fewer remain. */
static inline const uint8_t *cur_take(cursor *c, uint32_t n)
{
    if (c->bad || cur_left(c) < n) {
        cur_fail(c, n);
        return NULL;
    }
    const uint8_t *p = c->base + c->pos;
    c->pos += n;
    return p;
}

static inline uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static inline uint8_t cur_u8(cursor *c)
{
    const uint8_t *p = cur_take(c, 1);
    return p ? p[0] : 0;
}

static inline int8_t cur_i8(cursor *c)
{
    return (int8_t)cur_u8(c);
}

static inline uint16_t cur_u16(cursor *c)
{
    const uint8_t *p = cur_take(c, 2);
    return p ? le16(p) : 0;
}

static inline uint32_t cur_u32(cursor *c)
{
    const uint8_t *p = cur_take(c, 4);
    return p ? le32(p) : 0;
}

static inline uint64_t cur_u64(cursor *c)
{
    const uint8_t *p = cur_take(c, 8);
    return p ? le64(p) : 0;
}

/* A pointer-sized field of the record's pointer size, widened to 64 bits. */
static inline uint64_t cur_ptr(cursor *c)
{
    const uint8_t *p = cur_take(c, c->psize);
    if (!p)
        return 0;
    return c->psize == 8 ? le64(p) : le32(p);
}

static inline void cur_skip(cursor *c, uint32_t n)
{
    (void)cur_take(c, n);
}

/* A GUID as stored on the wire: u32, u16, u16, 8 bytes. */
static inline void cur_guid(cursor *c, perch_guid *g)
{
    const uint8_t *p = cur_take(c, 16);
    if (!p) {
        *g = (perch_guid){0, 0, 0, {0}};
        return;
    }
    g->data1 = le32(p);
    g->data2 = le16(p + 4);
    g->data3 = le16(p + 6);
    for (int i = 0; i < 8; i++)
        g->data4[i] = p[8 + i];
}

/* Byte offset of the first NUL UTF-16 unit in p[0, left), or left when there is none. */
static inline uint32_t wstr_span(const uint8_t *p, uint32_t left)
{
    for (uint32_t i = 0; i + 1 < left; i += 2)
        if ((p[i] | p[i + 1]) == 0)
            return i;
    return left;
}

/* A NUL-terminated UTF-16LE string: the view excludes the terminator, the cursor moves past
 * it. Without a terminator inside the payload the cursor goes bad (need = bytes left + 2). */
static inline perch_wstr cur_wstr(cursor *c)
{
    perch_wstr s = {NULL, 0};
    if (c->bad)
        return s;
    uint32_t left = cur_left(c);
    uint32_t n = wstr_span(c->base + c->pos, left);
    if (n == left) {
        cur_fail(c, left + 2);
        return s;
    }
    s.data = c->base + c->pos;
    s.len = n;
    c->pos += n + 2;
    return s;
}

/* A NUL-terminated 8-bit string, same rules as cur_wstr. */
static inline perch_astr cur_astr(cursor *c)
{
    perch_astr s = {NULL, 0};
    if (c->bad)
        return s;
    uint32_t left = cur_left(c);
    const uint8_t *p = c->base + c->pos;
    for (uint32_t i = 0; i < left; i++) {
        if (p[i] == 0) {
            s.data = (const char *)p;
            s.len = i;
            c->pos += i + 1;
            return s;
        }
    }
    cur_fail(c, left + 1);
    return s;
}

/* The rest of the payload as an optional trailing UTF-16 string: up to the first NUL unit if
 * there is one, else every whole unit left. Returns data NULL when nothing is left. */
static inline perch_wstr cur_wstr_optional(cursor *c)
{
    perch_wstr s = {NULL, 0};
    uint32_t left = c->bad ? 0 : cur_left(c);
    if (left < 2)
        return s;
    uint32_t n = wstr_span(c->base + c->pos, left);
    s.data = c->base + c->pos;
    s.len = n == left ? left & ~1u : n;
    c->pos += n == left ? s.len : n + 2;
    return s;
}

#endif
