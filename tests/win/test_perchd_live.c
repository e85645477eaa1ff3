/*
 * The live kernel path end to end under Wine, with perchd_fake.exe (perchd's own objects linked
 * with the fake ETW of tests/win/etw_fake, which replays an .etl through the real-time callback
 * as the OS would): for every real trace in PERCH_DATA_DIR/etl and two `perch synth` seeds, the
 * capture `perchd run` records live equals, by `perch report --json` (its "source" and end time
 * aside: a live session has no end), the capture `perch import` makes from the same file; no Perch
 * session is left after a normal stop, a failed start, a failed consumer, or a killed service
 * started again (the stale session is recognised and restarted); the service under the SCM records
 * the same capture, answers `perch status` over its pipe and writes a flight-recorder snapshot for
 * `perch snapshot`; a session stopped from outside is restarted and its gap is in the ledger;
 * Ctrl+Break writes a snapshot of the flight recorder, a capture of the replayed trace's samples; a
 * feature the OS refuses is named with its reason in the status and in the capture, and the rest
 * keeps recording. And with Wine's own stub ETW (the real perchd.exe), `perchd run` neither hangs
 * nor crashes and its status says in a sentence why no kernel data arrives.
 */
#include "etw_fake.h"
#include "perchd_harness.h"
#include "report_end_time.h"
#include "testdata.h"

#define SESSION "Perch Kernel Session"

/* The perchd_fake of the running test: file-static so that the teardown ends it when a
 * check fails (it would otherwise run on, holding the instance lock, into later tests). */
static struct harness_child child;

static int end_child(void **state)
{
    (void)state;
    harness_end(&child);
    return 0;
}

static char dir[MAX_PATH];
static char out[HARNESS_OUT_MAX];

/* "perch report --json FILE" with its "source" member taken out (live and import name their
 * source differently, by design). Caller frees. */
static char *report_of(const char *file)
{
    char args[MAX_PATH * 2];
    snprintf(args, sizeof args, "report --json \"%s\"", file);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    char *json = strdup(out), *src = strstr(json, "\"source\":\"");
    assert_non_null(src);
    char *end = strstr(src + 10, "\",");
    assert_non_null(end);
    memmove(src, end + 2, strlen(end + 2) + 1);
    return json;
}

static char *import_report(const char *etl)
{
    char args[MAX_PATH * 3], capture[MAX_PATH];
    snprintf(capture, sizeof capture, "%s\\imported.perch", dir);
    snprintf(args, sizeof args, "import \"%s\" -o \"%s\"", etl, capture);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    char *json = report_of(capture);
    assert_true(perch_test_zero_end_time(json)); /* a live session has none */
    return json;
}

