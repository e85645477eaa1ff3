/*
 * XPRESS fast loop with SSSE3 (x86-64 builds only; CMake picks this file or
 * xpress_generic.c by target processor). It is etl/xpress_fast.h with one change: a match
 * of 3 to 9 bytes (two thirds of the matches) is copied as one 16-byte load, a pshufb and a
 * 16-byte store whatever its offset. The shuffle for an offset k below 16 repeats the k
 * bytes before the match (byte i takes i mod k), for 16 and more it is the identity, so the
 * branch on the offset class that a fifth of these matches went the other way is gone, and
 * with it the multiply and the byte copy of the portable version (Intel SDM vol. 2B,
 * "PSHUFB"). The functions that inline the copy are compiled for SSSE3 through a target
 * attribute, so the rest of the program keeps the baseline instruction set, and run only
 * after cpuid said the processor has SSSE3 (CPUID leaf 1, ECX bit 9).
 */
#include <tmmintrin.h>

#include "etl/xpress_loop.h"
#include "util/cpuid_x86.h"

static atomic_int hw_state = PERCH_CPU_UNKNOWN;

bool perch__xpress_simd_ok(void)
{
    return perch__cpu_leaf1_ecx(&hw_state, bit_SSSE3);
}

/* Row k (1 to 15): byte i takes byte i mod k of the source; row 16: the identity. */
#define ROW(k)                                                                                    \
    {0 % k, 1 % k, 2 % k, 3 % k, 4 % k, 5 % k, 6 % k, 7 % k, 8 % k, 9 % k, 10 % k, 11 % k,     \
     12 % k, 13 % k, 14 % k, 15 % k}
static const uint8_t shuffle[17][16] = {{0},     ROW(1),  ROW(2),  ROW(3),  ROW(4),  ROW(5),
                                        ROW(6),  ROW(7),  ROW(8),  ROW(9),  ROW(10), ROW(11),
                                        ROW(12), ROW(13), ROW(14), ROW(15), ROW(16)};
#undef ROW

/* Reads 16 bytes from off back (those past the end of the output so far are not used) and
 * writes 16. */
__attribute__((target("ssse3"), always_inline)) static inline void
xpress_copy_short(uint8_t *op, size_t off)
{
    size_t k = off < 16 ? off : 16;
    __m128i v = _mm_loadu_si128((const __m128i *)(op - off));
    v = _mm_shuffle_epi8(v, _mm_loadu_si128((const __m128i *)shuffle[k]));
    _mm_storeu_si128((__m128i *)op, v);
}

#define XPRESS_FAST_TARGET __attribute__((target("ssse3")))
#include "etl/xpress_fast.h"

XPRESS_FAST_TARGET int perch__xpress_fast_simd(struct xpress_state *s)
{
    return xpress_fast_loop(s);
}
