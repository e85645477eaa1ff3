/*
 * The live engine: the model thread of perchd's live path (ARCHITECTURE.md, "The live path").
 * It pops normalized records from a perch_event_queue (filled by the ETW callback with
 * try_push), feeds them to perch_model_feed, and tees the model's records into any number of
 * sinks (the rotating capture writer, the flight recorder, the pipe's live query state, ...).
 *
 * It also keeps the books of a live source: queue drops (`live.queue_full`,
 * `live.queue_oversized`) and every loss counter the session reports go into the model's
 * ledger as they grow; gaps (the session stopped from outside and restarted) are counted with
 * their duration; events per second are averaged over the last few seconds. A sink that fails
 * is switched off and reported; the model and the other sinks go on.
 *
 * Portable: it uses only include/perch/thread.h and the queue, so tests drive it natively from
 * the .etl reader. One producer pushes into the queue; every function here may be called from
 * any thread unless it says otherwise.
 */
#ifndef PERCH_LIVE_H
#define PERCH_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/event_queue.h"
#include "perch/model.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_live perch_live;

#define PERCH_LIVE_MAX_SINKS  8
#define PERCH_LIVE_MAX_LOSSES 16 /* distinct loss reasons perch_live_set_loss accepts */

typedef struct perch_live_options {
    size_t sz;                        /* sizeof(perch_live_options) */
    perch_event_queue *queue;         /* borrowed; must outlive the engine */
    const perch_model_options *model; /* may be NULL */
    uint32_t rate_window_s;           /* events/s is averaged over this many seconds; 0: 5 */
    uint32_t tick_ms;                 /* housekeeping period on the model thread; 0: 200 */
    /* Monotonic clock in ns for rates and ticks; NULL: perch_monotonic_ns. */
    uint64_t (*now_ns)(void *clock_ctx);
    void *clock_ctx;
    /* Keep what the model said so far (trace info, counter names, the current record of
     * every process, thread and module, stacks) so that perch_live_attach can bring a late
     * sink up to date. Costs that memory. */
    bool attachable;
    uint32_t max_stack_frames; /* stack frames kept for that; 0: 1 << 22 (oldest forgotten) */
    /* When set, the model is created on the model thread once the first record has been
     * popped (or at the end, when none came), with the trace info this fills then: a live
     * source knows its clock reference only when its first record arrives. Strings are
     * copied. perch_live_start's info may then be NULL. */
    void (*trace_info)(void *info_ctx, perch_trace_info *info);
    void *info_ctx;
    /* With attachable: ended processes, threads and modules kept (each type) for late sinks,
     * the oldest forgotten past it; 0: 4096. */
    uint32_t max_ended_entities;
} perch_live_options;

typedef struct perch_live_stats {
    uint64_t events;           /* records fed to the model */
    double events_per_second;  /* over the last rate window (whole seconds seen so far) */
    uint64_t queue_dropped;    /* try_push found the queue full (live.queue_full) */
    uint64_t queue_oversized;  /* records larger than the queue takes (live.queue_oversized) */
    uint64_t queue_bytes_high; /* most bytes queued at once */
    uint64_t queue_capacity;
    uint64_t losses;         /* the sum of every reason given to perch_live_set_loss */
    uint64_t gaps;           /* perch_live_note_gap calls */
    uint64_t gap_ms;         /* their total duration */
    uint64_t last_timestamp; /* raw timestamp of the last record fed (0 before any) */
    /* Samples the model holds back for their stack parts (perch_model_samples_waiting), as of
     * the model thread's last idle call or tick; 0 once the model finished. */
    uint64_t samples_waiting;
    /* Records perch_live_drop_queued left in the queue (live.stop_dropped in the ledger); 0
     * until the model thread ended after such a drop. */
    uint64_t stop_dropped;
    uint32_t sinks;        /* sinks attached */
    uint32_t failed_sinks; /* of which switched off after an error */
    int error;             /* the model's error (the engine then only drains), else 0 */
    bool running;          /* the model thread runs */
    bool finished;         /* the model was finished: every sink got its finish */
} perch_live_stats;

/* Creates an engine over o->queue. Returns 0, PERCH_EINVAL or PERCH_ENOMEM; *out untouched on
 * error. */
int perch_live_create(const perch_live_options *o, perch_live **out);

/* Called on the model thread with the sink's ctx when the queue runs dry and at every tick,
 * so a sink that batches (the live query state) can publish what it holds. */
typedef void (*perch_live_idle_fn)(void *sink_ctx);

/* The room a sink's name takes, its terminating NUL included. */
#define PERCH_LIVE_SINK_NAME_MAX 24

/* Attaches a sink (copied; sink->ctx is borrowed and must outlive the engine) under a short
 * name used in status and errors ("capture", "recorder", "query"; shorter than
 * PERCH_LIVE_SINK_NAME_MAX, else PERCH_EINVAL); idle may be NULL. Only before start.
 * PERCH_ESTATE after start, PERCH_ELIMIT past PERCH_LIVE_MAX_SINKS. */
int perch_live_add_sink(perch_live *l, const char *name, const perch_sink *sink,
                        perch_live_idle_fn idle);

