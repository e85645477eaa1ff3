/*
 * Service installation, removal and queries (src/win/scm.h), with the SCM's answers turned
 * into sentences. CreateServiceW registers "<perchd.exe>" service as LocalSystem;
 * ChangeServiceConfig2W adds the description, the failure actions (restart after 5 s, twice,
 * then none; counted over a day; also on a non-crash failure, since the service stops with
 * an error code when its session cannot be kept) and the preshutdown timeout.
 */
#include <windows.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eventlog.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "scm.h"
#include "util/mem.h"
#include "wstr.h"

#define SERVICE_NAME L"Perch"
#define DISPLAY_NAME L"Perch kernel trace profiler"
#define DESCRIPTION                                                                                \
    L"Records Windows kernel traces (context switches, CPU samples with stacks, image loads) "     \
    L"into capture files and a flight recorder for the perch command line."
#define RESTART_DELAY_MS 5000u
#define PRESHUTDOWN_MS   20000u
#define POLL_MS          200u

#if defined(__GNUC__)
__attribute__((format(gnu_printf, 4, 5)))
#endif
static void
sayf(perch_say_fn say, void *ctx, bool error, const char *fmt, ...)
{
    char line[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (say != NULL)
        say(ctx, error, line);
}

const char *perch_scm_state_name(uint32_t state)
{
    static const char *const names[] = {"unknown",       "stopped", "start pending",
                                        "stop pending",  "running", "continue pending",
                                        "pause pending", "paused"};
    return state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}

int perch_self_path(char *buf, size_t len)
{
    wchar_t w[MAX_PATH * 2];
    DWORD n = GetModuleFileNameW(NULL, w, sizeof w / sizeof w[0]);
    if (n == 0 || n >= sizeof w / sizeof w[0])
        return n == 0 ? perch_win_last_error() : PERCH_ERANGE;
    return perch__wide_to_utf8(w, buf, len);
}

/* Opens the SCM; says why it could not. */
static SC_HANDLE open_scm(DWORD access, perch_say_fn say, void *ctx, int *err)
{
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, access);
    if (scm != NULL)
        return scm;
    *err = perch_win_last_error();
    if (*err == PERCH_EACCES)
        sayf(say, ctx, true,
             "Not elevated: the service control manager refuses this account; run it from an "
             "elevated prompt (Run as administrator).");
    else
        sayf(say, ctx, true, "The service control manager could not be opened: %s.",
             perch_strerror(*err));
    return NULL;
}

static void set_failure_actions(SC_HANDLE svc, perch_say_fn say, void *ctx)
{
    SC_ACTION actions[3] = {{SC_ACTION_RESTART, RESTART_DELAY_MS},
                            {SC_ACTION_RESTART, RESTART_DELAY_MS},
                            {SC_ACTION_NONE, 0}};
    SERVICE_FAILURE_ACTIONSW fa = {86400, NULL, NULL, 3, actions};
    SERVICE_FAILURE_ACTIONS_FLAG flag = {TRUE};
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS, &fa)) {
        sayf(say, ctx, true, "Failure actions could not be set: %s.",
             perch_strerror(perch_win_last_error()));
        return;
    }
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &flag))
        sayf(say, ctx, true,
             "Failure actions are set for crashes only: the flag for failures with an error "
             "code could not be set (%s).",
             perch_strerror(perch_win_last_error()));
    sayf(say, ctx, false,
         "Failure actions: restart after %u s, twice, then stay stopped (the count resets after "
         "a day).",
         RESTART_DELAY_MS / 1000);
}

static void configure(SC_HANDLE svc, const char *exe, perch_say_fn say, void *ctx)
{
    SERVICE_DESCRIPTIONW desc = {(LPWSTR)DESCRIPTION};
    SERVICE_PRESHUTDOWN_INFO pre = {PRESHUTDOWN_MS};
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_DESCRIPTION, &desc))
        sayf(say, ctx, true, "The description could not be set: %s.",
             perch_strerror(perch_win_last_error()));
    set_failure_actions(svc, say, ctx);
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_PRESHUTDOWN_INFO, &pre))
        sayf(say, ctx, true, "The preshutdown timeout could not be set: %s.",
             perch_strerror(perch_win_last_error()));
    int err = perch__eventlog_register(exe);
    if (err == 0)
        sayf(say, ctx, false, "Event log source Perch registered in the Application log.");
    else
        sayf(say, ctx, true, "The event log source could not be registered: %s.",
             perch_strerror(err));
}

