/*
 * Rotating recordings under Wine: perchd_fake.exe (perchd's objects with the fake ETW, which
 * replays a `perch synth` trace through the real-time callback) records with a small cap
 * (--set RotateSizeMb=1), so the recording is several capture files. While it records, the
 * status file names the current file and `perch captures` lists every file, the current one as
 * recording. Once perchd stopped, every file reports on its own (`perch report --json`), and
 * together they hold the trace: the totals of their samples, samples with a stack and slices
 * equal those of `perch import` of the same trace. Each of those records is in exactly one
 * file (a file is rotated between two records); the ledger and the statistics the model writes
 * at its end are in the last file only, so those are not summed.
 */
#include "etw_fake.h"
#include "perch_cli_harness.h"
#include "perchd_harness.h"

#define SESSION "Perch Kernel Session"

static char dir[MAX_PATH], etl[MAX_PATH * 2], pipe_name[96];
static char out[HARNESS_OUT_MAX];
static perch_cli_result r;
static struct harness_child child; /* perchd_fake */

static void cli(const char *args, DWORD want)
{
    perch_cli_run(args, &r);
    if (r.code != want)
        fail_msg("perch %s: exit %lu, not %lu\n%s%s", args, (unsigned long)r.code,
                 (unsigned long)want, r.out, r.err);
}

/* The number after key (the first one) in text. */
static unsigned long long count_of(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        fail_msg("no %s in %s", key, text);
    return strtoull(p + strlen(key), NULL, 10);
}

static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

typedef struct totals {
    unsigned long long samples, with_stack, slices;
} totals;

/* Adds what `perch report --json FILE` counts to *t. */
static void add_report(const char *file, totals *t)
{
    char args[MAX_PATH * 3];
    snprintf(args, sizeof args, "report --json \"%s\"", file);
    cli(args, 0);
    t->samples += count_of(r.out, ",\"samples\":");
    t->with_stack += count_of(r.out, "\"samples_with_stack\":");
    t->slices += count_of(r.out, "\"slices\":{\"count\":");
}

static void make_trace(void)
{
    char args[MAX_PATH * 3], src[MAX_PATH];
    harness_fresh_dir("live_rotate_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\seed5.etl", src);
    /* a capture of about 2.7 MB: three files or more at 1 MiB */
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 5 --size 16M", etl);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
}

static void start_perchd(const char *name, const char *extra)
{
    char args[MAX_PATH * 4];
    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", etl), 0);
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-rotate-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name); /* perchd_fake and perch inherit it */
    harness_fresh_dir(name, dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 600 %s", dir,
             dir, extra);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, &child);
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(child.pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
}

/* Waits until the status file counts every event the fake delivered. */
static void wait_consumed(void)
{
    char needle[64];
    perch_fake_etw_session_info info;
    if (!perch_fake_etw_wait_replay(SESSION, 180000))
        fail_msg("the replay of %s did not finish", etl);
    assert_true(perch_fake_etw_session(SESSION, &info));
    snprintf(needle, sizeof needle, "events: %u received", info.delivered);
    if (!harness_wait_status(dir, needle, 60000))
        fail_msg("perchd did not take the %u events delivered", info.delivered);
}

static void stop_perchd(void)
{
    harness_send_ctrl(&child, CTRL_C_EVENT);
    DWORD code = harness_finish(&child, out, sizeof out, 120000);
    child.pi.hProcess = NULL;
    assert_int_equal(code, 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
}

/* Every file of dir\cap matching pattern, reported and summed into *t; returns how many. */
static size_t sum_files(const char *pattern, totals *t)
{
    char find[MAX_PATH * 2], path[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    size_t n = 0;
    snprintf(find, sizeof find, "%s\\cap\\%s", dir, pattern);
    HANDLE h = FindFirstFileA(find, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    do {
        snprintf(path, sizeof path, "%s\\cap\\%s", dir, fd.cFileName);
        add_report(path, t);
        n++;
    } while (FindNextFileA(h, &fd));
    FindClose(h);
    return n;
}

static void test_recording_rotates_by_size(void **state)
{
    char args[MAX_PATH * 3], current[MAX_PATH], imported[MAX_PATH * 2];
    totals files = {0, 0, 0}, whole = {0, 0, 0};
    (void)state;
    make_trace();
    start_perchd("live_rotate", "--set RecordOnStart=on --set RotateSizeMb=1");
    wait_consumed();

    /* the status names the file being written; the list holds it and the ones before */
    char *status = harness_read_in(dir, "status.txt");
    const char *now = strstr(status, ", now ");
    assert_non_null(now);
    const char *base = strstr(now, "\\cap\\perch-");
    assert_non_null(base);
    snprintf(current, sizeof current, "%.*s", (int)strcspn(base + 5, "\r\n"), base + 5);
    assert_contains(status, "recording: on, ");
    free(status);
    cli("captures --json", 0);
    assert_contains(r.out, current);
    assert_int_equal(occurrences(r.out, "\"state\":\"recording\""), 1);
    size_t listed = occurrences(r.out, "\"name\":\"perch-");
    assert_true(listed >= 3);

    stop_perchd();
    size_t n = sum_files("perch-*.perch", &files);
    assert_int_equal(n, listed);
    snprintf(imported, sizeof imported, "%s\\imported.perch", dir);
    snprintf(args, sizeof args, "import \"%s\" -o \"%s\"", etl, imported);
    cli(args, 0);
    add_report(imported, &whole);
    printf("%zu files: %llu samples (%llu with a stack), %llu slices; the import: %llu, %llu, "
           "%llu\n",
           n, files.samples, files.with_stack, files.slices, whole.samples, whole.with_stack,
           whole.slices);
    assert_true(whole.samples > 10000 && whole.slices > 1000);
    assert_int_equal(files.samples, whole.samples);
    assert_int_equal(files.with_stack, whole.with_stack);
    assert_int_equal(files.slices, whole.slices);
}

/* A failed check leaves perchd_fake running: end it, so ctest does not wait for it. */
static int end_perchd(void **state)
{
    (void)state;
    if (child.pi.hProcess != NULL && WaitForSingleObject(child.pi.hProcess, 0) == WAIT_TIMEOUT)
        TerminateProcess(child.pi.hProcess, 1);
    child.pi.hProcess = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_recording_rotates_by_size, end_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
