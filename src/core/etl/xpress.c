/*
 * MS-XCA Plain LZ77 decoder ([MS-XCA] 2.4, "Plain LZ77 Decompression Algorithm Details").
 *
 * Two loops produce the same output. The fast loop runs while both buffers have room to
 * spare: at least IN_SLACK input bytes and OUT_SLACK output bytes, enough for any token whose
 * length needs no explicit 16- or 32-bit field, so it checks bounds once per round of a
 * literal run and a match, never per byte. The checked slow loop finishes the stream token
 * by token, testing every read and write. perch__xpress_decompress_slow runs that loop alone
 * with byte-by-byte matches, the reference the differential fuzz target
 * (tests/fuzz/fuzz_xpress_diff.c) holds the fast path to.
 *
 * What makes the fast loop fast (measured on the x64 PerfView trace, whose ~1.3 M matches
 * average 17.6 output bytes with one literal between two of them, so the cost is per token,
 * not per byte; docs/etl-format.md has the figures):
 *   - Flags are kept bit-reversed (flag i at bit i, a 1 at bit 32 closes the word) with each
 *     match flag cleared once used. The next match flag is a count of trailing zeros and the
 *     only state carried from one token to the next is r & (r - 1), instead of a count of
 *     leading zeros and a shift by it, which chained about 7 cycles per token.
 *   - A literal run is copied as 16 bytes, or 32 when longer; a match as 16-byte words for
 *     offsets of 16 or more (32 bytes, then 64, then a loop), and below 16 as one 8-byte word
 *     of the repeated pattern (a multiply spreads the offset's bytes) then 8-byte words from a
 *     multiple of the offset at least 8 back. Copies may run past the match into the slack.
 *   - A length code of 7 takes one branch (a third of the matches are long, in no pattern a
 *     predictor learns); inside it, whether the shared half byte is pending and whether it is
 *     15 are computed with masks. A fully branch-free length was slower: it puts the loads of
 *     the length bytes into the chain from one token's position to the next.
 *   - A match reaching before the start of the output is possible only in the first 8 KiB
 *     (the largest offset is 8192), so the loop runs in two phases, the check in the first.
 */
#include <stdbool.h>
#include <string.h>

#include "etl/xpress.h"
#include "perch/error.h"

#define MAX_OFFSET 8192u         /* 13 offset bits + 1 */
#define SHORT_MAX  (3 + 7 + 15 + 254) /* the longest match without an explicit length */
#define COPY_OVER  64u           /* copy_match writes at most max(len + 15, 64) bytes */
/* A literal run (32), its flag word (4), the longest match token (2 + 1 + 1 + 6). */
#define IN_SLACK 48u
/* A literal run (32), then a match of up to SHORT_MAX copied by copy_match (+ 15). */
#define OUT_SLACK (32u + SHORT_MAX + 15u)
#define CLOSED    (1ull << 32) /* the bit after a flag word's 32 flags */

/* Flags: r holds the current word bit-reversed (flag i at bit i) with CLOSED set, and q
 * counts the flags used. The slow loop reads bit q; the fast loop also clears each match
 * flag it uses, so its next match is the lowest set bit. pend is 16 | the high nibble of a
 * half byte whose low nibble a long match used, or 0. */
struct xstate {
    const uint8_t *ip, *iend;
    uint8_t *out, *op, *oend;
    uint64_t r;
    unsigned q, pend;
};

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t load64(const uint8_t *p) /* native order: only moved, never decoded */
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void store64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The flag word at p, reversed so that its first flag (the most significant bit) is bit 0. */
static inline uint64_t flag_word(const uint8_t *p)
{
    uint32_t v = rd32(p);
    v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
    v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
    v = ((v >> 4) & 0x0f0f0f0fu) | ((v & 0x0f0f0f0fu) << 4);
    return (uint64_t)__builtin_bswap32(v) | CLOSED;
}

/* ---- the fast loop: room for every read and for OUT_SLACK bytes of writes is known ---- */

