/*
 * The log-line budget (log_budget.h): fixed windows of window_ms from the first line, at most
 * per_window lines written in each; the lines past it are counted and reported with the next
 * line written.
 */
#include "util/log_budget.h"

void perch__log_budget_init(perch_log_budget *b, uint32_t per_window, uint64_t window_ms)
{
    b->per_window = per_window ? per_window : 1;
    b->window_ms = window_ms ? window_ms : 1;
    b->window_start = 0;
    b->used = 0;
    b->held_back = 0;
    b->started = false;
}

perch_log_budget_verdict perch__log_budget_take(perch_log_budget *b, uint64_t now_ms,
                                                uint64_t *left_out)
{
    *left_out = 0;
    if (!b->started || now_ms < b->window_start || now_ms - b->window_start >= b->window_ms) {
        b->started = true;
        b->window_start = now_ms;
        b->used = 0;
    }
    if (b->used < b->per_window) {
        b->used++;
        *left_out = b->held_back;
        b->held_back = 0;
        return PERCH_LOG_BUDGET_WRITE;
    }
    return b->held_back++ == 0 ? PERCH_LOG_BUDGET_NOTICE : PERCH_LOG_BUDGET_SKIP;
}