/* Attaches a sink while the engine runs (PERCH_ESTATE unless created attachable): on the
 * model thread, between two records, the sink first receives the trace info, the counter
 * names, the current record of every live (and recently ended) process, thread and module and
 * every stack still held, as if it had been there from the start, then every later record.
 * The stacks keep the model's ids: those the model no longer holds are not sent, so the ids
 * a late sink sees may not start at 1 and its samples may name stacks it never got. A sink
 * that writes a capture renumbers them (the rotation's scope does: capture/scope.c); a plain
 * capture writer attached late refuses the first stack or sample whose id does not fit
 * (PERCH_EINVAL; perch_capture_writer_refusal says why): during the catch-up this call then
 * fails with that error, later the engine switches the sink off.
 * Before start it is perch_live_add_sink. Waits for the model thread (which takes the call at
 * once when idle, within 1024 records when busy). Returns 0, PERCH_ELIMIT (no free slot), or
 * the error of the state kept or of the sink during the catch-up (then it is not attached). */
int perch_live_attach(perch_live *l, const char *name, const perch_sink *sink,
                      perch_live_idle_fn idle);

/* perch_live_attach, with idle called with idle_ctx instead of the sink's ctx (for a sink
 * wrapped by another, e.g. a tap in front of a writer, whose owner needs the idle call). */
int perch_live_attach_idle(perch_live *l, const char *name, const perch_sink *sink,
                           perch_live_idle_fn idle, void *idle_ctx);

/* Detaches the sink whose ctx is sink_ctx, on the model thread between two records. With
 * finish, the sink first gets the engine's books since it was attached (live.* drops, the
 * losses given to perch_live_set_loss, gaps) as ledger records, then its finish callback
 * (the model's own ledger comes only when the model finishes). Returns 0, PERCH_ENOENT (no
 * such sink), or with finish the error that switched the sink off earlier or the finish
 * callback's error (the sink is detached anyway). */
int perch_live_detach(perch_live *l, const void *sink_ctx, bool finish);

/* Creates the model with *info (copied; every sink gets it as trace_info; see the trace_info
 * option for a later one) and starts the model thread. Returns 0, PERCH_ESTATE (started
 * before), or the model's or the thread's error. */
int perch_live_start(perch_live *l, const perch_trace_info *info);

/* A loss counter of the source, as a running total ("session.events_lost", ...; reason is
 * copied). The model thread adds its increase since the last call to the model's ledger.
 * A total lower than the last one (a new session started from zero) counts from there on.
 * PERCH_ELIMIT past PERCH_LIVE_MAX_LOSSES reasons. */
int perch_live_set_loss(perch_live *l, const char *reason, uint64_t total);

/* The source stopped delivering for duration_ms (its session was stopped from outside and
 * restarted): counted under live.session_gap and live.session_gap_ms in the ledger. */
void perch_live_note_gap(perch_live *l, uint64_t duration_ms);

/* Runs fn(ctx) on the model thread between two records (so no sink callback runs at the same
 * time: at once when the thread waits for records, which the call wakes, else within 1024
 * records; not at the next tick) and returns its result; before start or after the thread
 * ended, runs it on the caller. Waits at most timeout_ms (UINT32_MAX: no limit;
 * PERCH_ETIMEDOUT: fn may still run later, so ctx must stay valid until the engine is
 * destroyed). The way to change a sink's state while the engine runs. */
int perch_live_call(perch_live *l, int (*fn)(void *ctx), void *ctx, uint32_t timeout_ms);

/* Waits up to timeout_ms for the model thread to end: it ends once the producer has closed
 * the queue (perch_event_queue_close) and every queued record is fed, after finishing the
 * model (sinks get their ledger, stats and finish). Returns 0 when it ended (the model's
 * error, if any, is in the stats), PERCH_ETIMEDOUT (call again) or PERCH_ESTATE when never
 * started. */
int perch_live_stop(perch_live *l, uint32_t timeout_ms);

/* Gives up on the records still queued, for a stop that may not wait for all of them (the
 * model is far behind, or a sink's write does not return): the model thread stops popping once
 * the record it is feeding is done, counts the records left in the queue (live.stop_dropped in
 * the model's ledger, so every sink's ledger says so; perch_live_stats.stop_dropped), then
 * finishes the model as at the queue's end (every sink gets its ledger, statistics and
 * finish). Call it after the producer closed the queue, then perch_live_stop as before. Does
 * not wait; the queue is cancelled (include/perch/event_queue.h). Accepts NULL. */
void perch_live_drop_queued(perch_live *l);

/* A snapshot of the counters. */
void perch_live_get_stats(const perch_live *l, perch_live_stats *st);

/* The name (copied into name, "" for a slot whose sink was detached) and error (0 while
 * healthy) of sink i, for status; PERCH_ERANGE past the last. Either output may be NULL. A
 * copy, taken under the engine's lock: an attach may reuse the slot while the caller reads. */
int perch_live_sink_state(const perch_live *l, size_t i, char name[PERCH_LIVE_SINK_NAME_MAX],
                          int *error);

/* Frees the engine. If the model thread still runs, cancels the queue and waits for it.
 * Accepts NULL. */
void perch_live_destroy(perch_live *l);

#ifdef __cplusplus
}
#endif

#endif
