/*
 * perchd under the real (Wine) service control manager: `perchd install` registers what it
 * says (own process, LocalSystem, demand or auto start, description, event source), a second
 * install and an uninstall of nothing say why they cannot; StartService brings the daemon to
 * RUNNING with its status file and log; ControlService stop takes it to STOPPED with exit code
 * 0; `perchd uninstall` stops a running service and removes it with its configuration; a
 * service that cannot start (another perchd holds the machine) stops with the Perch error as
 * its service-specific exit code; `perchd config` refuses bad values and stores good ones.
 */
#include "perchd_harness.h"

static char data_dir[MAX_PATH];
static char out[HARNESS_OUT_MAX];

/* The console perchd of the running test: file-static so that the teardown ends it when a
 * check fails (it would otherwise run on, holding the instance lock, into later tests). */
static struct harness_child console;

/* Ends what a failed check left: the console perchd, and the service if it is still installed
 * (uninstall stops it first), which would otherwise hold the instance lock for the programs
 * after this one. A passing test has removed the service already, so then nothing runs. */
static int end_perchd(void **state)
{
    (void)state;
    harness_end(&console);
    SC_HANDLE svc = harness_open_service(SERVICE_QUERY_STATUS);
    if (svc != NULL) {
        CloseServiceHandle(svc);
        harness_clean_service();
    }
    return 0;
}

/* Installs the service with its data and capture directories in a fresh test folder. */
static void install_with_dirs(const char *name, const char *flags)
{
    char args[MAX_PATH * 3];
    harness_clean_service();
    harness_fresh_dir(name, data_dir, sizeof data_dir);
    snprintf(args, sizeof args, "install %s", flags);
    assert_int_equal(harness_run(args, out, sizeof out, 30000), 0);
    snprintf(args, sizeof args, "config set DataDirectory \"%s\"", data_dir);
    assert_int_equal(harness_run(args, out, sizeof out, 30000), 0);
    snprintf(args, sizeof args, "config set CaptureDirectory \"%s\\captures\"", data_dir);
    assert_int_equal(harness_run(args, out, sizeof out, 30000), 0);
}

static void start_service(void)
{
    SC_HANDLE svc = harness_open_service(SERVICE_START);
    assert_non_null(svc);
    if (!StartServiceW(svc, 0, NULL))
        fail_msg("StartService failed: Win32 error %lu", GetLastError());
    CloseServiceHandle(svc);
}

static void stop_service(void)
{
    SERVICE_STATUS ss;
    SC_HANDLE svc = harness_open_service(SERVICE_STOP);
    assert_non_null(svc);
    assert_true(ControlService(svc, SERVICE_CONTROL_STOP, &ss));
    CloseServiceHandle(svc);
}

static void check_registration(DWORD start_type)
{
    SC_HANDLE svc = harness_open_service(SERVICE_QUERY_CONFIG);
    BYTE buf[8192];
    DWORD n;
    assert_non_null(svc);
    QUERY_SERVICE_CONFIGA *qc = (QUERY_SERVICE_CONFIGA *)buf;
    assert_true(QueryServiceConfigA(svc, qc, sizeof buf, &n));
    assert_int_equal(qc->dwServiceType, SERVICE_WIN32_OWN_PROCESS);
    assert_int_equal(qc->dwStartType, start_type);
    assert_contains(qc->lpBinaryPathName, "perchd.exe\" service");
    assert_string_equal(qc->lpServiceStartName, "LocalSystem");
    SERVICE_DESCRIPTIONA *d = (SERVICE_DESCRIPTIONA *)buf;
    assert_true(QueryServiceConfig2A(svc, SERVICE_CONFIG_DESCRIPTION, buf, sizeof buf, &n));
    assert_contains(d->lpDescription, "kernel traces");
    CloseServiceHandle(svc);
    HKEY h;
    assert_int_equal(RegOpenKeyExA(HKEY_LOCAL_MACHINE,
                                   "SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\"
                                   "Perch",
                                   0, KEY_READ, &h),
                     ERROR_SUCCESS);
    n = sizeof buf;
    assert_int_equal(RegQueryValueExA(h, "EventMessageFile", NULL, NULL, buf, &n), ERROR_SUCCESS);
    assert_contains((char *)buf, "perchd.exe");
    RegCloseKey(h);
}

static void test_install_start_stop_uninstall(void **state)
{
    char path[MAX_PATH * 2];
    harness_clean_service();
    assert_int_equal(harness_run("install", out, sizeof out, 30000), 0);
    assert_contains(out, "Installed the Perch service");
    assert_contains(out, "as LocalSystem, started on demand");
    assert_contains(out, "Event log source Perch registered");
    check_registration(SERVICE_DEMAND_START);
    assert_int_equal(harness_run("install", out, sizeof out, 30000), 1);
    assert_contains(out, "Already installed");
    install_with_dirs("svc_basic", "");

    start_service();
    SERVICE_STATUS_PROCESS sp = harness_wait_state(SERVICE_RUNNING, 20000);
    assert_true(sp.dwProcessId != 0);
    assert_true(sp.dwControlsAccepted & SERVICE_ACCEPT_STOP);
    assert_true(sp.dwControlsAccepted & SERVICE_ACCEPT_PRESHUTDOWN);
    assert_true(harness_wait_status(data_dir, "state: running", 10000));
    assert_int_equal(harness_run("status", out, sizeof out, 30000), 0);
    assert_contains(out, "service: running");
    assert_contains(out, "mode: service");
    assert_contains(out, "never on a Windows machine");

    stop_service();
    sp = harness_wait_state(SERVICE_STOPPED, 30000);
    assert_int_equal(sp.dwWin32ExitCode, 0);
    assert_true(harness_wait_status(data_dir, "state: stopped", 10000));
    assert_int_equal(harness_run("status", out, sizeof out, 30000), 3);
    assert_contains(out, "service: stopped");
    assert_contains(out, "not running");
    snprintf(path, sizeof path, "%s\\perchd.log", data_dir);
    char *log = harness_read_text(path);
    assert_contains(log, "is starting as the service");
    assert_contains(log, "asked perchd to stop (stop)");
    assert_contains(log, "perchd stopped");
    free(log);

    assert_int_equal(harness_run("uninstall", out, sizeof out, 60000), 0);
    assert_contains(out, "Removed the Perch service");
    assert_null(harness_open_service(SERVICE_QUERY_STATUS));
    assert_int_equal(GetLastError(), ERROR_SERVICE_DOES_NOT_EXIST);
    assert_int_equal(harness_run("uninstall", out, sizeof out, 30000), 1);
    assert_contains(out, "Not installed");
}

