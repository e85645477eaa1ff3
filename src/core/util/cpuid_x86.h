/*
 * One question to the x86-64 processor, shared by the files CMake picks for x86-64 builds only
 * (capture/cpu/crc32c_x86_64.c, etl/cpu/xpress_x86_64.c): whether CPUID leaf 1 sets a bit of
 * ECX (Intel SDM vol. 2A, "CPUID": SSSE3 is bit 9, SSE4.2 bit 20). The answer is asked once
 * and kept in the caller's state word; a race asks twice and stores the same answer.
 */
#ifndef PERCH_UTIL_CPUID_X86_H
#define PERCH_UTIL_CPUID_X86_H

#include <cpuid.h>
#include <stdatomic.h>
#include <stdbool.h>

enum { PERCH_CPU_UNKNOWN, PERCH_CPU_NO, PERCH_CPU_YES };

/* True when CPUID leaf 1 reports bit (a bit_* mask of <cpuid.h>) in ECX; *state starts as
 * PERCH_CPU_UNKNOWN. */
static inline bool perch__cpu_leaf1_ecx(atomic_int *state, unsigned bit)
{
    int s = atomic_load_explicit(state, memory_order_relaxed);
    if (s == PERCH_CPU_UNKNOWN) {
        unsigned eax, ebx, ecx, edx;
        s = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit) ? PERCH_CPU_YES : PERCH_CPU_NO;
        atomic_store_explicit(state, s, memory_order_relaxed);
    }
    return s == PERCH_CPU_YES;
}

#endif
