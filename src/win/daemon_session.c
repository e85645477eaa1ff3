/*
 * The daemon's live path (src/win/daemon.h): the event queue and the live engine live as long
 * as the daemon; kernel sessions (src/win/etw.h: session, consumer and their supervisor) come
 * and go. A start that fails (elevation missing, the NT Kernel Logger busy, this ETW unable)
 * leaves the daemon running, degraded, and is retried with backoff; a session stopped from
 * outside is restarted by the ETW supervisor, and its gap goes to the engine's ledger. Every
 * second the supervisor thread polls the session and hands its losses to the engine.
 *
 * Locks: etw_lock guards the session pointer (the supervisor polls, stop destroys, the model
 * thread reads the trace info once); d->lock guards what the status shows; ctl (held by the
 * caller of start and stop) serializes recordings against stop.
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "live/query.h"
#include "log.h"
#include "pipe_daemon.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "perch/recorder.h"

#define RETRY_FIRST_MS 1000u
#define RETRY_MAX_MS   60000u
#define QUIET_MS       5000u /* a session with no event for this long gets a sentence */
#define SEAL_WAIT_MS   2000u /* a snapshot waits this long at most for the model thread */

static bool running_under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

/* perch_config -> the session's configuration. */
static void etw_config_of(const perch_config *c, perch_etw_config *e)
{
    static const uint32_t groups[][2] = {{PERCH_CFG_GROUP_PROCESS, PERCH_ETW_GROUP_PROCESS},
                                         {PERCH_CFG_GROUP_THREAD, PERCH_ETW_GROUP_THREAD},
                                         {PERCH_CFG_GROUP_IMAGE, PERCH_ETW_GROUP_IMAGE_LOAD},
                                         {PERCH_CFG_GROUP_CSWITCH, PERCH_ETW_GROUP_CSWITCH},
                                         {PERCH_CFG_GROUP_DISPATCHER, PERCH_ETW_GROUP_DISPATCHER},
                                         {PERCH_CFG_GROUP_PROFILE, PERCH_ETW_GROUP_PROFILE}};
    static const uint32_t events[][2] = {
        {PERCH_CFG_STACK_PROFILE, PERCH_ETW_EVENT_SAMPLED_PROFILE},
        {PERCH_CFG_STACK_PMC, PERCH_ETW_EVENT_PMC_INTERRUPT},
        {PERCH_CFG_STACK_CSWITCH, PERCH_ETW_EVENT_CSWITCH},
        {PERCH_CFG_STACK_READYTHREAD, PERCH_ETW_EVENT_READY_THREAD}};
    perch_etw_config_defaults(e);
    e->groups = e->stacks = e->lbr_events = 0;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        e->groups |= c->event_groups & groups[i][0] ? groups[i][1] : 0;
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        e->stacks |= c->stack_events & events[i][0] ? events[i][1] : 0;
        e->lbr_events |= c->lbr_events & events[i][0] ? events[i][1] : 0;
    }
    e->sample_interval = c->sample_interval_us * 10u; /* 100 ns units */
    char names[PERCH_CONFIG_MAX_NAMES][PERCH_CONFIG_NAME_LEN];
    e->pmc_source_count =
        (uint32_t)perch_config_split_names(c->pmc_sources, names, PERCH_CONFIG_MAX_NAMES);
    for (uint32_t i = 0; i < e->pmc_source_count; i++)
        snprintf(e->pmc_sources[i], sizeof e->pmc_sources[i], "%s", names[i]);
    if (e->pmc_source_count > 0)
        e->groups |= PERCH_ETW_GROUP_PMC_PROFILE;
    else
        e->stacks &= ~PERCH_ETW_EVENT_PMC_INTERRUPT;
    e->pmc_interval = c->pmc_interval;
    e->cswitch_counter_count =
        (uint32_t)perch_config_split_names(c->cswitch_counters, names, PERCH_CONFIG_MAX_NAMES);
    for (uint32_t i = 0; i < e->cswitch_counter_count; i++)
        snprintf(e->cswitch_counters[i], sizeof e->cswitch_counters[i], "%s", names[i]);
    e->lbr = c->lbr != 0;
    e->lbr_filter = c->lbr_filters;
    e->buffer_kb = c->buffer_size_kb;
    e->min_buffers = c->buffer_count;
    e->no_kernel_logger = c->session == PERCH_SESSION_PRIVATE;
}

