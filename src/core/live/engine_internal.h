/*
 * The live engine's private state (include/perch/live.h), shared by its files: engine.c (life
 * cycle and the model thread's loop), engine_tee.c (the sink that fans the model's records out
 * to the attached sinks) and engine_books.c (loss counters, gaps, rates and calls run on the
 * model thread).
 *
 * Threads: fields marked "model" belong to the model thread once it runs; fields marked "mu"
 * are guarded by mu; atomics may be read anywhere.
 */
#ifndef PERCH_LIVE_ENGINE_INTERNAL_H
#define PERCH_LIVE_ENGINE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "perch/live.h"
#include "perch/thread.h"
#include "state.h"

#define LIVE_NAME_MAX   PERCH_LIVE_SINK_NAME_MAX
#define LIVE_REASON_MAX 48
#define LIVE_RATE_SLOTS 64 /* per-second counts kept for the rate window */

/* The engine's books as a sink saw them when it was attached (for its ledger at detach). */
struct live_books {
    uint64_t dropped, oversized, gaps, gap_ms;
    uint64_t loss[PERCH_LIVE_MAX_LOSSES]; /* base + total of each reason */
};

/* The model's ledger as a sink saw it when it came (engine_counts.c). */
struct live_count {
    char *name;
    uint64_t value;
};

struct live_counts {
    struct live_count *e;
    size_t count, cap;
    bool taken; /* the sink came late: no copy when it was there from the start */
};

struct live_slot {
    char name[LIVE_NAME_MAX]; /* mu (written on the model thread) */
    bool used;                /* mu (written on the model thread) */
    perch_sink sink;
    perch_live_idle_fn idle;
    void *idle_ctx;    /* what idle is called with (the sink's ctx unless attached otherwise) */
    _Atomic int error; /* sticky: the slot is off once set (model writes) */
    bool finished;     /* model: its finish was called */
    struct live_books base;
    struct live_counts counts; /* model: empty for a sink added before the start */
};

struct live_loss {
    char reason[LIVE_REASON_MAX];
    uint64_t total;   /* mu: the last total reported */
    uint64_t applied; /* model: the part already in the ledger */
    uint64_t base;    /* mu: what earlier totals added before the counter restarted from 0 */
};

struct live_call {
    int (*fn)(void *ctx);
    void *ctx;
    int result;
    bool done;      /* mu */
    bool abandoned; /* mu: the caller timed out; the model thread frees it */
    struct live_call *next;
};

struct perch_live {
    perch_live_options o;
    perch_event_queue *queue;
    perch_model *model; /* model */
    perch_sink tee;
    perch__live_state *state; /* with attachable: what late sinks are brought up to date with */
    perch_sink state_sink;
    _Atomic int state_error;
    struct live_slot slots[PERCH_LIVE_MAX_SINKS];
    size_t slot_count;
    char *source; /* owned copies of the trace info's strings */
    char *session_config;
    perch_thread *thread;
    perch_mutex *mu;
    perch_cond *cv; /* signalled when a call is done or the thread ended */

    /* mu */
    struct live_loss losses[PERCH_LIVE_MAX_LOSSES];
    size_t loss_count;
    uint64_t gaps, gap_ms;
    struct live_call *calls;    /* pending, oldest first */
    _Atomic bool calls_pending; /* calls != NULL, for the model thread's look without mu */
    double rate;
    bool ended; /* the model thread finished its work */

    /* model */
    uint64_t gaps_applied, gap_ms_applied;
    uint64_t dropped_applied, oversized_applied;
    uint64_t rate_counts[LIVE_RATE_SLOTS];
    uint64_t rate_second;       /* the second rate_counts[rate_second % SLOTS] counts */
    uint64_t rate_seconds_seen; /* whole seconds completed */
    uint64_t rate_start_events; /* events at the start of the current second */

    _Atomic uint64_t events;
    _Atomic uint64_t last_timestamp;
    _Atomic uint64_t samples_waiting; /* the model's, as of the last idle call */
    _Atomic uint64_t stop_dropped;    /* left in the queue by perch_live_drop_queued */
    _Atomic uint32_t failed_sinks;
    _Atomic int error;    /* the model's error */
    _Atomic bool started; /* perch_live_start succeeded */
    _Atomic bool running; /* the model thread has not ended */
    _Atomic bool finished;
    _Atomic bool quit; /* destroy: stop without waiting for the queue's end */
};

uint64_t perch__live_now(perch_live *l);

/* engine_tee.c: fills l->tee with the fan-out callbacks. */
void perch__live_tee_init(perch_live *l);

/* Calls every active slot's idle function. */
void perch__live_idle(perch_live *l);

/* engine_books.c, on the model thread: adds the growth of every loss counter, of the queue's
 * drop counters and of the gaps to the model's ledger; updates the rate at now_ns. as_applied
 * (may be NULL) receives the books as they were applied. */
int perch__live_apply_books(perch_live *l, uint64_t now_ns, struct live_books *as_applied);

/* Runs the calls queued by perch_live_call (model thread). */
void perch__live_run_calls(perch_live *l);

/* The books now (model thread or not: read under mu and from the queue). */
void perch__live_books(perch_live *l, struct live_books *b);

/* The books' reasons and the values of b less those of minus (NULL: none), the four fixed
 * reasons first, then each loss reason; returns how many (at most 4 + PERCH_LIVE_MAX_LOSSES). */
size_t perch__live_books_list(perch_live *l, const struct live_books *b,
                              const struct live_books *minus, char (*reasons)[LIVE_REASON_MAX],
                              uint64_t *values);

/* engine_attach.c: fills a slot (name, sink, idle, books base: base, or the books now when
 * NULL). */
void perch__live_slot_fill(perch_live *l, struct live_slot *s, const char *name,
                           const perch_sink *sink, perch_live_idle_fn idle, void *idle_ctx,
                           const struct live_books *base);

/* engine_counts.c, on the model thread: applies the books, then copies the model's ledger into
 * *out, marked taken (before the model exists: the books that wait for it), and the books as
 * applied into *books, the slot's base (so a loss is either in the copy or in the books'
 * growth, never in neither). *out untouched on error. */
int perch__live_counts_take(perch_live *l, struct live_counts *out, struct live_books *books);

/* The growth of the model's ledger reason (now, as the model counts it) since the copy c. */
uint64_t perch__live_counts_growth(const struct live_counts *c, const char *reason, uint64_t now);

/* Writes the growth of the model's ledger since s's copy to s's sink, leaving out the
 * reasons in skip (the books', written from the books). Model thread. */
int perch__live_counts_emit_growth(perch_live *l, const struct live_slot *s,
                                   const char (*skip)[LIVE_REASON_MAX], size_t skip_count);

/* Frees a copy and empties it. */
void perch__live_counts_free(struct live_counts *c);

#endif