/* The one recording in dir\cap (snapshots aside), into path. */
static void the_capture(char *path, size_t len)
{
    char pattern[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    int found = 0;
    snprintf(pattern, sizeof pattern, "%s\\cap\\*.perch", dir);
    HANDLE h = FindFirstFileA(pattern, &fd);
    if (h == INVALID_HANDLE_VALUE)
        fail_msg("no capture in %s\\cap", dir);
    do {
        if (strncmp(fd.cFileName, "snapshot-", 9) == 0)
            continue;
        snprintf(path, len, "%s\\cap\\%s", dir, fd.cFileName);
        found++;
    } while (FindNextFileA(h, &fd));
    FindClose(h);
    assert_int_equal(found, 1); /* one file: the recording never rotated */
}

static void fake_scenario(const char *replay)
{
    assert_int_equal(perch_fake_etw_reset(), 0);
    if (replay != NULL)
        assert_int_equal(perch_fake_etw_set_string("Replay", replay), 0);
}

/* perchd_fake run with a recording from the start, in a console Ctrl+C can reach. */
static void spawn_fake_run(const char *name, const char *extra, struct harness_child *c)
{
    char args[MAX_PATH * 4];
    harness_fresh_dir(name, dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --set RecordOnStart=on "
             "--set RotateSizeMb=65536 --duration 300 %s",
             dir, dir, extra);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, c);
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(c->pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
}

static void stop_run(struct harness_child *c)
{
    harness_send_ctrl(c, CTRL_C_EVENT);
    assert_int_equal(harness_finish(c, out, sizeof out, 120000), 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0); /* no Perch session left */
}

static void check_live_equals_import(const char *etl, const char *name)
{
    char capture[MAX_PATH * 2];
    fake_scenario(etl);
    spawn_fake_run(name, "", &child);
    if (!perch_fake_etw_wait_replay(SESSION, 120000))
        fail_msg("the replay of %s did not finish", etl);
    stop_run(&child);
    assert_contains(out, "The recording");
    assert_contains(out, "is complete");
    the_capture(capture, sizeof capture);
    char *live = report_of(capture), *imported = import_report(etl);
    if (strcmp(live, imported) != 0)
        fail_msg("%s: live and imported reports differ:\nlive:   %s\nimport: %s", etl, live,
                 imported);
    free(live);
    free(imported);
}

static void test_real_traces_live_equal_import(void **state)
{
    static const char *const traces[] = {
        "etl/perfview_net.4.5.2.x64.etl",  "etl/airbus_ShutdownPerfDiagLogger.etl",
        "etl/perfview_smallEtlFile.etl",   "etl/perfview_SelfDescribingSingleEvent.etl",
        "etl/airbus_lxcore_kernel.etl",    "etl/airbus_AMSITrace.etl",
        "etl/perfview_primitive-types.etl"};
    char etl[MAX_PATH * 2], name[32];
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        harness_win_path(perch_test_require_data(traces[i]), etl, sizeof etl);
        snprintf(name, sizeof name, "live_real_%zu", i);
        check_live_equals_import(etl, name);
    }
}

static void test_synth_traces_live_equal_import(void **state)
{
    char args[MAX_PATH * 3], etl[MAX_PATH * 2], synth_dir[MAX_PATH], name[32];
    harness_fresh_dir("live_synth_src", synth_dir, sizeof synth_dir);
    for (int seed = 1; seed <= 2; seed++) {
        snprintf(etl, sizeof etl, "%s\\seed%d.etl", synth_dir, seed);
        snprintf(args, sizeof args, "synth -o \"%s\" --seed %d --size 4M", etl, seed);
        assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
        snprintf(name, sizeof name, "live_synth_%d", seed);
        check_live_equals_import(etl, name);
    }
}

/* ---- no Perch session is ever left behind -------------------------------------------------- */

/* Waits until the status says needle (it is rewritten as perchd goes on); on failure ends
 * perchd, so the next test does not find it still running, and shows the status. */
static void expect_status(struct harness_child *c, const char *needle)
{
    if (harness_wait_status(dir, needle, 10000))
        return;
    TerminateProcess(c->pi.hProcess, 1);
    char *status = harness_read_in(dir, "status.txt");
    fail_msg("expected \"%s\" in the status:\n%s", needle, status);
}

static void test_failed_start_leaves_no_session(void **state)
{
    fake_scenario(NULL);
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace=5\0"), 0);
    spawn_fake_run("live_refused", "", &child);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    expect_status(&child, "state: running (degraded)");
    expect_status(&child, "the kernel session could not start");
    stop_run(&child);
}

static void test_failed_consumer_leaves_no_session(void **state)
{
    fake_scenario(NULL);
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "OpenTrace=5\0"), 0);
    spawn_fake_run("live_no_consumer", "", &child);
    expect_status(&child, "the kernel session could not start");
    expect_status(&child, "OpenTraceW");
    assert_int_equal(perch_fake_etw_count("Perch"), 0); /* the session was stopped again */
    stop_run(&child);
}