/* The engine's lazy trace info (model thread, once, after the first record). */
static void trace_info_now(void *ctx, perch_trace_info *info)
{
    perch_daemon *d = ctx;
    struct perch_daemon_live *v = &d->live;
    AcquireSRWLockShared(&v->etw_lock);
    const perch_etw_consumer *c = v->etw ? perch_etw_live_consumer(v->etw) : NULL;
    if (c != NULL)
        perch_etw_consumer_trace_info(c, info);
    snprintf(v->info_source, sizeof v->info_source, "%s",
             c != NULL && info->source != NULL ? info->source : "live:no session");
    /* a restart rewrites session_config (take_report, etw_lock exclusive) while the engine
     * may still be copying what this returns: hand it a copy of its own */
    snprintf(v->info_config, sizeof v->info_config, "%s", v->session_config);
    ReleaseSRWLockShared(&v->etw_lock);
    if (c == NULL) { /* no session ever delivered: describe this machine's clock */
        LARGE_INTEGER f, now;
        SYSTEM_INFO si;
        QueryPerformanceFrequency(&f);
        QueryPerformanceCounter(&now);
        GetNativeSystemInfo(&si);
        info->perf_freq = (uint64_t)f.QuadPart;
        info->start_raw = (uint64_t)now.QuadPart;
        GetSystemTimeAsFileTime((FILETIME *)&info->start_filetime);
        info->clock_type = 1;
        info->pointer_size = sizeof(void *);
        info->cpu_count = si.dwNumberOfProcessors;
    }
    info->source = v->info_source;
    info->session_config = v->info_config[0] ? v->info_config : NULL;
    AcquireSRWLockExclusive(&d->lock);
    v->info_freq = info->perf_freq; /* the flight recorder's span in the status */
    ReleaseSRWLockExclusive(&d->lock);
}

/* Turns the start report into the status's features; logs each refusal. */
static void take_report(perch_daemon *d, const perch_etw_start_report *rep, bool log)
{
    AcquireSRWLockExclusive(&d->lock);
    d->live.rep = *rep;
    d->feature_count = 0;
    for (unsigned f = 0; f < PERCH_ETW_F_COUNT && f < PERCH_DAEMON_MAX_FEATURES; f++) {
        const perch_etw_feature_status *fs = &rep->features[f];
        perch_daemon_feature *out = &d->features[d->feature_count++];
        snprintf(out->name, sizeof out->name, "%s", perch_etw_feature_name((perch_etw_feature)f));
        out->enabled = fs->state == PERCH_ETW_ON;
        out->requested = fs->state != PERCH_ETW_OFF;
        snprintf(out->detail, sizeof out->detail, "%s",
                 fs->state == PERCH_ETW_OFF ? "not asked for" : fs->reason);
    }
    ReleaseSRWLockExclusive(&d->lock);
    perch_etw_report_text(rep, d->live.session_config, sizeof d->live.session_config);
    for (unsigned f = 0; log && f < PERCH_ETW_F_COUNT; f++)
        if (rep->features[f].state == PERCH_ETW_REFUSED)
            perch_log(PERCH_LOG_WARNING, "Degraded: the session refused %s: %s.",
                      perch_etw_feature_name((perch_etw_feature)f), rep->features[f].reason);
    if (log && rep->note[0])
        perch_log(PERCH_LOG_INFO, "Session: %s.", rep->note);
}

