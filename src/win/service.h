/*
 * The two ways perchd runs the daemon (src/win/daemon.h), through one loop so that a stop
 * from the SCM and Ctrl+C in a console take the same path:
 *   - as the service: StartServiceCtrlDispatcher, a control handler for stop, shutdown and
 *     preshutdown, SERVICE_STATUS with checkpoints and wait hints while starting and draining
 *     (src/win/service.c);
 *   - in a console (`perchd run`): Ctrl+C, Ctrl+Break and closing the window stop it; Ctrl+Break
 *     first writes a flight-recorder snapshot (src/win/console.c).
 */
#ifndef PERCH_WIN_SERVICE_H
#define PERCH_WIN_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why the run loop ended. */
typedef enum perch_run_end {
    PERCH_RUN_STOPPED = 0, /* asked to stop (SCM stop, Ctrl+C, duration over) */
    PERCH_RUN_FAILED = 1,  /* the daemon failed for good */
    PERCH_RUN_NOT_STARTED = 2,
} perch_run_end;

typedef struct perch_console_options {
    perch_daemon_options daemon; /* progress is set by the runner */
    uint32_t duration_ms;        /* stop after this long; 0: until Ctrl+C */
    uint32_t snapshot_after_ms;  /* write one snapshot this long after start (tests); 0: no */
    bool record;                 /* start a recording right after start */
} perch_console_options;

/* Connects to the SCM and runs the service (reading its configuration from the registry)
 * until it is stopped. Returns 0 when it ran and stopped, PERCH_ESTATE when this process was
 * not started by the SCM, or the dispatcher's error. */
int perch_service_run(void);

/* Runs the daemon in this console until Ctrl+C, Ctrl+Break (after a snapshot), closing the
 * window, or duration_ms. Returns 0, the daemon's start error (PERCH_EBUSY: another perchd
 * runs) or the error it failed or stopped with; PERCH_ESTATE when called a second time in one
 * process (the console handler keeps the first run's runner). */
int perch_console_run(const perch_console_options *o);

/* ---- the shared loop (internal) ---------------------------------------------------------- */

typedef struct perch_runner perch_runner;
struct perch_runner {
    void *stop;           /* HANDLE: manual-reset event, set to stop */
    void *snapshot;       /* HANDLE: auto-reset event, set to write a snapshot */
    void *stopped;        /* HANDLE: manual-reset event, set once everything stopped */
    uint32_t duration_ms; /* 0: no limit */
    uint32_t snapshot_after_ms;
    bool stop_after_snapshot;
    bool record;
    /* Tells the SCM (or nobody) the state: a SERVICE_* state, a wait hint for pending
     * states, and the error for SERVICE_STOPPED. */
    void (*report)(perch_runner *r, uint32_t state, uint32_t wait_hint_ms, int error);
    void *ctx;
};

/* Creates the events (0 or the translated error) and closes them. */
int perch__runner_init(perch_runner *r);
void perch__runner_close(perch_runner *r);

/* Starts the daemon, waits for stop / snapshot / failure / duration, stops it. Reports every
 * state through r->report. Returns 0 or the error the daemon started, failed or stopped
 * with; *end says which. */
int perch__runner_run(perch_runner *r, perch_daemon_options *o, perch_run_end *end);

#ifdef __cplusplus
}
#endif

#endif
