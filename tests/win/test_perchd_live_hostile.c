/*
 * perchd under load and abuse, under Wine: perchd_fake.exe (perchd's objects with the fake ETW,
 * replaying a `perch synth` trace through the real-time callback at the trace's own speed)
 * serves its pipe while, during the replay:
 *  - `perch snapshot` takes the flight recorder's content once about 35 % of the trace has
 *    been delivered, and `perch report --json --from --to` of that snapshot over an early
 *    window gives the same figures as `perch report` of the .etl over the same window (samples,
 *    PMC samples, every thread's samples and CPU time, slice count, run and idle time);
 *  - 32 clients at once ask STATUS and TOP twenty times each, every request answered;
 *  - hostile clients: an oversized frame, garbage, a wrong version, half a header, one that
 *    never says HELLO, one that leaves in the middle of a FETCH stream: each is answered or
 *    dropped as docs/protocol.md says, perchd's log names the silent one.
 * After the replay: every event the fake delivered reached the model (no queue drop, no loss),
 * 1,000 connect/disconnect cycles leave perchd's memory where it was, STATUS still answers,
 * and perchd stops cleanly leaving no session behind. The same cases against the pipe server
 * alone, with a fake daemon, are in test_pipe_server.c; this is them against the real perchd.
 */
#include <windows.h>
#include <psapi.h>

#include "../unit/json_check.h"
#include "etw_fake.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/thread.h"
#include "perch_cli_harness.h"
#include "perchd_harness.h"
#include "pipe_raw.h"
#include "proto/client.h"
#include "testdata.h"

#define SESSION "Perch Kernel Session"

static char dir[MAX_PATH], etl[MAX_PATH * 2], pipe_name[96];
static char out[HARNESS_OUT_MAX];
static perch_cli_result r;
static struct harness_child child; /* perchd_fake */

/* ---- perchd and the fake ------------------------------------------------------------------- */

static uint64_t events_in(const char *path)
{
    perch_etl_reader *rd = NULL;
    perch_event ev;
    uint64_t n = 0;
    assert_int_equal(perch_etl_open_file(path, NULL, &rd, NULL), 0);
    while (perch_etl_next(rd, &ev) == 0)
        n++;
    perch_etl_destroy(rd);
    return n;
}

static void start_perchd(void)
{
    char args[MAX_PATH * 4], src[MAX_PATH];
    harness_fresh_dir("live_hostile_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\seed5.etl", src);
    /* 2 CPUs, about 22 s of trace time, replayed at its own speed: long enough for the
     * snapshot, the 32 clients and the hostile ones to happen while it runs */
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 5 --size 16M --cpus 2", etl);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", etl), 0);
    assert_int_equal(perch_fake_etw_set_dword("Pace", 1), 0);
    /* a loaded test machine may fall behind the trace's pace: that is not what this tests */
    assert_int_equal(perch_fake_etw_set_dword("RealTimeLagMs", 3600000), 0);
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-hostile-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name); /* perchd_fake and perch inherit it */
    harness_fresh_dir("live_hostile", dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 600", dir, dir);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, &child);
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(child.pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
}

static uint32_t delivered(void)
{
    perch_fake_etw_session_info info;
    assert_true(perch_fake_etw_session(SESSION, &info));
    return info.delivered;
}

static perch_proto_client *connect_pipe(const char *who)
{
    perch_proto_transport t;
    perch_proto_client *c;
    char why[300];
    if (perch_pipe_connect(pipe_name, 20000, &t, why, sizeof why) != 0 ||
        perch_proto_client_open(&t, who, GetCurrentProcessId(), 20000, &c, why, sizeof why) != 0)
        fail_msg("connect to %s: %s", pipe_name, why);
    return c;
}

/* STATUS: events taken, the losses by reason (summed), clients dropped. */
static void status_of(perch_proto_client *c, uint64_t *events, uint64_t *losses, uint64_t *dropped)
{
    perch_proto_status st;
    void *mem = NULL;
    char why[300];
    if (perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 20000, why,
                                sizeof why) != 0)
        fail_msg("STATUS: %s", why);
    *events = st.events_total;
    *losses = 0;
    for (uint32_t i = 0; i < st.loss_count; i++) {
        if (st.losses[i].count)
            printf("loss %s: %llu\n", st.losses[i].name, (unsigned long long)st.losses[i].count);
        *losses += st.losses[i].count;
    }
    *dropped = st.clients_dropped;
    perch_free(mem);
}

/* ---- the snapshot, through the command line ----------------------------------------------- */

static void cli(const char *args, DWORD want)
{
    perch_cli_expect(args, want, &r);
}

