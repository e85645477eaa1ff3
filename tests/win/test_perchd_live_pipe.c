/*
 * perch against a perchd that records a live session, under Wine: perchd_fake.exe (perchd's
 * objects with the fake ETW of tests/win/etw_fake, which replays a `perch synth` trace through
 * the real-time callback as the OS would) serves its pipe, and every client command talks to
 * it. STATUS counts every event the fake delivered; TOP over a window of the replayed session
 * agrees with `perch report` over the same window of the trace (each thread's samples and CPU
 * time, the totals, the idle time); `perch top`, `perch watch` and `perch status` answer with
 * --json; the recording stopped over the pipe and then fetched over it is byte for byte the
 * file perchd wrote, and so is one `perch record --duration` starts and fetches; a
 * flight-recorder snapshot taken over the pipe while the session runs (its replay over) is
 * byte for byte the file perchd kept, and its report over a window is the trace's; once the
 * snapshots kept reach SnapshotCapMb, the next is refused with a sentence and nothing changes.
 *
 * The windows end well before the end of the trace: the model holds a sample until its stack
 * is complete (up to 4 s of trace time), and trace time stops when the replay ends, so the
 * last seconds of samples reach the live window and the recorder only when the session ends
 * (and the recorder's open chunk is not in a snapshot yet).
 */
#include "../unit/json_check.h"
#include "etw_fake.h"
#include "live_fixture.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "perch_cli_harness.h"
#include "perchd_harness.h"
#include "proto/client.h"
#include "testdata.h"

#define SESSION "Perch Kernel Session"

static char dir[MAX_PATH], etl[MAX_PATH * 2], pipe_name[96];
static char out[HARNESS_OUT_MAX];
static perch_cli_result r;
static struct harness_child child; /* perchd_fake */

/* ---- the trace, offline ------------------------------------------------------------------ */

typedef struct range {
    uint64_t lo, hi;
} range;

static int range_sample(void *ctx, const perch_sample_rec *s)
{
    range *g = ctx;
    g->lo = s->ts < g->lo ? s->ts : g->lo;
    g->hi = s->ts > g->hi ? s->ts : g->hi;
    return 0;
}

static void run_trace(const perch_sink *sink)
{
    perch_input in;
    assert_int_equal(perch_input_open_file(&in, etl), 0);
    assert_int_equal(perch_pipeline_etl(&in, "etl:test", sink, NULL, NULL), 0);
}

/* perch report --json (every thread row) of the trace, or of the capture file `capture`
 * when not NULL, restricted to [from, to). */
static char *report_over(const char *capture, uint64_t from, uint64_t to)
{
    perch_report_options ro = {.sz = sizeof ro, .top = 100000};
    perch_report *rep;
    perch_sink rs, ws;
    window_filter wf;
    perch_input in;
    perch_capture_status cs;
    perch_test_text text = {NULL, 0, 0};
    perch_json w;
    assert_int_equal(perch_report_create(&ro, &rep), 0);
    perch_report_sink(rep, &rs);
    window_filter_sink(&wf, &rs, from, to, &ws);
    if (capture == NULL) {
        run_trace(&ws);
    } else {
        assert_int_equal(perch_input_open_file(&in, capture), 0);
        assert_int_equal(perch_capture_replay(&in, &ws, &cs), 0);
        perch_input_close(&in);
    }
    perch_json_init(&w, perch_test_text_sink, &text);
    assert_int_equal(perch_report_write_json(rep, &w), 0);
    perch_report_destroy(rep);
    return text.data;
}

