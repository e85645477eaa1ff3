/*
 * The live engine's books (include/perch/live.h): loss counters reported as running totals
 * from any thread become ledger entries by their growth on the model thread; the queue's drop
 * counters become live.queue_full and live.queue_oversized the same way; gaps become
 * live.session_gap and live.session_gap_ms; events per second are counted per whole second
 * and averaged over the last rate window. Also the calls other threads ask the model thread
 * to run between two records.
 */
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"
#include "perch/error.h"
#include "util/mem.h"

int perch_live_set_loss(perch_live *l, const char *reason, uint64_t total)
{
    int err = 0;
    if (l == NULL || reason == NULL || strlen(reason) >= LIVE_REASON_MAX)
        return PERCH_EINVAL;
    perch_mutex_lock(l->mu);
    size_t i = 0;
    while (i < l->loss_count && strcmp(l->losses[i].reason, reason) != 0)
        i++;
    if (i == l->loss_count) {
        if (i == PERCH_LIVE_MAX_LOSSES) {
            err = PERCH_ELIMIT;
        } else {
            memset(&l->losses[i], 0, sizeof l->losses[i]);
            memcpy(l->losses[i].reason, reason, strlen(reason) + 1);
            l->loss_count++;
        }
    }
    if (err == 0) {
        struct live_loss *s = &l->losses[i];
        if (total < s->total) /* a new session counts from zero again */
            s->base += s->total;
        s->total = total;
    }
    perch_mutex_unlock(l->mu);
    return err;
}

void perch_live_note_gap(perch_live *l, uint64_t duration_ms)
{
    if (l == NULL)
        return;
    perch_mutex_lock(l->mu);
    l->gaps++;
    l->gap_ms += duration_ms;
    perch_mutex_unlock(l->mu);
}

/* Adds now - *applied under reason; 0 or the model's error. Before the model exists (a lazy
 * trace info, no record yet) nothing is applied: the growth waits for the model. */
static int add_growth(perch_live *l, const char *reason, uint64_t now, uint64_t *applied)
{
    int err = 0;
    if (l->model == NULL)
        return 0;
    if (now > *applied && atomic_load(&l->error) == 0)
        err = perch_model_ledger_add(l->model, reason, now - *applied);
    if (err == 0)
        *applied = now;
    return err;
}

static void update_rate(perch_live *l, uint64_t now_ns)
{
    uint64_t sec = now_ns / 1000000000u;
    if (sec <= l->rate_second)
        return;
    uint64_t ev = atomic_load_explicit(&l->events, memory_order_relaxed);
    l->rate_counts[l->rate_second % LIVE_RATE_SLOTS] = ev - l->rate_start_events;
    for (uint64_t s = l->rate_second + 1; s < sec && s < l->rate_second + LIVE_RATE_SLOTS; s++)
        l->rate_counts[s % LIVE_RATE_SLOTS] = 0;
    l->rate_seconds_seen += sec - l->rate_second;
    l->rate_second = sec;
    l->rate_start_events = ev;
    uint64_t window = l->o.rate_window_s;
    if (window > l->rate_seconds_seen)
        window = l->rate_seconds_seen;
    uint64_t sum = 0;
    for (uint64_t i = 1; i <= window; i++)
        sum += l->rate_counts[(sec - i) % LIVE_RATE_SLOTS];
    perch_mutex_lock(l->mu);
    l->rate = window ? (double)sum / (double)window : 0.0;
    perch_mutex_unlock(l->mu);
}

void perch__live_books(perch_live *l, struct live_books *b)
{
    perch_event_queue_stats qs;
    memset(b, 0, sizeof *b);
    perch_event_queue_get_stats(l->queue, &qs);
    b->dropped = qs.dropped;
    b->oversized = qs.oversized;
    perch_mutex_lock(l->mu);
    b->gaps = l->gaps;
    b->gap_ms = l->gap_ms;
    for (size_t i = 0; i < l->loss_count; i++)
        b->loss[i] = l->losses[i].base + l->losses[i].total;
    perch_mutex_unlock(l->mu);
}

