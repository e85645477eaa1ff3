/*
 * The fake ETW's state is system-wide, as real ETW's is: tests under Wine with two processes.
 * A child process starts Perch's session and is killed (a crashed perchd): the session
 * survives it, and the next start in another process finds it by name, stops it and starts
 * again (the stale-session path). A child consuming a session sees ProcessTrace return when
 * this process stops the session from outside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "etw.h"
#include "etw_fake.h"
#include "etw_sdk.h"
#include "perch/error.h"

static char ledger[1 << 16];

struct props_with_names {
    EVENT_TRACE_PROPERTIES p;
    WCHAR names[2048];
};

/* Runs this program again with one argument; returns the process handle. */
static HANDLE spawn(const WCHAR *arg, DWORD *pid)
{
    WCHAR self[MAX_PATH], cmd[MAX_PATH + 64];
    STARTUPINFOW si;
    PROCESS_INFORMATION pi;
    assert_true(GetModuleFileNameW(NULL, self, MAX_PATH) > 0);
    swprintf(cmd, sizeof cmd / sizeof cmd[0], L"\"%ls\" %ls", self, arg);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    assert_true(CreateProcessW(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi));
    CloseHandle(pi.hThread);
    *pid = pi.dwProcessId;
    return pi.hProcess;
}

static bool wait_session(bool present, perch_fake_etw_session_info *info)
{
    for (int i = 0; i < 1000; i++) {
        if (perch_fake_etw_session(PERCH_ETW_SESSION_NAME, info) == present)
            return true;
        Sleep(10);
    }
    return false;
}

static int setup(void **state)
{
    assert_int_equal(perch_fake_etw_reset(), 0);
    return 0;
}

static void test_killed_owner_leaves_a_stale_session(void **state)
{
    perch_fake_etw_session_info info, after;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    DWORD pid = 0;
    HANDLE child = spawn(L"child-start", &pid);
    assert_true(wait_session(true, &info));
    assert_int_equal(info.owner_pid, pid);
    assert_true(TerminateProcess(child, 9)); /* perchd crashes */
    assert_int_equal(WaitForSingleObject(child, 10000), WAIT_OBJECT_0);
    CloseHandle(child);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &after)); /* it survives */
    assert_int_equal(after.logger_id, info.logger_id);

    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_true(rep.stale_restarted);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &after));
    assert_int_not_equal(after.logger_id, info.logger_id);
    assert_int_equal(after.owner_pid, GetCurrentProcessId());
    perch_fake_etw_ledger(ledger, sizeof ledger);
    assert_non_null(strstr(ledger, "(another process)"));
    perch_etw_session_destroy(s);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_outside_stop_ends_another_process_consumer(void **state)
{
    struct props_with_names b;
    perch_fake_etw_session_info info;
    DWORD pid = 0, code = 99;
    HANDLE child = spawn(L"child-consume", &pid);
    assert_true(wait_session(true, &info));
    /* the child is in ProcessTrace once its (empty) replay is done; a fixed 300 ms sleep here
     * could stop the session before a slow child had opened it */
    assert_true(perch_fake_etw_wait_replay("Perch Kernel Session", 20000));
    memset(&b, 0, sizeof b);
    b.p.Wnode.BufferSize = sizeof b;
    b.p.LoggerNameOffset = offsetof(struct props_with_names, names);
    assert_int_equal(ControlTraceW(0, L"Perch Kernel Session", &b.p, EVENT_TRACE_CONTROL_STOP), 0);
    assert_int_equal(WaitForSingleObject(child, 20000), WAIT_OBJECT_0);
    assert_true(GetExitCodeProcess(child, &code));
    CloseHandle(child);
    assert_int_equal(code, 0); /* the child saw ProcessTrace return with success */
    assert_int_equal(perch_fake_etw_count(""), 0);
}

/* The child sides. */
static int child_start(void)
{
    perch_etw_session *s = NULL;
    if (perch_etw_session_start(NULL, &s, NULL) != 0)
        return 1;
    Sleep(INFINITE); /* until killed; the session is never stopped */
    return 2;
}

static int child_consume(void)
{
    perch_event_queue *q = NULL;
    perch_etw_session *s = NULL;
    perch_etw_consumer *c = NULL;
    int status = -1;
    if (perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q) != 0 ||
        perch_etw_session_start(NULL, &s, NULL) != 0 ||
        perch_etw_consumer_start(s, q, &c, NULL, 0) != 0)
        return 1;
    int rc = perch_etw_consumer_wait(c, 15000, &status);
    perch_etw_consumer_destroy(c);
    perch_etw_session_destroy(s); /* already gone: not stopped again */
    perch_event_queue_destroy(q);
    return rc == 0 && status == 0 ? 0 : 3;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_killed_owner_leaves_a_stale_session, setup),
        cmocka_unit_test_setup(test_outside_stop_ends_another_process_consumer, setup),
    };
    SetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", L"Software\\Perch\\EtwFakeTests\\crossproc");
    if (argc == 2 && strcmp(argv[1], "child-start") == 0)
        return child_start();
    if (argc == 2 && strcmp(argv[1], "child-consume") == 0)
        return child_consume();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
