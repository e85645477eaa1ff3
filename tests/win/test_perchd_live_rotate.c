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
 *
 * And `perch record --name NAME --set KEY=VALUE` through the real pipe and CLI: NAME.perch first,
 * then NAME-...-000002.perch and on; refusals of bad names, of a clash, of keys one recording
 * cannot change and of values out of range, each with its sentence; `perch record -o FILE` of
 * a recording that rotated copies every file of it. And DiskCapMb: a recording larger than the
 * cap keeps its newest files within it, and no other file is deleted. A recording that fails
 * (its folder moved away) is named in the status, and perchd goes on.
 */
#include "etw_fake.h"
#include "perch_cli_harness.h"
#include "perchd_harness.h"
#include "perchd_replay.h"

#define SESSION "Perch Kernel Session"

static char dir[MAX_PATH], etl[MAX_PATH * 2], pipe_name[96];
static char out[HARNESS_OUT_MAX]; /* perchd's output, once it ended */
static perch_cli_result r;
static struct harness_child child; /* perchd_fake */

static void cli(const char *args, DWORD want)
{
    perch_cli_expect(args, want, &r);
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
    t->samples += perch_cli_count_of(r.out, ",\"samples\":");
    t->with_stack += perch_cli_count_of(r.out, "\"samples_with_stack\":");
    t->slices += perch_cli_count_of(r.out, "\"slices\":{\"count\":");
}

static void make_trace_of(const char *size)
{
    char args[MAX_PATH * 3], src[MAX_PATH];
    harness_fresh_dir("live_rotate_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\seed5.etl", src);
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 5 --size %s", etl, size);
    static char said[HARNESS_OUT_MAX]; /* not out: perchd's output once it ends */
    assert_int_equal(harness_run_with("PERCH_EXE", args, said, sizeof said, 120000), 0);
}

/* A capture of about 2.7 MB: three files or more at 1 MiB. */
static void make_trace(void)
{
    make_trace_of("16M");
}

/* perchd_fake run replaying the trace (pace 0: at full speed, N: N times its own speed). */
static void start_perchd(const char *name, const char *extra, uint32_t pace)
{
    harness_start_replay("rotate", name, etl, pace, extra, dir, sizeof dir, pipe_name,
                         sizeof pipe_name, &child);
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

/* Waits until the status file counts every event the fake delivered as received or dropped
 * (queue full: a replay at full speed outruns the model thread). */
static void wait_taken(void)
{
    perch_fake_etw_session_info info;
    if (!perch_fake_etw_wait_replay(SESSION, 300000))
        fail_msg("the replay of %s did not finish", etl);
    assert_true(perch_fake_etw_session(SESSION, &info));
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < 120000; Sleep(200)) {
        char *st = harness_read_in(dir, "status.txt");
        const char *e = strstr(st, "events: "), *q = strstr(st, "losses: ");
        unsigned long long got = e ? strtoull(e + 8, NULL, 10) : 0;
        unsigned long long dropped = q ? strtoull(q + 8, NULL, 10) : 0;
        free(st);
        if (got + dropped >= info.delivered)
            return;
    }
    fail_msg("perchd did not take the %u events delivered", info.delivered);
}

