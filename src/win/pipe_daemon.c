/*
 * The backend of perchd's pipe (pipe_daemon.h): each request mapped onto daemon.h. STATUS
 * turns the daemon's status (and the live window's and the pipe's own figures) into the
 * protocol's; CAPTURES, FETCH and SNAPSHOT go to the capture calls; RECORD with a duration
 * starts the recording and a timer-queue timer stops it; its name and KEY=VALUE options go to
 * perch_daemon_record_start_with, whose refusals (a bad name, a key one recording cannot
 * change, a value out of range) are answered with its sentence, never ignored. Log lines
 * about clients that are not administrators are kept within a budget (util/log_budget.h).
 */
#include <windows.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "perch/error.h"
#include "pipe_daemon.h"
#include "util/log_budget.h"
#include "util/mem.h"

#define RATE_WINDOW_MS           5000u
#define MAX_LOSSES               5
#define PERCH_RECORD_MAX_OPTIONS 32 /* KEY=VALUE pairs of one RECORD (as many as the CLI sends) */
/* A client that sends no request for this long (and has no subscription) is dropped, so
 * connections left open do not hold perchd's slots for ever. The CLI asks at least every few
 * seconds while it waits for a recording. */
#define PIPE_IDLE_MS (10u * 60u * 1000u)
/* Log lines a minute about pipe clients that are not administrators: a read-only user who
 * loops refused requests or hostile connections must not rotate the log's older lines out
 * (the log keeps about 28,000 lines). */
#define UNTRUSTED_LINES_PER_MINUTE 60u
/* Read-only clients take one snapshot at a time among them, this long after the last one
 * ended. A snapshot holds the daemon's control lock while it replays the flight recorder (up
 * to FlightRecorderMb), and RECORD, STOP and perchd's own stop wait for that lock: without a
 * pause, read-only clients taking snapshots back to back would keep administrators waiting. */
#define READER_SNAPSHOT_GAP_MS 5000u

struct perch_pipe_daemon {
    perch_daemon *d;
    perch_proto_backend backend;
    perch_pipe_server *server;
    char server_name[64];
    SRWLOCK lock;      /* the timed stop's recording and its planned length; reader_snap_* */
    SRWLOCK requests;  /* one RECORD or STOP at a time (they move the timer) */
    HANDLE stop_timer; /* stops a recording with a duration */
    uint32_t timed_id; /* the recording the timer stops (perch_daemon_status.recording_id) */
    uint64_t timed_ms; /* its planned length (lock) */
    bool reader_snap_running;    /* a read-only client's snapshot is being written (lock) */
    uint64_t reader_snap_end_ms; /* when the last one ended, GetTickCount64 (lock) */
    SRWLOCK log_lock;            /* untrusted_lines */
    perch_log_budget untrusted_lines;
};

static const char *base_name(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            b = p + 1;
    return b;
}

static uint8_t session_state(const perch_daemon_status *ds)
{
    if (ds->state == PERCH_DAEMON_STARTING)
        return PERCH_SESSION_STARTING;
    if (ds->state != PERCH_DAEMON_RUNNING)
        return PERCH_SESSION_STOPPED;
    return ds->degraded ? PERCH_SESSION_DEGRADED : PERCH_SESSION_RUNNING;
}

static uint8_t session_kind(const char *kind)
{
    if (strcmp(kind, "private system logger") == 0)
        return PERCH_SESSION_PRIVATE_LOGGER;
    return strcmp(kind, "NT Kernel Logger") == 0 ? PERCH_SESSION_NT_KERNEL_LOGGER
                                                 : PERCH_SESSION_NONE;
}

static uint32_t losses_of(const perch_daemon_status *ds, perch_proto_count *out)
{
    const perch_proto_count all[MAX_LOSSES] = {
        {"live.queue_full", ds->live.queue_dropped},
        {"live.queue_oversized", ds->live.queue_oversized},
        {"session.events_lost", ds->session_events_lost},
        {"session.buffers_lost", ds->session_buffers_lost},
        {"session.rt_buffers_lost", ds->session_rt_buffers_lost},
    };
    memcpy(out, all, sizeof all);
    return MAX_LOSSES;
}

