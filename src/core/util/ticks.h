/*
 * Trace clock ticks as nanoseconds: one exact conversion (no floating point for any real
 * clock) shared by the exports' timelines and the time window's report of where samples lie;
 * and the one rule for a clock whose rate the trace does not give.
 */
#ifndef PERCH_UTIL_TICKS_H
#define PERCH_UTIL_TICKS_H

#include <stdint.h>

/* The rate read for a trace whose perf_freq is 0 (a header without one, a hostile file): the
 * usual QPC rate, 100 ns ticks. */
#define PERCH_DEFAULT_CLOCK_HZ 10000000u

/* Ticks per second of a trace's clock: perf_freq, or PERCH_DEFAULT_CLOCK_HZ for 0. Every
 * reader of times (model, report, exports, recorder, live queries) uses this one rule. */
static inline uint64_t perch__clock_hz(uint64_t perf_freq)
{
    return perf_freq != 0 ? perf_freq : PERCH_DEFAULT_CLOCK_HZ;
}

/* Nanoseconds for a tick count of a clock of freq ticks per second (freq > 0), exactly. */
uint64_t perch__ticks_to_ns(uint64_t ticks, uint64_t freq);

#endif
