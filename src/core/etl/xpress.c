/*
 * MS-XCA Plain LZ77 decoder ([MS-XCA] 2.4, "Plain LZ77 Decompression Algorithm Details").
 *
 * Two loops produce the same output. The fast loop runs while both buffers have room to
 * spare: at least IN_SLACK input bytes (32 literals, the longest match token and a flag word)
 * and OUT_SLACK output bytes (a 32-byte literal copy), so it checks bounds once per round of
 * a literal run and a match, never per byte. It copies a literal run (its length is a count of
 * leading zeros of the flag word) as 16 or 32 bytes at once, and a match as whole words that
 * may run up to 31 bytes past its end: 16-byte words for offsets of 16 or more, 8-byte words
 * from 8, a fill for offset 1, and for offsets 2 to 7 one word of the repeated pattern, then
 * words from the nearest multiple of the offset at least 8 back. The only checks a token needs
 * there are the ones the format itself defines: a match reaching before the start of the
 * output, a match longer than the room left (near the end of the output a match is copied
 * byte by byte). The checked slow loop finishes the stream token by token, testing every read
 * and write. perch__xpress_decompress_slow runs that loop alone with byte-by-byte matches, the
 * reference the differential fuzz target (tests/fuzz/fuzz_xpress_diff.c) holds the fast path
 * to.
 *
 * Flags are kept in 64 bits with a sentinel: a new 32-bit word goes in the high half and a 1
 * bit right below it, so a count of leading zeros never runs past the word, and the word is
 * used up when only the sentinel is left.
 */
#include <stdbool.h>
#include <string.h>

#include "etl/xpress.h"
#include "perch/error.h"

#define IN_SLACK  48u /* 32 (literals) + 10 (the longest match token) + 4 (a flag word) */
#define OUT_SLACK 32u /* a literal run is copied as 32 bytes */
#define SENTINEL  (1ull << 31)
#define EMPTY     (1ull << 63) /* the flags once only the sentinel is left */

struct xstate {
    const uint8_t *ip, *iend;
    uint8_t *out, *op, *oend;
    const uint8_t *half; /* the byte whose high nibble is the next shared length, or NULL */
    uint64_t flags;
};

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline unsigned clz64(uint64_t v) /* v != 0 */
{
    return (unsigned)__builtin_clzll(v);
}

/* ---- the fast loop: room for every read and for 32 bytes of writes is known ---------- */

/* The length of a match whose 3-bit code was 7 ([MS-XCA] 2.4.4), minus 3; -1 when the
 * explicit 16- or 32-bit length is below what the short forms cover. Reads at most 8 bytes. */
static inline int64_t fast_long_length(const uint8_t **pip, const uint8_t **half)
{
    const uint8_t *ip = *pip;
    uint32_t len;
    if (*half == NULL) {
        *half = ip++;
        len = **half & 15u;
    } else {
        len = **half >> 4;
        *half = NULL;
    }
    if (len == 15) {
        len = *ip++;
        if (len == 255) {
            len = rd16(ip);
            ip += 2;
            if (len == 0) {
                len = rd32(ip);
                ip += 4;
            }
            if (len < 15 + 7)
                return -1;
            len -= 15 + 7;
        }
        len += 15;
    }
    *pip = ip;
    return (int64_t)len + 7;
}

static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static inline void wr64(uint8_t *p, uint64_t v) /* one store after the compiler merges them */
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    p[4] = (uint8_t)(v >> 32);
    p[5] = (uint8_t)(v >> 40);
    p[6] = (uint8_t)(v >> 48);
    p[7] = (uint8_t)(v >> 56);
}

/* Copies len bytes from off back, with 32 bytes to spare after them: moves whole words and
 * may write up to 31 bytes past len (overwritten later, or beyond the data). Always inlined:
 * a call costs as much as the copy of a typical match. */
__attribute__((always_inline)) static inline void copy_match(uint8_t *op, size_t off, size_t len)
{
    const uint8_t *src = op - off;
    uint8_t *end = op + len;
    if (off >= 16) { /* two words first: most matches are at most 32 bytes */
        memcpy(op, src, 16);
        memcpy(op + 16, src + 16, 16);
        for (op += 32, src += 32; op < end; op += 16, src += 16)
            memcpy(op, src, 16);
    } else if (off >= 8) {
        memcpy(op, src, 8);
        for (op += 8, src += 8; op < end; op += 8, src += 8)
            memcpy(op, src, 8);
    } else if (off == 1) {
        memset(op, *src, len);
    } else {
        /* One word of the pattern repeated from its first off bytes (byte i of the word is
         * bits 8i..8i+7), then words from the nearest multiple of off that is at least 8
         * back, where the pattern repeats. */
        uint64_t p = rd64(src) & ((1ull << (8 * off)) - 1);
        p |= p << (8 * off);
        if (off < 4)
            p |= p << (16 * off);
        wr64(op, p);
        static const uint8_t period8[8] = {0, 0, 8, 9, 8, 10, 12, 14}; /* off * ceil(8/off) */
        off = period8[off];
        for (op += 8; op < end; op += 8)
            memcpy(op, op - off, 8);
    }
}

/* One match token at *pip (input slack known), its bytes copied to *pop. Returns 0,
 * PERCH_EFORMAT (an explicit length too small, or an offset before the start of the output)
 * or PERCH_EOVERRUN (longer than the room left). */
