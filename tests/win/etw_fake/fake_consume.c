/*
 * The fake OpenTraceW, ProcessTrace and CloseTrace: a real-time consumer of a fake session.
 *
 * OpenTraceW checks the EVENT_TRACE_LOGFILEW (real-time mode, a logger name, the EVENT_RECORD
 * callback: the only form the fake delivers), needs the session to be running, and fills
 * LogfileHeader: from the scenario's Replay .etl when there is one, else from the session.
 * ProcessTrace replays that .etl through the callback, record by record in time order (Perch's
 * own .etl reader yields them; fake_record.c dresses each as the OS would), at full speed or
 * paced, and then waits like an idle real-time session until the session is stopped (by
 * anyone, from any process: it looks at the shared state every 256 events and every 10 ms when
 * idle) or CloseTrace is called. It then returns ERROR_SUCCESS. The scenario can stop the
 * session after N events, slow the delivery down, and make a paced replay that falls behind
 * lose buffers, counted in the session's losses.
 */
#define _WMI_SOURCE_
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "fake_internal.h"
#include "perch/pipeline.h"

#define MAX_OPEN          16u
#define HANDLE_TAG        0xFA7E000000000000ull
#define CHECK_EVERY       256u
#define EVENTS_PER_BUFFER 64u
#define MAX_ITEMS         16u

typedef struct open_trace {
    bool used;
    volatile LONG closing, processing;
    uint32_t generation, logger_id;
    EVENT_TRACE_LOGFILEW *lf;
    WCHAR name[FAKE_NAME_CHARS];
    bool raw;
    char replay[MAX_PATH * 3];
    perch_etl_header header;
} open_trace;

static open_trace opens[MAX_OPEN];
static SRWLOCK table_lock = SRWLOCK_INIT;

static TRACEHANDLE handle_of(unsigned i)
{
    return HANDLE_TAG | (TRACEHANDLE)opens[i].generation << 8 | i;
}

static open_trace *lookup(TRACEHANDLE h)
{
    unsigned i = (unsigned)(h & 0xFF);
    open_trace *t = NULL;
    AcquireSRWLockShared(&table_lock);
    if ((h & 0xFFFF000000000000ull) == HANDLE_TAG && i < MAX_OPEN && opens[i].used &&
        handle_of(i) == h)
        t = &opens[i];
    ReleaseSRWLockShared(&table_lock);
    return t;
}

static void release(open_trace *t)
{
    AcquireSRWLockExclusive(&table_lock);
    t->used = false;
    ReleaseSRWLockExclusive(&table_lock);
}

static ULONG check_logfile(const EVENT_TRACE_LOGFILEW *lf)
{
    if (lf == NULL || lf->LoggerName == NULL)
        return ERROR_INVALID_PARAMETER;
    if (!(lf->ProcessTraceMode & PROCESS_TRACE_MODE_REAL_TIME) || lf->LogFileName != NULL)
        return ERROR_NOT_SUPPORTED; /* the fake consumes real-time sessions only */
    if (!(lf->ProcessTraceMode & PROCESS_TRACE_MODE_EVENT_RECORD))
        return ERROR_NOT_SUPPORTED; /* and delivers EVENT_RECORDs only */
    if (lf->EventRecordCallback == NULL)
        return ERROR_INVALID_PARAMETER;
    return ERROR_SUCCESS;
}

static void header_from_session(const fake_session *s, perch_etl_header *h)
{
    SYSTEM_INFO si;
    LARGE_INTEGER f;
    GetSystemInfo(&si);
    QueryPerformanceFrequency(&f);
    memset(h, 0, sizeof *h);
    h->buffer_size = s->buffer_kb * 1024u;
    h->build = 19045;
    h->cpus = si.dwNumberOfProcessors;
    h->pointer_size = 8;
    h->perf_freq = (uint64_t)f.QuadPart;
    h->start_time = s->start_filetime;
    h->clock_type = s->clock;
    h->log_file_mode = s->log_file_mode;
}

