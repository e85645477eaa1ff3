/*
 * A budget of log lines per time window, for lines that somebody outside the process can cause
 * at will (a pipe client that may only read, refused or dropped again and again): within the
 * budget every line is written; past it lines are counted instead, the first refusal of a
 * window says so once, and the next line written says how many were left out. So a flood costs
 * a bounded number of lines and cannot rotate older lines (an administrator's recordings, the
 * clients dropped) out of the log. Not thread-safe: the caller serializes.
 */
#ifndef PERCH_UTIL_LOG_BUDGET_H
#define PERCH_UTIL_LOG_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct perch_log_budget {
    uint32_t per_window; /* lines written per window */
    uint64_t window_ms;
    uint64_t window_start;
    uint32_t used;      /* lines written in this window */
    uint64_t held_back; /* lines left out since the last one written */
    bool started;
} perch_log_budget;

typedef enum perch_log_budget_verdict {
    PERCH_LOG_BUDGET_WRITE = 0,  /* write the line (first the count of lines left out, if any) */
    PERCH_LOG_BUDGET_NOTICE = 1, /* the budget just ran out: write a notice instead of the line */
    PERCH_LOG_BUDGET_SKIP = 2,   /* leave the line out (it is counted) */
} perch_log_budget_verdict;

/* per_window >= 1 and window_ms >= 1. */
void perch__log_budget_init(perch_log_budget *b, uint32_t per_window, uint64_t window_ms);

/* What to do with a line at now_ms (a monotonic clock). With WRITE, *left_out gets the number
 * of lines left out since the last line written (0 when none), and the count starts again. */
perch_log_budget_verdict perch__log_budget_take(perch_log_budget *b, uint64_t now_ms,
                                                uint64_t *left_out);

#endif
