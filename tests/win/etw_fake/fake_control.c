/*
 * The fake StartTraceW and ControlTraceW. They check what the documentation says the real
 * calls check (docs/etw-session.md, "What the fake checks", with the source of each rule),
 * refuse when the scenario says so, and keep the sessions in the shared state so that every
 * process sees them: a session outlives the process that started it, exactly like ETW's.
 */
#define _WMI_SOURCE_
#include <string.h>
#include <wchar.h>

#include "etw_fake.h"
#include "fake_internal.h"

#define MAX_SESSIONS       64u /* cross-process sessions a system runs at once */
#define MAX_SYSTEM_LOGGERS 8u  /* SystemTraceProvider sessions, the NT Kernel Logger's included */
#define KNOWN_MODES                                                                                \
    (EVENT_TRACE_FILE_MODE_SEQUENTIAL | EVENT_TRACE_FILE_MODE_CIRCULAR |                           \
     EVENT_TRACE_FILE_MODE_APPEND | EVENT_TRACE_FILE_MODE_NEWFILE |                                \
     EVENT_TRACE_FILE_MODE_PREALLOCATE | EVENT_TRACE_NONSTOPPABLE_MODE | EVENT_TRACE_SECURE_MODE | \
     EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_DELAY_OPEN_FILE_MODE | EVENT_TRACE_BUFFERING_MODE |  \
     EVENT_TRACE_PRIVATE_LOGGER_MODE | EVENT_TRACE_ADD_HEADER_MODE |                               \
     EVENT_TRACE_USE_KBYTES_FOR_SIZE | EVENT_TRACE_USE_GLOBAL_SEQUENCE |                           \
     EVENT_TRACE_USE_LOCAL_SEQUENCE | EVENT_TRACE_RELOG_MODE | EVENT_TRACE_PRIVATE_IN_PROC |       \
     EVENT_TRACE_MODE_RESERVED | EVENT_TRACE_STOP_ON_HYBRID_SHUTDOWN |                             \
     EVENT_TRACE_PERSIST_ON_HYBRID_SHUTDOWN | EVENT_TRACE_USE_PAGED_MEMORY |                       \
     EVENT_TRACE_SYSTEM_LOGGER_MODE | EVENT_TRACE_COMPRESSED_MODE |                                \
     EVENT_TRACE_INDEPENDENT_SESSION_MODE | EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING |               \
     EVENT_TRACE_ADDTO_TRIAGE_DUMP)

static bool is_kernel_logger(const WCHAR *name)
{
    return _wcsicmp(name, KERNEL_LOGGER_NAMEW) == 0;
}

static bool nul_within(const EVENT_TRACE_PROPERTIES *p, ULONG off)
{
    const WCHAR *w = (const WCHAR *)((const BYTE *)p + off);
    size_t chars = (p->Wnode.BufferSize - off) / sizeof(WCHAR);
    for (size_t i = 0; i < chars; i++)
        if (w[i] == 0)
            return true;
    return false;
}

/* An offset the call may write a name at, or 0 ("no name"): inside the buffer, after the
 * structure (ERROR_INVALID_PARAMETER otherwise). */
static uint32_t check_offset(const EVENT_TRACE_PROPERTIES *p, ULONG off)
{
    if (off == 0)
        return ERROR_SUCCESS;
    if (off < sizeof *p || off >= p->Wnode.BufferSize || (off & 1u))
        return ERROR_INVALID_PARAMETER;
    return ERROR_SUCCESS;
}

static const WCHAR *log_file_of(const EVENT_TRACE_PROPERTIES *p)
{
    return p->LogFileNameOffset ? (const WCHAR *)((const BYTE *)p + p->LogFileNameOffset) : L"";
}