static void test_outside_stop_is_a_gap(void **state)
{
    char etl[MAX_PATH * 2], capture[MAX_PATH * 2];
    harness_win_path(perch_test_require_data("etl/airbus_ShutdownPerfDiagLogger.etl"), etl,
                     sizeof etl);
    fake_scenario(etl);
    assert_int_equal(perch_fake_etw_set_dword("StopAfterEvents", 2000), 0);
    spawn_fake_run("live_gap", "", &child);
    /* the first session is stopped from outside after 2000 events; the restart replays anew */
    for (int i = 0; i < 300 && !harness_wait_status(dir, "restarted 1 time", 100); i++)
        ;
    assert_true(perch_fake_etw_wait_replay(SESSION, 120000) ||
                harness_wait_status(dir, "restarted", 1));
    stop_run(&child);
    the_capture(capture, sizeof capture);
    char *live = report_of(capture);
    assert_contains(live, "\"live.session_gap\":");
    free(live);
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "Session:");
    free(log);
}

/* The number after "key": in a report's JSON (the first one). */
static unsigned long long json_count(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    if (p == NULL)
        fail_msg("no %s in %s", key, json);
    return strtoull(p + strlen(key), NULL, 10);
}

static void test_ctrl_break_writes_a_snapshot(void **state)
{
    char etl[MAX_PATH * 2], pattern[MAX_PATH * 2], snap[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    harness_win_path(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), etl, sizeof etl);
    fake_scenario(etl);
    spawn_fake_run("live_snapshot", "--set FlightRecorderSeconds=3600 --set RecordOnStart=off",
                   &child);
    assert_true(perch_fake_etw_wait_replay(SESSION, 120000));
    assert_true(harness_wait_status(dir, " s held, ", 10000)); /* the status shows it */
    perch_fake_etw_session_info info;
    char taken[64];
    assert_true(perch_fake_etw_session(SESSION, &info));
    snprintf(taken, sizeof taken, "events: %u received", info.delivered);
    if (!harness_wait_status(dir, taken, 60000)) { /* the model has taken every event */
        TerminateProcess(child.pi.hProcess, 1);
        fail_msg("perchd did not take the %u events delivered", info.delivered);
    }
    snprintf(pattern, sizeof pattern, "%s\\cap", dir);
    if (!RemoveDirectoryA(pattern)) { /* empty (no recording): the snapshot makes it again */
        TerminateProcess(child.pi.hProcess, 1);
        fail_msg("could not remove %s: error %lu", pattern, (unsigned long)GetLastError());
    }
    harness_send_ctrl(&child, CTRL_BREAK_EVENT);
    assert_int_equal(harness_finish(&child, out, sizeof out, 120000), 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    assert_contains(out, "Snapshot of the flight recorder written to");
    snprintf(pattern, sizeof pattern, "%s\\cap\\snapshot-*.perch", dir);
    HANDLE h = FindFirstFileA(pattern, &fd);
    if (h == INVALID_HANDLE_VALUE)
        fail_msg("no snapshot in %s\\cap:\n%s", dir, out);
    FindClose(h);
    snprintf(snap, sizeof snap, "%s\\cap\\%s", dir, fd.cFileName);
    /* every sample of the trace, the recorder's open segment included, bar those the model
     * still held back for their stack, which the snapshot's ledger counts */
    char *snapshot = report_of(snap), *imported = import_report(etl);
    unsigned long long got = json_count(snapshot, ",\"samples\":");
    unsigned long long all = json_count(imported, ",\"samples\":");
    const char *w = strstr(snapshot, "\"recorder.samples_waiting\":");
    unsigned long long waiting = w ? strtoull(w + 27, NULL, 10) : 0;
    printf("snapshot: %llu of the trace's %llu samples, %llu still waiting for their stack\n", got,
           all, waiting);
    assert_true(got > 0);
    assert_int_equal(got + waiting, all);
    free(snapshot);
    free(imported);
    snprintf(pattern, sizeof pattern, "info \"%s\"", snap);
    assert_int_equal(harness_run_with("PERCH_EXE", pattern, out, sizeof out, 60000), 0);
}

static void test_refused_feature_named_in_status_and_capture(void **state)
{
    char etl[MAX_PATH * 2], capture[MAX_PATH * 3];
    harness_win_path(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), etl, sizeof etl);
    fake_scenario(etl);
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "TraceStackTracingInfo=5\0"), 0);
    spawn_fake_run("live_refused_stacks", "", &child);
    assert_true(perch_fake_etw_wait_replay(SESSION, 120000));
    char *status = harness_read_in(dir, "status.txt");
    assert_contains(status, "some features refused");
    assert_contains(status, "feature stacks: refused (");
    assert_contains(status, "feature groups: on");
    free(status);
    stop_run(&child);
    the_capture(capture, sizeof capture);
    char args[MAX_PATH * 4];
    snprintf(args, sizeof args, "info \"%s\"", capture);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 60000), 0);
    assert_contains(out, "stacks: refused: ");
    char *live = report_of(capture); /* the rest was recorded */
    assert_true(json_count(live, ",\"samples\":") > 0);
    free(live);
}