static int say_create_error(DWORD e, perch_say_fn say, void *ctx)
{
    perch_scm_info info;
    switch (e) {
    case ERROR_SERVICE_EXISTS:
    case ERROR_DUPLICATE_SERVICE_NAME:
        perch_scm_query(&info);
        sayf(say, ctx, true,
             "Already installed: the Perch service exists (it runs %s); run 'perchd uninstall' "
             "first to install it again.",
             info.binary[0] ? info.binary : "an unknown program");
        return PERCH_EEXIST;
    case ERROR_SERVICE_MARKED_FOR_DELETE:
        sayf(say, ctx, true,
             "A previous Perch service is marked for deletion: Windows removes it once every "
             "program holding it open (services.msc, Event Viewer, a running perchd) lets go of "
             "it, or at the next reboot; install again after that.");
        return PERCH_ESTATE;
    case ERROR_ACCESS_DENIED:
        sayf(say, ctx, true,
             "Not elevated: creating a service needs an administrator; run it from an elevated "
             "prompt (Run as administrator).");
        return PERCH_EACCES;
    default:
        sayf(say, ctx, true, "The service could not be created: %s (Win32 error %lu).",
             perch_strerror(perch_win_error(e)), (unsigned long)e);
        return perch_win_error(e);
    }
}

int perch_scm_install(bool auto_start, perch_say_fn say, void *ctx)
{
    char exe[PERCH_CONFIG_PATH_MAX], cmd[PERCH_CONFIG_PATH_MAX + 16];
    int err = perch_self_path(exe, sizeof exe);
    if (err < 0) {
        sayf(say, ctx, true, "The path of perchd.exe could not be read: %s.", perch_strerror(err));
        return err;
    }
    snprintf(cmd, sizeof cmd, "\"%s\" service", exe);
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT | SC_MANAGER_CREATE_SERVICE, say, ctx, &err);
    if (scm == NULL)
        return err;
    wchar_t *wcmd = perch__utf8_to_wide(cmd);
    SC_HANDLE svc = wcmd == NULL
                        ? NULL
                        : CreateServiceW(scm, SERVICE_NAME, DISPLAY_NAME, SERVICE_ALL_ACCESS,
                                         SERVICE_WIN32_OWN_PROCESS,
                                         auto_start ? SERVICE_AUTO_START : SERVICE_DEMAND_START,
                                         SERVICE_ERROR_NORMAL, wcmd, NULL, NULL, NULL, NULL, NULL);
    DWORD e = wcmd == NULL ? ERROR_OUTOFMEMORY : GetLastError();
    perch__free(wcmd);
    if (svc == NULL) {
        err = say_create_error(e, say, ctx);
        CloseServiceHandle(scm);
        return err;
    }
    sayf(say, ctx, false,
         "Installed the Perch service: it runs %s as LocalSystem, %s; start it with 'sc start "
         "Perch' or 'net start Perch'.",
         cmd, auto_start ? "started automatically at boot" : "started on demand");
    configure(svc, exe, say, ctx);
    sayf(say, ctx, false,
         "Configuration: the defaults; 'perchd config show' lists them and 'perchd config set "
         "KEY VALUE' changes one.");
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    return 0;
}

