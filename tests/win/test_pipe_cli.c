/*
 * The perch client commands under Wine against a real pipe: this program serves the pipe
 * with the fake daemon (proto_fake.h) on a private name, runs perch.exe (PERCH_CLI) with
 * PERCH_PIPE pointing at it, and checks each command's output and exit status: status (text
 * and --json), captures, fetch (byte-identical to the capture, and a missing name), snapshot,
 * record with a duration into a file, stop, top (processes, threads, stacks, --json), watch
 * (a few updates), the read-only role refused a recording (exit 7), a pipe nobody serves
 * (exit 6, with a sentence saying perchd is not running), and a pipe served by another
 * program, owned by a user rather than Administrators (exit 8, naming the owner, and not a
 * byte sent to it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>
#include <sddl.h>

#include "perch/error.h"
#include "pipe_internal.h"
#include "pipe_server.h"
#include "proto_fake.h"
#include "testdata.h"
#include "perch_cli_harness.h"

static char pipe_name[96];
static perch_pipe_server *server;

static void expect(const char *args, DWORD code, const char *in_out, const char *in_err)
{
    static perch_cli_result r;
    perch_cli_run(args, &r);
    if (getenv("PERCH_TEST_VERBOSE"))
        printf("$ perch %s  (exit %lu)\n%s%s\n", args, r.code, r.out, r.err);
    if (r.code != code || (in_out && !strstr(r.out, in_out)) || (in_err && !strstr(r.err, in_err)))
        fail_msg("perch %s: exit %lu (want %lu)\nstdout: %s\nstderr: %s", args, r.code, code, r.out,
                 r.err);
}

static int setup(void **state)
{
    (void)state;
    perch_pipe_server_opts o;
    char why[300];
    fake_init(4u << 20);
    perch_pipe_server_opts_default(&o);
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perch-cli-test-%lu",
             (unsigned long)GetCurrentProcessId());
    o.name = pipe_name;
    o.backend = &backend;
    if (perch_pipe_server_start(&o, &server, why, sizeof why) != 0)
        fail_msg("start: %s", why);
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    perch_pipe_server_stop(server);
    fake_free();
    return 0;
}

static void test_status_and_captures(void **state)
{
    (void)state;
    expect("status", 0, "degraded: LBR is off: not supported", NULL);
    expect("status", 0, "live.queue_full 12", NULL);
    expect("status --json", 0, "\"session_state\":\"degraded\"", NULL);
    expect("captures", 0, "rec-1.perch", NULL);
    expect("captures --json", 0, "\"state\":\"recording\"", NULL);
    expect("status --bogus", 2, NULL, "unknown argument");
}

static void check_file_is_capture(const char *path)
{
    size_t len;
    uint8_t *got = perch_test_read_file(path, &len);
    assert_int_equal(len, F.capture_len);
    assert_memory_equal(got, F.capture, len);
    free(got);
    DeleteFileA(path);
}

static void test_fetch_snapshot_record(void **state)
{
    (void)state;
    char args[512], path[MAX_PATH], tmp[MAX_PATH];
    GetTempPathA(sizeof tmp, tmp);
    snprintf(path, sizeof path, "%sperch-cli-fetch-%lu.perch", tmp, GetCurrentProcessId());
    snprintf(args, sizeof args, "fetch a.perch -o \"%s\"", path);
    expect(args, 0, "wrote", NULL);
    check_file_is_capture(path);
    snprintf(args, sizeof args, "fetch nope.perch -o \"%s\"", path);
    expect(args, 1, NULL, "FETCH failed: no such file or object");
    assert_int_equal(GetFileAttributesA(path), INVALID_FILE_ATTRIBUTES); /* not kept */
    snprintf(args, sizeof args, "snapshot --last 30s -o \"%s\" --json", path);
    expect(args, 0, "\"name\":\"snapshot-1.perch\"", NULL);
    check_file_is_capture(path);
    snprintf(args, sizeof args, "record --duration 1s -o \"%s\"", path);
    expect(args, 0, "wrote", "recording rec-2.perch for 1.0 s");
    check_file_is_capture(path);
    expect("record", 0, "recording to rec-2.perch", NULL);
    expect("stop", 0, "stopped rec-2.perch: 999 bytes", NULL);
    expect("record --duration x", 2, NULL, "--duration takes a duration above 0");
    expect("snapshot --last 0s -o x.perch", 2, NULL, "--last takes a duration above 0");
}

