/*
 * perchd on a disk that fills or hangs, under Wine: perchd_fake.exe (perchd's objects with the
 * fake ETW replaying a `perch synth` trace at its own pace) opens its recordings' files through
 * tests/win/perchd_fake_disk.c, whose writes fail as on a full disk or do not return while the
 * fake's scenario says so (DiskFull, DiskHang: a file name prefix).
 *
 * A recording that fails at its start, its first file created but not writable, deletes that
 * file and only it (an earlier recording's file stays), the client's error says what failed,
 * and a retry with the same name records. (Before, the file stayed and the retry was refused:
 * "a capture called hitch.perch ... is already in".) A later file whose header the disk
 * refuses is deleted too, and the files before it stay complete.
 *
 * perchd's stop is bounded: with StopDrainSeconds 1 and a recording whose writes hang, the
 * events still queued are dropped once the second is over; when the disk comes back within 5
 * s the model finishes with what it took, and the capture's ledger counts the rest
 * (live.stop_dropped) as the log does; when it never comes back, perchd logs that it leaves
 * the model thread running and exits, with its session stopped. (Before, that stop waited for
 * ever.) When the disk comes back just after perchd gave up on the thread, the thread goes on
 * safely and finishes the recording's file while perchd exits 1 (the fake disk holds the
 * process's end until the file that hung is closed, so the race is decided): before
 * 2026-12-06 it read the rotation perchd had cleared and crashed (0xC0000005). A stop with
 * nothing left over says nothing of it.
 */
#include "etw_fake.h"
#include "perch_cli_harness.h"
#include "perchd_harness.h"
#include "perchd_replay.h"

static char dir[MAX_PATH], etl[MAX_PATH * 2], pipe_name[96];
static char out[HARNESS_OUT_MAX]; /* perchd's output, once it ended */
static char ledger[1 << 20];      /* the fake's ledger, as last read */
static perch_cli_result r;
static struct harness_child child; /* perchd_fake */

static void cli(const char *args, DWORD want)
{
    perch_cli_expect(args, want, &r);
}

/* A synth trace of about 16 MB: 7 s of events at its own pace (once, for every test). */
static int make_trace(void **state)
{
    char args[MAX_PATH * 3], src[MAX_PATH];
    static char said[HARNESS_OUT_MAX]; /* not out: perchd's output once it ends */
    harness_fresh_dir("live_disk_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\seed5.etl", src);
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 5 --size 16M", etl);
    (void)state;
    return harness_run_with("PERCH_EXE", args, said, sizeof said, 120000) == 0 ? 0 : -1;
}

/* perchd_fake run replaying the trace at its own pace, with extra options, until it has taken
 * some events (so a recording's first file is made at its start). */
static void start_perchd(const char *name, const char *extra)
{
    harness_start_replay("disk", name, etl, 1, extra, dir, sizeof dir, pipe_name, sizeof pipe_name,
                         &child);
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < 30000; Sleep(100)) {
        char *st = harness_read_in(dir, "status.txt");
        const char *e = strstr(st, "events: ");
        unsigned long long got = e ? strtoull(e + 8, NULL, 10) : 0;
        free(st);
        if (got > 1000)
            return;
    }
    fail_msg("perchd_fake took no events in 30 s");
}

static bool exists(const char *name)
{
    char path[MAX_PATH * 2];
    snprintf(path, sizeof path, "%s\\cap\\%s", dir, name);
    return GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES;
}