static void fill_status(perch_pipe_daemon *p, const perch_daemon_status *ds, perch_proto_status *st,
                        perch_proto_feature *feats, perch_proto_count *losses,
                        perch_proto_capture *rec)
{
    perch_pipe_server_stats ps;
    perch_live_query_stats qs;
    memset(st, 0, sizeof *st);
    memset(&qs, 0, sizeof qs);
    perch_pipe_server_get_stats(p->server, &ps);
    if (p->backend.query)
        perch_live_query_get_stats(p->backend.query, &qs);
    st->server = p->server_name;
    st->uptime_ms = ds->uptime_ms;
    st->session_state = session_state(ds);
    st->session_kind = session_kind(ds->session_kind);
    st->session_name = ds->session;
    st->degraded = ds->degraded ? ds->summary : "";
    for (uint32_t i = 0; i < ds->feature_count && i < PERCH_DAEMON_MAX_FEATURES; i++)
        feats[st->feature_count++] = (perch_proto_feature){
            ds->features[i].name, ds->features[i].enabled, ds->features[i].detail};
    st->features = feats;
    st->events_total = ds->live.events;
    st->events_per_sec = (uint64_t)llround(ds->live.events_per_second);
    st->rate_window_ms = RATE_WINDOW_MS;
    st->loss_count = losses_of(ds, losses);
    st->losses = losses;
    if (ds->recording) {
        AcquireSRWLockShared(&p->lock);
        uint64_t planned = ds->recording_id == p->timed_id ? p->timed_ms : 0;
        ReleaseSRWLockShared(&p->lock);
        *rec = (perch_proto_capture){ds->recording_name,
                                     ds->recording_bytes,
                                     ds->recording_start_filetime,
                                     ds->recording_elapsed_ms,
                                     planned,
                                     PERCH_CAPTURE_RECORDING};
        st->recording_count = 1;
        st->recordings = rec;
    }
    st->recorder_span_ms = (uint64_t)llround(ds->recorder_seconds * 1000.0);
    st->recorder_bytes = ds->recorder_bytes;
    st->recorder_cap_bytes = ds->recorder_cap_bytes;
    st->recorder_dropped = ds->recorder_dropped;
    st->window_span_ms = qs.perf_freq ? qs.span_ticks * 1000 / qs.perf_freq : 0;
    st->window_bytes = qs.bytes;
    st->window_dropped = qs.dropped_records + qs.dropped_late;
    st->clients = ps.clients;
    st->clients_dropped = ps.dropped;
    st->pipe_state = "";
}

static int b_status(void *ctx, perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    perch_daemon_status *ds = perch__alloc(sizeof *ds);
    perch_proto_feature feats[PERCH_DAEMON_MAX_FEATURES];
    perch_proto_count losses[MAX_LOSSES];
    perch_proto_capture rec;
    perch_proto_status st;
    if (ds == NULL)
        return PERCH_ENOMEM;
    perch_daemon_status_get(p->d, ds);
    fill_status(p, ds, &st, feats, losses, &rec);
    int err = perch_proto_answer_set(a, &st);
    perch__free(ds);
    return err;
}

static int b_counters(void *ctx, perch_proto_update *u)
{
    perch_pipe_daemon *p = ctx;
    perch_daemon_status *ds = perch__alloc(sizeof *ds);
    perch_proto_count losses[MAX_LOSSES];
    if (ds == NULL)
        return PERCH_ENOMEM;
    perch_daemon_status_get(p->d, ds);
    u->events_total = ds->live.events;
    u->events_per_sec = (uint64_t)llround(ds->live.events_per_second);
    u->lost_total = 0;
    for (uint32_t i = 0, n = losses_of(ds, losses); i < n; i++)
        u->lost_total += losses[i].count;
    perch__free(ds);
    return 0;
}

static int not_yet(perch_proto_answer *a, int err, const char *what)
{
    if (err == PERCH_ENOTSUP)
        perch_proto_answer_fail(a, "%s is not available in this perchd yet", what);
    return err;
}

/* How many of the listed captures (newest first) one CAPTURES reply can carry: the client
 * refuses a message over PERCH_PROTO_MAX_MESSAGE, so the list stops short of it. Each entry
 * is bounded by its name and 48 bytes of numbers and lengths. */
static size_t captures_that_fit(const perch_daemon_capture *list, size_t n)
{
    size_t bytes = 64u << 10; /* the directory and the message's own fields */
    size_t i = 0;
    for (; i < n && i < PERCH_PROTO_MAX_ARRAY; i++) {
        bytes += strlen(list[i].name) + 48;
        if (bytes > PERCH_PROTO_MAX_MESSAGE)
            break;
    }
    return i;
}