static uint32_t check_modes(const EVENT_TRACE_PROPERTIES *p, bool kernel)
{
    ULONG m = p->LogFileMode;
    bool file = log_file_of(p)[0] != 0;
    if (m & ~(ULONG)KNOWN_MODES)
        return ERROR_INVALID_PARAMETER;
    if ((m & EVENT_TRACE_FILE_MODE_SEQUENTIAL) && (m & EVENT_TRACE_FILE_MODE_CIRCULAR))
        return ERROR_INVALID_PARAMETER;
    if ((m & EVENT_TRACE_FILE_MODE_NEWFILE) &&
        (m & (EVENT_TRACE_FILE_MODE_CIRCULAR | EVENT_TRACE_FILE_MODE_APPEND)))
        return ERROR_INVALID_PARAMETER;
    if ((m & EVENT_TRACE_PRIVATE_LOGGER_MODE) &&
        (m & (EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_SYSTEM_LOGGER_MODE)))
        return ERROR_INVALID_PARAMETER;
    if (kernel && (m & EVENT_TRACE_SYSTEM_LOGGER_MODE))
        return ERROR_INVALID_PARAMETER;
    if (!file && !(m & (EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_BUFFERING_MODE)))
        return ERROR_BAD_PATHNAME; /* events would have nowhere to go */
    return ERROR_SUCCESS;
}

static uint32_t check_guid(const EVENT_TRACE_PROPERTIES *p, bool kernel)
{
    bool stc = IsEqualGUID(&p->Wnode.Guid, &perch_etw_system_trace_control_guid);
    if (kernel != stc)
        return ERROR_INVALID_PARAMETER; /* the GUID is the NT Kernel Logger's, and only its */
    if (p->Wnode.ClientContext > 3)
        return ERROR_INVALID_PARAMETER; /* 0 default, 1 QPC, 2 system time, 3 CPU cycles */
    return ERROR_SUCCESS;
}

static uint32_t check_start(const EVENT_TRACE_PROPERTIES *p, const WCHAR *name)
{
    size_t len = wcslen(name);
    uint32_t rc;
    bool kernel = is_kernel_logger(name);
    if (p->Wnode.BufferSize < sizeof *p)
        return ERROR_BAD_LENGTH;
    if (len == 0 || len > PERCH_ETW_MAX_SESSION_NAME || !(p->Wnode.Flags & WNODE_FLAG_TRACED_GUID))
        return ERROR_INVALID_PARAMETER;
    if (p->LoggerNameOffset == 0 || (rc = check_offset(p, p->LoggerNameOffset)) != 0)
        return ERROR_INVALID_PARAMETER;
    if (p->Wnode.BufferSize - p->LoggerNameOffset < (len + 1) * sizeof(WCHAR))
        return ERROR_BAD_LENGTH; /* no room for the copy of the name */
    if ((rc = check_offset(p, p->LogFileNameOffset)) != 0)
        return rc;
    if (p->LogFileNameOffset && !nul_within(p, p->LogFileNameOffset))
        return ERROR_INVALID_PARAMETER;
    if (p->BufferSize > PERCH_ETW_MAX_BUFFER_KB ||
        (p->MaximumBuffers && p->MaximumBuffers < p->MinimumBuffers))
        return ERROR_INVALID_PARAMETER;
    if ((rc = check_guid(p, kernel)) != 0)
        return rc;
    return check_modes(p, kernel);
}

static uint32_t scenario_refusal(const WCHAR *name, ULONG mode)
{
    uint32_t rc = fake_refusal("StartTrace");
    if (rc == 0 && is_kernel_logger(name))
        rc = fake_refusal("StartTrace:KernelLogger");
    if (rc == 0 && (mode & EVENT_TRACE_SYSTEM_LOGGER_MODE))
        rc = fake_refusal("StartTrace:SystemLogger");
    return rc;
}

/* Fills the numbers a query or a start hands back. */
static void describe(const fake_session *s, EVENT_TRACE_PROPERTIES *p)
{
    p->Wnode.HistoricalContext = s->logger_id;
    p->Wnode.Guid = s->guid;
    p->Wnode.ClientContext = s->clock;
    p->BufferSize = s->buffer_kb;
    p->MinimumBuffers = s->min_buffers;
    p->MaximumBuffers = s->max_buffers;
    p->NumberOfBuffers = s->min_buffers;
    p->FreeBuffers = s->min_buffers > 2 ? s->min_buffers - 2 : 0;
    p->LogFileMode = s->log_file_mode;
    p->EnableFlags = s->enable_flags;
    p->FlushTimer = s->flush_timer;
    p->EventsLost = (ULONG)(s->events_lost + fake_scenario_dword("EventsLost", 0));
    p->RealTimeBuffersLost =
        (ULONG)(s->rt_buffers_lost + fake_scenario_dword("RealTimeBuffersLost", 0));
    p->LogBuffersLost = fake_scenario_dword("LogBuffersLost", 0);
    p->BuffersWritten = s->delivered / 64;
    p->LoggerThreadId = (HANDLE)(uintptr_t)(0x1000 + s->logger_id);
}

