/*
 * The daemon's life cycle (src/win/daemon.h): start brings up the data directories, the log,
 * the single-instance lock, privileges, the session and the engine in that order and says
 * what it could not do; stop takes them down in reverse, the session first. A supervisor
 * thread rewrites the status file (status.txt in the data directory, what `perchd status`
 * prints) every second.
 */
#include <windows.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "daemon_internal.h"
#include "log.h"
#include "logfile.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

#define INSTANCE_MUTEX   L"Global\\PerchDaemon"
#define STATUS_PERIOD_MS 1000u

const char *perch_daemon_state_name(uint32_t state)
{
    static const char *const names[] = {"created", "starting", "running", "stopping", "stopped"};
    return state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}

int perch_daemon_create(const perch_daemon_options *o, perch_daemon **out)
{
    if (o == NULL || o->sz < sizeof *o || out == NULL)
        return PERCH_EINVAL;
    perch_daemon *d = perch__calloc(1, sizeof *d);
    if (d == NULL)
        return PERCH_ENOMEM;
    d->o = *o;
    InitializeSRWLock(&d->lock);
    InitializeSRWLock(&d->ctl);
    d->state = PERCH_DAEMON_CREATED;
    snprintf(d->summary, sizeof d->summary, "Starting.");
    d->wake = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (d->wake == NULL) {
        perch__free(d);
        return PERCH_ENOMEM;
    }
    *out = d;
    return 0;
}

void perch__daemon_progress(perch_daemon *d, uint32_t wait_hint_ms)
{
    if (d->o.progress != NULL)
        d->o.progress(d->o.progress_ctx, wait_hint_ms);
}

void perch__daemon_set_summary(perch_daemon *d, bool degraded, const char *sentence)
{
    AcquireSRWLockExclusive(&d->lock);
    d->degraded = d->degraded || degraded;
    snprintf(d->summary, sizeof d->summary, "%s", sentence);
    ReleaseSRWLockExclusive(&d->lock);
}

/* Expands and creates the data and capture directories; problems are logged later. */
static void prepare_dirs(perch_daemon *d, char *problem, size_t len)
{
    const perch_config *c = &d->o.config;
    problem[0] = '\0';
    if (perch_win_expand_path(c->data_dir, d->data_dir, sizeof d->data_dir) < 0 ||
        perch__make_dirs(d->data_dir) < 0) {
        snprintf(problem, len,
                 "the data directory %s could not be created, so there is no log "
                 "file and no status file",
                 c->data_dir);
        d->data_dir[0] = '\0';
    }
    if (perch_win_expand_path(c->capture_dir, d->capture_dir, sizeof d->capture_dir) < 0 ||
        perch__make_dirs(d->capture_dir) < 0) {
        snprintf(problem + strlen(problem), len - strlen(problem),
                 "%sthe capture directory %s could not be created, so recordings and snapshots "
                 "will fail",
                 problem[0] ? "; " : "", c->capture_dir);
        d->capture_dir[0] = '\0';
    }
}

static int open_log(perch_daemon *d)
{
    perch_log_options lo = {0};
    lo.dir = d->data_dir[0] ? d->data_dir : NULL;
    lo.file_bytes = (uint64_t)d->o.config.log_file_kb << 10;
    lo.files = d->o.config.log_files;
    lo.event_log = true;
    lo.echo = d->o.console ? stderr : NULL;
    return perch_log_open(&lo);
}

/* The single-instance lock: one perchd (service or console) per machine, because both would
 * want the same kernel session. */
static int take_instance(perch_daemon *d)
{
    d->instance = CreateMutexW(NULL, FALSE, INSTANCE_MUTEX);
    if (d->instance == NULL)
        return perch_win_last_error();
    if (GetLastError() == ERROR_ALREADY_EXISTS) {
        CloseHandle(d->instance);
        d->instance = NULL;
        return PERCH_EBUSY;
    }
    return 0;
}

/* Once a second: the session's losses and restarts, the engine's health, the status file. */
static DWORD WINAPI supervise(LPVOID arg)
{
    perch_daemon *d = arg;
    perch_live_stats st;
    while (!atomic_load(&d->quit)) {
        perch__daemon_session_poll(d);
        AcquireSRWLockExclusive(&d->lock);
        if (d->live.engine != NULL) {
            perch_live_get_stats(d->live.engine, &st);
            if (st.error < 0 && d->failed == 0)
                d->failed = st.error;
        }
        ReleaseSRWLockExclusive(&d->lock);
        perch__daemon_write_status(d);
        WaitForSingleObject(d->wake, STATUS_PERIOD_MS);
    }
    return 0;
}

static void log_start_problems(perch_daemon *d, const char *dir_problem, int log_err)
{
    if (dir_problem[0])
        perch_log(PERCH_LOG_WARNING, "Degraded: %s.", dir_problem);
    else if (log_err < 0)
        perch_log(PERCH_LOG_WARNING, "Degraded: the log file in %s could not be opened (%s).",
                  d->data_dir, perch_strerror(log_err));
    for (size_t i = 0; i < d->o.issue_count; i++)
        perch_log(PERCH_LOG_WARNING, "Configuration: %s.", d->o.issues[i]);
}