static inline int fast_match(const uint8_t **pip, uint8_t **pop, const uint8_t **half,
                             const uint8_t *out, const uint8_t *oend)
{
    uint32_t tok = rd16(*pip);
    uint8_t *op = *pop;
    size_t off = (size_t)(tok >> 3) + 1, len = tok & 7u, room = (size_t)(oend - op);
    *pip += 2;
    if (len == 7) {
        int64_t ext = fast_long_length(pip, half);
        if (ext < 0)
            return PERCH_EFORMAT;
        len = (size_t)ext;
    }
    len += 3;
    if (off > (size_t)(op - out))
        return PERCH_EFORMAT;
    if (len + 32 <= room) {
        copy_match(op, off, len);
    } else if (len <= room) { /* exact, near the end of the output */
        const uint8_t *src = op - off;
        for (size_t k = 0; k < len; k++)
            op[k] = src[k];
    } else {
        return PERCH_EOVERRUN;
    }
    *pop = op + len;
    return 0;
}

/* Runs tokens while both buffers have slack, on local copies of the positions (stores
 * through the output would otherwise make the compiler reload them from *s). A flag word is
 * loaded as soon as the last one is used up, so the top bit is always a real flag here; a
 * literal run always ends at a 1 flag, so each round is a run of literals (possibly empty:
 * copying ahead costs less than a branch that guesses wrong) then a match. Returns 0 (the
 * slow loop continues from *s), or an error. */
static int fast_loop(struct xstate *s)
{
    const uint8_t *ip = s->ip, *const ilimit = s->iend - IN_SLACK, *half = s->half;
    uint8_t *op = s->op, *const out = s->out, *const oend = s->oend,
            *const olimit = oend - OUT_SLACK;
    uint64_t flags = s->flags;
    int rc = 0;
    if (flags == EMPTY) {
        flags = (uint64_t)rd32(ip) << 32 | SENTINEL;
        ip += 4;
    }
    while (ip <= ilimit && op <= olimit) {
        unsigned run = clz64(flags); /* at most 32: the sentinel stops the count */
        memcpy(op, ip, 16);
        if (run > 16)
            memcpy(op + 16, ip + 16, 16);
        ip += run;
        op += run;
        flags <<= run;
        if (flags != EMPTY) {
            if ((rc = fast_match(&ip, &op, &half, out, oend)) < 0)
                break;
            flags <<= 1;
        }
        if (flags == EMPTY) {
            flags = (uint64_t)rd32(ip) << 32 | SENTINEL;
            ip += 4;
        }
    }
    s->ip = ip;
    s->op = op;
    s->half = half;
    s->flags = flags;
    return rc;
}

/* ---- the slow loop: every read and write checked ------------------------------------- */

/* Like fast_long_length with input checks: -1 truncated, -2 invalid explicit length. */
static int64_t slow_long_length(struct xstate *s)
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

/* One match token (the flag was 1). Returns 1 at the end of the stream, 0 or an error. The
 * copy is copy_match's (exact near the end of the output) or, with bytewise, the
 * specification's byte loop. */
static int slow_match(struct xstate *s, bool bytewise)
{
    if (s->ip == s->iend)
        return 1; /* a match flag with no input left ends the stream */
    if (s->iend - s->ip < 2)
        return PERCH_ETRUNC;
    uint32_t tok = rd16(s->ip);
    s->ip += 2;
    size_t off = (size_t)(tok >> 3) + 1;
    uint64_t len = tok & 7u;
    if (len == 7) {
        int64_t ext = slow_long_length(s);
        if (ext < 0)
            return ext == -1 ? PERCH_ETRUNC : PERCH_EFORMAT;
        len = (uint64_t)ext;
    }
    len += 3;
    if (off > (size_t)(s->op - s->out))
        return PERCH_EFORMAT;
    if (len > (uint64_t)(s->oend - s->op))
        return PERCH_EOVERRUN;
    if (bytewise || len + 32 > (uint64_t)(s->oend - s->op)) {
        const uint8_t *src = s->op - off;
        for (uint64_t k = 0; k < len; k++)
            s->op[k] = src[k];
    } else {
        copy_match(s->op, off, (size_t)len);
    }
    s->op += len;
    return 0;
}

/* One literal. Returns 1 when the input has ended (the end of the stream), 0 or an error. */
static int slow_literal(struct xstate *s)
{
    if (s->ip == s->iend)
        return 1;
    if (s->op == s->oend)
        return PERCH_EOVERRUN;
    *s->op++ = *s->ip++;
    return 0;
}

/* Finishes the stream token by token. Returns 0 at its end, or an error. */
static int slow_loop(struct xstate *s, bool bytewise)
{
    int rc = 0;
    while (rc == 0) {
        if (s->flags == EMPTY) {
            if (s->iend - s->ip < 4)
                return s->ip == s->iend ? 0 : PERCH_ETRUNC;
            s->flags = (uint64_t)rd32(s->ip) << 32 | SENTINEL;
            s->ip += 4;
        }
        uint64_t top = s->flags >> 63;
        s->flags <<= 1;
        rc = top ? slow_match(s, bytewise) : slow_literal(s);
    }
    return rc < 0 ? rc : 0;
}

static int finish(struct xstate *s, int rc, size_t *produced)
{
    if (rc < 0)
        return rc;
    *produced = (size_t)(s->op - s->out);
    return 0;
}

int perch__xpress_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                             size_t *produced)
{
    struct xstate s = {in, in + in_len, out, out, out + out_cap, NULL, EMPTY};
    int rc = 0;
    if (in_len >= IN_SLACK && out_cap >= OUT_SLACK)
        rc = fast_loop(&s);
    return finish(&s, rc == 0 ? slow_loop(&s, false) : rc, produced);
}

int perch__xpress_decompress_slow(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                                  size_t *produced)
{
    struct xstate s = {in, in + in_len, out, out, out + out_cap, NULL, EMPTY};
    return finish(&s, slow_loop(&s, true), produced);
}
