/*
 * `perchd run` in a console under Wine: a timed run starts, says so, writes its status and log
 * and stops cleanly; Ctrl+C (sent through the child's own console, as a user's key press would
 * be) and Ctrl+Break (delivered as Windows delivers it, a thread at kernel32!CtrlRoutine, since
 * Wine 8 cannot generate it) stop it through the same path, Ctrl+Break after trying a
 * flight-recorder snapshot; --no-privileges gives the degraded start whose status says in one
 * sentence why kernel data is missing; a second console run is refused while one runs.
 */
#include "perchd_harness.h"

static char dir[MAX_PATH];
static char out[HARNESS_OUT_MAX];

/* The perchd runs of the running test (second: one started while child runs): file-static so
 * that the teardown ends them when a check fails (a run left behind would hold the instance
 * lock and refuse the later tests' runs). */
static struct harness_child child, second;

static int end_children(void **state)
{
    (void)state;
    harness_end(&second);
    harness_end(&child);
    return 0;
}

static void spawn_run(const char *name, const char *extra, DWORD flags, struct harness_child *c)
{
    char args[MAX_PATH * 3];
    harness_fresh_dir(name, dir, sizeof dir);
    snprintf(args, sizeof args, "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" %s",
             dir, dir, extra);
    harness_spawn(args, flags, c);
}

static void test_timed_run(void **state)
{
    spawn_run("con_timed", "--duration 1", 0, &child);
    assert_int_equal(harness_finish(&child, out, sizeof out, 30000), 0);
    assert_contains(out, "is starting in a console");
    assert_contains(out, "Running in this console: Ctrl+C stops");
    assert_contains(out, "The requested duration (1000 ms) is over.");
    assert_contains(out, "perchd stopped.");
    char *status = harness_read_in(dir, "status.txt");
    assert_contains(status, "state: stopped");
    assert_contains(status, "mode: console (perchd run)");
    assert_contains(status, "never on a Windows machine");
    free(status);
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "is starting in a console");
    assert_contains(log, "perchd stopped.");
    free(log);
}

static void test_unprivileged_run_is_degraded(void **state)
{
    spawn_run("con_noprivs", "--duration 1 --no-privileges", 0, &child);
    assert_int_equal(harness_finish(&child, out, sizeof out, 30000), 0);
    assert_contains(out, "Degraded:");
    char *status = harness_read_in(dir, "status.txt");
    assert_contains(status, "state: stopped (degraded)");
    assert_contains(status, "perchd was told to run as if it were not an administrator");
    assert_contains(status, "no kernel data is recorded.");
    free(status);
}

static void run_until_ctrl(const char *name, DWORD event)
{
    spawn_run(name, "--duration 20", CREATE_NEW_CONSOLE, &child);
    if (!harness_wait_status(dir, "state: running", 20000))
        fail_msg("perchd run did not report running"); /* the teardown ends it */
    harness_send_ctrl(&child, event);
    assert_int_equal(harness_finish(&child, out, sizeof out, 30000), 0);
    assert_lacks(out, "The requested duration");
    assert_contains(out, "perchd stopped.");
    char *status = harness_read_in(dir, "status.txt");
    assert_contains(status, "state: stopped");
    free(status);
}

static void test_ctrl_c_stops(void **state)
{
    run_until_ctrl("con_ctrl_c", CTRL_C_EVENT);
    assert_lacks(out, "No snapshot was written");
    assert_lacks(out, "Snapshot of the flight recorder");
}

static void test_ctrl_break_snapshots_and_stops(void **state)
{
    run_until_ctrl("con_ctrl_break", CTRL_BREAK_EVENT);
    assert_contains(out, "snapshot");
}

static void test_second_run_is_refused(void **state)
{
    char other[MAX_PATH], args[MAX_PATH * 3];
    spawn_run("con_first", "--duration 30", 0, &child);
    assert_true(harness_wait_status(dir, "state: running", 20000));
    harness_fresh_dir("con_second", other, sizeof other);
    snprintf(args, sizeof args, "run --defaults --data-dir \"%s\" --duration 1", other);
    harness_spawn(args, 0, &second);
    assert_int_equal(harness_finish(&second, out, sizeof out, 30000), 1);
    assert_contains(out, "another perchd (the service or 'perchd run') is already running");
    TerminateProcess(child.pi.hProcess, 0);
    harness_finish(&child, out, sizeof out, 10000);
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_timed_run, end_children),
        cmocka_unit_test_teardown(test_unprivileged_run_is_degraded, end_children),
        cmocka_unit_test_teardown(test_ctrl_break_snapshots_and_stops, end_children),
        cmocka_unit_test_teardown(test_ctrl_c_stops, end_children),
        cmocka_unit_test_teardown(test_second_run_is_refused, end_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