static void test_top_and_watch(void **state)
{
    (void)state;
    expect("top", 0, "top processes by cpu over", NULL);
    expect("top --threads --by samples --limit 3", 0, "top threads by samples", NULL);
    expect("top --stacks --json", 0, "\"frames\":[", NULL);
    expect("top --window 0", 2, NULL, "--window takes a duration above 0");
    expect("watch --count 2 --interval 100ms --top 3", 0, "events/s", NULL);
    expect("watch --count 2 --interval 100ms --json", 0, "\"seq\":1", NULL);
}

static int read_only(HANDLE pipe, uint8_t *role)
{
    (void)pipe;
    *role = PERCH_ROLE_READ;
    return 0;
}

struct impostor {
    HANDLE pipe;
    DWORD got, error;
};

/* The impostor's side: waits for a client and reads what it sends until it hangs up. */
static DWORD WINAPI impostor_listen(void *arg)
{
    struct impostor *im = arg;
    char buf[256];
    DWORD n = 0;
    if (!ConnectNamedPipe(im->pipe, NULL) && GetLastError() != ERROR_PIPE_CONNECTED)
        return im->error = GetLastError();
    while (ReadFile(im->pipe, buf, sizeof buf, &n, NULL) && n > 0)
        im->got += n;
    im->error = GetLastError();
    return 0;
}

/* perch cmd against a pipe another program serves, owned by a user rather than
 * Administrators: exit 8, a sentence with err_text in it, and not a byte sent to it. */
static void impostor_refused(const char *cmd, const char *err_text)
{
    char other[96];
    wchar_t w[96];
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    struct impostor im = {0};
    snprintf(other, sizeof other, "%s-impostor", pipe_name);
    MultiByteToWideChar(CP_UTF8, 0, other, -1, w, 96);
    assert_true(ConvertStringSecurityDescriptorToSecurityDescriptorW(
        L"O:S-1-5-21-1-2-3-1001D:P(A;;FA;;;WD)", SDDL_REVISION_1, &sa.lpSecurityDescriptor, NULL));
    im.pipe = CreateNamedPipeW(w, PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE, 1, 4096, 4096, 0, &sa);
    if (im.pipe == INVALID_HANDLE_VALUE && GetLastError() == ERROR_INVALID_OWNER) {
        print_message("(this token may not name that owner: not tried)\n"); /* Windows */
        LocalFree(sa.lpSecurityDescriptor);
        return;
    }
    assert_true(im.pipe != INVALID_HANDLE_VALUE);
    HANDLE t = CreateThread(NULL, 0, impostor_listen, &im, 0, NULL);
    assert_non_null(t);
    SetEnvironmentVariableA("PERCH_PIPE", other);
    expect(cmd, 8, NULL, err_text);
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
    assert_int_equal(WaitForSingleObject(t, 10000), WAIT_OBJECT_0); /* perch has hung up */
    CloseHandle(t);
    if (im.got != 0 || im.error != ERROR_BROKEN_PIPE)
        fail_msg("the impostor got %lu bytes (its last error %lu)", (unsigned long)im.got,
                 (unsigned long)im.error);
    CloseHandle(im.pipe);
    LocalFree(sa.lpSecurityDescriptor);
}

static void test_refusals(void **state)
{
    (void)state;
    perch__pipe_os saved = perch__pipe_os_hooks;
    perch__pipe_os_hooks.client_role = read_only;
    expect("record", 7, NULL, "RECORD needs administrator rights");
    expect("stop", 7, NULL, "STOP needs administrator rights");
    expect("status", 0, "this client: read-only", NULL);
    perch__pipe_os_hooks = saved;
    SetEnvironmentVariableA("PERCH_PIPE", "\\\\.\\pipe\\perch-nobody-serves-this");
    expect("status", 6, NULL, "perchd is not running");
    expect("top", 6, NULL, "perchd is not running");
    /* another program serving the name, its pipe owned by its user: perch does not talk */
    impostor_refused("status", "owned by S-1-5-21-1-2-3-1001, not Administrators");
    impostor_refused("record --duration 1s", "Stop that program, then start perchd");
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_and_captures),
        cmocka_unit_test(test_fetch_snapshot_record),
        cmocka_unit_test(test_top_and_watch),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
