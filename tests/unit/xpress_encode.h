/*
 * A tiny MS-XCA Plain LZ77 encoder for tests ([MS-XCA] 2.3): the caller chooses every token
 * (literal or match), the encoder lays out flag words, match tokens and the shared length
 * half bytes exactly as the specification describes. Tests use it to build compressed
 * streams and .etl buffers with known content. Header-only (static inline) so each test
 * program takes only what it uses.
 */
#ifndef PERCH_TEST_XPRESS_ENCODE_H
#define PERCH_TEST_XPRESS_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct xenc {
    uint8_t *out;
    size_t pos, cap;
    size_t flag_pos;
    uint32_t flags;
    unsigned nflags;
    size_t half_pos; /* 0: no half byte pending */
    int overflow;
};

static inline void xenc_put(struct xenc *e, uint8_t b)
{
    if (e->pos < e->cap)
        e->out[e->pos] = b;
    else
        e->overflow = 1;
    e->pos++;
}

static inline void xenc_put32_at(struct xenc *e, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        if (at + (size_t)i < e->cap)
            e->out[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static inline void xenc_init(struct xenc *e, uint8_t *out, size_t cap)
{
    memset(e, 0, sizeof *e);
    e->out = out;
    e->cap = cap;
    e->flag_pos = 0;
    e->pos = 4;
}

static inline void xenc_flag(struct xenc *e, unsigned bit)
{
    if (e->nflags == 32) {
        xenc_put32_at(e, e->flag_pos, e->flags);
        e->flag_pos = e->pos;
        e->pos += 4;
        e->flags = 0;
        e->nflags = 0;
    }
    e->flags = (e->flags << 1) | bit;
    e->nflags++;
}

static inline void xenc_literal(struct xenc *e, uint8_t b)
{
    xenc_flag(e, 0);
    xenc_put(e, b);
}

/* A match of len >= 3 bytes at distance off (1..8192). */
static inline void xenc_match(struct xenc *e, size_t off, size_t len)
{
    size_t l = len - 3;
    uint16_t tok = (uint16_t)(((off - 1) << 3) | (l < 7 ? l : 7));
    xenc_flag(e, 1);
    xenc_put(e, (uint8_t)tok);
    xenc_put(e, (uint8_t)(tok >> 8));
    if (l < 7)
        return;
    l -= 7;
    if (e->half_pos == 0) {
        e->half_pos = e->pos;
        xenc_put(e, (uint8_t)(l < 15 ? l : 15));
    } else {
        if (e->half_pos < e->cap)
            e->out[e->half_pos] |= (uint8_t)((l < 15 ? l : 15) << 4);
        e->half_pos = 0;
    }
    if (l < 15)
        return;
    l -= 15;
    if (l < 255) {
        xenc_put(e, (uint8_t)l);
        return;
    }
    xenc_put(e, 255);
    l = len - 3;
    if (l <= 0xFFFF) {
        xenc_put(e, (uint8_t)l);
        xenc_put(e, (uint8_t)(l >> 8));
    } else {
        xenc_put(e, 0);
        xenc_put(e, 0);
        for (int i = 0; i < 4; i++)
            xenc_put(e, (uint8_t)(l >> (8 * i)));
    }
}

/* Pads the last flag word with 1 bits (end of stream) and returns the stream length, or 0
 * when it did not fit. */
static inline size_t xenc_finish(struct xenc *e)
{
    uint32_t flags = e->flags;
    if (e->nflags < 32)
        flags = (flags << (32 - e->nflags)) | ((1u << (32 - e->nflags)) - 1u);
    xenc_put32_at(e, e->flag_pos, flags);
    return e->overflow ? 0 : e->pos;
}

/* Literal-only stream of in[0, n) (the simplest valid compressed buffer). */
static inline size_t xenc_literals(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    struct xenc e;
    xenc_init(&e, out, cap);
    for (size_t i = 0; i < n; i++)
        xenc_literal(&e, in[i]);
    return xenc_finish(&e);
}

#endif
