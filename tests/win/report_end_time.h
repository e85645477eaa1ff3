/*
 * The end time in a report's JSON (`"end_time":N` in its header), set to 0 for comparing a
 * report of the live path with one of the offline path: a real-time session has no end time
 * (the live path's trace info says 0), while the .etl the fake ETW replays has one in its
 * header. Used by test_etw_replay and test_perchd_live, which compare the two byte for byte.
 */
#ifndef PERCH_TEST_REPORT_END_TIME_H
#define PERCH_TEST_REPORT_END_TIME_H

#include <stdbool.h>
#include <string.h>

/* Rewrites the number after the first "end_time": to 0 (the text shrinks or stays); false
 * when json has no such number. */
static inline bool perch_test_zero_end_time(char *json)
{
    char *p = strstr(json, "\"end_time\":");
    if (p == NULL)
        return false;
    p += strlen("\"end_time\":");
    size_t digits = strspn(p, "0123456789");
    if (digits == 0)
        return false;
    memmove(p + 1, p + digits, strlen(p + digits) + 1);
    p[0] = '0';
    return true;
}

#endif