/* Copies a name to off when it fits; false when it does not (the caller reports MORE_DATA). */
static bool put_name(EVENT_TRACE_PROPERTIES *p, ULONG off, const WCHAR *name)
{
    size_t need = (wcslen(name) + 1) * sizeof(WCHAR);
    if (off == 0 || p->Wnode.BufferSize - off < need)
        return false;
    memcpy((BYTE *)p + off, name, need);
    return true;
}

static void new_session(const EVENT_TRACE_PROPERTIES *p, fake_session *s)
{
    SYSTEM_INFO si;
    FILETIME ft;
    GetSystemInfo(&si);
    GetSystemTimeAsFileTime(&ft);
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->logger_id = fake_next_logger_id();
    s->owner_pid = GetCurrentProcessId();
    s->log_file_mode = p->LogFileMode;
    s->enable_flags = p->EnableFlags;
    s->group_mask[0] = p->EnableFlags;
    s->buffer_kb = p->BufferSize ? p->BufferSize : 64;
    s->min_buffers = p->MinimumBuffers ? p->MinimumBuffers : 2 * si.dwNumberOfProcessors;
    s->max_buffers = p->MaximumBuffers ? p->MaximumBuffers : s->min_buffers + 20;
    s->flush_timer = p->FlushTimer;
    s->clock = p->Wnode.ClientContext ? p->Wnode.ClientContext : 1;
    s->guid = p->Wnode.Guid;
    s->start_filetime = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    fake_self_image(s->owner, sizeof s->owner / sizeof s->owner[0]);
    wcsncpy(s->log_file, log_file_of(p), sizeof s->log_file / sizeof s->log_file[0] - 1);
}

/* Under the lock: the name or GUID already runs, or no slot is left. */
static uint32_t check_room(const WCHAR *name, const EVENT_TRACE_PROPERTIES *p)
{
    fake_session other;
    if (fake_find(name, 0, &other, NULL) || fake_guid_running(&p->Wnode.Guid))
        return ERROR_ALREADY_EXISTS; /* "A session with the same name or GUID is already running" */
    if (fake_count_sessions(0) >= MAX_SESSIONS)
        return ERROR_NO_SYSTEM_RESOURCES;
    bool system = is_kernel_logger(name) || (p->LogFileMode & EVENT_TRACE_SYSTEM_LOGGER_MODE);
    if (system && fake_count_sessions(EVENT_TRACE_SYSTEM_LOGGER_MODE) +
                          (fake_find(KERNEL_LOGGER_NAMEW, 0, &other, NULL) ? 1 : 0) >=
                      MAX_SYSTEM_LOGGERS)
        return ERROR_NO_SYSTEM_RESOURCES;
    return ERROR_SUCCESS;
}

ULONG WMIAPI StartTraceW(PTRACEHANDLE TraceHandle, LPCWSTR InstanceName,
                         PEVENT_TRACE_PROPERTIES Properties)
{
    char name8[FAKE_NAME_CHARS * 3];
    fake_session s;
    uint32_t rc;
    if (TraceHandle == NULL || InstanceName == NULL || Properties == NULL)
        return ERROR_INVALID_PARAMETER;
    fake_utf8(InstanceName, name8, sizeof name8);
    if ((rc = check_start(Properties, InstanceName)) == 0)
        rc = scenario_refusal(InstanceName, Properties->LogFileMode);
    if (rc != 0) {
        fake_ledger("refuse StartTrace name=%s error=%u", name8, (unsigned)rc);
        return rc;
    }
    fake_lock();
    rc = check_room(InstanceName, Properties);
    if (rc == 0) {
        new_session(Properties, &s);
        rc = fake_store(InstanceName, &s);
    }
    fake_unlock();
    if (rc != 0) {
        fake_ledger("refuse StartTrace name=%s error=%u", name8, (unsigned)rc);
        return rc;
    }
    fake_ledger("start name=%s id=%u pid=%u mode=0x%x flags=0x%x", name8, (unsigned)s.logger_id,
                (unsigned)s.owner_pid, (unsigned)s.log_file_mode, (unsigned)s.enable_flags);
    *TraceHandle = s.logger_id;
    describe(&s, Properties);
    put_name(Properties, Properties->LoggerNameOffset, InstanceName);
    return ERROR_SUCCESS;
}

