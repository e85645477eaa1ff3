/*
 * perchd serves its pipe: `perch` commands against a `perchd run` in a console under Wine (no
 * ETW session in this test: Wine's is a stub and the daemon degrades). perch status reaches
 * that process (its pid) and reports the daemon's own degraded sentence; a state-changing
 * request lands in perchd's log with the pid of the perch process that sent it; what the
 * daemon cannot do yet is refused with a sentence; when perchd stops, the pipe is gone and
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

static void test_perch_talks_to_perchd(void **state)
{
    (void)state;
    struct harness_child c;
    static perch_cli_result r;
    char args[MAX_PATH * 3], want[128];
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-serves-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
    harness_fresh_dir("serves", dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 10", dir, dir);
    harness_spawn(args, 0, &c);
    wait_for_pipe();

    perch_cli_run("status", &r);
    snprintf(want, sizeof want, "(pid %lu)", (unsigned long)c.pi.dwProcessId);
    if (r.code != 0 || !strstr(r.out, want) || !strstr(r.out, "perchd "))
        fail_msg("perch status: exit %lu\n%s%s", r.code, r.out, r.err);
    assert_contains(r.out, "degraded: ");
    assert_contains(r.out, "this client: administrator"); /* Wine's user is one */
    perch_cli_run("status --json", &r);
    assert_int_equal(r.code, 0);
    assert_contains(r.out, "\"session_state\":\"degraded\"");

    perch_cli_run("record", &r); /* done or refused: either way logged with its pid */
    DWORD record_pid = r.pid;
    perch_cli_run("top", &r);
    assert_int_not_equal(r.code, 0);
    assert_contains(r.err, "perch top: ");

    perch_cli_run("captures", &r);
    assert_true(r.code == 0 || strstr(r.err, "not available") != NULL);

    DWORD code = harness_finish(&c, out, sizeof out, 60000);
    assert_int_equal(code, 0);
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\perchd.log", dir);
    char *log = harness_read_text(path);
    snprintf(want, sizeof want, "pipe client pid %lu (", (unsigned long)record_pid);
    assert_contains(log, want);
    assert_contains(log, "perch.exe, admin): RECORD");
    free(log);

    perch_cli_run("status", &r);
    assert_int_equal(r.code, 6);
    assert_contains(r.err, "perchd is not running");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perch_talks_to_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