/* Per offset below 8 (0 stands for 8 and more): the bytes of the pattern, the multiplier that
 * repeats them across a word (the copies' bit ranges are disjoint, so nothing carries), and
 * the distance, a multiple of the offset from 8 to 8 + offset, words are copied from. */
static const uint64_t pattern_mask[8] = {
    ~0ull, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull,
    0xffffffffffffffull};
static const uint64_t pattern_mul[8] = {
    1, 0x0101010101010101ull, 0x0001000100010001ull, 0x0001000001000001ull,
    0x0000000100000001ull, 0x0000010000000001ull, 0x0001000000000001ull, 0x0100000000000001ull};
static const uint8_t pattern_step[8] = {0, 8, 8, 9, 8, 10, 12, 14};

/* Copies len bytes from off back (off <= bytes already written): whole words that may run
 * past the end, up to max(len + 15, COPY_OVER) bytes in all. Always inlined: a call costs as
 * much as the copy of a typical match. */
__attribute__((always_inline)) static inline void copy_match(uint8_t *op, size_t off, size_t len)
{
    uint8_t *end = op + len;
    if (__builtin_expect(off >= 16, 1)) {
        const uint8_t *src = op - off;
        memcpy(op, src, 16);
        memcpy(op + 16, src + 16, 16);
        if (len > 32) {
            memcpy(op + 32, src + 32, 16);
            memcpy(op + 48, src + 48, 16);
            for (op += 64, src += 64; op < end; op += 16, src += 16)
                memcpy(op, src, 16);
        }
    } else {
        size_t k = off < 8 ? off : 0, step = off < 8 ? pattern_step[k] : off;
        store64(op, (load64(op - off) & pattern_mask[k]) * pattern_mul[k]);
        for (op += 8; op < end; op += 8)
            store64(op, load64(op - step));
    }
}

/* The length of a match whose 3-bit code was 7 ([MS-XCA] 2.4.4: a half byte, 15 there
 * continues in a byte), for ip just after the token; advances *ip and updates *pend. The
 * result is 3 + 7 + 15 + 255 when an explicit length follows. */
__attribute__((always_inline)) static inline size_t fast_long_length(const uint8_t **ip,
                                                                     unsigned *pend)
{
    uint32_t b0 = (*ip)[0], have = *pend >> 4, hm = 0u - have;
    uint32_t nib = ((*pend & hm) | (b0 & ~hm)) & 15u;
    uint32_t adv = have ^ 1u, x = (*ip)[adv], is15 = (nib + 1) >> 4;
    *pend = (16u | (b0 >> 4)) & ~hm;
    *ip += adv + is15;
    return 10 + nib + (x & (0u - is15));
}

/* The explicit 16- or 32-bit length at *ip (the whole length minus 3); advances *ip.
 * Returns 0 for a value below what the short forms cover (a format error). */
__attribute__((always_inline)) static inline uint64_t fast_explicit_length(const uint8_t **ip)
{
    uint32_t len = rd16(*ip);
    *ip += 2;
    if (len == 0) {
        len = rd32(*ip);
        *ip += 4;
    }
    return len < 15 + 7 ? 0 : (uint64_t)len + 3;
}

/* Copies a match of an explicit length len (0: invalid) to op, exactly when it ends within
 * COPY_OVER of the end of the output. Returns the new op, or NULL with PERCH_EFORMAT or
 * PERCH_EOVERRUN in *rc. Not inlined: rare, and it keeps the loop's registers free. */
static uint8_t *fast_explicit_copy(uint8_t *op, const uint8_t *oend, size_t off, uint64_t len,
                                   int *rc)
{
    uint64_t room = (uint64_t)(oend - op);
    if (len == 0 || len > room) {
        *rc = len == 0 ? PERCH_EFORMAT : PERCH_EOVERRUN;
        return NULL;
    }
    if (len + COPY_OVER <= room) {
        copy_match(op, off, (size_t)len);
    } else {
        const uint8_t *src = op - off;
        for (size_t k = 0; k < len; k++)
            op[k] = src[k];
    }
    return op + len;
}

