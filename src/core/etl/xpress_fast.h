/*
 * The MS-XCA Plain LZ77 fast loop, written once and compiled once per way of copying a short
 * match: etl/xpress.c includes it with portable word copies, etl/cpu/xpress_x86_64.c with
 * SSSE3 shuffles. The includer defines, before including this file,
 *   XPRESS_FAST_TARGET   attributes for the functions that inline the copy (a target
 *                        attribute, or nothing), and
 *   xpress_copy_short(op, off)   copies a match of 3 to 9 bytes from off back (1 <= off <=
 *                        bytes already written) without a branch, writing at most 16 bytes,
 * and gets `static int xpress_fast_loop(struct xpress_state *s)`.
 *
 * The loop runs while both buffers have room to spare: at least XPRESS_IN_SLACK input bytes
 * and XPRESS_OUT_SLACK output bytes, enough for any token whose length needs no explicit
 * 16- or 32-bit field, so it checks bounds once per round of a literal run and a match, never
 * per byte. What makes it fast (measured on the x64 PerfView trace, whose ~1.3 M matches
 * average 17.6 output bytes with one literal between two of them, so the cost is per token,
 * not per byte, and follows the branches no predictor learns; docs/etl-format.md has the
 * figures):
 *   - Flags are kept bit-reversed (flag i at bit i, a 1 at bit 32 closes the word) with each
 *     match flag cleared once used. The next match flag is a count of trailing zeros and the
 *     only state carried from one token to the next is r & (r - 1).
 *   - A literal run is copied as 16 bytes, or 32 when longer.
 *   - One branch per match, on a length code of 7 (a third of the matches, in no pattern a
 *     predictor learns). A shorter match (3 to 9 bytes) is copied without a branch whatever
 *     its offset; a fifth of them have offsets below 16, which a branch on the offset missed.
 *     A long match is copied as 64 bytes, then 16-byte words, for offsets of 16 and more
 *     (below 16 is rare among long matches). Whether the shared half byte is pending is which
 *     of two copies of the loop runs, and whether it is 15 a mask. Copies may run past the
 *     match into the slack. Branch-free lengths for every match were slower: they put the
 *     loads of the length bytes into the chain from one token's position to the next.
 *   - A match reaching before the start of the output is possible only in the first 8 KiB
 *     (the largest offset is 8192), so the loop runs in two phases, the check in the first.
 */
#ifndef PERCH_ETL_XPRESS_FAST_H
#define PERCH_ETL_XPRESS_FAST_H

#include "etl/xpress_loop.h"
#include "perch/error.h"

/* A long match (offset of 16 or more: 64 bytes, then 16-byte words; below: pattern words),
 * writing up to max(len + 15, 64) bytes. */
__attribute__((always_inline)) static inline void xpress_copy_long(uint8_t *op, size_t off,
                                                                   size_t len)
{
    uint8_t *end = op + len;
    if (__builtin_expect(off >= 16, 1)) {
        const uint8_t *src = op - off;
        xpress_copy32(op, src);
        xpress_copy32(op + 32, src + 32);
        if (len > 64)
            xpress_copy_words(op + 64, src + 64, end);
    } else {
        xpress_copy_pattern(op, off, len);
    }
}

/* The explicit 16- or 32-bit length at *ip (the whole length minus 3); advances *ip.
 * Returns 0 for a value below what the short forms cover (a format error). */
__attribute__((always_inline)) static inline uint64_t xpress_explicit_length(const uint8_t **ip)
{
    uint32_t len = perch__le16(*ip);
    *ip += 2;
    if (len == 0) {
        len = perch__le32(*ip);
        *ip += 4;
    }
    return len < 15 + 7 ? 0 : (uint64_t)len + 3;
}

/* Copies a match of an explicit length len (0: invalid) to op, exactly when it ends within
 * XPRESS_COPY_OVER of the end of the output. Returns the new op, or NULL with PERCH_EFORMAT
 * or PERCH_EOVERRUN in *rc. Not inlined: rare, and it keeps the loop's registers free. */
static uint8_t *xpress_explicit_copy(uint8_t *op, const uint8_t *oend, size_t off, uint64_t len,
                                     int *rc)
{
    uint64_t room = (uint64_t)(oend - op);
    if (len == 0 || len > room) {
        *rc = len == 0 ? PERCH_EFORMAT : PERCH_EOVERRUN;
        return NULL;
    }
    if (len + XPRESS_COPY_OVER <= room) {
        xpress_copy_match(op, off, (size_t)len);
    } else {
        const uint8_t *src = op - off;
        for (size_t k = 0; k < len; k++)
            op[k] = src[k];
    }
    return op + len;
}

