/*
 * The loop both runners share (src/win/service.h): start the daemon while reporting
 * START_PENDING with a checkpoint per step, report RUNNING, wait for a stop request, a
 * snapshot request, the daemon's failure or the end of the duration, then stop it while
 * reporting STOP_PENDING, and report STOPPED with the error it ended with.
 */
#include <windows.h>
#include <stdio.h>

#include "log.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "service.h"

#define POLL_MS 500u

int perch__runner_init(perch_runner *r)
{
    r->stop = CreateEventW(NULL, TRUE, FALSE, NULL);
    r->snapshot = CreateEventW(NULL, FALSE, FALSE, NULL);
    r->stopped = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (r->stop == NULL || r->snapshot == NULL || r->stopped == NULL) {
        int err = perch_win_last_error();
        perch__runner_close(r);
        return err;
    }
    return 0;
}

void perch__runner_close(perch_runner *r)
{
    if (r->stop != NULL)
        CloseHandle(r->stop);
    if (r->snapshot != NULL)
        CloseHandle(r->snapshot);
    if (r->stopped != NULL)
        CloseHandle(r->stopped);
    r->stop = r->snapshot = r->stopped = NULL;
}

struct progress {
    perch_runner *r;
    uint32_t state;
};

static void on_progress(void *ctx, uint32_t wait_hint_ms)
{
    struct progress *p = ctx;
    p->r->report(p->r, p->state, wait_hint_ms, 0);
}

static void snapshot(perch_daemon *d)
{
    char path[PERCH_CONFIG_PATH_MAX], why[PERCH_DAEMON_TEXT] = "";
    int err = perch_daemon_snapshot(d, 0, path, sizeof path, why, sizeof why);
    if (err == 0)
        perch_log(PERCH_LOG_INFO, "Snapshot of the flight recorder written to %s.", path);
    else
        perch_log(PERCH_LOG_WARNING, "No snapshot was written: %s.",
                  why[0]                ? why
                  : err == PERCH_ESTATE ? "the flight recorder is off or holds no event yet"
                                        : perch_strerror(err));
}

/* Waits until a stop; returns PERCH_RUN_STOPPED or PERCH_RUN_FAILED (*error set). */
static perch_run_end wait_loop(perch_runner *r, perch_daemon *d, int *error)
{
    HANDLE events[2] = {r->stop, r->snapshot};
    ULONGLONG start = GetTickCount64();
    bool snapped = r->snapshot_after_ms == 0;
    for (;;) {
        DWORD w = WaitForMultipleObjects(2, events, FALSE, POLL_MS);
        ULONGLONG elapsed = GetTickCount64() - start;
        if (w == WAIT_OBJECT_0)
            return PERCH_RUN_STOPPED;
        if (w == WAIT_OBJECT_0 + 1) {
            snapshot(d);
            if (r->stop_after_snapshot)
                return PERCH_RUN_STOPPED;
        }
        if (!snapped && elapsed >= r->snapshot_after_ms) {
            snapped = true;
            snapshot(d);
        }
        if (perch_daemon_failed(d, error))
            return PERCH_RUN_FAILED;
        if (r->duration_ms != 0 && elapsed >= r->duration_ms) {
            perch_log(PERCH_LOG_INFO, "The requested duration (%u ms) is over.", r->duration_ms);
            return PERCH_RUN_STOPPED;
        }
    }
}

static void start_recording(perch_daemon *d)
{
    char file[PERCH_CONFIG_PATH_MAX];
    int err = perch_daemon_record_start(d, file, sizeof file);
    if (err < 0)
        perch_log(PERCH_LOG_WARNING, "The recording could not start: %s.", perch_strerror(err));
}

int perch__runner_run(perch_runner *r, perch_daemon_options *o, perch_run_end *end)
{
    struct progress p = {r, SERVICE_START_PENDING};
    perch_daemon *d = NULL;
    int error = 0;
    o->progress = on_progress;
    o->progress_ctx = &p;
    r->report(r, SERVICE_START_PENDING, 10000, 0);
    int err = perch_daemon_create(o, &d);
    err = err ? err : perch_daemon_start(d);
    if (err < 0) {
        perch_daemon_destroy(d);
        *end = PERCH_RUN_NOT_STARTED;
        r->report(r, SERVICE_STOPPED, 0, err);
        SetEvent(r->stopped);
        return err;
    }
    r->report(r, SERVICE_RUNNING, 0, 0);
    if (r->record)
        start_recording(d);
    *end = wait_loop(r, d, &error);
    p.state = SERVICE_STOP_PENDING;
    r->report(r, SERVICE_STOP_PENDING, 10000, 0);
    err = perch_daemon_stop(d);
    perch_daemon_destroy(d);
    if (*end == PERCH_RUN_FAILED)
        err = error;
    r->report(r, SERVICE_STOPPED, 0, err);
    SetEvent(r->stopped);
    return err;
}
