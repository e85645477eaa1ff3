/*
 * CRC-32C with the SSE4.2 crc32 instruction (x86-64 builds only; CMake picks this file or
 * crc32c_generic.c by target processor). The function is compiled for SSE4.2 alone through a
 * target attribute, so the rest of the program keeps the baseline instruction set, and it is
 * called only after cpuid said the processor has SSE4.2 (CPUID leaf 1, ECX bit 20; Intel SDM
 * vol. 2A, "CPUID", and "CRC32"). The instruction computes the same reflected Castagnoli CRC
 * as the portable tables, eight bytes per instruction; tests/unit/test_crc32c.c checks both
 * paths against each other and against known vectors.
 */
#include <cpuid.h>
#include <nmmintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "capture/crc32c.h"

enum { HW_UNKNOWN, HW_NO, HW_YES };

static atomic_int hw_state = HW_UNKNOWN;

static int ask_cpu(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return HW_NO;
    return (ecx & bit_SSE4_2) ? HW_YES : HW_NO;
}

bool perch__crc32c_hw_ok(void)
{
    int s = atomic_load_explicit(&hw_state, memory_order_relaxed);
    if (s == HW_UNKNOWN) {
        s = ask_cpu();
        atomic_store_explicit(&hw_state, s, memory_order_relaxed);
    }
    return s == HW_YES;
}

__attribute__((target("sse4.2"))) uint32_t perch__crc32c_hw(uint32_t crc, const void *data,
                                                            size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof v); /* x86 is little-endian: the bytes in stream order */
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
