/*
 * Function names through perchd, end to end under Wine: `perch synth --module` writes a 16 s
 * trace whose game process runs the x86_64 fixture image lld made (tests/fixtures/sym),
 * perchd_fake (perchd linked with the fake ETW) replays it live with a rotating recording
 * (RotateSizeMb 1) and the flight recorder on, its symbol worker names what the samples hit
 * with Wine's dbghelp (a real implementation that reads the fixture's PDB; the SymbolPath key
 * points at the fixture's folder and wins over a PERCH_SYMBOL_PATH that points nowhere), and
 * Ctrl+Break writes a snapshot and stops (the snapshot holds most samples: the recorder's open
 * segment and the model's last seconds are not in it yet). With no symbol files at hand
 * afterwards (`perch report` never looks for any), every file of the recording must name its
 * own top functions, and summed over the files they must be exactly the fixture's functions
 * that the offline path (perch import, then perch symbolize with the fixture's folder) names
 * from PDB procedures, with the same sample counts (the live recording holds the same samples
 * as the import); the snapshot's report must name only functions from that offline list. So
 * "a shipped capture names its frames on any OS" holds for every capture perchd writes.
 */
#include "etw_fake.h"
#include "perchd_harness.h"
#include "sym_fixture.h"
#include "testdata.h"

#define SESSION  "Perch Kernel Session"
#define MAX_ROWS 10

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

/* A row of a report's "Functions" list. */
typedef struct fn_row {
    char name[160];
    unsigned long long samples;
    char source[24];
} fn_row;

/* The rows of `perch report FILE`'s top functions (up to MAX_ROWS). */
static int functions_of(const char *file, fn_row *rows)
{
    char args[MAX_PATH * 2];
    int n = 0;
    snprintf(args, sizeof args, "report \"%s\"", file);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    const char *p = strstr(out, "\nFunctions (");
    if (p == NULL)
        return 0;
    p = strchr(p + 1, '\n');
    while (p != NULL && n < MAX_ROWS && p[1] == ' ' && p[2] == ' ') {
        fn_row *r = &rows[n];
        if (sscanf(p + 1, " %159s %llu %23s", r->name, &r->samples, r->source) != 3)
            break;
        n++;
        p = strchr(p + 1, '\n');
    }
    return n;
}

#define MAX_FILES 8

/* The recording's files in dir\cap (every file that is not a snapshot, up to MAX_FILES) and
 * the snapshot. Returns the number of recording files. */
static int captures(char (*rec)[MAX_PATH * 2], char *snap, size_t len)
{
    char pattern[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    int n = 0;
    snap[0] = '\0';
    snprintf(pattern, sizeof pattern, "%s\\cap\\*.perch", dir);
    HANDLE h = FindFirstFileA(pattern, &fd);
    if (h == INVALID_HANDLE_VALUE)
        fail_msg("no capture in %s\\cap", dir);
    do {
        if (strncmp(fd.cFileName, "snapshot-", 9) == 0)
            snprintf(snap, len, "%s\\cap\\%s", dir, fd.cFileName);
        else if (n < MAX_FILES)
            snprintf(rec[n++], MAX_PATH * 2, "%s\\cap\\%s", dir, fd.cFileName);
    } while (FindNextFileA(h, &fd));
    FindClose(h);
    if (n == 0 || snap[0] == '\0')
        fail_msg("want a recording and a snapshot in %s\\cap", dir);
    return n;
}

/* Adds row to sum[*n] (by name). */
static void add_row(fn_row *sum, int *n, const fn_row *row)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(sum[i].name, row->name) == 0) {
            sum[i].samples += row->samples;
            return;
        }
    if (*n < MAX_ROWS)
        sum[(*n)++] = *row;
}