/* perch report --json over [0.5 s, 1.5 s) of file, parsed (the nodes point into the text
 * returned, which the caller frees after jfree). */
static char *report_window(const char *file, struct jdoc *d)
{
    char args[MAX_PATH * 3];
    snprintf(args, sizeof args, "report --json --top 1000 --from 0.5s --to 1.5s \"%s\"", file);
    cli(args, 0);
    assert_contains(r.err, "from 0.5 s to 1.5 s after the trace's start");
    char *text = _strdup(r.out);
    assert_non_null(text);
    assert_true(jparse(d, text));
    return text;
}

static double num(struct jdoc *d, long node, const char *key)
{
    return jnum(d, jget(d, node, key));
}

static void check_same_window(const char *snapshot)
{
    static const char *const row_fields[] = {"pid", "tid", "samples", "run_ticks"};
    static const char *const slice_fields[] = {"count", "run_ticks", "idle_ticks"};
    struct jdoc a, b;
    char *ta = report_window(snapshot, &a), *tb = report_window(etl, &b);
    assert_true(num(&a, 0, "samples") == num(&b, 0, "samples"));
    assert_true(num(&a, 0, "pmc_samples") == num(&b, 0, "pmc_samples"));
    long sa = jget(&a, 0, "slices"), sb = jget(&b, 0, "slices");
    for (size_t f = 0; f < sizeof slice_fields / sizeof *slice_fields; f++)
        if (num(&a, sa, slice_fields[f]) != num(&b, sb, slice_fields[f]))
            fail_msg("slices.%s: %.0f in the snapshot, %.0f in the trace", slice_fields[f],
                     num(&a, sa, slice_fields[f]), num(&b, sb, slice_fields[f]));
    long ra = jget(&a, 0, "top_threads"), rb = jget(&b, 0, "top_threads");
    assert_int_equal(jlen(&a, ra), jlen(&b, rb));
    for (long i = 0; i < jlen(&a, ra); i++)
        for (size_t f = 0; f < sizeof row_fields / sizeof *row_fields; f++)
            if (num(&a, jat(&a, ra, i), row_fields[f]) != num(&b, jat(&b, rb, i), row_fields[f]))
                fail_msg("thread row %ld: %s %.0f in the snapshot, %.0f in the trace", i,
                         row_fields[f], num(&a, jat(&a, ra, i), row_fields[f]),
                         num(&b, jat(&b, rb, i), row_fields[f]));
    assert_true(num(&a, 0, "samples") > 1000 && jlen(&a, ra) > 3); /* not an empty window */
    printf("snapshot taken mid-replay, over [0.5 s, 1.5 s): %.0f samples, %ld threads, as the "
           "trace\n",
           num(&a, 0, "samples"), jlen(&a, ra));
    jfree(&a);
    jfree(&b);
    free(ta);
    free(tb);
}

/* ---- 32 clients at once ------------------------------------------------------------------- */

static void thirty_two_clients(void)
{
    perch_thread *t[32];
    static pipe_worker a[32];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 32; i++) {
        a[i].pipe = pipe_name, a[i].window_ms = 2000;
        assert_int_equal(perch_thread_start(pipe_worker_run, &a[i], "client", &t[i]), 0);
    }
    for (int i = 0; i < 32; i++) {
        assert_int_equal(perch_thread_join(t[i], NULL), 0);
        if (a[i].ok != 40)
            fail_msg("client %d: %d of 40 requests answered (%s)", i, a[i].ok, a[i].why);
    }
    printf("32 clients at once: 1280 requests answered (%u events delivered by then)\n",
           delivered());
}

/* ---- hostile clients ---------------------------------------------------------------------- */

static void hostile_clients(const char *capture_name)
{
    perch_proto_header hdr;
    static uint8_t buf[1u << 20];
    raw_hostile_basics(pipe_name); /* oversized, garbage, wrong version, half a header */
    HANDLE h;
    /* gone in the middle of a FETCH stream: one frame read, then closed */
    h = raw_open(pipe_name);
    raw_hello(h);
    perch_proto_fetch_req req = {capture_name, 0};
    raw_request(h, PERCH_MSG_FETCH, 5, &req);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_not_equal(hdr.type, PERCH_MSG_ERROR);
    CloseHandle(h);
    /* silent: dropped after perchd's HELLO limit (5 s) */
    ULONGLONG t0 = GetTickCount64(); /* before the open: the limit counts from the connect */
    h = raw_open(pipe_name);
    assert_false(raw_frame(h, &hdr, buf, sizeof buf));
    printf("a silent client was dropped after %.1f s\n", (double)(GetTickCount64() - t0) / 1000.0);
    assert_true(GetTickCount64() - t0 >= 4000);
    CloseHandle(h);
}

