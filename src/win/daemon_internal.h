/*
 * The daemon's private state, shared by its files: daemon.c (life cycle), daemon_status.c
 * (status and the status file), daemon_session.c (session, consumer, engine, restarts).
 */
#ifndef PERCH_WIN_DAEMON_INTERNAL_H
#define PERCH_WIN_DAEMON_INTERNAL_H

#include <windows.h>
#include <stdatomic.h>

#include "daemon.h"
#include "etw.h"
#include "perch/capture.h"
#include "perch/event_queue.h"
#include "perch/live.h"
#include "perch/sym.h"
#include "privilege.h"

/* The live path: queue, session, engine (daemon_session.c) and the recording
 * (daemon_captures.c). */
struct perch_daemon_live {
    perch_event_queue *queue;
    bool queue_kept;   /* a consumer was left running: the queue is never freed */
    bool left_running; /* the stop left the model thread running: nothing it uses is freed,
                        * the daemon included (daemon_drain.c) */
    perch_live *engine;
    struct perch_live_query *query;  /* the pipe's live window, a sink of the engine */
    struct perch_recorder *recorder; /* the flight recorder, a sink of the engine; NULL: off */
    SRWLOCK etw_lock;                /* guards etw: the supervisor, the stop and the model thread */
    perch_etw_live *etw;             /* NULL while no session runs */
    perch_etw_start_report rep;      /* of the last start attempt (d->lock) */
    int start_error;                 /* of the last start attempt, 0 when it runs (d->lock) */
    uint64_t session_up_ms;          /* GetTickCount64 when it last (re)started */
    uint64_t retry_at_ms;            /* when to try again after a failed start */
    uint32_t backoff_ms;
    perch_etw_poll poll;   /* the last poll (d->lock) */
    char info_source[160]; /* the trace info handed to the model (owned here) */
    char info_config[2048]; /* its session_config: a copy taken under etw_lock */
    uint64_t info_freq;    /* its perf_freq, 0 until the model asked (d->lock) */
    char session_config[2048]; /* written under etw_lock held exclusively */
    /* the recording: rotating capture files (daemon_captures.c). ctl serializes its start
     * and stop; the model thread publishes the rotation's figures under d->lock (idle). */
    bool recording;
    struct perch_capture_rotate *rotate;
    perch_sink rec_sink;                  /* the rotation's (names: its opts.names) */
    uint32_t rec_id;                      /* grows by one per recording (d->lock) */
    char rec_name[256];                   /* its first file's name, "" until it exists (d->lock) */
    char rec_path[PERCH_CONFIG_PATH_MAX]; /* the file being written, else the last (d->lock) */
    uint64_t rec_bytes;                   /* written by this recording, every file (d->lock) */
    uint32_t rec_files;                   /* files it created (d->lock) */
    uint64_t rec_deleted;                 /* files the disk cap deleted (d->lock) */
    uint64_t rec_delete_failed;           /* ... could not delete, and kept (d->lock) */
    uint64_t rec_start_ms;                /* GetTickCount64 at its start (d->lock) */
    uint64_t rec_end_ms;                  /* the same at its end, 0 while it runs (d->lock) */
    uint64_t rec_start_filetime;          /* UTC FILETIME of its start (d->lock) */
    /* function names (daemon_symbols.c): the DbgHelp worker, a sink of the engine (NULL when
     * it could not start) */
    perch_symworker *symbols;
    perch_symbackend sym_backend;
};

struct perch_daemon {
    perch_daemon_options o;
    SRWLOCK lock;   /* guards state, summary, degraded, failed, features */
    uint32_t state; /* perch_daemon_state */
    bool degraded;
    int failed; /* the error that ended it for good, 0 while healthy */
    char summary[PERCH_DAEMON_TEXT];
    perch_privileges priv;
    char data_dir[PERCH_CONFIG_PATH_MAX];
    char capture_dir[PERCH_CONFIG_PATH_MAX];
    uint64_t start_filetime;
    uint64_t start_ms;
    HANDLE instance;   /* the single-instance mutex */
    HANDLE supervisor; /* rewrites the status file */
    HANDLE wake;       /* wakes the supervisor early */
    atomic_int quit;   /* set by the stop, read by the supervisor */
    uint32_t feature_count;
    perch_daemon_feature features[PERCH_DAEMON_MAX_FEATURES];
    SRWLOCK ctl;                /* serializes recording, snapshot and stop requests */
    perch_live_stats last_live; /* the engine's last figures, once it is gone (lock) */
    struct perch_daemon_live live;
    struct perch_pipe_daemon *pipe;       /* NULL when not served */
    char pipe_problem[PERCH_DAEMON_TEXT]; /* why it is not served (a squatter...), or "" (lock) */
};