/* ---- the service under the SCM, with the fake -------------------------------------------- */

static void fake_service_install(const char *name)
{
    char args[MAX_PATH * 3];
    harness_clean_service();
    harness_fresh_dir(name, dir, sizeof dir);
    assert_int_equal(harness_run_with("PERCHD_FAKE_EXE", "install", out, sizeof out, 30000), 0);
    snprintf(args, sizeof args, "config set DataDirectory \"%s\"", dir);
    assert_int_equal(harness_run(args, out, sizeof out, 30000), 0);
    snprintf(args, sizeof args, "config set CaptureDirectory \"%s\\cap\"", dir);
    assert_int_equal(harness_run(args, out, sizeof out, 30000), 0);
    assert_int_equal(harness_run("config set RecordOnStart on", out, sizeof out, 30000), 0);
}

static void service_control(DWORD control_or_start)
{
    SERVICE_STATUS ss;
    SC_HANDLE svc = harness_open_service(SERVICE_START | SERVICE_STOP);
    assert_non_null(svc);
    if (control_or_start == 0)
        assert_true(StartServiceW(svc, 0, NULL));
    else
        assert_true(ControlService(svc, control_or_start, &ss));
    CloseServiceHandle(svc);
}

static void test_service_records_live(void **state)
{
    char etl[MAX_PATH * 2], capture[MAX_PATH * 2];
    harness_win_path(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), etl, sizeof etl);
    fake_scenario(etl);
    fake_service_install("live_service");
    service_control(0);
    harness_wait_state(SERVICE_RUNNING, 30000);
    assert_true(perch_fake_etw_wait_replay(SESSION, 120000));
    assert_int_equal(perch_fake_etw_count("Perch"), 1);
    assert_int_equal(harness_run("status", out, sizeof out, 30000), 0);
    assert_contains(out, "Recording kernel events from the private system logger session");
    /* the same daemon over its pipe, as a client sees it */
    perch_fake_etw_session_info info;
    char events[64];
    assert_true(perch_fake_etw_session(SESSION, &info));
    snprintf(events, sizeof events, "events: %u total", info.delivered); /* all of them */
    for (ULONGLONG t0 = GetTickCount64();; Sleep(200)) { /* once the model has taken them */
        assert_int_equal(harness_run_with("PERCH_EXE", "status", out, sizeof out, 30000), 0);
        if (strstr(out, events) != NULL || GetTickCount64() - t0 > 60000)
            break;
    }
    assert_contains(out, "session: running, private system logger \"Perch Kernel Session\"");
    assert_contains(out, events);
    /* a snapshot of the service's flight recorder, over the pipe */
    char args[MAX_PATH * 3];
    snprintf(args, sizeof args, "snapshot -o \"%s\\snap.perch\"", dir);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 60000), 0);
    snprintf(args, sizeof args, "%s\\snap.perch", dir);
    char *snapshot = report_of(args);
    assert_true(json_count(snapshot, ",\"samples\":") > 0);
    free(snapshot);
    service_control(SERVICE_CONTROL_STOP);
    SERVICE_STATUS_PROCESS sp = harness_wait_state(SERVICE_STOPPED, 60000);
    assert_int_equal(sp.dwWin32ExitCode, 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    the_capture(capture, sizeof capture);
    char *live = report_of(capture), *imported = import_report(etl);
    assert_string_equal(live, imported);
    free(live);
    free(imported);
    harness_clean_service();
}

