/*
 * Shared helpers of the perchd tests under Wine (tests/win/test_perchd_*.c): run perchd.exe as
 * a child with its output captured, start it in the background, drive the Perch service through
 * the real SCM API, and read the files the daemon writes. Wine runs real services: its
 * services.exe in the test prefix (kept up by tools/wine.sh's persistent wineserver) starts
 * perchd.exe as a service process, so these tests exercise the same calls Windows would.
 *
 * ctest gives the path of perchd.exe in PERCHD_EXE (a Unix path; Wine's Z: drive maps it) and
 * runs every test that touches the service under one RESOURCE_LOCK, because there is one SCM
 * and one single-instance lock per prefix. Each test uses its own data directory below the
 * current directory so nothing depends on what a previous run left.
 */
#ifndef PERCH_TEST_PERCHD_HARNESS_H
#define PERCH_TEST_PERCHD_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#define HARNESS_OUT_MAX (256u << 10)

/* A Windows path for a Unix or Windows path p (Z: prefix for a Unix one). */
static inline void harness_win_path(const char *p, char *out, size_t len)
{
    snprintf(out, len, "%s%s", p[0] == '/' ? "Z:" : "", p);
    for (char *c = out; *c; c++)
        if (*c == '/')
            *c = '\\';
}

static inline const char *harness_perchd(void)
{
    static char path[MAX_PATH * 2];
    const char *env = getenv("PERCHD_EXE");
    if (env == NULL || env[0] == '\0')
        fail_msg("PERCHD_EXE is not set (ctest sets it to the perchd.exe of this build)");
    harness_win_path(env, path, sizeof path);
    return path;
}

/* A fresh directory .\name below the current directory (absolute Windows path in out). */
static inline void harness_fresh_dir(const char *name, char *out, size_t len)
{
    char cwd[MAX_PATH], cmd[MAX_PATH * 3];
    GetCurrentDirectoryA(sizeof cwd, cwd);
    snprintf(out, len, "%s\\%s", cwd, name);
    snprintf(cmd, sizeof cmd, "cmd /c rmdir /s /q \"%s\" >nul 2>nul", out);
    system(cmd);
    CreateDirectoryA(out, NULL);
}

struct harness_child {
    PROCESS_INFORMATION pi;
    HANDLE out_read;
};

/* Starts perchd with args (a command-line tail), stdout and stderr into one pipe. */
static inline void harness_spawn(const char *args, DWORD flags, struct harness_child *c)
{
    char cmd[8192];
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE wr;
    STARTUPINFOA si;
    snprintf(cmd, sizeof cmd, "\"%s\" %s", harness_perchd(), args);
    assert_true(CreatePipe(&c->out_read, &wr, &sa, 0));
    SetHandleInformation(c->out_read, HANDLE_FLAG_INHERIT, 0);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = wr;
    si.hStdError = wr;
    if (!CreateProcessA(NULL, cmd, NULL, NULL, TRUE, flags, NULL, NULL, &si, &c->pi))
        fail_msg("cannot start %s: Win32 error %lu", cmd, GetLastError());
    CloseHandle(wr);
}

/* Reads the child's output until it exits (or timeout_ms), returns its exit code (fails the
 * test on timeout). out receives the output, NUL-terminated. */
static inline DWORD harness_finish(struct harness_child *c, char *out, size_t len, DWORD timeout_ms)
{
    size_t used = 0;
    DWORD code = 0, n;
    ULONGLONG start = GetTickCount64();
    for (;;) {
        DWORD avail = 0;
        while (PeekNamedPipe(c->out_read, NULL, 0, NULL, &avail, NULL) && avail > 0 &&
               used + 1 < len &&
               ReadFile(c->out_read, out + used,
                        (DWORD)(len - 1 - used < avail ? len - 1 - used : avail), &n, NULL))
            used += n;
        if (WaitForSingleObject(c->pi.hProcess, 20) == WAIT_OBJECT_0) {
            while (used + 1 < len &&
                   ReadFile(c->out_read, out + used, (DWORD)(len - 1 - used), &n, NULL) && n > 0)
                used += n;
            break;
        }
        if (GetTickCount64() - start > timeout_ms) {
            TerminateProcess(c->pi.hProcess, 99);
            out[used] = '\0';
            fail_msg("perchd did not exit within %lu ms; output so far:\n%s",
                     (unsigned long)timeout_ms, out);
        }
    }
    out[used] = '\0';
    GetExitCodeProcess(c->pi.hProcess, &code);
    CloseHandle(c->pi.hProcess);
    CloseHandle(c->pi.hThread);
    CloseHandle(c->out_read);
    return code;
}

/* Runs perchd with args and waits for it; returns its exit code, output in out. */
static inline DWORD harness_run(const char *args, char *out, size_t len, DWORD timeout_ms)
{
    struct harness_child c;
    harness_spawn(args, 0, &c);
    return harness_finish(&c, out, len, timeout_ms);
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (strstr((hay), (needle)) == NULL)                                                       \
            fail_msg("expected \"%s\" in:\n%s", (needle), (hay));                                  \
    } while (0)

#define assert_lacks(hay, needle)                                                                  \
    do {                                                                                           \
        if (strstr((hay), (needle)) != NULL)                                                       \
            fail_msg("did not expect \"%s\" in:\n%s", (needle), (hay));                            \
    } while (0)

/* Reads a whole file into a malloc'd, NUL-terminated buffer ("" when missing). */
static inline char *harness_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (f == NULL) {
        buf = calloc(1, 1);
        assert_non_null(buf);
        return buf;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    buf[fread(buf, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return buf;
}

/* Waits until dir\status.txt contains needle; false after timeout_ms. */
static inline int harness_wait_status(const char *dir, const char *needle, DWORD timeout_ms)
{
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\status.txt", dir);
    for (ULONGLONG start = GetTickCount64(); GetTickCount64() - start < timeout_ms;) {
        char *text = harness_read_text(path);
        int found = strstr(text, needle) != NULL;
        free(text);
        if (found)
            return 1;
        Sleep(50);
    }
    return 0;
}

/* ---- the service through the SCM ---------------------------------------------------------- */

static inline SC_HANDLE harness_open_service(DWORD access)
{
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
    SC_HANDLE svc;
    assert_non_null(scm);
    svc = OpenServiceW(scm, L"Perch", access);
    CloseServiceHandle(scm);
    return svc;
}

/* Waits until the service is in state; returns its last status. */
static inline SERVICE_STATUS_PROCESS harness_wait_state(DWORD state, DWORD timeout_ms)
{
    SERVICE_STATUS_PROCESS sp;
    DWORD n;
    SC_HANDLE svc = harness_open_service(SERVICE_QUERY_STATUS);
    assert_non_null(svc);
    memset(&sp, 0, sizeof sp);
    for (ULONGLONG start = GetTickCount64(); GetTickCount64() - start < timeout_ms;) {
        assert_true(QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&sp, sizeof sp, &n));
        if (sp.dwCurrentState == state)
            break;
        Sleep(50);
    }
    CloseServiceHandle(svc);
    if (sp.dwCurrentState != state)
        fail_msg("the service is in state %lu, not %lu, after %lu ms",
                 (unsigned long)sp.dwCurrentState, (unsigned long)state, (unsigned long)timeout_ms);
    return sp;
}

/* Removes any Perch service a failed earlier run left (stopping it first). */
static inline void harness_clean_service(void)
{
    char out[4096];
    harness_run("uninstall", out, sizeof out, 60000);
}

#endif
