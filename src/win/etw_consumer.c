/*
 * The real-time consumer (src/win/etw.h): OpenTraceW on the session with
 * PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD |
 * PROCESS_TRACE_MODE_RAW_TIMESTAMP, then a thread that runs ProcessTrace until the session
 * ends or CloseTrace is called.
 *
 * The EventRecordCallback runs on that thread for every event. It converts the EVENT_RECORD
 * (etw_convert.c) and try_pushes the record into the queue, nothing else: no lock, no
 * allocation, no I/O, so a slow model thread or client can only make the queue drop records
 * (counted), never stall ETW's buffers. Its counters have one writer (this thread) and are read
 * from any thread with relaxed atomic loads.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "etw_convert.h"
#include "etw_internal.h"
#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/platform.h"
#include "perch/win_error.h"
#include "util/mem.h"

#define EXT_SCRATCH     4096u
#define STOP_TIMEOUT_MS 30000u
#define FIRST_EVENT_MS  1000u /* how long start waits for the session's header event */

static uint32_t stop_timeout_ms = STOP_TIMEOUT_MS; /* perch__etw_consumer_stop_timeout */

typedef _Atomic uint64_t counter;

struct perch_etw_consumer {
    perch_event_queue *q;
    EVENT_TRACE_LOGFILEW lf;
    TRACEHANDLE trace;
    HANDLE thread;
    WCHAR name[PERCH_ETW_NAME_CHARS];
    char source[PERCH_ETW_NAME_MAX + 8];
    unsigned pointer_size;
    perch_etl_header header; /* the session as OpenTraceW described it */
    uint64_t open_raw, open_filetime;
    _Atomic uint64_t header_raw; /* raw timestamp of the header event, once delivered */
    _Atomic int header_seen;
    _Atomic int first_seen; /* any event delivered: first_event was signalled */
    HANDLE first_event;     /* set by the first callback or by the thread's end */
    counter events, pushed, queue_full, oversized, closed, bad_records, pmc_malformed, last_ts;
    _Atomic int done;
    int status;               /* ProcessTrace's result, written before done */
    uint64_t end_ns, end_raw; /* when ProcessTrace returned, written before done */
    bool closed_trace;
    bool leaked; /* the thread did not end in time: memory stays allocated */
    uint8_t ext[EXT_SCRATCH];
};