static void fill_logfile_header(EVENT_TRACE_LOGFILEW *lf, const perch_etl_header *h, bool kernel)
{
    TRACE_LOGFILE_HEADER *o = &lf->LogfileHeader;
    memset(o, 0, sizeof *o);
    o->BufferSize = h->buffer_size;
    o->Version = h->version;
    o->ProviderVersion = h->build;
    o->NumberOfProcessors = h->cpus;
    o->EndTime.QuadPart = (LONGLONG)h->end_time;
    o->TimerResolution = h->timer_resolution;
    o->LogFileMode = h->log_file_mode;
    o->BuffersWritten = h->buffers_written;
    o->PointerSize = h->pointer_size;
    o->EventsLost = h->events_lost;
    o->CpuSpeedInMHz = h->cpu_speed_mhz;
    o->TimeZone.Bias = h->tz_bias;
    o->BootTime.QuadPart = (LONGLONG)h->boot_time;
    o->PerfFreq.QuadPart = (LONGLONG)h->perf_freq;
    o->StartTime.QuadPart = (LONGLONG)h->start_time;
    o->ReservedFlags = h->clock_type;
    o->BuffersLost = h->buffers_lost;
    lf->BufferSize = h->buffer_size;
    lf->IsKernelTrace = kernel;
}

/* The replay's logfile header, read now so OpenTraceW can report it. */
static ULONG read_replay_header(open_trace *t)
{
    perch_etl_reader *r = NULL;
    if (!fake_scenario_string("Replay", t->replay, sizeof t->replay))
        return ERROR_SUCCESS;
    if (perch_etl_open_file(t->replay, NULL, &r, NULL) != 0)
        return ERROR_FILE_NOT_FOUND;
    t->header = *perch_etl_header_of(r);
    perch_etl_destroy(r);
    return ERROR_SUCCESS;
}

static ULONG open_one(EVENT_TRACE_LOGFILEW *lf, TRACEHANDLE *out)
{
    fake_session s;
    open_trace *t = NULL;
    unsigned i;
    ULONG rc;
    if (!fake_find(lf->LoggerName, 0, &s, NULL))
        return ERROR_WMI_INSTANCE_NOT_FOUND;
    AcquireSRWLockExclusive(&table_lock);
    for (i = 0; i < MAX_OPEN && opens[i].used; i++)
        ;
    if (i < MAX_OPEN) {
        t = &opens[i];
        uint32_t gen = t->generation + 1;
        memset(t, 0, sizeof *t);
        t->used = true;
        t->generation = gen & 0xFFFFFFu;
    }
    ReleaseSRWLockExclusive(&table_lock);
    if (t == NULL)
        return ERROR_NO_SYSTEM_RESOURCES;
    t->lf = lf;
    t->logger_id = s.logger_id;
    t->raw = (lf->ProcessTraceMode & PROCESS_TRACE_MODE_RAW_TIMESTAMP) != 0;
    wcsncpy(t->name, lf->LoggerName, FAKE_NAME_CHARS - 1);
    header_from_session(&s, &t->header);
    if ((rc = read_replay_header(t)) != ERROR_SUCCESS) {
        release(t);
        return rc;
    }
    fill_logfile_header(lf, &t->header,
                        (s.log_file_mode & EVENT_TRACE_SYSTEM_LOGGER_MODE) ||
                            IsEqualGUID(&s.guid, &perch_etw_system_trace_control_guid));
    *out = handle_of(i);
    return ERROR_SUCCESS;
}

TRACEHANDLE WMIAPI OpenTraceW(PEVENT_TRACE_LOGFILEW Logfile)
{
    char name8[FAKE_NAME_CHARS * 3] = "";
    TRACEHANDLE h = INVALID_PROCESSTRACE_HANDLE;
    ULONG rc = check_logfile(Logfile);
    if (rc == 0)
        rc = fake_refusal("OpenTrace");
    if (rc == 0)
        rc = open_one(Logfile, &h);
    if (Logfile != NULL && Logfile->LoggerName != NULL)
        fake_utf8(Logfile->LoggerName, name8, sizeof name8);
    if (rc != 0) {
        fake_ledger("refuse OpenTrace name=%s error=%lu", name8, (unsigned long)rc);
        SetLastError(rc);
        return INVALID_PROCESSTRACE_HANDLE;
    }
    fake_ledger("open name=%s pid=%lu replay=%s", name8, (unsigned long)GetCurrentProcessId(),
                lookup(h)->replay[0] ? lookup(h)->replay : "(none)");
    return h;
}