/* ---- memory over connect cycles ----------------------------------------------------------- */

static SIZE_T private_bytes(void)
{
    PROCESS_MEMORY_COUNTERS_EX pmc;
    memset(&pmc, 0, sizeof pmc);
    assert_true(
        GetProcessMemoryInfo(child.pi.hProcess, (PROCESS_MEMORY_COUNTERS *)&pmc, sizeof pmc));
    return pmc.PrivateUsage ? pmc.PrivateUsage : pmc.PagefileUsage;
}

static void connect_cycles(void)
{
    for (int i = 0; i < 20; i++) /* warm up what the CRT and Wine allocate once */
        perch_proto_client_close(connect_pipe("warm"));
    Sleep(500);
    SIZE_T before = private_bytes();
    for (int i = 0; i < 1000; i++) {
        if (i % 2) {
            perch_proto_client_close(connect_pipe("cycle"));
        } else {
            HANDLE h = raw_open(pipe_name); /* connect, say nothing, leave */
            CloseHandle(h);
        }
    }
    Sleep(500);
    SIZE_T after = private_bytes();
    printf("1000 connect/disconnect cycles: perchd's private bytes %.2f -> %.2f MiB\n",
           (double)before / 1048576.0, (double)after / 1048576.0);
    assert_true(after < before + (4u << 20));
}

/* ---- the test ----------------------------------------------------------------------------- */

static void test_perchd_under_load_and_abuse(void **state)
{
    (void)state;
    char local[MAX_PATH * 2], args[MAX_PATH * 3], name[MAX_PATH];
    uint64_t total, events, losses, dropped_before, dropped;
    start_perchd();
    total = events_in(etl);
    perch_proto_client *c = connect_pipe("test");
    status_of(c, &events, &losses, &dropped_before);

    /* the snapshot once 35 % of the trace (about 7 s) is in: its window [0.5 s, 1.5 s) is
     * complete (a sample waits at most 4 s of trace time for its stack) */
    for (ULONGLONG t0 = GetTickCount64(); delivered() < total * 35 / 100; Sleep(50))
        if (GetTickCount64() - t0 > 180000)
            fail_msg("the fake delivered %u of %llu events in 3 minutes", delivered(),
                     (unsigned long long)total);
    perch_fake_etw_session_info info;
    assert_true(perch_fake_etw_session(SESSION, &info));
    assert_false(info.replay_done);
    snprintf(local, sizeof local, "%s\\mid.perch", dir);
    snprintf(args, sizeof args, "snapshot -o \"%s\" --json", local);
    cli(args, 0);
    const char *p = strstr(r.out, "\"name\":\"");
    assert_non_null(p);
    snprintf(name, sizeof name, "%.*s", (int)strcspn(p + 8, "\""), p + 8);
    printf("snapshot %s taken at %u of %llu events delivered\n", name, delivered(),
           (unsigned long long)total);

    thirty_two_clients();
    hostile_clients(name);
    assert_true(perch_fake_etw_session(SESSION, &info));
    printf("abuse over with %u of %llu events delivered%s\n", info.delivered,
           (unsigned long long)total, info.replay_done ? " (the replay had ended)" : "");

    /* every event reached the model: nothing dropped on the way, nothing lost */
    if (!perch_fake_etw_wait_replay(SESSION, 180000))
        fail_msg("the replay of %s did not finish", etl);
    assert_true(perch_fake_etw_session(SESSION, &info));
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < 60000; Sleep(100)) {
        status_of(c, &events, &losses, &dropped);
        if (events >= info.delivered)
            break;
    }
    assert_int_equal(events, info.delivered);
    assert_int_equal(losses, 0);
    assert_true(dropped >= dropped_before + 3); /* oversized, garbage, silent at least */
    printf("perchd took all %llu events; %llu clients dropped by perchd\n",
           (unsigned long long)events, (unsigned long long)(dropped - dropped_before));

    connect_cycles();
    status_of(c, &events, &losses, &dropped);
    perch_proto_client_close(c);
    check_same_window(local);

    harness_send_ctrl(&child, CTRL_C_EVENT);
    DWORD code = harness_finish(&child, out, sizeof out, 120000);
    assert_int_equal(code, 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    char *log = harness_read_in(dir, "perchd.log");
    if (log != NULL) {
        assert_contains(log, "sent no HELLO within");
        free(log);
    }
}

/* A failed check leaves perchd_fake running: end it, so ctest does not wait for it. */
static int end_perchd(void **state)
{
    (void)state;
    harness_end(&child);
    return 0;
}

int main(int argc, char **argv)
{
    if (harness_is_helper(argc, argv))
        return harness_helper(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_perchd_under_load_and_abuse, end_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