/* d->state, read under d->lock (the stop writes it there while other threads look). */
static inline uint32_t perch__daemon_state(perch_daemon *d)
{
    AcquireSRWLockShared(&d->lock);
    uint32_t state = d->state;
    ReleaseSRWLockShared(&d->lock);
    return state;
}

/* Reports a new wait hint to the runner (SCM checkpoints). */
void perch__daemon_progress(perch_daemon *d, uint32_t wait_hint_ms);

/* Sets the one-sentence summary; degraded is sticky. */
void perch__daemon_set_summary(perch_daemon *d, bool degraded, const char *sentence);

/* Rewrites status.txt in the data directory (no-op without one). */
void perch__daemon_write_status(perch_daemon *d);

/* Starts the kernel session, its consumer and the engine as far as the privileges and the
 * OS allow; every refusal is logged and lands in the summary and features. */
void perch__daemon_session_start(perch_daemon *d);

/* Serves the pipe once the daemon runs (a failure is logged: the daemon runs without it). */
void perch__daemon_pipe_start(perch_daemon *d);
void perch__daemon_pipe_stop(perch_daemon *d);

/* Stops the session first, then drains the consumer and the engine. PERCH_ETIMEDOUT when the
 * model thread did not end and was left running (perch__daemon_leave_running). */
int perch__daemon_session_stop(perch_daemon *d);

/* daemon_drain.c: waits for the model thread once the queue is closed, reporting progress:
 * StopDrainSeconds at most, then the events still queued are dropped and it waits 5 s more.
 * 0 when it ended, PERCH_ETIMEDOUT when it did not, or perch_live_stop's error. */
int perch__daemon_drain(perch_daemon *d);

/* After perch__daemon_drain's PERCH_ETIMEDOUT: logs it and forgets (never frees) the engine,
 * its queue, its sinks and the recording, which the running thread may still use; sets
 * left_running, so that perch_daemon_destroy does not free the daemon either. */
void perch__daemon_leave_running(perch_daemon *d);

/* The supervisor's second: polls the session (losses, outside stops, restarts) or retries a
 * failed start, and hands losses and gaps to the engine. */
void perch__daemon_session_poll(perch_daemon *d);

/* Fills the session, engine and feature fields of *st and the summary sentence. */
void perch__daemon_session_status(perch_daemon *d, perch_daemon_status *st);

/* daemon_captures.c: the recording's part of the status (ctl not needed: under d->lock). */
void perch__daemon_record_status(perch_daemon *d, perch_daemon_status *st);

/* Starts a recording before the engine starts (RecordOnStart) or while it runs. Caller holds
 * ctl. A start that failed after its first file was created deletes that file (only it), and
 * why (may be NULL) gets a sentence saying what failed; it is left alone for the other
 * errors. */
int perch__daemon_record_start_locked(perch_daemon *d, const perch_config *c, const char *stem,
                                      char *file, size_t len, char *why, size_t why_len);

/* daemon_record_opts.c: the configuration and name stem ("" when none) of one recording, from
 * the daemon's configuration and o (may be NULL). 0, or an error with a sentence in why. */
int perch__daemon_record_config(perch_daemon *d, const perch_daemon_record_opts *o, perch_config *c,
                                char *stem, size_t len, char *why, size_t why_len);

/* daemon_capture_file.c: creates a capture file (a recording's, a snapshot's) for writing,
 * PERCH_EEXIST when one is there (perch_output_create_file; the tests' perchd_fake links its
 * own, a disk that fills or hangs on demand). */
int perch__daemon_create_capture_file(perch_output *out, const char *path);

/* Closes the recording's file after the engine finished it (at stop). Caller holds ctl. */
void perch__daemon_record_close(perch_daemon *d);

/* Ends the recording without touching its rotation, which a model thread that never ended
 * may still be writing (perch__daemon_leave_running): never freed, and logged. Caller holds
 * ctl. */
void perch__daemon_record_leave(perch_daemon *d);

/* daemon_symbols.c: the symbol worker as a sink of the engine (before it starts); on failure
 * it logs and the daemon records without names. */
void perch__daemon_symbols_add(perch_daemon *d);

/* The worker's drops (queue full, stacks forgotten, records dropped) as engine losses, so they
 * reach the ledger of every capture (the supervisor, once a second). */
void perch__daemon_symbols_losses(perch_daemon *d);

/* The names wrapper for the flight recorder's snapshots (model_thread false) or the rotating
 * files (true); zeroed (no names) without a worker. */
void perch__daemon_symbols_names(perch_daemon *d, bool model_thread, perch_sink_wrap *out);

/* Once the engine is gone. */
void perch__daemon_symbols_destroy(perch_daemon *d);

#endif