/* Asks a running service to stop and waits for it; says what happened. */
static void stop_running(SC_HANDLE svc, uint32_t wait_ms, perch_say_fn say, void *ctx)
{
    SERVICE_STATUS_PROCESS sp;
    SERVICE_STATUS ss;
    DWORD n;
    if (!QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&sp, sizeof sp, &n) ||
        sp.dwCurrentState == SERVICE_STOPPED)
        return;
    DWORD pid = sp.dwProcessId;
    if (!ControlService(svc, SERVICE_CONTROL_STOP, &ss) &&
        GetLastError() != ERROR_SERVICE_NOT_ACTIVE) {
        sayf(say, ctx, true, "The running service (pid %lu) could not be asked to stop: %s.",
             (unsigned long)pid, perch_strerror(perch_win_last_error()));
        return;
    }
    for (ULONGLONG start = GetTickCount64(); GetTickCount64() - start < wait_ms;) {
        if (!QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&sp, sizeof sp, &n) ||
            sp.dwCurrentState == SERVICE_STOPPED) {
            sayf(say, ctx, false, "Stopped the running service (pid %lu).", (unsigned long)pid);
            return;
        }
        Sleep(POLL_MS);
    }
    sayf(say, ctx, true,
         "The service (pid %lu) did not stop within %u s; it is removed once it stops.",
         (unsigned long)pid, wait_ms / 1000);
}

int perch_scm_uninstall(uint32_t stop_wait_ms, perch_say_fn say, void *ctx)
{
    int err = 0;
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT, say, ctx, &err);
    if (scm == NULL)
        return err;
    SC_HANDLE svc = OpenServiceW(scm, SERVICE_NAME, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE);
    DWORD e = svc == NULL ? GetLastError() : 0;
    if (svc == NULL) {
        bool missing = e == ERROR_SERVICE_DOES_NOT_EXIST;
        sayf(say, ctx, true, "%s",
             missing ? "Not installed: there is no Perch service to remove."
             : e == ERROR_ACCESS_DENIED
                 ? "Not elevated: removing the service needs an administrator; run it from an "
                   "elevated prompt (Run as administrator)."
                 : perch_strerror(perch_win_error(e)));
        if (missing && perch__eventlog_is_registered() && perch__eventlog_unregister() == 0)
            sayf(say, ctx, false, "Removed a left-over event log source Perch.");
        CloseServiceHandle(scm);
        return missing ? PERCH_ENOENT : perch_win_error(e);
    }
    stop_running(svc, stop_wait_ms, say, ctx);
    if (!DeleteService(svc)) {
        e = GetLastError();
        err = e == ERROR_SERVICE_MARKED_FOR_DELETE ? PERCH_ESTATE : perch_win_error(e);
        sayf(say, ctx, true, "%s",
             e == ERROR_SERVICE_MARKED_FOR_DELETE
                 ? "Already marked for deletion: Windows removes the service once every program "
                   "holding it open lets go of it, or at the next reboot."
                 : perch_strerror(err));
    } else {
        sayf(say, ctx, false,
             "Removed the Perch service and its configuration (captures and logs were kept).");
    }
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    if (perch__eventlog_unregister() == 0)
        sayf(say, ctx, false, "Removed the event log source Perch.");
    return err;
}

static void query_config(SC_HANDLE svc, perch_scm_info *info)
{
    DWORD need = 0;
    QueryServiceConfigW(svc, NULL, 0, &need);
    QUERY_SERVICE_CONFIGW *qc = need ? perch__alloc(need) : NULL;
    if (qc != NULL && QueryServiceConfigW(svc, qc, need, &need)) {
        info->auto_start = qc->dwStartType == SERVICE_AUTO_START;
        if (qc->lpBinaryPathName != NULL)
            perch__wide_to_utf8(qc->lpBinaryPathName, info->binary, sizeof info->binary);
    }
    perch__free(qc);
}

int perch_scm_query(perch_scm_info *info)
{
    SERVICE_STATUS_PROCESS sp;
    DWORD n;
    memset(info, 0, sizeof *info);
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
    if (scm == NULL)
        return perch_win_last_error();
    SC_HANDLE svc = OpenServiceW(scm, SERVICE_NAME, SERVICE_QUERY_STATUS | SERVICE_QUERY_CONFIG);
    int err = 0;
    if (svc == NULL) {
        DWORD e = GetLastError();
        err = e == ERROR_SERVICE_DOES_NOT_EXIST ? 0 : perch_win_error(e);
    } else {
        info->installed = true;
        if (QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&sp, sizeof sp, &n)) {
            info->state = sp.dwCurrentState;
            info->pid = sp.dwProcessId;
            info->exit_code = sp.dwWin32ExitCode;
            info->specific_exit = sp.dwServiceSpecificExitCode;
        }
        query_config(svc, info);
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return err;
}
