/*
 * The tick-to-nanosecond conversion of util/ticks.h.
 */
#include "util/ticks.h"

uint64_t perch__ticks_to_ns(uint64_t ticks, uint64_t freq)
{
    uint64_t whole, rest;
    if (freq == 10000000u) /* the usual QPC clock (100 ns ticks): the same value, no division */
        return ticks * 100u;
    whole = ticks / freq;
    rest = ticks % freq;
    /* rest < freq; rest * 1e9 fits in 64 bits while freq < 1.8e10 (18 GHz) */
    return whole * 1000000000u + (freq < 18000000000ull
                                      ? rest * 1000000000u / freq
                                      : (uint64_t)((double)rest * 1e9 / (double)freq));
}
