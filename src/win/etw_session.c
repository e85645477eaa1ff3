/*
 * The kernel session (src/win/etw.h): query before start, the private system-logger session
 * first, the NT Kernel Logger only where the private one is refused, never a session Perch
 * does not own, and a stale Perch session (recognised by its name) stopped and started again.
 *
 * Start, in order (docs/etw-session.md, "Starting"):
 *   1. ControlTrace QUERY by Perch's session name: a hit is a stale Perch session left by a
 *      crashed run; it is stopped.
 *   2. StartTraceW(name, EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_SYSTEM_LOGGER_MODE, Perch's
 *      session GUID, QPC clock, no EnableFlags), then every feature and last the kernel groups
 *      through TraceSetInformation(TraceSystemTraceEnableFlagsInfo) (etw_features.c).
 *   3. Only when step 2 is refused (any error but access denied, or the groups cannot be
 *      enabled): ControlTrace QUERY "NT Kernel Logger". Running means someone else holds it:
 *      report what ETW says about it and fail with PERCH_EBUSY. Otherwise StartTraceW with
 *      SystemTraceControlGuid and the classic groups in EnableFlags, then the features.
 */
#include <stdio.h>
#include <string.h>

#include "etw_internal.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"

/* Perch's private session GUID (a system logger must not use SystemTraceControlGuid). */
static const GUID perch_session_guid = {
    0x7a3f5e21, 0x4c1d, 0x4e8b, {0x9f, 0x2a, 0x50, 0x72, 0x65, 0x68, 0x63, 0x68}};

static void feature_reset(perch_etw_start_report *rep)
{
    memset(rep->features, 0, sizeof rep->features);
}

static void fill_props(const perch_etw_config *c, perch_etw_kind kind, const WCHAR *name,
                       perch_etw_props *b)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    perch__etw_props_init(b);
    uint32_t min = c->min_buffers ? c->min_buffers : 2u * si.dwNumberOfProcessors;
    if (min < 16)
        min = 16;
    b->p.Wnode.ClientContext = 1; /* QPC timestamps */
    b->p.Wnode.Guid =
        kind == PERCH_ETW_KERNEL_LOGGER ? perch_etw_system_trace_control_guid : perch_session_guid;
    b->p.BufferSize = c->buffer_kb ? c->buffer_kb : 64;
    b->p.MinimumBuffers = min;
    b->p.MaximumBuffers = c->max_buffers ? c->max_buffers : min + 64;
    b->p.FlushTimer = c->flush_seconds ? c->flush_seconds : 1;
    b->p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE;
    if (kind == PERCH_ETW_SYSTEM_LOGGER) {
        b->p.LogFileMode |= EVENT_TRACE_SYSTEM_LOGGER_MODE;
    } else {
        perch_perfinfo_groupmask m;
        perch__etw_group_mask(c->groups, &m);
        b->p.EnableFlags = m.Masks[0];
    }
    b->p.LogFileNameOffset = 0; /* real time only: no log file */
    wcsncpy(b->logger_name, name, PERCH_ETW_NAME_CHARS - 1);
}