/* One attempt to start the session (caller holds etw_lock exclusively). */
static void try_start(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_etw_config cfg;
    perch_etw_start_report rep;
    etw_config_of(&d->o.config, &cfg);
    int err = perch_etw_live_start(&cfg, v->queue, &v->etw, &rep);
    take_report(d, &rep, err == 0 || v->backoff_ms == 0);
    AcquireSRWLockExclusive(&d->lock);
    v->start_error = err;
    v->session_up_ms = err == 0 ? GetTickCount64() : 0;
    ReleaseSRWLockExclusive(&d->lock);
    if (err == 0) {
        perch_log(PERCH_LOG_INFO, "The kernel session \"%s\" is running (%s).", rep.name,
                  rep.kind == PERCH_ETW_SYSTEM_LOGGER ? "private system logger"
                                                      : "NT Kernel Logger");
        v->backoff_ms = 0;
        return;
    }
    bool first = v->backoff_ms == 0;
    v->backoff_ms = first ? RETRY_FIRST_MS : v->backoff_ms * 2;
    if (v->backoff_ms > RETRY_MAX_MS)
        v->backoff_ms = RETRY_MAX_MS;
    v->retry_at_ms = GetTickCount64() + v->backoff_ms;
    if (first)
        perch_log(PERCH_LOG_WARNING,
                  "Degraded: the kernel session could not start (%s); perchd tries again in "
                  "%u s, then less and less often.",
                  rep.why[0] ? rep.why : perch_strerror(err), v->backoff_ms / 1000);
    else
        perch_log(PERCH_LOG_WARNING,
                  "The kernel session still cannot start (%s); next attempt in %u s.",
                  perch_strerror(err), v->backoff_ms / 1000);
}

/* The engine's idle call: publish what the live window staged. */
static void flush_query(void *sink_ctx)
{
    perch_live_query_flush(sink_ctx);
}

static void wake_engine(void *queue)
{
    perch_event_queue_wake(queue);
}

/* The flight recorder (FlightRecorderSeconds 0: off), a sink of the engine. */
static int create_recorder(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_recorder_opts ro;
    perch_sink sink;
    if (d->o.config.recorder_seconds == 0)
        return 0;
    perch_recorder_opts_default(&ro);
    ro.window_ms = d->o.config.recorder_seconds * 1000u;
    ro.max_bytes = (uint64_t)d->o.config.recorder_mb << 20;
    ro.seal_wait_ms = SEAL_WAIT_MS;                   /* a snapshot holds the open segment too */
    ro.wake = wake_engine;                            /* ... sealed now, not at the next tick */
    ro.wake_ctx = v->queue;
    perch__daemon_symbols_names(d, false, &ro.names); /* snapshots on the pipe's threads */
    int err = perch_recorder_create(&ro, &v->recorder);
    if (err == 0) {
        perch_recorder_sink(v->recorder, &sink);
        err = perch_live_add_sink(v->engine, "recorder", &sink, perch_recorder_idle);
    }
    return err;
}

static int create_engine(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_live_options o;
    int err = perch_event_queue_create((size_t)d->o.config.queue_mb << 20, &v->queue);
    if (err < 0)
        return err;
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    o.queue = v->queue;
    o.attachable = true; /* recordings start and stop while it runs */
    o.trace_info = trace_info_now;
    o.info_ctx = d;
    err = perch_live_create(&o, &v->engine);
    err = err ? err : perch_live_query_create(NULL, &v->query);
    if (err == 0) {
        perch_sink sink;
        perch_live_query_sink(v->query, &sink);
        err = perch_live_add_sink(v->engine, "query", &sink, flush_query);
    }
    if (err == 0)
        perch__daemon_symbols_add(d); /* names are optional: it logs and goes on */
    return err ? err : create_recorder(d);
}