/* The number of files of dir\cap matching pattern. */
static size_t files_like(const char *pattern)
{
    char find[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    size_t n = 0;
    snprintf(find, sizeof find, "%s\\cap\\%s", dir, pattern);
    HANDLE h = FindFirstFileA(find, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    do
        n++;
    while (FindNextFileA(h, &fd));
    FindClose(h);
    return n;
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

/* Waits until the fake's ledger holds needle (a write of the fake disk began to hang). */
static void wait_ledger(const char *needle, DWORD timeout_ms)
{
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < timeout_ms; Sleep(50)) {
        perch_fake_etw_ledger(ledger, sizeof ledger);
        if (strstr(ledger, needle) != NULL)
            return;
    }
    fail_msg("the fake's ledger never said \"%s\"", needle);
}

/* Waits until perchd's log holds needle; false after timeout_ms. */
static bool wait_log(const char *needle, DWORD timeout_ms)
{
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < timeout_ms; Sleep(20)) {
        char *log = harness_read_in(dir, "perchd.log");
        bool found = strstr(log, needle) != NULL;
        free(log);
        if (found)
            return true;
    }
    return false;
}

static void stop_perchd(DWORD want)
{
    harness_send_ctrl(&child, CTRL_C_EVENT);
    DWORD code = harness_finish(&child, out, sizeof out, 120000);
    if (code != want)
        fail_msg("perchd exited with %lu, not %lu:\n%s", (unsigned long)code, (unsigned long)want,
                 out);
    assert_int_equal(perch_fake_etw_count("Perch"), 0); /* the session went first, always */
}

/* A failed start deletes the file it made, only it, and says why; the same name then works. */
static void test_failed_start_deletes_its_file(void **state)
{
    char args[MAX_PATH * 3];
    (void)state;
    start_perchd("live_disk_full", "");
    put_file("perch-20200101-000000-000001.perch"); /* an earlier recording's, unnamed */

    assert_int_equal(perch_fake_etw_set_string("DiskFull", "hitch"), 0);
    cli("record --name hitch", 1);
    printf("%s", r.err);
    assert_false(exists("hitch.perch"));
    assert_contains(r.err, "the recording could not start: writing its first file failed (no "
                           "space left on device); perchd deleted that file, so the same name "
                           "can be used again: ");
    assert_contains(r.err, "\\cap\\hitch.perch");
    assert_int_equal(perch_fake_etw_set_string("DiskFull", "perch-"), 0);
    cli("record", 1);
    assert_int_equal(files_like("perch-*.perch"), 1);
    assert_true(exists("perch-20200101-000000-000001.perch")); /* not this start's */
    assert_contains(r.err, "(no space left on device); perchd deleted that file");
    assert_contains(r.err, "-000002.perch");
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "The recording hitch could not start in ");
    free(log);

    /* the disk has room again: the same name records */
    assert_int_equal(perch_fake_etw_set_string("DiskFull", NULL), 0);
    cli("record --name hitch --json", 0);
    assert_contains(r.out, "\"name\":\"hitch.perch\"");
    Sleep(1000);
    cli("stop --json", 0);
    snprintf(args, sizeof args, "report --json \"%s\\cap\\hitch.perch\"", dir);
    cli(args, 0);
    assert_true(perch_cli_count_of(r.out, ",\"samples\":") > 0);
    stop_perchd(0);
    log = harness_read_in(dir, "perchd.log");
    assert_lacks(log, "StopDrainSeconds"); /* a stop that drained says nothing of the bound */
    free(log);
}

/* A later file whose header the full disk refuses is deleted at once; the files before it
 * stay complete, the log says so, and the recording is switched off with the disk's error.
 * (Before, the empty later file stayed in the capture directory.) */
static void test_later_file_without_header_is_deleted(void **state)
{
    char args[MAX_PATH * 3];
    (void)state;
    start_perchd("live_disk_later", "");
    assert_int_equal(perch_fake_etw_set_string("DiskFull", "hitch-"), 0); /* files 2, 3, ... */
    cli("record --name hitch --set RotateSizeMb=1 --json", 0);
    if (!harness_wait_status(dir, "switched off after an error, the rest going on: recording (",
                             60000)) {
        char *st = harness_read_in(dir, "status.txt");
        fail_msg("the recording did not fail at its second file:\n%s", st);
    }
    assert_true(wait_log("The recording could not write the header of its next file (no space "
                         "left on device), so perchd deleted that empty file; the files before "
                         "it are complete: ",
                         10000));
    assert_true(exists("hitch.perch"));
    assert_int_equal(files_like("hitch-*.perch"), 0);
    cli("stop", 1);
    assert_contains(r.err, "is stopped, but writing it had failed: ");
    snprintf(args, sizeof args, "report --json \"%s\\cap\\hitch.perch\"", dir);
    cli(args, 0); /* the first file, finished at the rotation */
    assert_true(perch_cli_count_of(r.out, ",\"samples\":") > 0);
    assert_int_equal(perch_fake_etw_set_string("DiskFull", NULL), 0);
    stop_perchd(0);
}

