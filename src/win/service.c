/*
 * perchd under the service control manager (src/win/service.h). ServiceMain loads the
 * configuration from the registry, registers a control handler that turns stop, shutdown and
 * preshutdown into the runner's stop event, and reports every state: START_PENDING and
 * STOP_PENDING with a growing checkpoint and a wait hint for each step, RUNNING, and STOPPED
 * with ERROR_SERVICE_SPECIFIC_ERROR and the Perch error code (negated) when it failed, so the
 * SCM's failure actions (restart twice, set by `perchd install`) can act.
 */
#include <windows.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "service.h"

#define MAX_ISSUES 16

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static SRWLOCK status_lock = SRWLOCK_INIT;
static perch_runner runner;

struct issues {
    char text[MAX_ISSUES][PERCH_CONFIG_WHY_MAX + 200];
    const char *ptr[MAX_ISSUES];
    size_t count;
};

static void collect_issue(void *ctx, const char *sentence)
{
    struct issues *is = ctx;
    if (is->count >= MAX_ISSUES)
        return;
    snprintf(is->text[is->count], sizeof is->text[0], "%s", sentence);
    is->ptr[is->count] = is->text[is->count];
    is->count++;
}

static void report(perch_runner *r, uint32_t state, uint32_t wait_hint_ms, int error)
{
    (void)r;
    AcquireSRWLockExclusive(&status_lock);
    /* once a stop is pending, start-time progress must not report START_PENDING again; once
     * STOPPED is reported nothing follows it (a stop control racing the runner's end would
     * otherwise report STOP_PENDING after STOPPED) */
    if (status.dwCurrentState != SERVICE_STOPPED &&
        !(status.dwCurrentState == SERVICE_STOP_PENDING && state == SERVICE_START_PENDING)) {
        bool pending = state == SERVICE_START_PENDING || state == SERVICE_STOP_PENDING;
        status.dwCheckPoint = pending && status.dwCurrentState == state ? status.dwCheckPoint + 1
                              : pending                                 ? 1
                                                                        : 0;
        status.dwCurrentState = state;
        status.dwWaitHint = pending ? wait_hint_ms : 0;
        status.dwControlsAccepted =
            state == SERVICE_RUNNING
                ? SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN | SERVICE_ACCEPT_PRESHUTDOWN
                : 0;
        status.dwWin32ExitCode = error < 0 ? ERROR_SERVICE_SPECIFIC_ERROR : NO_ERROR;
        status.dwServiceSpecificExitCode = error < 0 ? (DWORD)-error : 0;
        SetServiceStatus(status_handle, &status);
    }
    ReleaseSRWLockExclusive(&status_lock);
}

static DWORD WINAPI control(DWORD code, DWORD type, LPVOID data, LPVOID ctx)
{
    (void)type;
    (void)data;
    (void)ctx;
    switch (code) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
    case SERVICE_CONTROL_PRESHUTDOWN:
        perch_log(PERCH_LOG_INFO, "The service control manager asked perchd to stop (%s).",
                  code == SERVICE_CONTROL_STOP       ? "stop"
                  : code == SERVICE_CONTROL_SHUTDOWN ? "shutdown"
                                                     : "preshutdown");
        report(&runner, SERVICE_STOP_PENDING, 10000, 0);
        SetEvent(runner.stop);
        return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE:
        return NO_ERROR;
    default:
        return ERROR_CALL_NOT_IMPLEMENTED;
    }
}

static void WINAPI service_main(DWORD argc, LPWSTR *argv)
{
    static struct issues issues;
    perch_daemon_options o;
    perch_run_end end;
    (void)argc;
    (void)argv;
    status_handle = RegisterServiceCtrlHandlerExW(L"Perch", control, NULL);
    if (status_handle == NULL)
        return;
    memset(&status, 0, sizeof status);
    status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    if (perch__runner_init(&runner) < 0) {
        status.dwCurrentState = SERVICE_STOPPED;
        status.dwWin32ExitCode = GetLastError();
        SetServiceStatus(status_handle, &status);
        return;
    }
    runner.report = report;
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    issues.count = 0;
    perch_win_config_load(&o.config, collect_issue, &issues);
    o.issues = issues.ptr;
    o.issue_count = issues.count;
    perch__runner_run(&runner, &o, &end);
    /* the runner reported SERVICE_STOPPED: the SCM may end the process from here on */
}

int perch_service_run(void)
{
    SERVICE_TABLE_ENTRYW table[] = {{(LPWSTR)L"Perch", service_main}, {NULL, NULL}};
    if (StartServiceCtrlDispatcherW(table))
        return 0;
    DWORD e = GetLastError();
    return e == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT ? PERCH_ESTATE : perch_win_error(e);
}