static void check_privileges(perch_daemon *d)
{
    if (d->o.no_privileges) {
        d->priv.admin = false;
        d->priv.profile = false;
        snprintf(d->priv.why, sizeof d->priv.why,
                 "perchd was told to run as if it were not an administrator (--no-privileges), "
                 "so it starts no kernel trace session and no kernel data is recorded.");
    } else {
        perch_privileges_acquire(&d->priv);
    }
    if (d->priv.why[0]) {
        perch_log(PERCH_LOG_WARNING, "Degraded: %s", d->priv.why);
        perch__daemon_set_summary(d, true, d->priv.why);
    }
}

int perch_daemon_start(perch_daemon *d)
{
    char problem[2 * PERCH_CONFIG_PATH_MAX + 200];
    if (d == NULL || d->state != PERCH_DAEMON_CREATED)
        return PERCH_ESTATE;
    d->state = PERCH_DAEMON_STARTING;
    GetSystemTimeAsFileTime((FILETIME *)&d->start_filetime);
    d->start_ms = GetTickCount64();
    prepare_dirs(d, problem, sizeof problem);
    int err = take_instance(d);
    int log_err = open_log(d);
    if (err < 0) {
        perch_log(PERCH_LOG_ERROR, "perchd could not start: %s.",
                  err == PERCH_EBUSY ? "another perchd (the service or 'perchd run') is already "
                                       "running on this machine"
                                     : perch_strerror(err));
        perch_log_close();
        d->state = PERCH_DAEMON_STOPPED;
        return err;
    }
    perch_log(PERCH_LOG_INFO, "perchd %s is starting %s (pid %lu).", PERCH_VERSION,
              d->o.console ? "in a console" : "as the service",
              (unsigned long)GetCurrentProcessId());
    log_start_problems(d, problem, log_err);
    check_privileges(d);
    perch__daemon_progress(d, 10000);
    AcquireSRWLockExclusive(&d->ctl);
    perch__daemon_session_start(d);
    ReleaseSRWLockExclusive(&d->ctl);
    d->supervisor = CreateThread(NULL, 0, supervise, d, 0, NULL);
    AcquireSRWLockExclusive(&d->lock);
    d->state = PERCH_DAEMON_RUNNING;
    ReleaseSRWLockExclusive(&d->lock);
    perch__daemon_pipe_start(d);
    perch__daemon_write_status(d);
    perch_daemon_status *st = perch__alloc(sizeof *st);
    if (st != NULL) {
        perch_daemon_status_get(d, st);
        perch_log(st->degraded ? PERCH_LOG_WARNING : PERCH_LOG_INFO, "perchd is running%s: %s",
                  st->degraded ? ", degraded" : "", st->summary);
        perch__free(st);
    }
    return 0;
}

/* The status of a stopped daemon says what it was doing before. */
static void keep_last_summary(perch_daemon *d)
{
    char line[PERCH_DAEMON_TEXT];
    perch_daemon_status *st = perch__alloc(sizeof *st);
    if (st == NULL)
        return;
    perch_daemon_status_get(d, st);
    snprintf(line, sizeof line, "Stopped. While it ran: %s", st->summary);
    perch__daemon_set_summary(d, st->degraded, line);
    perch__free(st);
}

int perch_daemon_stop(perch_daemon *d)
{
    if (d == NULL || d->state == PERCH_DAEMON_CREATED || d->state == PERCH_DAEMON_STOPPED)
        return 0;
    keep_last_summary(d);
    AcquireSRWLockExclusive(&d->lock);
    d->state = PERCH_DAEMON_STOPPING;
    ReleaseSRWLockExclusive(&d->lock);
    perch_log(PERCH_LOG_INFO, "perchd is stopping.");
    perch__daemon_progress(d, 5000);
    atomic_store(&d->quit, 1);
    SetEvent(d->wake);
    if (d->supervisor != NULL) {
        WaitForSingleObject(d->supervisor, INFINITE);
        CloseHandle(d->supervisor);
        d->supervisor = NULL;
    }
    perch__daemon_pipe_stop(d);
    perch__daemon_write_status(d); /* "stopping", while the engine drains */
    AcquireSRWLockExclusive(&d->ctl);
    int err = perch__daemon_session_stop(d);
    ReleaseSRWLockExclusive(&d->ctl);
    AcquireSRWLockExclusive(&d->lock);
    d->state = PERCH_DAEMON_STOPPED;
    ReleaseSRWLockExclusive(&d->lock);

    perch__daemon_write_status(d);
    perch_log(err < 0 ? PERCH_LOG_ERROR : PERCH_LOG_INFO, "perchd stopped%s%s.",
              err < 0 ? ": " : "", err < 0 ? perch_strerror(err) : "");
    perch_log_close();
    if (d->instance != NULL)
        CloseHandle(d->instance);
    d->instance = NULL;
    return err;
}

void perch_daemon_destroy(perch_daemon *d)
{
    if (d == NULL)
        return;
    perch_daemon_stop(d);
    if (d->live.left_running)
        return; /* a model thread still runs and may touch d (daemon_drain.c) */
    CloseHandle(d->wake);
    perch__free(d);
}

bool perch_daemon_failed(const perch_daemon *d, int *error)
{
    if (d == NULL)
        return false;
    AcquireSRWLockShared((PSRWLOCK)&d->lock); /* the supervisor writes failed under it */
    int failed = d->failed;
    ReleaseSRWLockShared((PSRWLOCK)&d->lock);
    if (failed == 0)
        return false;
    if (error != NULL)
        *error = failed;
    return true;
}