void perch__daemon_pipe_start(perch_daemon *d)
{
    char why[400] = "";
    const char *name = d->o.pipe_name ? d->o.pipe_name : getenv("PERCH_PIPE");
    if (d->o.pipe_name != NULL && d->o.pipe_name[0] == '\0')
        return;
    name = name != NULL && name[0] != '\0' ? name : PERCH_PIPE_NAME; /* PERCH_PIPE: tests */
    int err = perch_pipe_daemon_start(d, d->live.query, name, &d->pipe, why, sizeof why);
    if (err == 0) {
        perch_log(PERCH_LOG_INFO, "Serving %s.", name);
        return;
    }
    /* a squatter on the name (or any failure): perchd runs on without clients, and says so
     * in its status beside whatever else its summary says */
    d->pipe = NULL;
    AcquireSRWLockExclusive(&d->lock);
    snprintf(d->pipe_problem, sizeof d->pipe_problem, "perch cannot reach this perchd: %s.",
             why[0] ? why : perch_strerror(err));
    d->degraded = true;
    ReleaseSRWLockExclusive(&d->lock);
    perch_log(PERCH_LOG_ERROR, "Degraded: %s", d->pipe_problem);
}

void perch__daemon_pipe_stop(perch_daemon *d)
{
    perch_pipe_daemon_stop(d->pipe); /* before the engine goes: it reads the live window */
    d->pipe = NULL;
    AcquireSRWLockExclusive(&d->lock);
    d->pipe_problem[0] = '\0'; /* the summary of the stopped daemon keeps it */
    ReleaseSRWLockExclusive(&d->lock);
}

void perch__daemon_session_start(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    InitializeSRWLock(&v->etw_lock);
    int err = create_engine(d);
    if (err == 0 && d->o.config.record_on_start)
        perch__daemon_record_start_locked(d, &d->o.config, "", NULL, 0, NULL, 0);
    err = err ? err : perch_live_start(v->engine, NULL);
    if (err < 0) {
        perch_log(PERCH_LOG_ERROR, "The live engine could not start: %s.", perch_strerror(err));
        AcquireSRWLockExclusive(&d->lock);
        d->failed = err;
        ReleaseSRWLockExclusive(&d->lock);
        return;
    }
    if (d->priv.why[0])
        return; /* degraded for good: no session without the rights */
    perch__daemon_progress(d, 10000);
    AcquireSRWLockExclusive(&v->etw_lock);
    try_start(d);
    ReleaseSRWLockExclusive(&v->etw_lock);
}

/* Hands the session's running totals to the engine's ledger. */
static void hand_losses(perch_daemon *d, const perch_etw_poll *p)
{
    perch_live *e = d->live.engine;
    perch_live_set_loss(e, "session.events_lost", p->losses.events_lost);
    perch_live_set_loss(e, "session.realtime_buffers_lost", p->losses.realtime_buffers_lost);
    perch_live_set_loss(e, "session.log_buffers_lost", p->losses.log_buffers_lost);
    perch_live_set_loss(e, "live.bad_record", p->consumer.bad_records);
    perch_live_set_loss(e, "live.pmc_malformed", p->consumer.pmc_malformed);
    perch__daemon_symbols_losses(d);
}

void perch__daemon_session_poll(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_etw_poll p;
    if (v->engine == NULL || d->priv.why[0])
        return;
    AcquireSRWLockExclusive(&v->etw_lock);
    if (v->etw == NULL) {
        if (GetTickCount64() >= v->retry_at_ms && perch__daemon_state(d) == PERCH_DAEMON_RUNNING)
            try_start(d);
        ReleaseSRWLockExclusive(&v->etw_lock);
        return;
    }
    memset(&p, 0, sizeof p);
    int err = perch_etw_live_poll(v->etw, perch_monotonic_ns(), &p);
    if (p.restarted)
        take_report(d, perch_etw_session_report(perch_etw_live_session(v->etw)), true);
    ReleaseSRWLockExclusive(&v->etw_lock);
    if (err < 0)
        perch_log(PERCH_LOG_ERROR, "The session supervisor failed: %s.", perch_strerror(err));
    if (p.message[0])
        perch_log(p.went_down ? PERCH_LOG_WARNING : PERCH_LOG_INFO, "Session: %s.", p.message);
    if (p.restarted)
        perch_live_note_gap(v->engine, p.gap_ns / 1000000u);
    hand_losses(d, &p);
    AcquireSRWLockExclusive(&d->lock);
    v->poll = p;
    if (p.restarted)
        v->session_up_ms = GetTickCount64();
    ReleaseSRWLockExclusive(&d->lock);
}