static bool still_running(const open_trace *t)
{
    fake_session s;
    return fake_find(NULL, t->logger_id, &s, NULL);
}

/* Adds the replay's progress and losses to the shared session (if it still runs). */
static void publish(const open_trace *t, uint32_t delivered, bool done, uint64_t dropped)
{
    WCHAR name[FAKE_NAME_CHARS];
    fake_session s;
    fake_lock();
    if (fake_find(NULL, t->logger_id, &s, name)) {
        s.delivered = delivered;
        s.replay_done = done;
        s.events_lost = dropped;
        s.rt_buffers_lost = (dropped + EVENTS_PER_BUFFER - 1) / EVENTS_PER_BUFFER;
        fake_store(name, &s);
    }
    fake_unlock();
}

/* The scenario's "stopped from outside": the session disappears as if logman stopped it. */
static void external_stop(const open_trace *t, uint32_t delivered)
{
    WCHAR name[FAKE_NAME_CHARS];
    char name8[FAKE_NAME_CHARS * 3];
    fake_session s;
    bool found;
    fake_lock();
    found = fake_find(NULL, t->logger_id, &s, name);
    if (found)
        fake_remove(name);
    fake_unlock();
    if (found) {
        fake_utf8(name, name8, sizeof name8);
        fake_ledger("stop name=%s id=%u (external: StopAfterEvents after %u events)", name8,
                    (unsigned)t->logger_id, (unsigned)delivered);
    }
}

static void spin_micros(uint32_t us)
{
    LARGE_INTEGER f, a, b;
    if (us >= 2000) {
        Sleep(us / 1000);
        return;
    }
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&a);
    do
        QueryPerformanceCounter(&b);
    while ((uint64_t)(b.QuadPart - a.QuadPart) * 1000000u < (uint64_t)us * (uint64_t)f.QuadPart);
}

typedef struct replay_state {
    uint32_t pace, stop_after, slow_us, lag_ms;
    uint64_t rate, first_ts, dropped;
    uint32_t delivered;
    LARGE_INTEGER t0, qpf;
    bool started, stopped;
} replay_state;

/* Paced replay: waits until the event is due; false when it is so late it was lost. */
static bool pace_to(replay_state *st, uint64_t ts)
{
    LARGE_INTEGER now;
    if (!st->started) {
        st->first_ts = ts;
        st->started = true;
    }
    if (st->pace == 0 || st->rate == 0 || ts < st->first_ts)
        return true;
    double due = (double)(ts - st->first_ts) / (double)st->rate / st->pace;
    QueryPerformanceCounter(&now);
    double at = (double)(now.QuadPart - st->t0.QuadPart) / (double)st->qpf.QuadPart;
    if (due > at + 0.001)
        Sleep((DWORD)((due - at) * 1000.0));
    else if ((at - due) * 1000.0 > st->lag_ms)
        return false; /* the real-time buffers holding it were lost */
    return true;
}

static void deliver(open_trace *t, replay_state *st, const perch_event *ev)
{
    EVENT_HEADER_EXTENDED_DATA_ITEM items[MAX_ITEMS];
    EVENT_RECORD rec;
    fake_build_record(ev, (uint16_t)t->logger_id, t->lf->Context, t->raw ? NULL : &t->header, items,
                      MAX_ITEMS, &rec);
    t->lf->EventRecordCallback(&rec);
    st->delivered++;
    if (st->slow_us)
        spin_micros(st->slow_us);
}