/* A snapshot on a full disk fails with the disk's error and leaves no file; with room again
 * the next one is written. (Before, snapshots did not go through the disk perchd's tests
 * fill, and a file made under the snapshot's name in between was truncated.) */
static void test_snapshot_on_a_full_disk(void **state)
{
    char args[MAX_PATH * 3];
    (void)state;
    start_perchd("live_disk_snap", "");
    assert_int_equal(perch_fake_etw_set_string("DiskFull", "snapshot-"), 0);
    snprintf(args, sizeof args, "snapshot -o \"%s\\got.perch\"", dir);
    cli(args, 1);
    printf("%s", r.err);
    assert_contains(r.err, "no space left on device");
    assert_int_equal(files_like("snapshot-*.perch"), 0);
    assert_true(wait_log("The snapshot could not be written (", 5000));
    assert_int_equal(perch_fake_etw_set_string("DiskFull", NULL), 0);
    cli(args, 0);
    assert_int_equal(files_like("snapshot-*.perch"), 1);
    stop_perchd(0);
}

/* Starts perchd_fake with StopDrainSeconds 1, a recording named name whose writes then hang,
 * and lets events pile up in the queue behind the stuck model thread. */
static void record_onto_a_hung_disk(const char *run_dir, const char *name)
{
    char args[128], hang[128];
    start_perchd(run_dir, "--set StopDrainSeconds=1");
    snprintf(args, sizeof args, "record --name %s --json", name);
    cli(args, 0);
    assert_int_equal(perch_fake_etw_set_string("DiskHang", name), 0);
    snprintf(hang, sizeof hang, "disk hang %s.perch", name);
    wait_ledger(hang, 20000); /* the writer flushes every 2 s */
    Sleep(1000);              /* the fake goes on delivering into the queue */
}

/* The disk comes back after the drop: the model finishes with what it took, and the capture's
 * ledger counts what was dropped, as the log does. */
static void test_stop_drops_what_is_still_queued(void **state)
{
    char args[MAX_PATH * 3];
    (void)state;
    record_onto_a_hung_disk("live_disk_slow", "slow");
    harness_send_ctrl(&child, CTRL_C_EVENT);
    if (!wait_log("the rest are dropped and counted (ledger live.stop_dropped)", 20000))
        fail_msg("perchd did not drop the queue 1 s after the stop");
    assert_int_equal(perch_fake_etw_set_string("DiskHang", NULL), 0); /* within its 5 s */
    DWORD code = harness_finish(&child, out, sizeof out, 60000);
    if (code != 0)
        fail_msg("perchd exited with %lu:\n%s", (unsigned long)code, out);
    char *log = harness_read_in(dir, "perchd.log");
    unsigned long long dropped = perch_cli_count_of(log, "lost by the session; ");
    printf("%llu events dropped at the stop\n", dropped);
    assert_true(dropped > 0);
    assert_contains(log, " still queued when StopDrainSeconds ran out)");
    assert_contains(log, "The recording slow.perch is complete");
    assert_lacks(log, "has not ended");
    free(log);
    snprintf(args, sizeof args, "report --json \"%s\\cap\\slow.perch\"", dir);
    cli(args, 0);
    assert_int_equal(perch_cli_count_of(r.out, "\"live.stop_dropped\":"), dropped);
    assert_true(perch_cli_count_of(r.out, ",\"samples\":") > 0);
}

/* The disk never comes back: perchd gives up on the model thread 5 s after the drop, says so,
 * and exits (with an error) instead of staying in its stop for ever. */
static void test_stop_leaves_a_stuck_model_thread(void **state)
{
    (void)state;
    record_onto_a_hung_disk("live_disk_hang", "stuck");
    ULONGLONG t0 = GetTickCount64();
    stop_perchd(1);
    ULONGLONG took = GetTickCount64() - t0;
    printf("perchd stopped in %.1f s with the disk hung\n", (double)took / 1000.0);
    assert_true(took < 40000); /* 1 s, then 5 s, and Wine's own pace */
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "the rest are dropped and counted (ledger live.stop_dropped)");
    assert_contains(log, "The model thread has not ended 5 s after the events still queued were "
                         "dropped");
    assert_contains(log, "The recording stuck.perch is left as it was");
    assert_contains(log, "perchd stopped: timed out.");
    assert_lacks(log, "The live engine stopped after");
    free(log);
    perch_fake_etw_ledger(ledger, sizeof ledger); /* the fake disk's exit wait is bounded */
    assert_contains(ledger, "disk exit with 1 write(s) hung and 1 file(s) that hung open");
    assert_int_equal(perch_fake_etw_set_string("DiskHang", NULL), 0);
}

