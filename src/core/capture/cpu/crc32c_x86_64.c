/*
 * CRC-32C with the SSE4.2 crc32 instruction (x86-64 builds only; CMake picks this file or
 * crc32c_generic.c by target processor), three chains at a time over long inputs. The function is
 * compiled for SSE4.2 alone through a target attribute, so the rest of the program keeps the
 * baseline instruction set, and it is called only after cpuid said the processor has SSE4.2 (CPUID
 * leaf 1, ECX bit 20; Intel SDM vol. 2A, "CPUID", and "CRC32"). The instruction computes the same
 * reflected Castagnoli CRC as the portable tables, eight bytes per instruction;
 * tests/unit/test_crc32c.c checks both paths against each other (every length and alignment around
 * the block sizes too) and against known vectors.
 */
#include <nmmintrin.h>
#include <string.h>

#include "capture/crc32c.h"
#include "util/cpuid_x86.h"

static atomic_int hw_state = PERCH_CPU_UNKNOWN;

bool perch__crc32c_hw_ok(void)
{
    return perch__cpu_leaf1_ecx(&hw_state, bit_SSE4_2);
}

/* One chain of crc32 instructions waits for the previous one (3 cycles each, one issued per
 * cycle): three independent chains over three neighbouring blocks run about three times as
 * fast. Their CRCs are then joined: the state after block A and block B is the state after A
 * moved over len(B) zero bytes, xor the state B gives from zero (the CRC is linear). Moving a
 * state over LONG or SHORT zero bytes is linear in its 32 bits: four table lookups, tables
 * built once from the instruction itself. */
#define LONG  8192u
#define SHORT 256u

struct shift {
    uint32_t t[4][256];
};

static struct shift shift_long, shift_short;
static atomic_int shift_state; /* 0: not built, 1: being built, 2: built */

__attribute__((target("sse4.2"))) static uint32_t over_zeros(uint32_t c, size_t len)
{
    uint64_t v = c;
    for (size_t i = 0; i < len; i += 8)
        v = _mm_crc32_u64(v, 0);
    return (uint32_t)v;
}

static void build_shift(struct shift *s, size_t len)
{
    uint32_t bit[32];
    for (unsigned i = 0; i < 32; i++)
        bit[i] = over_zeros(1u << i, len);
    for (unsigned k = 0; k < 4; k++) {
        for (unsigned b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (unsigned i = 0; i < 8; i++)
                if (b & (1u << i))
                    v ^= bit[8 * k + i];
            s->t[k][b] = v;
        }
    }
}

/* The tables, built by the first caller (others wait for it). */
static void need_shifts(void)
{
    int expect = 0;
    if (atomic_load_explicit(&shift_state, memory_order_acquire) == 2)
        return;
    if (atomic_compare_exchange_strong(&shift_state, &expect, 1)) {
        build_shift(&shift_long, LONG);
        build_shift(&shift_short, SHORT);
        atomic_store_explicit(&shift_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&shift_state, memory_order_acquire) != 2)
        ;
}

static uint32_t shift(const struct shift *s, uint32_t c)
{
    return s->t[0][c & 0xff] ^ s->t[1][(c >> 8) & 0xff] ^ s->t[2][(c >> 16) & 0xff] ^
           s->t[3][c >> 24];
}

/* Three chains over the three blocks of n bytes at p: the state c moved over 3n bytes. */
__attribute__((target("sse4.2"))) static uint64_t three_blocks(uint64_t c, const uint8_t *p,
                                                               size_t n, const struct shift *s)
{
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v0, v1, v2;
        memcpy(&v0, p + i, 8); /* x86 is little-endian: the bytes in stream order */
        memcpy(&v1, p + n + i, 8);
        memcpy(&v2, p + 2 * n + i, 8);
        c = _mm_crc32_u64(c, v0);
        c1 = _mm_crc32_u64(c1, v1);
        c2 = _mm_crc32_u64(c2, v2);
    }
    c = shift(s, (uint32_t)c) ^ (uint32_t)c1;
    return shift(s, (uint32_t)c) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) uint32_t perch__crc32c_hw(uint32_t crc, const void *data,
                                                            size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    if (len >= 3 * SHORT)
        need_shifts();
    for (; len >= 3 * LONG; p += 3 * LONG, len -= 3 * LONG)
        c = three_blocks(c, p, LONG, &shift_long);
    for (; len >= 3 * SHORT; p += 3 * SHORT, len -= 3 * SHORT)
        c = three_blocks(c, p, SHORT, &shift_short);
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