static uint32_t check_control(TRACEHANDLE h, LPCWSTR name, PEVENT_TRACE_PROPERTIES p, ULONG code)
{
    uint32_t rc;
    if (p == NULL || code > EVENT_TRACE_CONTROL_INCREMENT_FILE || (h == 0 && name == NULL))
        return ERROR_INVALID_PARAMETER;
    if (p->Wnode.BufferSize < sizeof *p)
        return ERROR_BAD_LENGTH;
    if ((rc = check_offset(p, p->LoggerNameOffset)) != 0)
        return rc;
    return check_offset(p, p->LogFileNameOffset);
}

static const char *const control_names[] = {"query", "stop", "update", "flush", "increment"};

ULONG WMIAPI ControlTraceW(TRACEHANDLE TraceHandle, LPCWSTR InstanceName,
                           PEVENT_TRACE_PROPERTIES Properties, ULONG ControlCode)
{
    WCHAR name[FAKE_NAME_CHARS];
    char name8[FAKE_NAME_CHARS * 3];
    fake_session s;
    uint32_t rc = check_control(TraceHandle, InstanceName, Properties, ControlCode);
    if (rc != 0)
        return rc;
    if (ControlCode == EVENT_TRACE_CONTROL_INCREMENT_FILE)
        return ERROR_INVALID_PARAMETER; /* only for EVENT_TRACE_FILE_MODE_NEWFILE sessions */
    fake_lock();
    bool found = fake_find(TraceHandle ? NULL : InstanceName, (uint32_t)TraceHandle, &s, name);
    if (found && ControlCode == EVENT_TRACE_CONTROL_STOP)
        fake_remove(name);
    fake_unlock();
    if (!found)
        return ERROR_WMI_INSTANCE_NOT_FOUND;
    fake_utf8(name, name8, sizeof name8);
    if (ControlCode != EVENT_TRACE_CONTROL_QUERY)
        fake_ledger("%s name=%s id=%u by pid=%u (%s)", control_names[ControlCode], name8,
                    (unsigned)s.logger_id, (unsigned)GetCurrentProcessId(),
                    s.owner_pid == GetCurrentProcessId() ? "owner" : "another process");
    describe(&s, Properties);
    bool fits = put_name(Properties, Properties->LoggerNameOffset, name);
    if (s.log_file[0] != 0)
        fits = put_name(Properties, Properties->LogFileNameOffset, s.log_file) && fits;
    else if (Properties->LogFileNameOffset != 0)
        put_name(Properties, Properties->LogFileNameOffset, L"");
    return fits ? ERROR_SUCCESS : ERROR_MORE_DATA;
}

/* --- planting a foreign session (etw_fake.h) ---------------------------------------------- */

uint32_t perch_fake_etw_plant(const char *name, const char *owner, const char *log_file,
                              bool kernel_logger)
{
    WCHAR wname[FAKE_NAME_CHARS];
    fake_session s;
    EVENT_TRACE_PROPERTIES p;
    uint32_t rc;
    memset(&p, 0, sizeof p);
    if (MultiByteToWideChar(CP_UTF8, 0, name, -1, wname, FAKE_NAME_CHARS) <= 0)
        return ERROR_INVALID_PARAMETER;
    p.LogFileMode =
        EVENT_TRACE_REAL_TIME_MODE | (kernel_logger ? 0 : (ULONG)EVENT_TRACE_SYSTEM_LOGGER_MODE);
    p.EnableFlags = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD;
    p.Wnode.ClientContext = 1;
    if (kernel_logger)
        p.Wnode.Guid = perch_etw_system_trace_control_guid;
    new_session(&p, &s);
    s.owner_pid = 4242;
    MultiByteToWideChar(CP_UTF8, 0, owner ? owner : "someone.exe", -1, s.owner, 260);
    if (log_file != NULL)
        MultiByteToWideChar(CP_UTF8, 0, log_file, -1, s.log_file, 260);
    fake_lock();
    rc = fake_store(wname, &s);
    fake_unlock();
    fake_ledger("plant name=%s id=%u owner=%s", name, (unsigned)s.logger_id,
                owner ? owner : "someone.exe");
    return rc;
}