/* The snapshot's report over [from, to) is the trace's: every thread row and the totals. */
static void check_snapshot_agrees(const char *snapshot, uint64_t from, uint64_t to)
{
    static const char *const fields[] = {"pid", "tid", "samples", "run_ticks"};
    struct jdoc a, b;
    char *x = report_over(snapshot, from, to), *y = report_over(NULL, from, to);
    assert_true(jparse(&a, x));
    assert_true(jparse(&b, y));
    long ra = jget(&a, 0, "top_threads"), rb = jget(&b, 0, "top_threads");
    assert_int_equal(jlen(&a, ra), jlen(&b, rb));
    for (long i = 0; i < jlen(&a, ra); i++)
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            if (jnum(&a, jget(&a, jat(&a, ra, i), fields[f])) !=
                jnum(&b, jget(&b, jat(&b, rb, i), fields[f])))
                fail_msg("thread row %ld: %s %.0f in the snapshot, %.0f in the trace", i, fields[f],
                         jnum(&a, jget(&a, jat(&a, ra, i), fields[f])),
                         jnum(&b, jget(&b, jat(&b, rb, i), fields[f])));
    long sa = jget(&a, 0, "slices"), sb = jget(&b, 0, "slices");
    assert_true(jnum(&a, jget(&a, 0, "samples")) == jnum(&b, jget(&b, 0, "samples")));
    assert_true(jnum(&a, jget(&a, sa, "count")) == jnum(&b, jget(&b, sb, "count")));
    assert_true(jnum(&a, jget(&a, sa, "run_ticks")) == jnum(&b, jget(&b, sb, "run_ticks")));
    assert_true(jnum(&a, jget(&a, sa, "idle_ticks")) == jnum(&b, jget(&b, sb, "idle_ticks")));
    assert_true(jnum(&a, jget(&a, 0, "samples")) > 1000 && jlen(&a, ra) > 3);
    printf("snapshot over [%llu, %llu): %ld thread rows, %.0f samples: as the trace\n",
           (unsigned long long)from, (unsigned long long)to, jlen(&a, ra),
           jnum(&a, jget(&a, 0, "samples")));
    jfree(&a);
    jfree(&b);
    free(x);
    free(y);
}

/* ---- the pipe ------------------------------------------------------------------------------ */

static perch_proto_client *connect_pipe(void)
{
    perch_proto_transport t;
    perch_proto_client *c;
    char why[300];
    if (perch_pipe_connect(pipe_name, 10000, &t, why, sizeof why) != 0 ||
        perch_proto_client_open(&t, "test", GetCurrentProcessId(), 10000, &c, why, sizeof why) != 0)
        fail_msg("connect to %s: %s", pipe_name, why);
    return c;
}

static uint64_t events_total(perch_proto_client *c)
{
    perch_proto_status st;
    void *mem = NULL;
    char why[300];
    if (perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 10000, why,
                                sizeof why) != 0)
        fail_msg("STATUS: %s", why);
    uint64_t n = st.events_total;
    perch_free(mem);
    return n;
}

/* A thread row of the live window: samples and CPU ticks by (pid, tid). */
typedef struct live_row {
    int64_t pid, tid;
    uint64_t samples, cpu;
} live_row;

typedef struct live_rows {
    live_row v[1000];
    uint32_t n;
    uint64_t samples, cpu, idle;
} live_rows;

static live_row *row_of(live_rows *l, int64_t pid, int64_t tid)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->v[i].pid == pid && l->v[i].tid == tid)
            return &l->v[i];
    assert_true(l->n < 1000);
    live_row *x = &l->v[l->n++];
    memset(x, 0, sizeof *x);
    x->pid = pid, x->tid = tid;
    return x;
}

/* TOP threads (by `order`, every row) over [from, to), named from the reply's entities. */
static void live_top(perch_proto_client *c, uint8_t order, uint64_t from, uint64_t to, live_rows *l)
{
    perch_proto_top_req req = {PERCH_TOP_THREADS, order, PERCH_PROTO_MAX_TOP, false, 0,
                               {0, from, to}};
    perch_proto_top_rep top;
    void *mem = NULL;
    char why[300];
    kept k;
    perch_sink ks;
    if (perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 30000, why,
                                sizeof why) != 0)
        fail_msg("TOP: %s", why);
    assert_true(top.complete);
    assert_true(top.row_count < PERCH_PROTO_MAX_TOP);
    perch_capture_status cs;
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(top.entities, top.entities_len, &ks, &cs), 0);
    for (uint32_t i = 0; i < top.row_count; i++) {
        int64_t pid = -1, tid = -1;
        for (size_t t = 0; t < k.nthreads; t++)
            if (k.threads[t].key == top.rows[i].key) {
                tid = k.threads[t].tid;
                pid = k.threads[t].pid != UINT32_MAX ? (int64_t)k.threads[t].pid : -1;
            }
        live_row *x = row_of(l, pid, tid);
        x->samples = top.rows[i].samples;
        x->cpu = top.rows[i].cpu_ticks;
    }
    l->samples = top.samples, l->cpu = top.cpu_ticks, l->idle = top.idle_ticks;
    kept_free(&k);
    perch_free(mem);
}