static void test_uninstall_stops_a_running_service(void **state)
{
    install_with_dirs("svc_uninstall", "--auto");
    check_registration(SERVICE_AUTO_START);
    start_service();
    harness_wait_state(SERVICE_RUNNING, 20000);
    assert_int_equal(harness_run("uninstall", out, sizeof out, 60000), 0);
    assert_contains(out, "Stopped the running service");
    assert_contains(out, "Removed the Perch service");
    assert_true(harness_wait_status(data_dir, "state: stopped", 10000));
}

static void test_start_fails_when_another_perchd_runs(void **state)
{
    char args[MAX_PATH * 3], console_dir[MAX_PATH];
    install_with_dirs("svc_busy", "");
    harness_fresh_dir("svc_busy_console", console_dir, sizeof console_dir);
    snprintf(args, sizeof args, "run --defaults --data-dir \"%s\" --duration 30", console_dir);
    harness_spawn(args, 0, &console);
    assert_true(harness_wait_status(console_dir, "state: running", 20000));
    start_service();
    SERVICE_STATUS_PROCESS sp = harness_wait_state(SERVICE_STOPPED, 20000);
    assert_int_equal(sp.dwWin32ExitCode, ERROR_SERVICE_SPECIFIC_ERROR);
    assert_int_equal(sp.dwServiceSpecificExitCode, 15); /* -PERCH_EBUSY */
    TerminateProcess(console.pi.hProcess, 0);
    harness_finish(&console, out, sizeof out, 10000);
    snprintf(args, sizeof args, "%s\\perchd.log", data_dir);
    char *log = harness_read_text(args);
    assert_contains(log, "another perchd (the service or 'perchd run') is already running");
    free(log);
    harness_clean_service();
}

static void test_config_set_refuse_store_reset(void **state)
{
    HKEY h;
    DWORD v = 0, n = sizeof v, type = 0;
    harness_clean_service();
    assert_int_equal(harness_run("config set SampleIntervalUs 250", out, sizeof out, 30000), 1);
    assert_contains(out, "not installed");
    install_with_dirs("svc_config", "");
    assert_int_equal(harness_run("config set SampleIntervalUs 50", out, sizeof out, 30000), 1);
    assert_contains(out, "SampleIntervalUs: '50' is out of range; allowed: 125 to 1000000");
    assert_int_equal(harness_run("config set SampleIntervalUs 250", out, sizeof out, 30000), 0);
    assert_contains(out, "SampleIntervalUs = 250 (was 1000)");
    assert_int_equal(RegOpenKeyExA(HKEY_LOCAL_MACHINE,
                                   "SYSTEM\\CurrentControlSet\\Services\\Perch\\Parameters", 0,
                                   KEY_READ | KEY_SET_VALUE, &h),
                     ERROR_SUCCESS);
    assert_int_equal(RegQueryValueExA(h, "SampleIntervalUs", NULL, &type, (BYTE *)&v, &n),
                     ERROR_SUCCESS);
    assert_int_equal(type, REG_DWORD);
    assert_int_equal(v, 250);
    assert_int_equal(harness_run("config show SampleIntervalUs", out, sizeof out, 30000), 0);
    assert_contains(out, "250");
    assert_int_equal(harness_run("config reset SampleIntervalUs", out, sizeof out, 30000), 0);
    assert_int_equal(RegQueryValueExA(h, "SampleIntervalUs", NULL, NULL, NULL, NULL),
                     ERROR_FILE_NOT_FOUND);
    /* a bad value written behind perchd's back: reported, the default used */
    assert_int_equal(RegSetValueExA(h, "FlightRecorderSeconds", 0, REG_SZ, (const BYTE *)"lots", 5),
                     ERROR_SUCCESS);
    RegCloseKey(h);
    assert_int_equal(harness_run("config show", out, sizeof out, 30000), 0);
    assert_contains(out, "FlightRecorderSeconds: 'lots' is not a number");
    assert_contains(out, "the default, 60, is used");
    harness_clean_service();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_install_start_stop_uninstall, end_perchd),
        cmocka_unit_test_teardown(test_uninstall_stops_a_running_service, end_perchd),
        cmocka_unit_test_teardown(test_start_fails_when_another_perchd_runs, end_perchd),
        cmocka_unit_test_teardown(test_config_set_refuse_store_reset, end_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
