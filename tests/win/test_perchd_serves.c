/*
 * perchd serves its pipe: `perch` commands against a `perchd run` in a console under Wine (no
 * ETW session in this test: Wine's is a stub and the daemon degrades). perch status reaches
 * that process (its pid) and reports the daemon's own degraded sentence; a state-changing
 * request lands in perchd's log with the pid of the perch process that sent it; perch top
 * reads the (empty) live window; when perchd stops, the pipe is gone and
 * perch says perchd is not running. (A second server on a served name: test_perchd_pipe.c.)
 */
#include "perch_cli_harness.h"
#include "perchd_harness.h"
#include "proto/client.h"

static char dir[MAX_PATH], pipe_name[96];
static char out[HARNESS_OUT_MAX];

static void wait_for_pipe(void)
{
    perch_proto_transport t;
    char why[300];
    for (int i = 0; i < 300; i++) {
        if (perch_pipe_connect(pipe_name, 100, &t, why, sizeof why) == 0) {
            t.close(t.ctx);
            return;
        }
        Sleep(100);
    }
    fail_msg("perchd did not serve %s within 30 s", pipe_name);
}

static struct harness_child served; /* static: the teardown ends it when a check fails */

static void test_perch_talks_to_perchd(void **state)
{
    (void)state;
    static perch_cli_result r;
    char args[MAX_PATH * 3], want[128];
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-serves-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
    harness_fresh_dir("serves", dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 300", dir, dir);
    /* ended by Ctrl+C below: a short --duration ran out on a loaded machine before the five
     * perch.exe processes had started under Wine */
    harness_spawn(args, CREATE_NEW_CONSOLE, &served);
    wait_for_pipe();

    perch_cli_run("status", &r);
    snprintf(want, sizeof want, "(pid %lu)", (unsigned long)served.pi.dwProcessId);
    if (r.code != 0 || !strstr(r.out, want) || !strstr(r.out, "perchd "))
        fail_msg("perch status: exit %lu\n%s%s", r.code, r.out, r.err);
    assert_contains(r.out, "degraded: ");
    assert_contains(r.out, "this client: administrator"); /* Wine's user is one */
    perch_cli_run("status --json", &r);
    assert_int_equal(r.code, 0);
    assert_contains(r.out, "\"session_state\":\"degraded\"");

    perch_cli_run("record", &r); /* done or refused: either way logged with its pid */
    DWORD record_pid = r.pid;
    perch_cli_run("top", &r); /* the live window, empty: no kernel events under Wine's ETW */
    assert_int_equal(r.code, 0);
    assert_contains(r.out, "top processes by cpu over 0.0 s: 0 samples");

    perch_cli_run("captures", &r);
    assert_true(r.code == 0 || strstr(r.err, "not available") != NULL);

    harness_send_ctrl(&served, CTRL_C_EVENT);
    DWORD code = harness_finish(&served, out, sizeof out, 60000);
    assert_int_equal(code, 0);
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\perchd.log", dir);
    char *log = harness_read_text(path);
    snprintf(want, sizeof want, "pipe client pid %lu (", (unsigned long)record_pid);
    assert_contains(log, want);
    assert_contains(log, "perch.exe, admin): RECORD");
    free(log);
    char log_line[MAX_PATH * 2 + 32]; /* the status file names the log (perch_log_file_path) */
    snprintf(log_line, sizeof log_line, "log file: %s", path);
    snprintf(path, sizeof path, "%s\\status.txt", dir);
    char *status = harness_read_text(path);
    assert_contains(status, log_line);
    free(status);

    perch_cli_run("status", &r);
    assert_int_equal(r.code, 6);
    assert_contains(r.err, "perchd is not running");
}

/* A process that holds the pipe name first: perchd refuses to serve it, logs why and says
 * so in its status. */
static void test_squatter_refused(void **state)
{
    (void)state;
    struct harness_child c;
    char args[MAX_PATH * 3], want[64], path[MAX_PATH * 2];
    wchar_t w[96];
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-squat-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
    MultiByteToWideChar(CP_UTF8, 0, pipe_name, -1, w, 96);
    HANDLE squat = CreateNamedPipeW(w, PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE, 4, 4096, 4096, 0, NULL);
    assert_true(squat != INVALID_HANDLE_VALUE);
    harness_fresh_dir("squat", dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 2", dir, dir);
    harness_spawn(args, 0, &c);
    DWORD code = harness_finish(&c, out, sizeof out, 60000);
    if (code != 0)
        fail_msg("perchd exit %lu:\n%s", (unsigned long)code, out);
    CloseHandle(squat);
    snprintf(want, sizeof want, "served by pid %lu", (unsigned long)GetCurrentProcessId());
    assert_contains(out, "perch cannot reach this perchd: the pipe name is already served");
    snprintf(path, sizeof path, "%s\\perchd.log", dir);
    char *log = harness_read_text(path);
    assert_contains(log, want);
    free(log);
    snprintf(path, sizeof path, "%s\\status.txt", dir);
    char *status = harness_read_text(path);
    assert_contains(status, "perch cannot reach this perchd");
    free(status);
}

/* A failed check leaves perchd running (--duration 300) with the instance lock: end it. */
static int end_perchd(void **state)
{
    (void)state;
    harness_end(&served);
    return 0;
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_perch_talks_to_perchd, end_perchd),
        cmocka_unit_test(test_squatter_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