int perch__daemon_session_stop(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_live_stats st;
    if (v->engine == NULL)
        return 0;
    AcquireSRWLockExclusive(&v->etw_lock);
    if (v->etw != NULL) {
        perch_etw_poll p;
        memset(&p, 0, sizeof p);
        if (perch_etw_live_poll(v->etw, perch_monotonic_ns(), &p) == 0)
            hand_losses(d, &p); /* the last losses before the session goes */
        /* the session first: never left behind */
        v->queue_kept = perch_etw_live_destroy(v->etw);
        v->etw = NULL;
        perch_log(PERCH_LOG_INFO, "The kernel session is stopped.");
    }
    ReleaseSRWLockExclusive(&v->etw_lock);
    perch_event_queue_close(v->queue, 0);
    int err = perch__daemon_drain(d); /* bounded: daemon_drain.c */
    if (err == PERCH_ETIMEDOUT) {
        perch__daemon_leave_running(d);
        return err;
    }
    perch_live_get_stats(v->engine, &st);
    perch__daemon_record_close(d);
    char dropped[96] = "";
    if (st.stop_dropped > 0)
        snprintf(dropped, sizeof dropped, "; %llu still queued when StopDrainSeconds ran out",
                 (unsigned long long)st.stop_dropped);
    perch_log(st.error < 0 ? PERCH_LOG_ERROR : PERCH_LOG_INFO,
              "The live engine stopped after %llu events (%llu dropped because the queue was "
              "full, %llu lost by the session%s)%s%s.",
              (unsigned long long)st.events, (unsigned long long)st.queue_dropped,
              (unsigned long long)st.losses, dropped, st.error < 0 ? "; the model failed: " : "",
              st.error < 0 ? perch_strerror(st.error) : "");
    perch_live *engine = v->engine;
    AcquireSRWLockExclusive(&d->lock);
    d->last_live = st;
    v->engine = NULL;
    struct perch_recorder *recorder = v->recorder;
    v->recorder = NULL;
    ReleaseSRWLockExclusive(&d->lock);
    perch_recorder_destroy(recorder); /* no snapshot runs: they hold ctl, as the caller does */
    perch_live_destroy(engine);
    perch_live_query_destroy(v->query); /* the engine, its only writer, is gone */
    v->query = NULL;
    perch__daemon_symbols_destroy(d);
    if (v->queue_kept) /* a consumer thread that never returned may still push into it */
        perch_log(PERCH_LOG_WARNING, "The kernel session's consumer never returned from "
                                     "ProcessTrace; its queue is left allocated.");
    else
        perch_event_queue_destroy(v->queue);
    v->queue = NULL;
    return err < 0 ? err : st.error;
}

/* ---- status ------------------------------------------------------------------------------- */

/* The sinks the engine switched off after an error, as "recording (no space left on
 * device)", comma-separated; "" when none. Under d->lock: the engine is freed only after
 * session_stop has cleared v->engine under it exclusively. */