/* The live window's threads over [from, to) are the report's over the same window. */
static void check_top_agrees(perch_proto_client *c, uint64_t from, uint64_t to)
{
    static live_rows l;
    struct jdoc d;
    memset(&l, 0, sizeof l);
    live_top(c, PERCH_ORDER_SAMPLES, from, to, &l);
    live_top(c, PERCH_ORDER_CPU, from, to, &l);
    char *json = report_over(NULL, from, to);
    assert_true(jparse(&d, json));
    long rows = jget(&d, 0, "top_threads"), slices = jget(&d, 0, "slices");
    uint64_t idle = 0, matched = 0;
    for (long i = 0; i < jlen(&d, rows); i++) {
        long row = jat(&d, rows, i);
        int64_t pid = (int64_t)jnum(&d, jget(&d, row, "pid"));
        int64_t tid = (int64_t)jnum(&d, jget(&d, row, "tid"));
        uint64_t samples = (uint64_t)jnum(&d, jget(&d, row, "samples"));
        uint64_t run = (uint64_t)jnum(&d, jget(&d, row, "run_ticks"));
        if (tid == 0) { /* the idle threads: apart in the live window, as idle time */
            idle += run;
            continue;
        }
        live_row *x = row_of(&l, pid, tid);
        if (x->samples != samples || x->cpu != run)
            fail_msg("thread %lld of pid %lld: live %llu samples, %llu cpu ticks; report %llu, "
                     "%llu",
                     (long long)tid, (long long)pid, (unsigned long long)x->samples,
                     (unsigned long long)x->cpu, (unsigned long long)samples,
                     (unsigned long long)run);
        matched++;
    }
    assert_int_equal(matched, l.n); /* no live row the report lacks */
    assert_int_equal((uint64_t)jnum(&d, jget(&d, 0, "samples")), l.samples);
    assert_int_equal((uint64_t)jnum(&d, jget(&d, slices, "run_ticks")), l.cpu);
    assert_int_equal((uint64_t)jnum(&d, jget(&d, slices, "idle_ticks")), l.idle);
    assert_int_equal(idle, l.idle);
    assert_true(l.samples > 1000 && l.cpu > 0 && matched > 3); /* the window is not empty */
    printf("live top over [%llu, %llu): %llu threads, %llu samples, %llu cpu ticks: as the "
           "report\n",
           (unsigned long long)from, (unsigned long long)to, (unsigned long long)matched,
           (unsigned long long)l.samples, (unsigned long long)l.cpu);
    jfree(&d);
    free(json);
}

/* ---- files ----------------------------------------------------------------------------- */

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    uint8_t *x = perch_test_read_file(a, &na), *y = perch_test_read_file(b, &nb);
    if (na != nb || memcmp(x, y, na) != 0)
        fail_msg("%s (%zu bytes) and %s (%zu bytes) differ", a, na, b, nb);
    assert_true(na > 64);
    free(x);
    free(y);
}

/* The value of "key":"..." in text, into v. */
static void json_string_of(const char *text, const char *key, char *v, size_t len)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":\"", key);
    const char *p = strstr(text, needle), *e = p ? strchr(p + strlen(needle), '"') : NULL;
    if (e == NULL)
        fail_msg("no %s in %s", key, text);
    p += strlen(needle);
    snprintf(v, len, "%.*s", (int)(e - p), p);
}