static void stop_perchd(void)
{
    harness_send_ctrl(&child, CTRL_C_EVENT);
    DWORD code = harness_finish(&child, out, sizeof out, 120000);
    if (code != 0)
        fail_msg("perchd exited with %lu:\n%s", (unsigned long)code, out);
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
    start_perchd("live_rotate", "--set RecordOnStart=on --set RotateSizeMb=1", 0);
    wait_consumed();

    /* the status names the file being written; the list holds it and the ones before */
    char *status = harness_read_in(dir, "status.txt");
    const char *now = strstr(status, ", now ");
    assert_non_null(now);
    const char *base = strstr(now, "\\cap\\perch-");
    assert_non_null(base);
    snprintf(current, sizeof current, "%.*s", (int)strcspn(base + 5, "\r\n"), base + 5);
    assert_contains(status, "recording: on for ");
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

/* `perch record` refuses: exit 1 and the sentence on stderr. */
static void refused(const char *args, const char *sentence)
{
    cli(args, 1);
    if (strstr(r.err, sentence) == NULL)
        fail_msg("perch %s: no \"%s\" in:\n%s", args, sentence, r.err);
}

/* perch record --name and --set through the pipe: the recording's first file has the name,
 * later ones are numbered after it; its caps come from --set; bad names, a clash, keys one
 * recording cannot change and values out of range are refused with a sentence. */
static void test_record_name_and_set(void **state)
{
    char find[MAX_PATH * 2], path[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    totals t = {0, 0, 0};
    (void)state;
    make_trace();
    start_perchd("live_named", "", 1); /* the trace's 7 s in about 7 s: recorded as it comes */
    cli("record --name hitch --set RotateSizeMb=1 --set DiskCapMb=16 --json", 0);
    assert_contains(r.out, "\"name\":\"hitch.perch\"");
    refused("record --name other", "a recording is already running");
    /* checked before anything starts, so refused the same while one runs */
    refused("record --name ..\\x", "is not a capture name: it may not contain a directory");
    refused("record --name CON", "Windows reserves it for a device");
    refused("record --name perch", "the names perchd gives its own recordings");
    refused("record --name \"a b\"", "use 1 to 32 letters, digits");
    refused("record --set RotateSizeMb=0", "RotateSizeMb: '0' is out of range; allowed: 1 to");
    refused("record --set SampleIntervalUs=50", "SampleIntervalUs: '50' is out of range");
    refused("record --set SampleIntervalUs=500", "SampleIntervalUs is a setting of the kernel "
                                                 "session");
    refused("record --set EventGroups=process", "EventGroups is a setting of the kernel session");
    refused("record --set QueueMb=8", "QueueMb is a setting of perchd itself");
    refused("record --set Nope=1", "Nope is not a configuration key");
    wait_consumed();
    cli("stop --json", 0);
    assert_contains(r.out, "\"name\":\"hitch.perch\"");
    refused("record --name hitch.perch", "a capture called hitch.perch (or hitch-...) is already");

    /* hitch.perch, then hitch-YYYYMMDD-HHMMSS-000002.perch ... */
    snprintf(path, sizeof path, "%s\\cap\\hitch.perch", dir);
    add_report(path, &t);
    snprintf(find, sizeof find, "%s\\cap\\hitch-*-000002.perch", dir);
    HANDLE h = FindFirstFileA(find, &fd);
    if (h == INVALID_HANDLE_VALUE)
        fail_msg("the recording did not rotate (RotateSizeMb=1): no %s", find);
    FindClose(h);
    size_t n = 1 + sum_files("hitch-*.perch", &t);
    printf("named recording: %zu files, %llu samples\n", n, t.samples);
    assert_true(t.samples > 1000);
    stop_perchd();
}

/* True when the two files hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    bool same = f != NULL && g != NULL;
    while (same) {
        char x[4096], y[4096];
        size_t n = fread(x, 1, sizeof x, f), m = fread(y, 1, sizeof y, g);
        same = n == m && memcmp(x, y, n) == 0;
        if (n < sizeof x)
            break;
    }
    if (f)
        fclose(f);
    if (g)
        fclose(g);
    return same;
}

/* perch record --duration -o FILE of a recording that rotated: FILE is its first file,
 * FILE's stem with -2, -3 ... the later ones, each byte for byte the file perchd wrote, and
 * the JSON names them all in rotation order. */
static void test_record_o_fetches_every_file(void **state)
{
    char args[MAX_PATH * 3], got[MAX_PATH * 2], find[MAX_PATH * 2], path[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    (void)state;
    /* the trace's 14 s in about 14 s: a record that starts seconds late (a slow perch.exe
     * start under Wine) still has 9 s of it, over 1 MiB, so it rotates at least once */
    make_trace_of("32M");
    start_perchd("live_record_o", "", 1);
    snprintf(args, sizeof args,
             "record --duration 9s --name roll --set RotateSizeMb=1 -o \"%s\\got.perch\" --json",
             dir);
    cli(args, 0);
    printf("%s", r.out);
    assert_contains(r.out, "\"name\":\"roll.perch\"");
    assert_contains(r.out, "\"files\":[{\"name\":\"roll.perch\"");
    size_t listed = occurrences(r.out, "\"file\":") - 1; /* the first is named twice */
    assert_true(listed >= 2);
    snprintf(got, sizeof got, "%s\\got.perch", dir);
    snprintf(path, sizeof path, "%s\\cap\\roll.perch", dir);
    assert_true(same_bytes(got, path));
    for (size_t k = 2; k <= listed; k++) {
        snprintf(find, sizeof find, "%s\\cap\\roll-*-%06zu.perch", dir, k);
        HANDLE h = FindFirstFileA(find, &fd);
        if (h == INVALID_HANDLE_VALUE)
            fail_msg("no %s", find);
        FindClose(h);
        snprintf(path, sizeof path, "%s\\cap\\%s", dir, fd.cFileName);
        snprintf(got, sizeof got, "%s\\got-%zu.perch", dir, k);
        if (!same_bytes(got, path))
            fail_msg("%s is not %s", got, path);
        assert_contains(r.out, fd.cFileName);
    }
    snprintf(find, sizeof find, "%s\\cap\\roll-*-%06zu.perch", dir, listed + 1);
    HANDLE h = FindFirstFileA(find, &fd);
    if (h != INVALID_HANDLE_VALUE)
        fail_msg("%s was not fetched", fd.cFileName);
    stop_perchd();
}

/* A file of dir\cap with some bytes in it (not a capture perchd made). */
static void put_file(const char *name)
{
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\cap\\%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("not perchd's", f);
    fclose(f);
}

static bool exists(const char *name)
{
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\cap\\%s", dir, name);
    return GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES;
}

/* DiskCapMb through perchd: a recording larger than the cap keeps its newest files within it
 * (the current one aside), and no other file of the directory is deleted. */
static void test_disk_cap_deletes_only_recordings(void **state)
{
    char args[MAX_PATH * 3], src[MAX_PATH], find[MAX_PATH * 2];
    static char said[HARNESS_OUT_MAX];
    WIN32_FIND_DATAA fd;
    uint64_t total = 0, newest = 0;
    size_t n = 0;
    (void)state;
    harness_fresh_dir("live_cap_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\big.etl", src);
    /* about 24 MB of capture: more than the smallest cap, 16 MiB */
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 7 --size 144M", etl);
    assert_int_equal(harness_run_with("PERCH_EXE", args, said, sizeof said, 300000), 0);
    /* a queue that holds the whole trace: a replay at full speed drops nothing, so the
     * recording is the whole ~24 MB every time, not what the model thread kept up with */
    start_perchd("live_cap",
                 "--set RecordOnStart=on --set RotateSizeMb=1 --set DiskCapMb=16 --set QueueMb=512",
                 0);
    put_file("notes.perch");
    put_file("perch-keep.txt");
    put_file("snapshot-20200101-000000.perch");
    put_file("perch-20200101-000000-x.perch");
    wait_taken();
    stop_perchd();
    snprintf(find, sizeof find, "%s\\cap\\perch-*-*-*.perch", dir);
    HANDLE h = FindFirstFileA(find, &fd);
    assert_true(h != INVALID_HANDLE_VALUE);
    do {
        uint64_t size = ((uint64_t)fd.nFileSizeHigh << 32) | fd.nFileSizeLow;
        if (strcmp(fd.cFileName, "perch-20200101-000000-x.perch") == 0)
            continue;
        total += size;
        newest = size; /* names sort by sequence */
        n++;
    } while (FindNextFileA(h, &fd));
    FindClose(h);
    char *log = harness_read_in(dir, "perchd.log");
    const char *deleted = strstr(log, " deleted for the disk cap (0 deletes refused).");
    assert_non_null(deleted);
    printf("disk cap 16 MiB: %zu files kept, %.1f MiB\n", n, (double)total / 1048576.0);
    assert_true(total <= (16ull << 20) + newest);
    assert_true(n >= 8);
    assert_lacks(log, ", 0 deleted for the disk cap (");
    free(log);
    snprintf(find, sizeof find, "%s\\cap\\perch-*-000001.perch", dir);
    h = FindFirstFileA(find, &fd);
    if (h != INVALID_HANDLE_VALUE)
        fail_msg("the oldest file %s is still there", fd.cFileName);
    assert_true(exists("notes.perch"));
    assert_true(exists("perch-keep.txt"));
    assert_true(exists("snapshot-20200101-000000.perch"));
    assert_true(exists("perch-20200101-000000-x.perch"));
}

/* A failed check leaves perchd_fake running: end it, so ctest does not wait for it. */
static int end_perchd(void **state)
{
    (void)state;
    harness_end(&child);
    return 0;
}

/* A recording whose next file cannot be created (its folder was moved away while it ran) is
 * switched off by the engine; the status says which sink and why, and perchd goes on. */
static void test_failed_recording_in_status(void **state)
{
    char cap[MAX_PATH * 2], moved[MAX_PATH * 2];
    (void)state;
    make_trace();
    start_perchd("live_fail", "--set RecordOnStart=on --set RotateSizeMb=1", 1);
    if (!harness_wait_status(dir, "recording: on for ", 60000))
        fail_msg("the recording did not start");
    snprintf(cap, sizeof cap, "%s\\cap", dir);
    snprintf(moved, sizeof moved, "%s\\cap-moved", dir);
    /* Wine, like Windows, refuses to move a folder while a file in it is open (error 32); the
     * recording opens its first file with its first record, so the move must come first */
    DWORD err = 0;
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < 10000; Sleep(1)) {
        if (MoveFileA(cap, moved)) {
            err = 0;
            break;
        }
        err = GetLastError();
        if (err != ERROR_SHARING_VIOLATION && err != ERROR_ACCESS_DENIED)
            break;
    }
    if (err == ERROR_SHARING_VIOLATION || err == ERROR_ACCESS_DENIED) {
        printf("skipped: the recording's file was open before %s could be moved (error %lu)\n", cap,
               (unsigned long)err);
        stop_perchd();
        skip();
    }
    if (err != 0)
        fail_msg("could not move %s away: error %lu", cap, (unsigned long)err);
    if (!harness_wait_status(dir, "switched off after an error, the rest going on: recording (",
                             120000)) {
        char *st = harness_read_in(dir, "status.txt");
        fail_msg("the status does not name the failed recording:\n%s", st);
    }
    wait_consumed(); /* the model and the other sinks took every event */
    char *st = harness_read_in(dir, "status.txt");
    assert_contains(st, "degraded");
    const char *summary = strstr(st, "summary: ");
    assert_non_null(summary);
    printf("%.*s\n", (int)strcspn(summary, "\r\n"), summary);
    free(st);
    /* stopping it says it failed (it used to answer as for a complete recording) */
    cli("stop", 1);
    assert_contains(r.err, "is stopped, but writing it had failed: ");
    stop_perchd();
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_recording_rotates_by_size, end_perchd),
        cmocka_unit_test_teardown(test_record_name_and_set, end_perchd),
        cmocka_unit_test_teardown(test_record_o_fetches_every_file, end_perchd),
        cmocka_unit_test_teardown(test_disk_cap_deletes_only_recordings, end_perchd),
        cmocka_unit_test_teardown(test_failed_recording_in_status, end_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
