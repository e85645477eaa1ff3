/*
 * Trace clock ticks as nanoseconds: one exact conversion (no floating point for any real
 * clock) shared by the exports' timelines and the time window's report of where samples lie.
 */
#ifndef PERCH_UTIL_TICKS_H
#define PERCH_UTIL_TICKS_H

#include <stdint.h>

/* Nanoseconds for a tick count of a clock of freq ticks per second (freq > 0), exactly. */
uint64_t perch__ticks_to_ns(uint64_t ticks, uint64_t freq);

#endif