/* The value of "key":<number> in text. */
static uint64_t json_u64_of(const char *text, const char *key)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    const char *p = strstr(text, needle);
    if (p == NULL)
        fail_msg("no %s in %s", key, text);
    return strtoull(p + strlen(needle), NULL, 10);
}

/* The recording in STATUS: perchd's own times of it (one started with perchd, by
 * RecordOnStart, as well as one a client started), and the length a client planned. */
static void check_recording_times(perch_proto_client *c, uint64_t planned_ms)
{
    perch_proto_status st;
    void *mem = NULL;
    char why[300];
    FILETIME now;
    if (perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 10000, why,
                                sizeof why) != 0)
        fail_msg("STATUS: %s", why);
    GetSystemTimeAsFileTime(&now);
    uint64_t now_ft = (uint64_t)now.dwHighDateTime << 32 | now.dwLowDateTime;
    assert_int_equal(st.recording_count, 1);
    const perch_proto_capture *rec = &st.recordings[0];
    if (rec->elapsed_ms > st.uptime_ms + 1000)
        fail_msg("the recording has run %llu ms, perchd only %llu ms",
                 (unsigned long long)rec->elapsed_ms, (unsigned long long)st.uptime_ms);
    assert_true(rec->start_filetime <= now_ft);
    assert_true(now_ft - rec->start_filetime <= rec->elapsed_ms * 10000 + 20000000ull);
    assert_int_equal(rec->duration_ms, planned_ms);
    perch_free(mem);
}

static void cli(const char *args, DWORD want)
{
    perch_cli_expect(args, want, &r);
}

/* Runs perch with args (its --json output names a capture in perchd's directory) and checks
 * that the file `local` it wrote is byte for byte that capture. */
static void check_same_as_kept(const char *args, const char *local)
{
    char name[MAX_PATH], kept_path[MAX_PATH * 2];
    cli(args, 0);
    json_string_of(r.out, "name", name, sizeof name);
    snprintf(kept_path, sizeof kept_path, "%s\\cap\\%s", dir, name);
    assert_same_file(kept_path, local);
}