static inline void bump(counter *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline uint64_t get(const counter *c)
{
    return atomic_load_explicit((counter *)c, memory_order_relaxed);
}

/* Once per consumer, on the first event: remember the header event's timestamp (the raw
 * clock value that goes with LogfileHeader.StartTime) and wake perch_etw_consumer_start. The
 * one system call the callback makes, and only on its first event. */
static void note_first(perch_etw_consumer *c, const perch_event *ev)
{
    if (ev->group == PERCH_GROUP_HEADER && ev->opcode == 0) {
        atomic_store_explicit(&c->header_raw, ev->timestamp, memory_order_relaxed);
        atomic_store_explicit(&c->header_seen, 1, memory_order_release);
    }
    atomic_store_explicit(&c->first_seen, 1, memory_order_relaxed);
    if (c->first_event != NULL)
        SetEvent(c->first_event);
}

void WINAPI perch__etw_on_event(PEVENT_RECORD r)
{
    perch_etw_consumer *c = r->UserContext;
    perch_event ev;
    int rc;
    bump(&c->events);
    rc = perch_etw_convert(r, c->pointer_size, c->ext, sizeof c->ext, &ev);
    if (rc < 0) {
        bump(&c->bad_records);
        return;
    }
    if (rc & (PERCH_ETW_CONVERT_PMC_MALFORMED | PERCH_ETW_CONVERT_PEBS_MALFORMED))
        bump(&c->pmc_malformed);
    if (!atomic_load_explicit(&c->first_seen, memory_order_relaxed))
        note_first(c, &ev);
    atomic_store_explicit(&c->last_ts, ev.timestamp, memory_order_relaxed);
    rc = perch_event_queue_try_push(c->q, &ev);
    if (rc == 0)
        bump(&c->pushed);
    else if (rc == PERCH_EBUSY)
        bump(&c->queue_full);
    else if (rc == PERCH_ELIMIT)
        bump(&c->oversized);
    else
        bump(&c->closed);
}

static DWORD WINAPI consumer_thread(LPVOID arg)
{
    perch_etw_consumer *c = arg;
    ULONG rc = ProcessTrace(&c->trace, 1, NULL, NULL);
    LARGE_INTEGER qpc;
    QueryPerformanceCounter(&qpc);
    c->end_raw = (uint64_t)qpc.QuadPart;
    c->end_ns = perch_monotonic_ns();
    c->status = rc == ERROR_SUCCESS ? 0 : perch_win_error(rc);
    atomic_store_explicit(&c->done, 1, memory_order_release);
    SetEvent(c->first_event);
    return 0;
}

/* TRACE_LOGFILE_HEADER → the .etl reader's header, so the trace info is derived exactly as
 * perch import derives it (perch_pipeline_trace_info). */
static void take_header(perch_etw_consumer *c)
{
    const TRACE_LOGFILE_HEADER *h = &c->lf.LogfileHeader;
    perch_etl_header *e = &c->header;
    memset(e, 0, sizeof *e);
    e->buffer_size = h->BufferSize;
    e->version = h->Version;
    e->build = h->ProviderVersion;
    e->cpus = h->NumberOfProcessors;
    e->end_time = (uint64_t)h->EndTime.QuadPart;
    e->timer_resolution = h->TimerResolution;
    e->log_file_mode = h->LogFileMode;
    e->buffers_written = h->BuffersWritten;
    e->pointer_size = h->PointerSize == 4 ? 4 : 8;
    e->events_lost = h->EventsLost;
    e->cpu_speed_mhz = h->CpuSpeedInMHz;
    e->tz_bias = h->TimeZone.Bias;
    e->boot_time = (uint64_t)h->BootTime.QuadPart;
    e->perf_freq = (uint64_t)h->PerfFreq.QuadPart;
    e->start_time = (uint64_t)h->StartTime.QuadPart;
    e->clock_type = h->ReservedFlags ? h->ReservedFlags : 1;
    e->buffers_lost = h->BuffersLost;
    c->pointer_size = e->pointer_size;
    if (e->perf_freq == 0) {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        e->perf_freq = (uint64_t)f.QuadPart;
    }
}

/* A QPC value and the wall clock read together: the time reference until the header event
 * (which carries the session's own pair) has been delivered. */
static void take_open_time(perch_etw_consumer *c)
{
    LARGE_INTEGER qpc;
    FILETIME ft;
    QueryPerformanceCounter(&qpc);
    GetSystemTimePreciseAsFileTime(&ft);
    c->open_raw = (uint64_t)qpc.QuadPart;
    c->open_filetime = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
}

static int open_trace(perch_etw_consumer *c, char *why, size_t n)
{
    char name8[PERCH_ETW_NAME_MAX];
    memset(&c->lf, 0, sizeof c->lf);
    c->lf.LoggerName = c->name;
    c->lf.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD |
                             PROCESS_TRACE_MODE_RAW_TIMESTAMP;
    c->lf.EventRecordCallback = perch__etw_on_event;
    c->lf.Context = c;
    take_open_time(c);
    c->trace = OpenTraceW(&c->lf);
    if (c->trace == INVALID_PROCESSTRACE_HANDLE) {
        DWORD e = GetLastError();
        char call[PERCH_ETW_NAME_MAX + 32];
        perch__etw_to_utf8(c->name, name8, sizeof name8);
        snprintf(call, sizeof call, "OpenTraceW(\"%s\")", name8);
        if (why != NULL && n != 0)
            perch__etw_say_failed(why, n, call, e ? e : ERROR_GEN_FAILURE);
        return e ? perch_win_error(e) : PERCH_ESYSTEM;
    }
    take_header(c);
    return 0;
}

int perch_etw_consumer_start(perch_etw_session *s, perch_event_queue *q, perch_etw_consumer **out,
                             char *why, size_t n)
{
    perch_etw_consumer *c;
    int err;
    if (why != NULL && n != 0)
        why[0] = '\0';
    if (s == NULL || q == NULL || out == NULL || !s->running)
        return PERCH_EINVAL;
    if ((c = perch__calloc(1, sizeof *c)) == NULL)
        return PERCH_ENOMEM;
    c->q = q;
    memcpy(c->name, s->name, sizeof c->name);
    snprintf(c->source, sizeof c->source, "live:%s", s->rep.name);
    if ((c->first_event = CreateEventW(NULL, TRUE, FALSE, NULL)) == NULL) {
        err = perch_win_last_error();
        perch__free(c);
        return err;
    }
    err = open_trace(c, why, n);
    if (err == 0 && (c->thread = CreateThread(NULL, 0, consumer_thread, c, 0, NULL)) == NULL) {
        err = perch_win_last_error();
        if (why != NULL && n != 0)
            snprintf(why, n, "the consumer thread could not be created: %s", perch_strerror(err));
        CloseTrace(c->trace);
    }
    if (err < 0) {
        CloseHandle(c->first_event);
        perch__free(c);
        return err;
    }
    /* The trace info is final once the header event came; an idle session may send none. */
    WaitForSingleObject(c->first_event, FIRST_EVENT_MS);
    *out = c;
    return 0;
}

int perch__etw_consumer_detached(perch_event_queue *q, unsigned pointer_size,
                                 perch_etw_consumer **out)
{
    perch_etw_consumer *c;
    if (q == NULL || out == NULL)
        return PERCH_EINVAL;
    if ((c = perch__calloc(1, sizeof *c)) == NULL)
        return PERCH_ENOMEM;
    c->q = q;
    c->pointer_size = pointer_size == 4 ? 4 : 8;
    snprintf(c->source, sizeof c->source, "live:detached");
    *out = c;
    return 0;
}

int perch_etw_consumer_wait(perch_etw_consumer *c, uint32_t timeout_ms, int *status)
{
    if (c == NULL || c->thread == NULL)
        return PERCH_EINVAL;
    if (!atomic_load_explicit(&c->done, memory_order_acquire) &&
        WaitForSingleObject(c->thread, timeout_ms == UINT32_MAX ? INFINITE : timeout_ms) !=
            WAIT_OBJECT_0)
        return PERCH_ETIMEDOUT;
    if (!atomic_load_explicit(&c->done, memory_order_acquire))
        return PERCH_ETIMEDOUT;
    if (status != NULL)
        *status = c->status;
    return 0;
}

bool perch__etw_consumer_ended(const perch_etw_consumer *c, uint64_t *ns, uint64_t *raw)
{
    if (!atomic_load_explicit((_Atomic int *)&c->done, memory_order_acquire))
        return false;
    *ns = c->end_ns;
    *raw = c->end_raw;
    return true;
}

void perch_etw_consumer_get_stats(const perch_etw_consumer *c, perch_etw_consumer_stats *st)
{
    memset(st, 0, sizeof *st);
    if (c == NULL)
        return;
    st->events = get(&c->events);
    st->pushed = get(&c->pushed);
    st->queue_full = get(&c->queue_full);
    st->oversized = get(&c->oversized);
    st->closed = get(&c->closed);
    st->bad_records = get(&c->bad_records);
    st->pmc_malformed = get(&c->pmc_malformed);
    st->last_timestamp = get(&c->last_ts);
}

void perch_etw_consumer_trace_info(const perch_etw_consumer *c, perch_trace_info *info)
{
    perch_etl_header h = c->header;
    if (atomic_load_explicit((_Atomic int *)&c->header_seen, memory_order_acquire)) {
        h.ref_raw = atomic_load_explicit((_Atomic uint64_t *)&c->header_raw, memory_order_relaxed);
    } else {
        h.ref_raw = c->open_raw;
        h.start_time = c->open_filetime;
        h.clock_type = 1;
    }
    perch_pipeline_trace_info(&h, c->source, info);
    /* A real-time session has no end (its header's EndTime is not the end of any capture
     * written from it): 0, unknown, and each file's records say where it ends. */
    info->end_filetime = 0;
}

int perch_etw_consumer_stop(perch_etw_consumer *c)
{
    int status = 0;
    if (c == NULL)
        return PERCH_EINVAL;
    if (c->thread == NULL)
        return 0; /* detached: nothing runs */
    if (!c->closed_trace) {
        CloseTrace(c->trace); /* ERROR_CTX_CLOSE_PENDING: ProcessTrace returns soon */
        c->closed_trace = true;
    }
    if (perch_etw_consumer_wait(c, stop_timeout_ms, &status) < 0) {
        c->leaked = true;
        return PERCH_ETIMEDOUT;
    }
    return status;
}

bool perch_etw_consumer_destroy(perch_etw_consumer *c)
{
    if (c == NULL)
        return false;
    perch_etw_consumer_stop(c);
    if (c->leaked)
        return true; /* ProcessTrace never returned: its thread may still use c */
    if (c->thread != NULL)
        CloseHandle(c->thread);
    if (c->first_event != NULL)
        CloseHandle(c->first_event);
    perch__free(c);
    return false;
}

void perch__etw_consumer_stop_timeout(uint32_t ms)
{
    stop_timeout_ms = ms != 0 ? ms : STOP_TIMEOUT_MS;
}