static int b_captures(void *ctx, perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    perch_daemon_capture *list = NULL;
    perch_daemon_status *ds = perch__alloc(sizeof *ds);
    size_t n = 0;
    int err = ds == NULL ? PERCH_ENOMEM : perch_daemon_list_captures(p->d, &list, &n);
    perch_proto_capture *caps = err == 0 ? perch__calloc(n + 1, sizeof *caps) : NULL;
    if (err == 0 && caps == NULL)
        err = PERCH_ENOMEM;
    if (err == 0) {
        perch_daemon_status_get(p->d, ds);
        n = captures_that_fit(list, n);
        for (size_t i = 0; i < n; i++)
            caps[i] = (perch_proto_capture){
                list[i].name,
                list[i].bytes,
                list[i].created_filetime ? list[i].created_filetime : list[i].modified_filetime,
                0,
                0,
                list[i].active ? PERCH_CAPTURE_RECORDING : PERCH_CAPTURE_COMPLETE};
        perch_proto_captures_rep rep = {ds->capture_dir, (uint32_t)n, caps};
        err = perch_proto_answer_set(a, &rep);
    }
    perch__free(caps);
    perch_free(list);
    perch__free(ds);
    return not_yet(a, err, "listing captures");
}

static void CALLBACK timed_stop(void *ctx, BOOLEAN fired)
{
    perch_pipe_daemon *p = ctx;
    perch_daemon_status *ds = perch__alloc(sizeof *ds);
    (void)fired;
    if (ds == NULL)
        return;
    perch_daemon_status_get(p->d, ds);
    AcquireSRWLockExclusive(&p->lock);
    bool ours = ds->recording && ds->recording_id == p->timed_id;
    p->timed_id = 0;
    ReleaseSRWLockExclusive(&p->lock); /* a STATUS meanwhile need not wait for the stop */
    if (ours)
        perch_daemon_record_stop(p->d); /* only the recording this timer was set for */
    perch__free(ds);
}

static void cancel_timer(perch_pipe_daemon *p)
{
    if (p->stop_timer != NULL)
        DeleteTimerQueueTimer(NULL, p->stop_timer, INVALID_HANDLE_VALUE); /* waits */
    p->stop_timer = NULL;
}

static int record_locked(perch_pipe_daemon *p, const perch_proto_record_req *r,
                         perch_proto_answer *a)
{
    char file[PERCH_CONFIG_PATH_MAX] = "", why[PERCH_DAEMON_TEXT] = "";
    perch_daemon_option opts[PERCH_RECORD_MAX_OPTIONS];
    if (r->option_count > PERCH_RECORD_MAX_OPTIONS) {
        perch_proto_answer_fail(a, "%u options are too many for one recording (at most %d)",
                                r->option_count, PERCH_RECORD_MAX_OPTIONS);
        return PERCH_ELIMIT;
    }
    for (uint32_t i = 0; i < r->option_count; i++)
        opts[i] = (perch_daemon_option){r->options[i].key, r->options[i].value};
    perch_daemon_record_opts ro = {r->name, r->option_count, opts};
    if (r->duration_ms > UINT32_MAX - 1) {
        perch_proto_answer_fail(a, "a duration of %llu ms is too long",
                                (unsigned long long)r->duration_ms);
        return PERCH_ERANGE;
    }
    int err = perch_daemon_record_start_with(p->d, &ro, file, sizeof file, why, sizeof why);
    if (err == 0)
        cancel_timer(p); /* an old timer's recording has ended; a refused start keeps it */
    if (err < 0 && why[0]) {
        perch_proto_answer_fail(a, "%s", why);
        return err; /* a refusal with its reason (ENOTSUP too: not a missing feature) */
    }
    if (err < 0)
        return not_yet(a, err, "recording");
    if (r->duration_ms) {
        perch_daemon_status *ds = perch__alloc(sizeof *ds);
        if (ds != NULL)
            perch_daemon_status_get(p->d, ds);
        AcquireSRWLockExclusive(&p->lock);
        p->timed_id = ds != NULL ? ds->recording_id : 0;
        p->timed_ms = r->duration_ms;
        ReleaseSRWLockExclusive(&p->lock);
        perch__free(ds);
        if (!CreateTimerQueueTimer(&p->stop_timer, NULL, timed_stop, p, (DWORD)r->duration_ms, 0,
                                   WT_EXECUTEONLYONCE)) {
            perch_daemon_record_stop(p->d);
            perch_proto_answer_fail(a, "the recording could not be timed, so it was stopped");
            return PERCH_ESYSTEM;
        }
    }
    perch_proto_record_rep rep = {base_name(file), file};
    return perch_proto_answer_set(a, &rep);
}

