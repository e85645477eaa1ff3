/*
 * Windows implementation of include/perch/platform.h.
 */
#include <windows.h>
#include <io.h>
#include <psapi.h>
#include <stdio.h>

#include "perch/platform.h"

bool perch_is_terminal(FILE *f)
{
    return _isatty(_fileno(f)) != 0;
}

uint64_t perch_monotonic_ns(void)
{
    LARGE_INTEGER freq, now;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    return (uint64_t)((double)now.QuadPart * 1e9 / (double)freq.QuadPart);
}

uint64_t perch_peak_rss_bytes(void)
{
    PROCESS_MEMORY_COUNTERS pmc;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc))
        return 0;
    return (uint64_t)pmc.PeakWorkingSetSize;
}
