/*
 * MS-XCA Plain LZ77 decoder ([MS-XCA] 2.4, "Plain LZ77 Decompression Algorithm Details"):
 * the entry points and the checked loop.
 *
 * Two loops produce the same output. The fast loop (etl/xpress_fast.h) runs while both
 * buffers have room to spare, checking bounds once per round of a literal run and a match;
 * this file compiles it with portable copies, and etl/cpu/xpress_*.c (chosen by CMake) with
 * the processor's when cpuid says it has them. The checked slow loop here finishes the stream
 * token by token, testing every read and write. perch__xpress_decompress_slow runs that loop
 * alone with byte-by-byte matches, the reference the differential fuzz target
 * (tests/fuzz/fuzz_xpress_diff.c) and tests/unit/test_xpress.c hold both fast loops to.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "etl/xpress.h"
#include "etl/xpress_loop.h"
#include "perch/error.h"

/* ---- the fast loop with portable copies ----------------------------------------------- */

/* Per offset below 8: a multiple of the offset from 1 to 8, the distance the ninth byte of a
 * short match repeats from. */
static const uint8_t nine_step[8] = {0, 8, 8, 6, 8, 5, 6, 7};

/* A match of 3 to 9 bytes without a branch on the offset: one word of the pattern (the word
 * itself from 8 back and more), then the ninth byte from a word just written or from the
 * source. The mask is kept from the compiler, which would turn it back into a branch. */
__attribute__((always_inline)) static inline void xpress_copy_short(uint8_t *op, size_t off)
{
    size_t lt8 = 0 - (size_t)(off < 8);
    __asm__("" : "+r"(lt8));
    size_t k = off & lt8, s9 = nine_step[k] + (off & ~lt8);
    xpress_store64(op, (xpress_load64(op - off) & xpress_pattern_mask[k]) * xpress_pattern_mul[k]);
    op[8] = *(op + 8 - s9); /* (op + 8) - s9: s9 may pass 8 */
}

#define XPRESS_FAST_TARGET
#include "etl/xpress_fast.h"

int perch__xpress_fast_portable(struct xpress_state *s)
{
    return xpress_fast_loop(s);
}

/* ---- the slow loop: every read and write checked ------------------------------------- */

/* Like fast_long_length and fast_explicit_length with input checks: -1 truncated, -2 invalid
 * explicit length. */
static int64_t slow_long_length(struct xpress_state *s)
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
            len = perch__le16(s->ip);
            s->ip += 2;
            if (len == 0) {
                if (s->iend - s->ip < 4)
                    return -1;
                len = perch__le32(s->ip);
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
 * copy is xpress_copy_match's (wide, past the match) with room to spare, or, near the end of
 * the output and always with bytewise, exactly the specification's byte loop's bytes, done as
 * plain copies that each read only bytes already written. */
static int slow_match(struct xpress_state *s, bool bytewise)
{
    if (s->ip == s->iend)
        return 1; /* a match flag with no input left ends the stream */
    if (s->iend - s->ip < 2)
        return PERCH_ETRUNC;
    uint32_t tok = perch__le16(s->ip);
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
    if (bytewise || len + XPRESS_COPY_OVER > (uint64_t)(s->oend - s->op)) {
        /* Byte k of the match is byte k - off, so it is also byte k - j * off: the first off
         * bytes are one plain copy, and after that the done bytes (a multiple of off) are
         * copied again as they are, doubling them, until the match is complete. Each copy
         * reads only bytes written before it. */
        uint64_t done = 0;
        while (done < len) {
            uint64_t back = done ? done : off;
            uint64_t n = len - done < back ? len - done : back;
            memcpy(s->op + done, s->op + done - back, (size_t)n);
            done += n;
        }
    } else {
        xpress_copy_match(s->op, off, (size_t)len);
    }
    s->op += len;
    return 0;
}

/* One literal. Returns 1 when the input has ended (the end of the stream), 0 or an error. */
static int slow_literal(struct xpress_state *s)
{
    if (s->ip == s->iend)
        return 1;
    if (s->op == s->oend)
        return PERCH_EOVERRUN;
    *s->op++ = *s->ip++;
    return 0;
}

/* Finishes the stream token by token. Returns 0 at its end, or an error. */
static int slow_loop(struct xpress_state *s, bool bytewise)
{
    int rc = 0;
    while (rc == 0) {
        if (s->q == 32) {
            if (s->iend - s->ip < 4)
                return s->ip == s->iend ? 0 : PERCH_ETRUNC;
            s->r = xpress_flag_word(s->ip);
            s->q = 0;
            s->ip += 4;
        }
        uint64_t match = (s->r >> s->q++) & 1u;
        rc = match ? slow_match(s, bytewise) : slow_literal(s);
    }
    return rc < 0 ? rc : 0;
}

static int finish(struct xpress_state *s, int rc, size_t *produced)
{
    if (rc < 0)
        return rc;
    *produced = (size_t)(s->op - s->out);
    return 0;
}

/* Tests set this to run the portable fast loop where the processor's would run. */
static atomic_bool portable_only;

bool perch__xpress_set_portable(bool on)
{
    return atomic_exchange_explicit(&portable_only, on, memory_order_relaxed);
}

int perch__xpress_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                             size_t *produced)
{
    struct xpress_state s = {in, in + in_len, out, out, out + out_cap, XPRESS_CLOSED, 32, 0};
    int rc = 0;
    if (in_len >= XPRESS_IN_SLACK && out_cap >= XPRESS_OUT_SLACK) {
        bool simd = perch__xpress_simd_ok() &&
                    !atomic_load_explicit(&portable_only, memory_order_relaxed);
        rc = simd ? perch__xpress_fast_simd(&s) : perch__xpress_fast_portable(&s);
    }
    return finish(&s, rc == 0 ? slow_loop(&s, false) : rc, produced);
}

int perch__xpress_decompress_slow(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                                  size_t *produced)
{
    struct xpress_state s = {in, in + in_len, out, out, out + out_cap, XPRESS_CLOSED, 32, 0};
    return finish(&s, slow_loop(&s, true), produced);
}
