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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "win_spawn.h"

#define HARNESS_OUT_MAX (256u << 10)

/* A Windows path for a Unix or Windows path p (Z: prefix for a Unix one). */
static inline void harness_win_path(const char *p, char *out, size_t len)
{
    snprintf(out, len, "%s%s", p[0] == '/' ? "Z:" : "", p);
    for (char *c = out; *c; c++)
        if (*c == '/')
            *c = '\\';
}

/* The Windows path of the program named by environment variable env (PERCHD_EXE,
 * PERCHD_FAKE_EXE: the fake-linked perchd, PERCH_EXE: the CLI). */
static inline const char *harness_exe(const char *env)
{
    static char path[4][MAX_PATH * 2];
    static int next;
    const char *value = getenv(env);
    char *out = path[next++ % 4];
    if (value == NULL || value[0] == '\0')
        fail_msg("%s is not set (ctest sets it to the program of this build)", env);
    harness_win_path(value, out, sizeof path[0]);
    return out;
}

static inline const char *harness_perchd(void)
{
    return harness_exe("PERCHD_EXE");
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

/* A child program. Its stdout and stderr go into one pipe that a thread of ours reads all
 * along: perchd echoes every log line there, and a pipe nobody reads fills and blocks
 * whichever perchd thread logs next. What the thread reads lives on the heap, shared by the
 * thread and the child (two references), so a test that fails before harness_finish leaves
 * the thread nothing freed to write into. */
struct harness_drain {
    HANDLE out_read;
    volatile LONG refs;
    volatile LONG used;
    char text[HARNESS_OUT_MAX]; /* what the child wrote, NUL-terminated, the first bytes kept */
};

struct harness_child {
    PROCESS_INFORMATION pi;
    HANDLE drainer;
    struct harness_drain *drain;
};

static inline void harness_drain_release(struct harness_drain *g)
{
    if (InterlockedDecrement(&g->refs) == 0) {
        CloseHandle(g->out_read);
        free(g);
    }
}

static DWORD WINAPI harness_drain_thread(LPVOID arg)
{
    struct harness_drain *g = arg;
    char buf[4096];
    DWORD n;
    while (ReadFile(g->out_read, buf, sizeof buf, &n, NULL) && n > 0) {
        size_t used = (size_t)g->used, room = HARNESS_OUT_MAX - 1 - used, k = n < room ? n : room;
        memcpy(g->text + used, buf, k);
        g->text[used + k] = '\0';
        InterlockedExchange(&g->used, (LONG)(used + k));
    }
    harness_drain_release(g);
    return 0;
}

/* Startup information that gives a child our stdin and `out` as its stdout and stderr. */
static inline void harness_startup_info(STARTUPINFOA *si, HANDLE out)
{
    memset(si, 0, sizeof *si);
    si->cb = sizeof *si;
    si->dwFlags = STARTF_USESTDHANDLES;
    si->hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si->hStdOutput = out;
    si->hStdError = out;
}

/* Starts the program of environment variable env with args (a command-line tail), stdout
 * and stderr into one pipe, drained from now on. End it with harness_finish or harness_end. */
static inline void harness_spawn_with(const char *env, const char *args, DWORD flags,
                                      struct harness_child *c)
{
    char cmd[8192];
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE wr;
    STARTUPINFOA si;
    snprintf(cmd, sizeof cmd, "\"%s\" %s", harness_exe(env), args);
    memset(c, 0, sizeof *c);
    struct harness_drain *g = calloc(1, sizeof *g);
    assert_non_null(g);
    assert_true(CreatePipe(&g->out_read, &wr, &sa, 0));
    SetHandleInformation(g->out_read, HANDLE_FLAG_INHERIT, 0);
    harness_startup_info(&si, wr);
    if (!win_spawn(cmd, TRUE, flags, &si, &c->pi))
        fail_msg("cannot start %s: Win32 error %lu", cmd, GetLastError());
    CloseHandle(wr);
    g->refs = 2;
    c->drain = g;
    c->drainer = CreateThread(NULL, 0, harness_drain_thread, g, 0, NULL);
    assert_non_null(c->drainer);
}

/* Lets go of an ended child: its output's reader, its handles, our reference. */
static inline void harness_release(struct harness_child *c, char *out, size_t len)
{
    WaitForSingleObject(c->drainer, 10000); /* the pipe ends with the process */
    if (out != NULL)
        snprintf(out, len, "%s", c->drain->text); /* the thread's reference keeps it alive */
    CloseHandle(c->drainer);
    CloseHandle(c->pi.hProcess);
    CloseHandle(c->pi.hThread);
    harness_drain_release(c->drain);
    memset(c, 0, sizeof *c);
}

/* Waits for the child to exit (or timeout_ms: then it is ended and the test fails), returns
 * its exit code; out receives its output, NUL-terminated (cut to len). */
static inline DWORD harness_finish(struct harness_child *c, char *out, size_t len, DWORD timeout_ms)
{
    DWORD code = 0;
    bool late = WaitForSingleObject(c->pi.hProcess, timeout_ms) != WAIT_OBJECT_0;
    if (late) {
        TerminateProcess(c->pi.hProcess, 99);
        WaitForSingleObject(c->pi.hProcess, 10000);
    }
    GetExitCodeProcess(c->pi.hProcess, &code);
    harness_release(c, out, len);
    if (late)
        fail_msg("perchd did not exit within %lu ms; output so far:\n%s", (unsigned long)timeout_ms,
                 out);
    return code;
}

/* For a teardown: ends the child if it still runs (a failed check left it) and lets it go;
 * nothing when it was finished already. */
static inline void harness_end(struct harness_child *c)
{
    if (c->pi.hProcess == NULL)
        return;
    if (WaitForSingleObject(c->pi.hProcess, 0) == WAIT_TIMEOUT) {
        TerminateProcess(c->pi.hProcess, 1);
        WaitForSingleObject(c->pi.hProcess, 10000);
    }
    harness_release(c, NULL, 0);
}

/* Starts perchd (PERCHD_EXE) with args. */
static inline void harness_spawn(const char *args, DWORD flags, struct harness_child *c)
{
    harness_spawn_with("PERCHD_EXE", args, flags, c);
}

/* Runs the program of env with args and waits for it; returns its exit code, output in out. */
static inline DWORD harness_run_with(const char *env, const char *args, char *out, size_t len,
                                     DWORD timeout_ms)
{
    struct harness_child c;
    harness_spawn_with(env, args, 0, &c);
    return harness_finish(&c, out, len, timeout_ms);
}

/* Runs perchd (PERCHD_EXE) with args and waits for it. */
static inline DWORD harness_run(const char *args, char *out, size_t len, DWORD timeout_ms)
{
    return harness_run_with("PERCHD_EXE", args, out, len, timeout_ms);
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

/* Reads a whole file into a malloc'd, NUL-terminated buffer ("" when missing). A file that
 * exists but cannot be opened for a moment (perchd may be replacing status.txt) is tried
 * again for up to 2 s rather than read as empty. */
static inline char *harness_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    for (int i = 0; f == NULL && i < 200 && GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES;
         i++) {
        Sleep(10);
        f = fopen(path, "rb");
    }
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

/* Reads dir\file (see harness_read_text). */
static inline char *harness_read_in(const char *dir, const char *file)
{
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\%s", dir, file);
    return harness_read_text(path);
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

/* The helper mode of a test program (see harness_is_helper): attaches to pid's console and sends
 * event there, as a key press in that console would. A separate process, because a process that
 * attached to and freed several consoles cannot be trusted to send to the next one (Wine). */
static inline int harness_send_ctrl_helper(DWORD pid, DWORD event)
{
    FreeConsole();
    if (!AttachConsole(pid))
        return 10;
    SetConsoleCtrlHandler(NULL, TRUE); /* the helper ignores the Ctrl+C it sends */
    if (!GenerateConsoleCtrlEvent(event, 0))
        return 11;
    return 0;
}

/* Delivers Ctrl+Break the way Windows itself does: a thread in the target at kernel32's
 * CtrlRoutine. Used because Wine 8's console server cannot generate CTRL_BREAK_EVENT
 * (GenerateConsoleCtrlEvent fails there with "not implemented"). */
static inline void harness_remote_ctrl(struct harness_child *c, DWORD event)
{
    FARPROC proc = GetProcAddress(GetModuleHandleA("kernel32.dll"), "CtrlRoutine");
    LPTHREAD_START_ROUTINE routine;
    assert_non_null(proc);
    memcpy(&routine, &proc, sizeof routine);
    HANDLE t =
        CreateRemoteThread(c->pi.hProcess, NULL, 0, routine, (LPVOID)(uintptr_t)event, 0, NULL);
    if (t == NULL)
        fail_msg("CreateRemoteThread(CtrlRoutine) failed: Win32 error %lu", GetLastError());
    WaitForSingleObject(t, 10000);
    CloseHandle(t);
}

static inline void harness_send_ctrl(struct harness_child *c, DWORD event)
{
    char self[MAX_PATH], cmd[MAX_PATH * 2];
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    DWORD code = 99;
    GetModuleFileNameA(NULL, self, sizeof self);
    snprintf(cmd, sizeof cmd, "\"%s\" --send-ctrl %lu %lu", self, (unsigned long)c->pi.dwProcessId,
             (unsigned long)event);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    assert_true(win_spawn(cmd, FALSE, DETACHED_PROCESS, &si, &pi));
    WaitForSingleObject(pi.hProcess, 10000);
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    if (code == 11 && event == CTRL_BREAK_EVENT)
        harness_remote_ctrl(c, event);
    else if (code != 0)
        fail_msg("the helper could not send the console event (exit %lu)", (unsigned long)code);
}

/* Test programs that send console events call this first in main: true when this process was
 * started as the helper (then return harness_helper(argv)). */
static inline bool harness_is_helper(int argc, char **argv)
{
    return argc == 4 && strcmp(argv[1], "--send-ctrl") == 0;
}

static inline int harness_helper(char **argv)
{
    return harness_send_ctrl_helper((DWORD)strtoul(argv[2], NULL, 10),
                                    (DWORD)strtoul(argv[3], NULL, 10));
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