/* Runs tokens while both buffers have slack (and, with near_start, while within the first
 * MAX_OFFSET bytes of output, checking each match's offset), on local copies of the state
 * (stores through the output would otherwise make the compiler reload them from *s). Each
 * round is a literal run, possibly empty (copying ahead costs less than a branch that guesses
 * wrong), then a match or the next flag word. Returns 0 (the next phase continues from *s),
 * or an error. */
__attribute__((always_inline)) static inline int fast_phase(struct xstate *s, bool near_start)
{
    const uint8_t *ip = s->ip, *const ilimit = s->iend - IN_SLACK;
    uint8_t *op = s->op, *const out = s->out, *const oend = s->oend, *olimit = oend - OUT_SLACK;
    uint64_t r = s->r & (~0ull << s->q); /* the slow loop leaves used match flags set */
    unsigned q = s->q, pend = s->pend;
    int rc = 0;
    if (near_start && (size_t)(olimit - out) > MAX_OFFSET)
        olimit = out + MAX_OFFSET;
    while (ip <= ilimit && op <= olimit) {
        unsigned p = (unsigned)__builtin_ctzll(r), run = p - q;
        memcpy(op, ip, 16);
        if (run > 16)
            memcpy(op + 16, ip + 16, 16);
        ip += run;
        op += run;
        if (p == 32) { /* the word ended: the next one follows its last literal */
            r = flag_word(ip);
            q = 0;
            ip += 4;
            continue;
        }
        r &= r - 1;
        q = p + 1;
        uint32_t tok = rd16(ip);
        size_t off = (size_t)(tok >> 3) + 1, len = tok & 7u;
        ip += 2;
        if (len == 7)
            len = fast_long_length(&ip, &pend);
        else
            len += 3;
        if (near_start && off > (size_t)(op - out)) {
            rc = PERCH_EFORMAT;
            break;
        }
        if (__builtin_expect(len == SHORT_MAX + 1, 0)) {
            uint64_t xlen = fast_explicit_length(&ip);
            if ((op = fast_explicit_copy(op, oend, off, xlen, &rc)) == NULL)
                break;
            continue;
        }
        copy_match(op, off, len);
        op += len;
    }
    s->ip = ip;
    s->op = op;
    s->r = r;
    s->q = q;
    s->pend = pend;
    return rc;
}

static int fast_loop(struct xstate *s)
{
    int rc = fast_phase(s, true);
    if (rc == 0 && (size_t)(s->op - s->out) >= MAX_OFFSET)
        rc = fast_phase(s, false);
    return rc;
}

/* ---- the slow loop: every read and write checked ------------------------------------- */

/* Like fast_long_length and fast_explicit_length with input checks: -1 truncated, -2 invalid
 * explicit length. */
static int64_t slow_long_length(struct xstate *s)
{
    uint32_t len;
    if (s->pend == 0) {
        if (s->ip >= s->iend)
            return -1;
        len = *s->ip & 15u;
        s->pend = 16u | (*s->ip++ >> 4);
    } else {
        len = s->pend & 15u;
        s->pend = 0;
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
    if (bytewise || len + COPY_OVER > (uint64_t)(s->oend - s->op)) {
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
        if (s->q == 32) {
            if (s->iend - s->ip < 4)
                return s->ip == s->iend ? 0 : PERCH_ETRUNC;
            s->r = flag_word(s->ip);
            s->q = 0;
            s->ip += 4;
        }
        uint64_t match = (s->r >> s->q++) & 1u;
        rc = match ? slow_match(s, bytewise) : slow_literal(s);
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
    struct xstate s = {in, in + in_len, out, out, out + out_cap, CLOSED, 32, 0};
    int rc = 0;
    if (in_len >= IN_SLACK && out_cap >= OUT_SLACK)
        rc = fast_loop(&s);
    return finish(&s, rc == 0 ? slow_loop(&s, false) : rc, produced);
}

int perch__xpress_decompress_slow(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                                  size_t *produced)
{
    struct xstate s = {in, in + in_len, out, out, out + out_cap, CLOSED, 32, 0};
    return finish(&s, slow_loop(&s, true), produced);
}
