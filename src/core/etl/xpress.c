/*
 * MS-XCA Plain LZ77 decoder ([MS-XCA] 2.4, "Plain LZ77 Decompression Algorithm Details").
 *
 * The specification's loop copies matches one byte at a time. This decoder produces the same
 * output faster: runs of literal flags are found with a count of leading zeros and copied in
 * one move, and matches whose offset is at least 8 are copied 8 bytes at a time while the
 * output has room for the overshoot. Every token is bounds-checked against both buffers before
 * any byte moves; the slow paths near the ends are byte by byte.
 */
#include <string.h>

#include "etl/xpress.h"
#include "perch/error.h"

struct xstate {
    const uint8_t *in, *ip, *iend;
    uint8_t *out, *op, *oend;
    const uint8_t *half; /* the byte whose high nibble is the next shared length, or NULL */
};

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline unsigned leading_zeros(uint32_t v)
{
    return v == 0 ? 32u : (unsigned)__builtin_clz(v);
}

/* Extends a length code of 7 ([MS-XCA] 2.4.4); returns the match length minus 3, or -1. */
static int64_t long_length(struct xstate *s)
{
    uint32_t len;
    if (s->half == NULL) {
        if (s->ip >= s->iend)
            return -1;
        s->half = s->ip++;
        len = *s->half & 15u;
    } else {
        len = *s->half >> 4;
        s->half = NULL;
    }
    if (len == 15) {
        if (s->ip >= s->iend)
            return -1;
        len = *s->ip++;
        if (len == 255) {
            if (s->iend - s->ip < 2)
                return -1;
            len = rd16(s->ip);
            s->ip += 2;
            if (len == 0) {
                if (s->iend - s->ip < 4)
                    return -1;
                len = rd32(s->ip);
                s->ip += 4;
            }
            if (len < 15 + 7)
                return -2;
            len -= 15 + 7;
        }
        len += 15;
    }
    return (int64_t)len + 7;
}

/* Copies a match of len bytes from off bytes back. With 16 bytes of slack in the output the
 * copy moves 8-byte words and may write up to 15 bytes past len (overwritten later or beyond
 * the data): for off >= 8 word copies never overlap themselves; for off < 8 the first 8 bytes
 * go one by one, then words are copied from the nearest multiple of off that is >= 8 back,
 * where the pattern repeats. Near the end of the output it is a plain byte loop. */
static inline void copy_match(uint8_t *op, size_t off, size_t len, size_t room)
{
    const uint8_t *src = op - off;
    size_t k;
    if (room < len + 16) {
        for (k = 0; k < len; k++)
            op[k] = src[k];
        return;
    }
    if (off >= 8) {
        memcpy(op, src, 8);
        memcpy(op + 8, src + 8, 8);
        for (k = 16; k < len; k += 8)
            memcpy(op + k, src + k, 8);
        return;
    }
    for (k = 0; k < 8; k++)
        op[k] = src[k];
    off *= (8 + off - 1) / off;
    for (k = 8; k < len; k += 8)
        memcpy(op + k, op + k - off, 8);
}

/* Decodes one match token (the flag was 1). Returns 1 at end of stream, 0 or an error. */
static int match(struct xstate *s)
{
    uint16_t tok;
    uint64_t len;
    size_t off;
    if (s->ip == s->iend)
        return 1;
    if (s->iend - s->ip < 2)
        return PERCH_ETRUNC;
    tok = rd16(s->ip);
    s->ip += 2;
    len = tok & 7u;
    off = (size_t)(tok >> 3) + 1;
    if (len == 7) {
        int64_t ext = long_length(s);
        if (ext < 0)
            return ext == -1 ? PERCH_ETRUNC : PERCH_EFORMAT;
        len = (uint64_t)ext;
    }
    len += 3;
    if (off > (size_t)(s->op - s->out))
        return PERCH_EFORMAT;
    if (len > (uint64_t)(s->oend - s->op))
        return PERCH_EOVERRUN;
    copy_match(s->op, off, (size_t)len, (size_t)(s->oend - s->op));
    s->op += len;
    return 0;
}

/* Copies a run of n literals. Returns 1 when the input ended (end of stream), 0 or error. */
static int literals(struct xstate *s, unsigned n)
{
    size_t in_left = (size_t)(s->iend - s->ip), out_left = (size_t)(s->oend - s->op);
    if (in_left >= 32 && out_left >= 32) {
        memcpy(s->op, s->ip, 32);
    } else {
        size_t k = n < in_left ? n : in_left;
        if (k > out_left)
            return PERCH_EOVERRUN;
        memcpy(s->op, s->ip, k);
        s->ip += k;
        s->op += k;
        return k < n ? 1 : 0;
    }
    s->ip += n;
    s->op += n;
    return 0;
}

int perch__xpress_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                             size_t *produced)
{
    struct xstate s = {in, in, in + in_len, out, out, out + out_cap, NULL};
    uint32_t flags = 0;
    unsigned nflags = 0;
    int rc = 0;
    while (rc == 0) {
        unsigned run;
        if (nflags == 0) {
            if (s.iend - s.ip < 4) {
                rc = s.ip == s.iend ? 1 : PERCH_ETRUNC;
                break;
            }
            flags = rd32(s.ip);
            s.ip += 4;
            nflags = 32;
        }
        run = leading_zeros(flags);
        if (run > nflags)
            run = nflags;
        if (run > 0) {
            rc = literals(&s, run);
            nflags -= run;
            flags = run >= 32 ? 0 : flags << run;
            continue;
        }
        nflags--;
        flags <<= 1;
        rc = match(&s);
    }
    if (rc < 0)
        return rc;
    *produced = (size_t)(s.op - s.out);
    return 0;
}