/* The snapshots kept in the capture directory (snapshot-*.perch). */
static unsigned snapshots_kept(void)
{
    char find[MAX_PATH * 2];
    WIN32_FIND_DATAA fd;
    unsigned n = 0;
    snprintf(find, sizeof find, "%s\\cap\\snapshot-*.perch", dir);
    HANDLE h = FindFirstFileA(find, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    do
        n++;
    while (FindNextFileA(h, &fd));
    FindClose(h);
    return n;
}

/* SnapshotCapMb (16 MiB here): once the snapshots kept reach it, the next is refused with a
 * sentence that says why and what to do, nothing is written or deleted, and the refusal is in
 * perchd's log; once the old ones are gone, a snapshot is taken again. */
static void check_snapshot_cap(void)
{
    char big[MAX_PATH * 2], local[MAX_PATH * 2], args[MAX_PATH * 3];
    LARGE_INTEGER size;
    unsigned before = snapshots_kept();
    assert_true(before >= 1); /* the one taken above */
    snprintf(big, sizeof big, "%s\\cap\\snapshot-20200101-000000.perch", dir);
    HANDLE h = CreateFileA(big, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
    assert_true(h != INVALID_HANDLE_VALUE);
    size.QuadPart = 16ll << 20;
    assert_true(SetFilePointerEx(h, size, NULL, FILE_BEGIN) && SetEndOfFile(h));
    CloseHandle(h);
    snprintf(local, sizeof local, "%s\\refused.perch", dir);
    snprintf(args, sizeof args, "snapshot -o \"%s\"", local);
    cli(args, 1);
    assert_contains(r.err, "the snapshots already kept reach SnapshotCapMb (16 MiB): ");
    assert_contains(r.err, "delete old ones (snapshot-*.perch) or raise the cap");
    assert_true(GetFileAttributesA(local) == INVALID_FILE_ATTRIBUTES);
    assert_int_equal(snapshots_kept(), before + 1); /* none written, none deleted */
    char *log = harness_read_in(dir, "perchd.log");
    assert_contains(log, "reach SnapshotCapMb (16 MiB)");
    free(log);
    assert_true(DeleteFileA(big));
    cli(args, 0);
    assert_int_equal(snapshots_kept(), before + 1);
}

/* ---- the test ------------------------------------------------------------------------------ */

static void start_perchd(struct harness_child *c)
{
    char args[MAX_PATH * 4], src[MAX_PATH];
    harness_fresh_dir("live_pipe_src", src, sizeof src);
    snprintf(etl, sizeof etl, "%s\\seed3.etl", src);
    /* 2 CPUs, about 11 s of trace time: a window can end 5 s before the end */
    snprintf(args, sizeof args, "synth -o \"%s\" --seed 3 --size 8M --cpus 2", etl);
    assert_int_equal(harness_run_with("PERCH_EXE", args, out, sizeof out, 120000), 0);
    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", etl), 0);
    snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\perchd-live-%lu",
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe_name); /* perchd_fake and perch inherit it */
    harness_fresh_dir("live_pipe", dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --set RecordOnStart=on "
             "--set RotateSizeMb=65536 --set SnapshotCapMb=16 --duration 600",
             dir, dir);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, c);
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(c->pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
    if (!perch_fake_etw_wait_replay(SESSION, 180000))
        fail_msg("the replay of %s did not finish", etl);
}

/* Waits until perchd's engine has taken every event the fake delivered. */
static void wait_consumed(perch_proto_client *c)
{
    perch_fake_etw_session_info info;
    assert_true(perch_fake_etw_session(SESSION, &info));
    uint64_t n = 0;
    for (ULONGLONG t0 = GetTickCount64(); GetTickCount64() - t0 < 60000; Sleep(100))
        if ((n = events_total(c)) >= info.delivered)
            return;
    fail_msg("perchd took %llu of the %u events delivered", (unsigned long long)n, info.delivered);
}

static void test_perch_against_a_live_perchd(void **state)
{
    (void)state;
    char name[MAX_PATH], local[MAX_PATH * 2], args[MAX_PATH * 3];
    range g = {UINT64_MAX, 0};
    perch_sink rs;
    memset(&rs, 0, sizeof rs);
    rs.ctx = &g;
    rs.sample = range_sample;
    start_perchd(&child);
    run_trace(&rs);
    assert_true(g.hi > g.lo);

    perch_proto_client *pc = connect_pipe();
    wait_consumed(pc);
    uint64_t len = g.hi - g.lo;
    check_top_agrees(pc, g.lo + len / 8, g.lo + len / 2); /* ends 5.6 s before the end */
    check_top_agrees(pc, g.lo + len / 5 + 12345, g.lo + len / 5 + len / 10 + 777);
    perch_proto_client_close(pc);

    /* the flight recorder while the session runs: the snapshot perch writes is the one perchd
     * kept, and over a window that ends well before the newest records, the trace */
    snprintf(local, sizeof local, "%s\\snapshot.perch", dir);
    snprintf(args, sizeof args, "snapshot -o \"%s\" --json", local);
    check_same_as_kept(args, local);
    check_snapshot_agrees(local, g.lo + len / 8, g.lo + len / 3);
    check_snapshot_cap();

    pc = connect_pipe();
    check_recording_times(pc, 0);
    perch_proto_client_close(pc);
    cli("status --json", 0);
    assert_contains(r.out, "\"session_state\":\"running\"");
    assert_contains(r.out, "\"recorder_cap_bytes\":268435456"); /* FlightRecorderMb 256 */
    assert_lacks(r.out, "\"recorder_span_ms\":0,");
    cli("top --threads --window 30s --json", 0);
    assert_contains(r.out, "\"rows\":[{\"pid\":");
    cli("top --stacks --limit 3", 0);
    cli("watch --count 2 --interval 200ms --json", 0);
    assert_contains(r.out, "\"events_total\":");

    /* the recording perchd started with: stopped and fetched over the pipe */
    cli("captures --json", 0);
    assert_contains(r.out, "\"state\":\"recording\"");
    cli("stop --json", 0);
    json_string_of(r.out, "name", name, sizeof name);
    uint64_t length = json_u64_of(r.out, "duration_ms");
    cli("status --json", 0);
    if (length == 0 || length > json_u64_of(r.out, "uptime_ms"))
        fail_msg("the recording perchd started with lasted %llu ms, perchd ran %llu ms",
                 (unsigned long long)length, (unsigned long long)json_u64_of(r.out, "uptime_ms"));
    snprintf(local, sizeof local, "%s\\fetched.perch", dir);
    snprintf(args, sizeof args, "fetch %s -o \"%s\" --json", name, local);
    check_same_as_kept(args, local);
    /* its ledger holds no event counts (the engine's span every file): the report says so,
     * and counts what the capture names, instead of "0 records; 0 processes" */
    snprintf(args, sizeof args, "report --top 3 \"%s\"", local);
    cli(args, 0);
    assert_contains(r.out, "no event counts in this capture (perchd recorded it live");
    assert_lacks(r.out, " 0 processes");
    /* nor an end time: a live session has none (the replayed file's header had one, which
     * every capture carried before) */
    snprintf(args, sizeof args, "info --json \"%s\"", local);
    cli(args, 0);
    assert_contains(r.out, "\"end_filetime\":0");

    /* a recording a client timed: STATUS gives its planned length beside perchd's times */
    pc = connect_pipe();
    perch_proto_record_req req = {30000, "timed", 0, NULL};
    perch_proto_record_rep rep;
    void *mem = NULL;
    char why[300];
    if (perch_proto_client_call(pc, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem, 10000, why,
                                sizeof why) != 0)
        fail_msg("RECORD: %s", why);
    perch_free(mem);
    check_recording_times(pc, 30000);
    perch_proto_client_close(pc);
    cli("stop --json", 0);

    /* a timed recording survives refused requests: a second RECORD ("already running") and
     * a STOP of another name leave its timer, and it stops on time */
    pc = connect_pipe();
    perch_proto_record_req quick = {10000, "quick", 0, NULL}, other = {0, "other", 0, NULL};
    if (perch_proto_client_call(pc, PERCH_MSG_RECORD, &quick, &rep, sizeof rep, &mem, 10000, why,
                                sizeof why) != 0)
        fail_msg("RECORD: %s", why);
    perch_free(mem);
    mem = NULL;
    assert_true(perch_proto_client_call(pc, PERCH_MSG_RECORD, &other, &rep, sizeof rep, &mem, 10000,
                                        why, sizeof why) < 0);
    perch_proto_stop_req wrong = {"not-this-one"};
    perch_proto_stop_rep stopped;
    assert_true(perch_proto_client_call(pc, PERCH_MSG_STOP, &wrong, &stopped, sizeof stopped, &mem,
                                        10000, why, sizeof why) < 0);
    check_recording_times(pc, 10000); /* still timed */
    ULONGLONG until = GetTickCount64() + 30000;
    perch_proto_status st;
    for (;;) {
        mem = NULL;
        if (perch_proto_client_call(pc, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 10000, why,
                                    sizeof why) != 0)
            fail_msg("STATUS: %s", why);
        uint32_t running = st.recording_count;
        perch_free(mem);
        if (running == 0)
            break;
        if (GetTickCount64() > until)
            fail_msg("a recording timed for 10 s still runs 30 s later");
        Sleep(100);
    }
    perch_proto_client_close(pc);

    /* one `perch record` starts, waits for and fetches */
    snprintf(local, sizeof local, "%s\\recorded.perch", dir);
    snprintf(args, sizeof args, "record --duration 1s -o \"%s\" --json", local);
    check_same_as_kept(args, local);

    harness_send_ctrl(&child, CTRL_C_EVENT);
    DWORD code = harness_finish(&child, out, sizeof out, 120000);
    assert_int_equal(code, 0);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    cli("status", 6);
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
        cmocka_unit_test_teardown(test_perch_against_a_live_perchd, end_perchd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