/* StartTraceW; on success s->handle and s->name describe the running session. */
static uint32_t start_one(perch_etw_session *s, perch_etw_kind kind, const WCHAR *name)
{
    perch_etw_props *b = perch__alloc(sizeof *b);
    TRACEHANDLE h = 0;
    ULONG rc;
    if (b == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    fill_props(&s->cfg, kind, name, b);
    rc = StartTraceW(&h, name, &b->p);
    perch__free(b);
    if (rc == ERROR_SUCCESS) {
        s->handle = h;
        s->kind = kind;
        s->running = true;
        wcsncpy(s->name, name, PERCH_ETW_NAME_CHARS - 1);
        s->name[PERCH_ETW_NAME_CHARS - 1] = 0;
    }
    return rc;
}

/* Stops the session just started because it cannot be used. */
static void undo_start(perch_etw_session *s)
{
    uint32_t win32;
    perch__etw_restore_interval(s);
    perch__etw_stop(s->handle, s->name, &win32);
    s->running = false;
    s->handle = 0;
    s->kind = PERCH_ETW_NONE;
}

/* Step 1: a session of Perch's own name that is running now was left by an earlier run. */
static int clear_stale(perch_etw_session *s, const WCHAR *name, const char *name8)
{
    perch_etw_props *b = perch__alloc(sizeof *b);
    uint32_t win32 = 0;
    int err;
    if (b == NULL)
        return PERCH_ENOMEM;
    err = perch__etw_query(0, name, b, &win32);
    if (err == 0) {
        unsigned long long id = (unsigned long long)b->p.Wnode.HistoricalContext;
        err = perch__etw_stop(0, name, &win32);
        s->rep.stale_restarted = err == 0;
        snprintf(s->rep.note, sizeof s->rep.note,
                 err == 0 ? "a stale Perch session \"%s\" (logger %llu, left by an earlier run "
                            "that did not stop it) was stopped and started again"
                          : "a stale Perch session \"%s\" (logger %llu) could not be stopped",
                 name8, id);
    } else if (err == PERCH_ENOENT) {
        err = 0;
    }
    perch__free(b);
    return err == PERCH_ENOENT ? 0 : err;
}

/* Describes who holds the NT Kernel Logger, from what ControlTrace QUERY tells. */
static void describe_holder(const perch_etw_props *b, char *out, size_t n)
{
    char file[PERCH_ETW_NAME_CHARS * 3];
    perch__etw_to_utf8(b->p.LogFileNameOffset ? b->log_file_name : L"", file, sizeof file);
    snprintf(out, n,
             "the NT Kernel Logger is already running for another program (logger %llu, %s%s%s%s, "
             "%lu buffers of %lu KiB); Perch never stops a session it does not own",
             (unsigned long long)b->p.Wnode.HistoricalContext,
             (b->p.LogFileMode & EVENT_TRACE_REAL_TIME_MODE) ? "real time"
                                                             : "no real-time consumer",
             file[0] ? ", log file \"" : "", file, file[0] ? "\"" : "",
             (unsigned long)b->p.NumberOfBuffers, (unsigned long)b->p.BufferSize);
}

/* Records "<call> failed: ..." as the reason start failed; returns the translated error. */
static int fail_call(perch_etw_session *s, const char *call, uint32_t win32)
{
    perch__etw_say_failed(s->rep.why, sizeof s->rep.why, call, win32);
    return perch_win_error(win32);
}

/* PERCH_EBUSY with a description of the holder when the NT Kernel Logger runs. */
static int kernel_logger_busy(perch_etw_session *s)
{
    perch_etw_props *b = perch__alloc(sizeof *b);
    uint32_t win32 = 0;
    int err;
    if (b == NULL)
        return PERCH_ENOMEM;
    err = perch__etw_query(0, KERNEL_LOGGER_NAMEW, b, &win32);
    if (err == 0)
        describe_holder(b, s->rep.why, sizeof s->rep.why);
    perch__free(b);
    return err == 0 ? PERCH_EBUSY : 0;
}

/* Step 3: the NT Kernel Logger. */
static int start_kernel_logger(perch_etw_session *s)
{
    int err = kernel_logger_busy(s);
    uint32_t win32;
    if (err != 0)
        return err;
    win32 = start_one(s, PERCH_ETW_KERNEL_LOGGER, KERNEL_LOGGER_NAMEW);
    if (win32 == ERROR_ALREADY_EXISTS && (err = kernel_logger_busy(s)) != 0)
        return err; /* started by someone else since the query */
    if (win32 != ERROR_SUCCESS)
        return fail_call(s, "StartTraceW(\"NT Kernel Logger\")", win32);
    err = perch__etw_enable_features(s, true);
    if (err < 0) {
        undo_start(s);
        snprintf(s->rep.why, sizeof s->rep.why,
                 "the NT Kernel Logger started but its kernel groups could not be enabled: %s",
                 s->rep.features[PERCH_ETW_F_GROUPS].reason);
    }
    return err;
}

static void note_fallback(perch_etw_session *s, const char *reason)
{
    size_t len = strlen(s->rep.note);
    s->rep.fell_back = true;
    snprintf(s->rep.note + len, sizeof s->rep.note - len, "%sthe private session was refused (%s)",
             len ? "; " : "", reason);
}

/* Step 2, then step 3 if needed. */
static int start_private_or_fallback(perch_etw_session *s, const WCHAR *name, const char *name8)
{
    char reason[256];
    uint32_t win32 = start_one(s, PERCH_ETW_SYSTEM_LOGGER, name);
    if (win32 == ERROR_ALREADY_EXISTS && clear_stale(s, name, name8) == 0)
        win32 = start_one(s, PERCH_ETW_SYSTEM_LOGGER, name);
    if (win32 == ERROR_ACCESS_DENIED || win32 == ERROR_NOT_ENOUGH_MEMORY)
        return fail_call(s, "StartTraceW", win32);
    if (win32 == ERROR_SUCCESS) {
        if (perch__etw_enable_features(s, false) == 0)
            return 0;
        snprintf(reason, sizeof reason, "its kernel groups could not be enabled: %s",
                 s->rep.features[PERCH_ETW_F_GROUPS].reason);
        undo_start(s);
    } else {
        perch__etw_say_failed(reason, sizeof reason, "StartTraceW", win32);
    }
    if (s->cfg.no_kernel_logger) {
        snprintf(s->rep.why, sizeof s->rep.why,
                 "the private session was refused (%s) and the NT Kernel Logger fallback is off",
                 reason);
        return win32 != ERROR_SUCCESS ? perch_win_error(win32) : PERCH_ENOTSUP;
    }
    note_fallback(s, reason);
    feature_reset(&s->rep);
    return start_kernel_logger(s);
}

static void fill_report_name(perch_etw_session *s)
{
    s->rep.kind = s->running ? s->kind : PERCH_ETW_NONE;
    if (s->running)
        perch__etw_to_utf8(s->name, s->rep.name, sizeof s->rep.name);
}

/* One full start attempt on an already configured session object. */
static int start_session(perch_etw_session *s)
{
    WCHAR name[PERCH_ETW_NAME_CHARS];
    const char *name8 = s->cfg.session_name[0] ? s->cfg.session_name : PERCH_ETW_SESSION_NAME;
    uint32_t max_pmc = s->rep.max_pmc_counters;
    int err;
    memset(&s->rep, 0, sizeof s->rep);
    s->rep.max_pmc_counters = max_pmc;
    if (perch__etw_to_wide(name8, name, PERCH_ETW_NAME_CHARS) < 0) {
        snprintf(s->rep.why, sizeof s->rep.why, "the session name is not valid UTF-8");
        return PERCH_EINVAL;
    }
    err = clear_stale(s, name, name8);
    if (err == 0)
        err = start_private_or_fallback(s, name, name8);
    else
        snprintf(s->rep.why, sizeof s->rep.why, "%s", s->rep.note);
    fill_report_name(s);
    return err;
}

int perch_etw_session_start(const perch_etw_config *cfg, perch_etw_session **out,
                            perch_etw_start_report *rep)
{
    perch_etw_config defaults;
    perch_etw_session *s;
    char why[sizeof rep->why];
    int err;
    if (cfg == NULL) {
        perch_etw_config_defaults(&defaults);
        cfg = &defaults;
    }
    if (rep != NULL)
        memset(rep, 0, sizeof *rep);
    if (out == NULL)
        return PERCH_EINVAL;
    err = perch_etw_config_check(cfg, why, sizeof why);
    if (err < 0) {
        if (rep != NULL)
            snprintf(rep->why, sizeof rep->why, "%s", why);
        return err;
    }
    if ((s = perch__calloc(1, sizeof *s)) == NULL)
        return PERCH_ENOMEM;
    s->cfg = *cfg;
    s->cfg.sz = sizeof s->cfg;
    err = start_session(s);
    if (rep != NULL)
        *rep = s->rep;
    if (err < 0) {
        perch__free(s);
        return err;
    }
    *out = s;
    return 0;
}

const perch_etw_start_report *perch_etw_session_report(const perch_etw_session *s)
{
    return &s->rep;
}

const char *perch_etw_session_name(const perch_etw_session *s)
{
    return s->rep.name;
}

perch_etw_kind perch_etw_session_kind(const perch_etw_session *s)
{
    return s->running ? s->kind : PERCH_ETW_NONE;
}

const perch_etw_config *perch_etw_session_config(const perch_etw_session *s)
{
    return &s->cfg;
}

int perch_etw_session_query(perch_etw_session *s, perch_etw_losses *out)
{
    perch_etw_props *b;
    uint32_t win32;
    int err;
    if (s == NULL || out == NULL)
        return PERCH_EINVAL;
    if (!s->running)
        return PERCH_ENOENT;
    if ((b = perch__alloc(sizeof *b)) == NULL)
        return PERCH_ENOMEM;
    err = perch__etw_query(s->handle, s->name, b, &win32);
    if (err == 0) {
        out->events_lost = b->p.EventsLost;
        out->realtime_buffers_lost = b->p.RealTimeBuffersLost;
        out->log_buffers_lost = b->p.LogBuffersLost;
        out->buffers = b->p.NumberOfBuffers;
        out->free_buffers = b->p.FreeBuffers;
    } else if (err == PERCH_ENOENT || win32 == ERROR_INVALID_HANDLE) {
        s->running = false; /* gone: never stop whatever may later take its place */
        err = PERCH_ENOENT;
    }
    perch__free(b);
    return err;
}

int perch_etw_session_stop(perch_etw_session *s)
{
    uint32_t win32;
    int err;
    if (s == NULL)
        return PERCH_EINVAL;
    if (!s->running)
        return PERCH_ENOENT;
    perch__etw_restore_interval(s);
    err = perch__etw_stop(s->handle, NULL, &win32);
    if (err == PERCH_EINVAL && win32 == ERROR_INVALID_HANDLE)
        err = PERCH_ENOENT;
    s->running = false;
    return err;
}

int perch_etw_session_restart(perch_etw_session *s)
{
    if (s == NULL)
        return PERCH_EINVAL;
    if (s->running)
        perch_etw_session_stop(s);
    return start_session(s);
}

void perch_etw_session_destroy(perch_etw_session *s)
{
    if (s == NULL)
        return;
    if (s->running)
        perch_etw_session_stop(s);
    perch__free(s);
}
