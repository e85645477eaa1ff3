/*
 * The few operating-system services the portable programs need (terminal detection for
 * progress output, a monotonic clock for rates and ETAs, peak memory for benchmarks). One
 * implementation per platform, chosen by CMake: src/posix/platform.c and src/win/platform.c.
 */
#ifndef PERCH_PLATFORM_H
#define PERCH_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* True when f is an interactive terminal (progress bars are drawn only then). */
bool perch_is_terminal(FILE *f);

/* Monotonic time in nanoseconds from an arbitrary origin. */
uint64_t perch_monotonic_ns(void);

/* Peak resident set size of this process in bytes, or 0 when unknown. */
uint64_t perch_peak_rss_bytes(void);

#endif