static void failed_sinks(const perch_daemon *d, char *out, size_t size)
{
    char name[PERCH_LIVE_SINK_NAME_MAX];
    int error = 0;
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0;
         d->live.engine != NULL && perch_live_sink_state(d->live.engine, i, name, &error) == 0;
         i++) {
        if (name[0] == '\0' || error == 0)
            continue; /* a detached slot, or a healthy sink */
        int n = snprintf(out + used, size - used, "%s%s (%s)", used ? ", " : "", name,
                         perch_strerror(error));
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

static void summarize(perch_daemon *d, perch_daemon_status *st)
{
    const struct perch_daemon_live *v = &d->live;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < st->feature_count; i++)
        refused += st->features[i].requested && !st->features[i].enabled;
    uint64_t up = v->session_up_ms ? GetTickCount64() - v->session_up_ms : 0;
    if (d->priv.why[0] || st->state != PERCH_DAEMON_RUNNING) {
        return; /* the summary set at start (or at stop) stands */
    } else if (st->live.error < 0) {
        snprintf(st->summary, sizeof st->summary,
                 "The model stopped with an error (%s), so perchd stops and lets the service "
                 "manager restart it.",
                 perch_strerror(st->live.error));
    } else if (v->start_error < 0) {
        snprintf(st->summary, sizeof st->summary,
                 "No kernel data is recorded: the kernel session could not start (%s); perchd "
                 "tries again.",
                 v->rep.why[0] ? v->rep.why : perch_strerror(v->start_error));
    } else if (v->poll.state == PERCH_ETW_LIVE_DOWN && v->poll.no_restart) {
        snprintf(st->summary, sizeof st->summary,
                 "The kernel session ended and its consumer never returned from ProcessTrace, "
                 "so no new session starts: restart perchd.");
    } else if (v->poll.state == PERCH_ETW_LIVE_DOWN) {
        snprintf(st->summary, sizeof st->summary,
                 "The kernel session was stopped from outside; perchd restarts it (next attempt "
                 "in %u s).",
                 v->poll.next_retry_ms / 1000);
    } else if (st->live.events == 0 && up >= QUIET_MS) {
        snprintf(st->summary, sizeof st->summary,
                 "The kernel session \"%s\" started, but no events have arrived in %llu s%s.",
                 st->session, (unsigned long long)(up / 1000),
                 running_under_wine() ? " (this is Wine, whose ETW delivers no kernel events)"
                                      : "");
    } else {
        char failed[256];
        failed_sinks(d, failed, sizeof failed);
        snprintf(st->summary, sizeof st->summary,
                 "Recording kernel events from the %s session \"%s\"%s%s%s.", st->session_kind,
                 st->session, refused ? ", some features refused (see below)" : "",
                 failed[0] ? "; switched off after an error, the rest going on: " : "", failed);
        st->degraded = st->degraded || refused > 0 || failed[0] != '\0';
        return;
    }
    st->degraded = true;
}

void perch__daemon_session_status(perch_daemon *d, perch_daemon_status *st)
{
    const struct perch_daemon_live *v = &d->live;
    if (v->engine != NULL)
        perch_live_get_stats(v->engine, &st->live);
    else
        st->live = d->last_live;
    if (v->start_error == 0 && v->rep.kind != PERCH_ETW_NONE) {
        snprintf(st->session, sizeof st->session, "%s", v->rep.name);
        snprintf(st->session_kind, sizeof st->session_kind, "%s",
                 v->rep.kind == PERCH_ETW_SYSTEM_LOGGER ? "private system logger"
                                                        : "NT Kernel Logger");
    }
    st->session_restarts = v->poll.restarts;
    st->session_events_lost = v->poll.losses.events_lost;
    st->session_buffers_lost = v->poll.losses.log_buffers_lost;
    st->session_rt_buffers_lost = v->poll.losses.realtime_buffers_lost;
    if (v->recorder != NULL) {
        perch_recorder_stats rs;
        perch_recorder_get_stats(v->recorder, &rs);
        st->recorder_on = true;
        st->recorder_seconds = v->info_freq && rs.newest_ts > rs.oldest_ts
                                   ? (double)(rs.newest_ts - rs.oldest_ts) / (double)v->info_freq
                                   : 0.0;
        st->recorder_bytes = rs.bytes;
        st->recorder_cap_bytes = (uint64_t)d->o.config.recorder_mb << 20;
        st->recorder_dropped = rs.dropped_by_cap;
    }
    summarize(d, st);
}