/* One round of the fast loop in the state HAVE (1: a half byte is pending, its nibble in pn),
 * inside xpress_fast_phase: a literal run, possibly empty (copying ahead costs less than a
 * branch that guesses wrong), then a match or the next flag word. A long match continues in
 * the loop of the other state (label OTHER); leaving sets `have` and goes to `done`. A macro,
 * not a function, because the two loops differ only in HAVE and jump into each other. */
#define XPRESS_ROUNDS(HAVE, OTHER)                                                          \
    while (ip <= ilimit && op <= olimit) {                                                   \
        unsigned p = (unsigned)__builtin_ctzll(r), run = p - q;                              \
        memcpy(op, ip, 16);                                                                  \
        if (run > 16)                                                                        \
            memcpy(op + 16, ip + 16, 16);                                                    \
        ip += run;                                                                           \
        op += run;                                                                           \
        if (p == 32) { /* the word ended: the next one follows its last literal */          \
            r = xpress_flag_word(ip);                                                        \
            q = 0;                                                                           \
            ip += 4;                                                                         \
            continue;                                                                        \
        }                                                                                    \
        r &= r - 1;                                                                          \
        q = p + 1;                                                                           \
        uint32_t tok = perch__le16(ip), nib, x, is15;                                        \
        size_t off = (size_t)(tok >> 3) + 1, len = tok & 7u;                                 \
        ip += 2;                                                                             \
        if (near_start && off > (size_t)(op - out)) {                                        \
            rc = PERCH_EFORMAT;                                                              \
            have = HAVE;                                                                     \
            goto done;                                                                       \
        }                                                                                    \
        if (len != 7) {                                                                      \
            xpress_copy_short(op, off);                                                      \
            op += len + 3;                                                                   \
            continue;                                                                        \
        }                                                                                    \
        if (HAVE) { /* the pending high nibble; 15 continues in the next byte */             \
            nib = pn;                                                                        \
            is15 = (nib + 1) >> 4;                                                           \
            x = ip[0];                                                                       \
            ip += is15;                                                                      \
        } else { /* a new half byte: its low nibble now, its high one for the next */       \
            uint32_t b0 = ip[0];                                                             \
            nib = b0 & 15u;                                                                  \
            pn = b0 >> 4;                                                                    \
            is15 = (nib + 1) >> 4;                                                           \
            x = ip[1];                                                                       \
            ip += 1 + is15;                                                                  \
        }                                                                                    \
        len = 10 + nib + (x & (0u - is15));                                                 \
        if (__builtin_expect(len == XPRESS_SHORT_MAX + 1, 0)) {                              \
            uint64_t xlen = xpress_explicit_length(&ip);                                     \
            if ((op = xpress_explicit_copy(op, oend, off, xlen, &rc)) == NULL) {             \
                have = !(HAVE);                                                              \
                goto done;                                                                   \
            }                                                                                \
            goto OTHER;                                                                      \
        }                                                                                    \
        xpress_copy_long(op, off, len);                                                      \
        op += len;                                                                           \
        goto OTHER;                                                                          \
    }                                                                                        \
    have = HAVE;                                                                             \
    goto done;

/* Runs tokens while both buffers have slack (and, with near_start, while within the first
 * XPRESS_MAX_OFFSET bytes of output, checking each match's offset), on local copies of the
 * state (stores through the output would otherwise make the compiler reload them from *s).
 * Whether a half byte is pending is which of two copies of the loop runs, not a value: each
 * long length then reads its bytes without selecting between the two cases. Returns 0 (the
 * next phase continues from *s), or an error. */
XPRESS_FAST_TARGET __attribute__((always_inline)) static inline int
xpress_fast_phase(struct xpress_state *s, bool near_start)
{
    const uint8_t *ip = s->ip, *const ilimit = s->iend - XPRESS_IN_SLACK;
    uint8_t *op = s->op, *const out = s->out, *const oend = s->oend;
    uint8_t *olimit = oend - XPRESS_OUT_SLACK;
    uint64_t r = s->r & (~0ull << s->q); /* the checked loop leaves used match flags set */
    unsigned q = s->q, pn = s->pend & 15u, have = 0;
    int rc = 0;
    if (near_start && (size_t)(olimit - out) > XPRESS_MAX_OFFSET)
        olimit = out + XPRESS_MAX_OFFSET;
    if (s->pend != 0)
        goto pending;
none_pending:
    XPRESS_ROUNDS(0, pending)
pending:
    XPRESS_ROUNDS(1, none_pending)
done:
    s->ip = ip;
    s->op = op;
    s->r = r;
    s->q = q;
    s->pend = have ? 16u | pn : 0;
    return rc;
}

#undef XPRESS_ROUNDS

XPRESS_FAST_TARGET static int xpress_fast_loop(struct xpress_state *s)
{
    int rc = xpress_fast_phase(s, true);
    if (rc == 0 && (size_t)(s->op - s->out) >= XPRESS_MAX_OFFSET)
        rc = xpress_fast_phase(s, false);
    return rc;
}

#endif