static const fn_row *find_row(const fn_row *rows, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* The offline names: import, then symbolize with the fixture's folder. */
static int offline(const char *etl, const char *fixtures, fn_row *rows)
{
    char args[MAX_PATH * 5], cap[MAX_PATH * 2], named[MAX_PATH * 2];
    snprintf(cap, sizeof cap, "%s\\imported.perch", dir);
    snprintf(named, sizeof named, "%s\\named.perch", dir);
    snprintf(args, sizeof args, "import \"%s\" -o \"%s\"", etl, cap);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    snprintf(args, sizeof args, "symbolize \"%s\" --symbols \"%s\" -o \"%s\"", cap, fixtures,
             named);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    return functions_of(named, rows);
}

static void test_perchd_names_recording_and_snapshot(void **state)
{
    char image[MAX_PATH * 2], fixtures[MAX_PATH * 2], etl[MAX_PATH * 2], args[MAX_PATH * 6];
    char rec[MAX_FILES][MAX_PATH * 2], snap[MAX_PATH * 2];
    fn_row want[MAX_ROWS], live[MAX_ROWS], snapped[MAX_ROWS];
    (void)state;
    harness_win_path(sym_fixture_path("x86_64/app.exe"), image, sizeof image);
    snprintf(fixtures, sizeof fixtures, "%s", image);
    *strrchr(fixtures, '\\') = '\0';
    harness_fresh_dir("live_symbols", dir, sizeof dir);
    snprintf(etl, sizeof etl, "%s\\module.etl", dir);
    snprintf(args, sizeof args,
             "synth -o \"%s\" --cpus 2 --duration-ms 16000 --seed 3 --module \"%s\"", etl, image);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    int nwant = offline(etl, fixtures, want);

    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", etl), 0);
    /* the SymbolPath key comes before PERCH_SYMBOL_PATH (here a folder that does not exist) */
    SetEnvironmentVariableA("PERCH_SYMBOL_PATH", "C:\\no\\such\\folder");
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --set RecordOnStart=on "
             "--set FlightRecorderSeconds=3600 --set \"SymbolPath=%s\" --set RotateSizeMb=1 "
             "--duration 300",
             dir, dir, fixtures);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, &child);
    SetEnvironmentVariableA("PERCH_SYMBOL_PATH", NULL);
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(child.pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
    assert_true(perch_fake_etw_wait_replay(SESSION, 120000));
    assert_true(harness_wait_status(dir, " s held, ", 10000));
    Sleep(1000); /* the worker names what the last records hit while the engine idles */
    harness_send_ctrl(&child, CTRL_BREAK_EVENT);
    assert_int_equal(harness_finish(&child, out, sizeof out, 120000), 0);
    assert_contains(out, "Snapshot of the flight recorder written to");
    char *log = harness_read_in(dir, "perchd.log");
    char said[MAX_PATH * 3];
    snprintf(said, sizeof said, "DbgHelp's symbol path is %s (SymbolPath).", fixtures);
    assert_contains(log, said);
    assert_contains(log, "Function names:");
    free(log);
    int files = captures(rec, snap, sizeof snap), nlive = 0, procs = 0;
    assert_true(files >= 2); /* RotateSizeMb 1: each file names what its own samples hit */
    for (int f = 0; f < files; f++) {
        fn_row rows[MAX_ROWS];
        int n = functions_of(rec[f], rows);
        print_message("file %d: %d named top functions\n", f + 1, n);
        assert_true(n >= 1);
        for (int i = 0; i < n; i++)
            add_row(live, &nlive, &rows[i]);
    }
    int nsnap = functions_of(snap, snapped);
    print_message("offline %d, recording %d (%d files), snapshot %d top functions\n", nwant, nlive,
                  files, nsnap);
    for (int i = 0; i < nlive; i++)
        print_message("  recording: %s %llu %s\n", live[i].name, live[i].samples, live[i].source);
    for (int i = 0; i < nsnap; i++)
        print_message("  snapshot:  %s %llu %s\n", snapped[i].name, snapped[i].samples,
                      snapped[i].source);
    for (int i = 0; i < nwant; i++)
        print_message("  offline:   %s %llu %s\n", want[i].name, want[i].samples, want[i].source);
    for (int i = 0; i < nwant; i++) {
        if (strcmp(want[i].source, "pdb-proc") != 0)
            continue; /* publics and .pdata ranges: DbgHelp may name them otherwise */
        const fn_row *got = find_row(live, nlive, want[i].name);
        if (got == NULL || got->samples != want[i].samples)
            fail_msg("the recording lacks %s (%llu samples offline)", want[i].name,
                     want[i].samples);
        procs++;
    }
    assert_true(procs >= 3);
    for (int i = 0; i < nlive; i++)
        assert_int_equal(strncmp(live[i].name, "app.exe!", 8), 0);
    assert_true(nsnap >= 3);
    for (int i = 0; i < nsnap; i++) {
        const fn_row *w = find_row(want, nwant, snapped[i].name);
        if (w == NULL || snapped[i].samples > w->samples)
            fail_msg("the snapshot names %s (%llu samples), not a function the offline path "
                     "names with as many",
                     snapped[i].name, snapped[i].samples);
    }
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_perchd_names_recording_and_snapshot, end_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