static int b_record(void *ctx, const perch_proto_peer *peer, const perch_proto_record_req *r,
                    perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    (void)peer;
    AcquireSRWLockExclusive(&p->requests);
    int err = record_locked(p, r, a);
    ReleaseSRWLockExclusive(&p->requests);
    return err;
}

static int b_stop(void *ctx, const perch_proto_peer *peer, const perch_proto_stop_req *r,
                  perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    perch_daemon_status *ds = perch__alloc(sizeof *ds);
    (void)peer;
    if (ds == NULL)
        return PERCH_ENOMEM;
    AcquireSRWLockExclusive(&p->requests);
    perch_daemon_status_get(p->d, ds);
    int err = 0;
    if (r->name && r->name[0] && strcmp(r->name, ds->recording_name) != 0 &&
        strcmp(r->name, base_name(ds->recording_file)) != 0) {
        perch_proto_answer_fail(a, "'%s' is not the recording in progress", r->name);
        err = PERCH_ENOENT; /* the recording and its timer go on */
    } else {
        cancel_timer(p);
        err = perch_daemon_record_stop(p->d);
        if (err == PERCH_ESTATE)
            perch_proto_answer_fail(a, "no recording is running");
        else if (err < 0) /* stopped, but its files had failed before */
            perch_proto_answer_fail(a,
                                    "the recording %s is stopped, but writing it had failed: "
                                    "%s; its files hold what was written before (see perchd's "
                                    "log)",
                                    ds->recording_name, perch_strerror(err));
    }
    if (err == 0) {
        perch_daemon_status_get(p->d, ds); /* its last figures */
        perch_proto_stop_rep rep = {ds->recording_name, ds->recording_bytes,
                                    ds->recording_elapsed_ms};
        err = perch_proto_answer_set(a, &rep);
    }
    ReleaseSRWLockExclusive(&p->requests);
    perch__free(ds);
    return not_yet(a, err, "stopping a recording");
}

/* A read-only client's turn to take a snapshot (READER_SNAPSHOT_GAP_MS): 0, marked running,
 * or PERCH_EBUSY with the sentence in a. */
static int reader_snapshot_turn(perch_pipe_daemon *p, perch_proto_answer *a)
{
    uint64_t now = GetTickCount64(), wait = 0;
    AcquireSRWLockExclusive(&p->lock);
    bool running = p->reader_snap_running;
    if (!running && p->reader_snap_end_ms != 0 &&
        now - p->reader_snap_end_ms < READER_SNAPSHOT_GAP_MS)
        wait = READER_SNAPSHOT_GAP_MS - (now - p->reader_snap_end_ms);
    if (!running && wait == 0)
        p->reader_snap_running = true;
    ReleaseSRWLockExclusive(&p->lock);
    if (running)
        perch_proto_answer_fail(a, "perchd is busy: another client that may only read is taking "
                                   "a snapshot; try again when it is done");
    else if (wait > 0)
        perch_proto_answer_fail(a,
                                "perchd is busy: clients that may only read take one snapshot "
                                "every %u s among them; try again in %llu ms",
                                READER_SNAPSHOT_GAP_MS / 1000, (unsigned long long)wait);
    return running || wait > 0 ? PERCH_EBUSY : 0;
}

static void reader_snapshot_done(perch_pipe_daemon *p)
{
    AcquireSRWLockExclusive(&p->lock);
    p->reader_snap_running = false;
    p->reader_snap_end_ms = GetTickCount64();
    ReleaseSRWLockExclusive(&p->lock);
}

static int b_snapshot(void *ctx, const perch_proto_peer *peer, const perch_proto_snapshot_req *r,
                      perch_proto_source *src, perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    char path[PERCH_CONFIG_PATH_MAX], why[PERCH_DAEMON_TEXT] = "";
    uint64_t s = (r->last_ms + 999) / 1000;
    bool reader = peer->role != PERCH_ROLE_ADMIN;
    if (reader && reader_snapshot_turn(p, a) < 0)
        return PERCH_EBUSY;
    int err = perch_daemon_snapshot(p->d, s > UINT32_MAX ? UINT32_MAX : (uint32_t)s, path,
                                    sizeof path, why, sizeof why);
    if (reader)
        reader_snapshot_done(p);
    if (err < 0 && why[0])
        perch_proto_answer_fail(a, "%s", why);
    else if (err == PERCH_ESTATE)
        perch_proto_answer_fail(a, "the flight recorder is off or holds no event yet");
    if (err == 0 && (err = perch_input_open_file(&src->in, path)) < 0)
        perch_proto_answer_fail(a, "the snapshot was written but cannot be read back: %s",
                                perch_strerror(err));
    if (err == 0)
        snprintf(src->name, sizeof src->name, "%s", base_name(path));
    return not_yet(a, err, "a snapshot");
}