size_t perch__live_books_list(perch_live *l, const struct live_books *b,
                              const struct live_books *minus, char (*reasons)[LIVE_REASON_MAX],
                              uint64_t *values)
{
    static const char *const fixed[] = {"live.queue_full", "live.queue_oversized",
                                        "live.session_gap", "live.session_gap_ms"};
    static const struct live_books none;
    const struct live_books *m = minus != NULL ? minus : &none;
    const uint64_t fixed_values[] = {b->dropped - m->dropped, b->oversized - m->oversized,
                                     b->gaps - m->gaps, b->gap_ms - m->gap_ms};
    for (size_t i = 0; i < 4; i++) {
        snprintf(reasons[i], LIVE_REASON_MAX, "%s", fixed[i]);
        values[i] = fixed_values[i];
    }
    perch_mutex_lock(l->mu);
    size_t n = l->loss_count;
    for (size_t i = 0; i < n; i++) {
        memcpy(reasons[4 + i], l->losses[i].reason, LIVE_REASON_MAX);
        values[4 + i] = b->loss[i] - m->loss[i];
    }
    perch_mutex_unlock(l->mu);
    return 4 + n;
}

int perch__live_apply_books(perch_live *l, uint64_t now_ns, struct live_books *as_applied)
{
    struct live_loss losses[PERCH_LIVE_MAX_LOSSES];
    perch_event_queue_stats qs;
    uint64_t gaps, gap_ms;
    int err = 0;
    perch_mutex_lock(l->mu);
    size_t n = l->loss_count;
    memcpy(losses, l->losses, n * sizeof losses[0]);
    gaps = l->gaps;
    gap_ms = l->gap_ms;
    perch_mutex_unlock(l->mu);
    perch_event_queue_get_stats(l->queue, &qs);
    err = add_growth(l, "live.queue_full", qs.dropped, &l->dropped_applied);
    if (err == 0)
        err = add_growth(l, "live.queue_oversized", qs.oversized, &l->oversized_applied);
    for (size_t i = 0; i < n && err == 0; i++) {
        uint64_t applied = l->losses[i].applied;
        err = add_growth(l, losses[i].reason, losses[i].base + losses[i].total, &applied);
        l->losses[i].applied = applied; /* applied is the model thread's field */
    }
    if (err == 0)
        err = add_growth(l, "live.session_gap", gaps, &l->gaps_applied);
    if (err == 0)
        err = add_growth(l, "live.session_gap_ms", gap_ms, &l->gap_ms_applied);
    update_rate(l, now_ns);
    if (as_applied != NULL) {
        memset(as_applied, 0, sizeof *as_applied);
        as_applied->dropped = qs.dropped;
        as_applied->oversized = qs.oversized;
        as_applied->gaps = gaps;
        as_applied->gap_ms = gap_ms;
        for (size_t i = 0; i < n; i++)
            as_applied->loss[i] = losses[i].base + losses[i].total;
    }
    return err;
}

int perch_live_call(perch_live *l, int (*fn)(void *ctx), void *ctx, uint32_t timeout_ms)
{
    if (l == NULL || fn == NULL)
        return PERCH_EINVAL;
    perch_mutex_lock(l->mu);
    bool handoff = atomic_load(&l->running) && !l->ended;
    if (!handoff) {
        perch_mutex_unlock(l->mu);
        return fn(ctx); /* no model thread to hand it to */
    }
    struct live_call *c = perch__calloc(1, sizeof *c), **tail = &l->calls;
    if (c == NULL) {
        perch_mutex_unlock(l->mu);
        return PERCH_ENOMEM;
    }
    c->fn = fn;
    c->ctx = ctx;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = c;
    atomic_store(&l->calls_pending, true);
    perch_event_queue_wake(l->queue); /* an idle model thread runs it now, not at its tick */
    uint64_t deadline = perch__live_now(l) + (uint64_t)timeout_ms * 1000000u;
    while (!c->done) {
        uint64_t now = perch__live_now(l);
        if (timeout_ms == UINT32_MAX) {
            perch_cond_wait(l->cv, l->mu, UINT32_MAX);
            continue;
        }
        if (now >= deadline)
            break;
        uint64_t left = (deadline - now) / 1000000u + 1;
        perch_cond_wait(l->cv, l->mu, left > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)left);
    }
    int result = c->done ? c->result : PERCH_ETIMEDOUT;
    if (c->done)
        perch__free(c);
    else
        c->abandoned = true;
    perch_mutex_unlock(l->mu);
    return result;
}

void perch__live_run_calls(perch_live *l)
{
    for (;;) {
        perch_mutex_lock(l->mu);
        struct live_call *c = l->calls;
        if (c != NULL)
            l->calls = c->next;
        else
            atomic_store(&l->calls_pending, false);
        perch_mutex_unlock(l->mu);
        if (c == NULL)
            return;
        int result = c->fn(c->ctx);
        perch_mutex_lock(l->mu);
        c->result = result;
        c->done = true;
        bool abandoned = c->abandoned;
        perch_cond_broadcast(l->cv);
        perch_mutex_unlock(l->mu);
        if (abandoned)
            perch__free(c);
    }
}