/* The last 600 bytes of text, for a failure's message (cmocka cuts a long one). */
static const char *tail_of(const char *text)
{
    size_t n = strlen(text);
    return text + (n > 600 ? n - 600 : 0);
}

/* True when text's last line (without its CR LF) ends with tail. */
static bool last_line_ends_with(const char *text, const char *tail)
{
    size_t n = strlen(text), k = strlen(tail);
    while (n > 0 && (text[n - 1] == '\r' || text[n - 1] == '\n'))
        n--;
    return n >= k && memcmp(text + n - k, tail, k) == 0;
}

/* The disk comes back just after perchd gave up on the model thread, while perchd exits (the
 * fake disk holds the exit until the file that hung is closed): the thread goes on through
 * the recording's rotation, kept for it, and finishes the file, which is complete with what
 * was dropped in its ledger; perchd still exits 1, "timed out". (Before 2026-12-06 perchd set
 * the recording's rotation to NULL when it left the thread, whose next idle call read it: an
 * access violation, exit code 0xC0000005, once the write came back before the exit.) */
static void test_disk_back_after_the_model_thread_is_left(void **state)
{
    char args[MAX_PATH * 3];
    (void)state;
    record_onto_a_hung_disk("live_disk_back", "back");
    harness_send_ctrl(&child, CTRL_C_EVENT);
    if (!wait_log("The model thread has not ended 5 s after", 40000))
        fail_msg("perchd did not give up on the model thread");
    assert_int_equal(perch_fake_etw_set_string("DiskHang", NULL), 0); /* while perchd exits */
    DWORD code = harness_finish(&child, out, sizeof out, 60000);
    if (code != 1)
        fail_msg("perchd exited with 0x%lx, not 1 (0xc0000005: an access violation):\n%s",
                 (unsigned long)code, tail_of(out));
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "The recording back.perch is left as it was");
    if (!last_line_ends_with(log, "perchd stopped: timed out."))
        fail_msg("the log does not end with \"perchd stopped: timed out.\":\n%s", tail_of(log));
    free(log);
    perch_fake_etw_ledger(ledger, sizeof ledger); /* the write came back before the exit */
    const char *freed = strstr(ledger, "disk free back.perch");
    const char *closed = strstr(ledger, "disk closed back.perch");
    const char *exited =
        strstr(ledger, "disk exit with 0 write(s) hung and 0 file(s) that hung open");
    if (freed == NULL || closed == NULL || exited == NULL || !(freed < closed && closed < exited))
        fail_msg(
            "the ledger does not show the write back, then the file closed, then the exit:\n%s",
            tail_of(ledger));
    snprintf(args, sizeof args, "info \"%s\\cap\\back.perch\"", dir);
    cli(args, 0); /* complete: the model thread reached the model's finish */
    snprintf(args, sizeof args, "report --json \"%s\\cap\\back.perch\"", dir);
    cli(args, 0);
    assert_true(perch_cli_count_of(r.out, "\"live.stop_dropped\":") > 0);
    assert_true(perch_cli_count_of(r.out, ",\"samples\":") > 0);
}

/* A failed check leaves perchd_fake running (and maybe the disk hung): end it. */
static int end_perchd(void **state)
{
    (void)state;
    perch_fake_etw_set_string("DiskHang", NULL);
    perch_fake_etw_set_string("DiskFull", NULL);
    harness_end(&child);
    return 0;
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_failed_start_deletes_its_file, end_perchd),
        cmocka_unit_test_teardown(test_later_file_without_header_is_deleted, end_perchd),
        cmocka_unit_test_teardown(test_snapshot_on_a_full_disk, end_perchd),
        cmocka_unit_test_teardown(test_stop_drops_what_is_still_queued, end_perchd),
        cmocka_unit_test_teardown(test_stop_leaves_a_stuck_model_thread, end_perchd),
        cmocka_unit_test_teardown(test_disk_back_after_the_model_thread_is_left, end_perchd),
    };
    return cmocka_run_group_tests(tests, make_trace, NULL);
}