static int b_open(void *ctx, const char *name, perch_proto_source *src, perch_proto_answer *a)
{
    perch_pipe_daemon *p = ctx;
    int err = perch_daemon_open_capture(p->d, name, &src->in);
    if (err == PERCH_EINVAL)
        perch_proto_answer_fail(a,
                                "'%s' is not a capture name: give a file name from 'perch "
                                "captures' (ending in .perch, without a directory; device "
                                "names such as NUL or COM1 are refused)",
                                name);
    else if (err == PERCH_ENOENT)
        perch_proto_answer_fail(a, "there is no capture called '%s'", name);
    if (err == 0)
        snprintf(src->name, sizeof src->name, "%s", name);
    return not_yet(a, err, "fetching captures");
}

static void b_log(void *ctx, int level, const char *line)
{
    perch_pipe_daemon *p = ctx;
    perch_log_budget_verdict verdict = PERCH_LOG_BUDGET_WRITE;
    uint64_t left_out = 0;
    if (level & PERCH_PROTO_LOG_UNTRUSTED) {
        AcquireSRWLockExclusive(&p->log_lock);
        verdict = perch__log_budget_take(&p->untrusted_lines, GetTickCount64(), &left_out);
        ReleaseSRWLockExclusive(&p->log_lock); /* never log under it: a line can wait */
    }
    level &= PERCH_PROTO_LOG_LEVEL;
    if (left_out > 0)
        perch_log(PERCH_LOG_WARNING,
                  "%llu log lines about pipe clients that are not administrators were left out "
                  "(more than %u a minute).",
                  (unsigned long long)left_out, UNTRUSTED_LINES_PER_MINUTE);
    if (verdict == PERCH_LOG_BUDGET_NOTICE)
        perch_log(PERCH_LOG_WARNING,
                  "Pipe clients that are not administrators caused %u log lines within a "
                  "minute: their further lines are counted, not logged, until the minute is "
                  "over.",
                  UNTRUSTED_LINES_PER_MINUTE);
    else if (verdict == PERCH_LOG_BUDGET_WRITE)
        perch_log(level == PERCH_PROTO_LOG_ERROR  ? PERCH_LOG_ERROR
                  : level == PERCH_PROTO_LOG_WARN ? PERCH_LOG_WARNING
                                                  : PERCH_LOG_INFO,
                  "%s.", line);
}

int perch_pipe_daemon_start(perch_daemon *d, perch_live_query *query, const char *name,
                            perch_pipe_daemon **out, char *why, size_t why_len)
{
    perch_pipe_server_opts o;
    perch_pipe_daemon *p = perch__calloc(1, sizeof *p);
    if (p == NULL)
        return PERCH_ENOMEM;
    p->d = d;
    InitializeSRWLock(&p->lock);
    InitializeSRWLock(&p->requests);
    InitializeSRWLock(&p->log_lock);
    perch__log_budget_init(&p->untrusted_lines, UNTRUSTED_LINES_PER_MINUTE, 60000);
    snprintf(p->server_name, sizeof p->server_name, "perchd %s", PERCH_VERSION);
    p->backend = (perch_proto_backend){p,          p->server_name, GetCurrentProcessId(),
                                       b_status,   b_captures,     b_record,
                                       b_stop,     b_snapshot,     b_open,
                                       b_counters, b_log,          query};
    perch_pipe_server_opts_default(&o);
    o.name = name;
    o.backend = &p->backend;
    o.idle_ms = PIPE_IDLE_MS;
    int err = perch_pipe_server_start(&o, &p->server, why, why_len);
    if (err < 0) {
        perch__free(p);
        return err;
    }
    *out = p;
    return 0;
}

void perch_pipe_daemon_stop(perch_pipe_daemon *p)
{
    if (p == NULL)
        return;
    perch_pipe_server_stop(p->server);
    cancel_timer(p);
    perch__free(p);
}

void perch_pipe_daemon_stats(perch_pipe_daemon *p, perch_pipe_server_stats *st)
{
    perch_pipe_server_get_stats(p->server, st);
}
