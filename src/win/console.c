/*
 * perchd in a console (`perchd run`, src/win/service.h). A console control handler turns
 * Ctrl+C into the runner's stop event and Ctrl+Break into its snapshot event (the runner
 * writes a flight-recorder snapshot, then stops); closing the window, logoff and shutdown
 * stop it too, and the handler waits for the stop to finish within the few seconds Windows
 * allows before it ends the process. Windows runs the handler on a thread of its own, which
 * may still hold the runner when the run ends (unregistering does not wait for it): so the
 * runner is static and its events stay open until the process ends.
 */
#include <windows.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "perch/error.h"
#include "service.h"

#define CLOSE_WAIT_MS 4500u

static perch_runner runner;
static _Atomic(perch_runner *) active;

static BOOL WINAPI on_console(DWORD type)
{
    perch_runner *r = atomic_load(&active);
    if (r == NULL)
        return FALSE;
    switch (type) {
    case CTRL_C_EVENT:
        SetEvent(r->stop);
        return TRUE;
    case CTRL_BREAK_EVENT:
        SetEvent(r->snapshot);
        return TRUE;
    default: /* close, logoff, shutdown: the process ends when this returns */
        SetEvent(r->stop);
        WaitForSingleObject(r->stopped, CLOSE_WAIT_MS);
        return TRUE;
    }
}

static void report(perch_runner *r, uint32_t state, uint32_t wait_hint_ms, int error)
{
    (void)r;
    (void)wait_hint_ms;
    (void)error;
    if (state == SERVICE_RUNNING)
        perch_log(PERCH_LOG_INFO, "Running in this console: Ctrl+C stops, Ctrl+Break writes a "
                                  "flight-recorder snapshot and stops.");
}

int perch_console_run(const perch_console_options *o)
{
    perch_runner *r = &runner;
    perch_daemon_options d = o->daemon;
    perch_run_end end;
    if (atomic_load(&active) != NULL)
        return PERCH_ESTATE; /* one console run per process: the handler keeps its runner */
    memset(r, 0, sizeof *r);
    int err = perch__runner_init(r);
    if (err < 0)
        return err;
    r->report = report;
    r->duration_ms = o->duration_ms;
    r->snapshot_after_ms = o->snapshot_after_ms;
    r->stop_after_snapshot = true;
    r->record = o->record;
    d.console = true;
    atomic_store(&active, r);
    /* a process started in a new process group has Ctrl+C disabled: enable it again */
    SetConsoleCtrlHandler(NULL, FALSE);
    SetConsoleCtrlHandler(on_console, TRUE);
    err = perch__runner_run(r, &d, &end);
    SetConsoleCtrlHandler(on_console, FALSE);
    /* active stays set and the events open: a handler already running may still use them
     * (SetEvent on them is harmless once the run is over) */
    return err;
}
