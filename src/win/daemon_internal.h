/*
 * The daemon's private state, shared by its files: daemon.c (life cycle), daemon_status.c
 * (status and the status file), daemon_session.c (session, consumer, engine, restarts).
 */
#ifndef PERCH_WIN_DAEMON_INTERNAL_H
#define PERCH_WIN_DAEMON_INTERNAL_H

#include <windows.h>

#include "daemon.h"
#include "privilege.h"

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
    volatile LONG quit;
    uint32_t feature_count;
    perch_daemon_feature features[PERCH_DAEMON_MAX_FEATURES];
    struct perch_pipe_daemon *pipe; /* \\.\pipe\perch (src/win/pipe_daemon.h), NULL when not
                                       served */
};

/* Reports a new wait hint to the runner (SCM checkpoints). */
void perch__daemon_progress(perch_daemon *d, uint32_t wait_hint_ms);

/* Sets the one-sentence summary; degraded is sticky. */
void perch__daemon_set_summary(perch_daemon *d, bool degraded, const char *sentence);

/* Rewrites status.txt in the data directory (no-op without one). */
void perch__daemon_write_status(perch_daemon *d);

/* Starts the kernel session, its consumer and the engine as far as the privileges and the
 * OS allow; every refusal is logged and lands in the summary and features. */
void perch__daemon_session_start(perch_daemon *d);

/* Stops the session first, then drains the consumer and the engine. */
int perch__daemon_session_stop(perch_daemon *d);

#endif