static void test_killed_service_restarts_its_stale_session(void **state)
{
    fake_scenario(NULL); /* an idle session */
    fake_service_install("live_killed");
    service_control(0);
    SERVICE_STATUS_PROCESS sp = harness_wait_state(SERVICE_RUNNING, 30000);
    assert_true(harness_wait_status(dir, "state: running", 10000));
    assert_int_equal(perch_fake_etw_count("Perch"), 1);
    HANDLE p = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE, sp.dwProcessId);
    assert_non_null(p);
    assert_true(TerminateProcess(p, 9));
    WaitForSingleObject(p, 10000);
    CloseHandle(p);
    assert_int_equal(perch_fake_etw_count("Perch"), 1); /* the killed one's, left behind */
    /* Windows' SCM sees the process die (and its failure actions restart it); Wine 8's keeps
     * saying RUNNING, refuses the stop (the pipe is gone) and then starts it again anyway. */
    SC_HANDLE svc = harness_open_service(SERVICE_START | SERVICE_STOP | SERVICE_QUERY_STATUS);
    SERVICE_STATUS ss;
    ControlService(svc, SERVICE_CONTROL_STOP, &ss);
    assert_true(StartServiceW(svc, 0, NULL));
    CloseServiceHandle(svc);
    SERVICE_STATUS_PROCESS again = harness_wait_state(SERVICE_RUNNING, 30000);
    assert_int_not_equal(again.dwProcessId, sp.dwProcessId);
    char pid_line[32];
    snprintf(pid_line, sizeof pid_line, "pid %lu,", (unsigned long)again.dwProcessId);
    assert_true(harness_wait_status(dir, pid_line, 20000));
    assert_int_equal(perch_fake_etw_count("Perch"), 1); /* the stale one replaced */
    service_control(SERVICE_CONTROL_STOP);
    harness_wait_state(SERVICE_STOPPED, 60000);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "stale");
    free(log);
    harness_clean_service();
}

/* ---- Wine's own ETW ------------------------------------------------------------------------ */

static void test_wine_stub_etw(void **state)
{
    char args[MAX_PATH * 3];
    harness_fresh_dir("live_wine_stub", dir, sizeof dir);
    snprintf(args, sizeof args, "run --defaults --data-dir \"%s\" --duration 7", dir);
    harness_spawn(args, 0, &child); /* the real perchd.exe: Wine's advapi32 */
    assert_int_equal(harness_finish(&child, out, sizeof out, 60000), 0);
    char *status = harness_read_in(dir, "status.txt");
    assert_contains(status, "state: stopped");
    /* one sentence: the session started but no events arrive, or why it could not start */
    if (strstr(status, "started, but no events have arrived") == NULL)
        assert_contains(status, "No kernel data is recorded: the kernel session could not start (");
    free(status);
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_real_traces_live_equal_import, end_child),
        cmocka_unit_test_teardown(test_synth_traces_live_equal_import, end_child),
        cmocka_unit_test_teardown(test_failed_start_leaves_no_session, end_child),
        cmocka_unit_test_teardown(test_failed_consumer_leaves_no_session, end_child),
        cmocka_unit_test_teardown(test_outside_stop_is_a_gap, end_child),
        cmocka_unit_test_teardown(test_ctrl_break_writes_a_snapshot, end_child),
        cmocka_unit_test_teardown(test_refused_feature_named_in_status_and_capture, end_child),
        cmocka_unit_test_teardown(test_service_records_live, end_child),
        cmocka_unit_test_teardown(test_killed_service_restarts_its_stale_session, end_child),
        cmocka_unit_test_teardown(test_wine_stub_etw, end_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