static void replay_file(open_trace *t, replay_state *st)
{
    perch_etl_reader *r = NULL;
    perch_trace_info info;
    perch_event ev;
    if (perch_etl_open_file(t->replay, NULL, &r, NULL) != 0)
        return;
    perch_pipeline_trace_info(perch_etl_header_of(r), "", &info);
    st->rate = info.perf_freq;
    while (!st->stopped && !t->closing && perch_etl_next(r, &ev) == 0) {
        if (st->delivered % CHECK_EVERY == 0 && !still_running(t))
            break;
        if (!pace_to(st, ev.timestamp)) {
            st->dropped++;
            continue;
        }
        deliver(t, st, &ev);
        if (st->delivered % 4096u == 0)
            publish(t, st->delivered, false, st->dropped);
        if (st->stop_after && st->delivered == st->stop_after) {
            publish(t, st->delivered, false, st->dropped);
            external_stop(t, st->delivered);
            st->stopped = true;
        }
    }
    if (!st->stopped && !t->closing)
        publish(t, st->delivered, true, st->dropped);
    perch_etl_destroy(r);
}

static ULONG run(open_trace *t)
{
    char name8[FAKE_NAME_CHARS * 3];
    replay_state st;
    memset(&st, 0, sizeof st);
    st.pace = fake_scenario_dword("Pace", 0);
    st.stop_after = fake_scenario_dword("StopAfterEvents", 0);
    st.slow_us = fake_scenario_dword("SlowCallbackMicros", 0);
    st.lag_ms = fake_scenario_dword("RealTimeLagMs", 1000);
    QueryPerformanceFrequency(&st.qpf);
    QueryPerformanceCounter(&st.t0);
    if (t->replay[0] != '\0')
        replay_file(t, &st);
    else /* nothing to replay: done at once, so a test can see a consumer is in ProcessTrace */
        publish(t, 0, true, 0);
    while (!t->closing && !st.stopped && still_running(t))
        Sleep(10);
    Sleep(fake_scenario_dword("HangAfterEndMs", 0)); /* a ProcessTrace slow to return */
    fake_utf8(t->name, name8, sizeof name8);
    fake_ledger("end name=%s delivered=%u lost=%llu reason=%s", name8, (unsigned)st.delivered,
                (unsigned long long)st.dropped, t->closing ? "CloseTrace" : "session stopped");
    return ERROR_SUCCESS;
}

ULONG WMIAPI ProcessTrace(PTRACEHANDLE HandleArray, ULONG HandleCount, LPFILETIME StartTime,
                          LPFILETIME EndTime)
{
    open_trace *t;
    ULONG rc;
    (void)StartTime, (void)EndTime; /* ignored for real-time sessions */
    if (HandleArray == NULL || HandleCount == 0 || HandleCount > PERCH_ETW_MAX_TRACE_HANDLES)
        return ERROR_INVALID_PARAMETER;
    for (ULONG i = 0; i < HandleCount; i++)
        if (lookup(HandleArray[i]) == NULL)
            return ERROR_INVALID_HANDLE;
    if (HandleCount > 1)
        return ERROR_INVALID_PARAMETER; /* at most one real-time session per call */
    t = lookup(HandleArray[0]);
    if (InterlockedCompareExchange(&t->processing, 1, 0) != 0)
        return ERROR_INVALID_PARAMETER;
    if ((rc = fake_refusal("ProcessTrace")) == 0)
        rc = run(t);
    else
        fake_ledger("refuse ProcessTrace error=%lu", (unsigned long)rc);
    AcquireSRWLockExclusive(&table_lock);
    t->processing = 0;
    if (t->closing)
        t->used = false; /* CloseTrace came while we ran */
    ReleaseSRWLockExclusive(&table_lock);
    return rc;
}

ULONG WMIAPI CloseTrace(TRACEHANDLE TraceHandle)
{
    open_trace *t = lookup(TraceHandle);
    if (t == NULL)
        return ERROR_INVALID_HANDLE;
    bool pending;
    AcquireSRWLockExclusive(&table_lock);
    t->closing = 1;
    pending = t->processing != 0;
    if (!pending)
        t->used = false;
    ReleaseSRWLockExclusive(&table_lock);
    /* While ProcessTrace runs it returns once it sees the close. */
    return pending ? ERROR_CTX_CLOSE_PENDING : ERROR_SUCCESS;
}
