/*
 * The fake advapi32 ETW calls for Perch's Windows test builds (tests/win/etw_fake), and the
 * control API tests use to set it up and look at it.
 *
 * The fake replaces StartTraceW, ControlTraceW, TraceSetInformation, TraceQueryInformation,
 * EnableTraceEx2, OpenTraceW, ProcessTrace and CloseTrace at link time (the library is linked
 * whole, before advapi32: perch_link_etw_fake in CMakeLists.txt). It checks their arguments as
 * the documentation says the real calls do, keeps its sessions in the registry so that they
 * are system-wide like real ETW (a service started by Wine's SCM and a test in another process
 * see the same sessions; a killed process leaves its session behind), and on ProcessTrace
 * replays an .etl file through the EventRecordCallback as EVENT_RECORDs.
 *
 * State lives under HKEY_LOCAL_MACHINE\<root>, root being "Software\Perch\EtwFake" unless the
 * environment variable PERCH_FAKE_ETW_ROOT names another key (tests that run in parallel each
 * use their own root; a service reads the default one):
 *   <root>\Scenario   values read by the fake when a call needs them (docs/etw-session.md):
 *       Replay (REG_SZ)           .etl replayed by ProcessTrace (none: an idle session)
 *       Pace (DWORD)              0 full speed; N: N times the trace's own speed
 *       StopAfterEvents (DWORD)   the session is stopped "from outside" after N events
 *       EventsLost, RealTimeBuffersLost, LogBuffersLost (DWORD)  reported by every query
 *       SlowCallbackMicros (DWORD) extra time spent per event, as if the consumer were slow
 *       RealTimeLagMs (DWORD)     paced replay falling this far behind loses buffers (default
 *                                 1000), counted in RealTimeBuffersLost and EventsLost
 *       Refuse (REG_MULTI_SZ)     "Name=Win32Code" entries: Name is StartTrace,
 *                                 StartTrace:SystemLogger, StartTrace:KernelLogger, OpenTrace,
 *                                 ProcessTrace, EnableTraceEx2, TraceSetInformation (all
 *                                 classes) or a TRACE_INFO_CLASS name (TraceStackTracingInfo...)
 *       MaxPmcCounters (DWORD)    TraceMaxPmcCounterQuery's answer (default 4)
 *       HangAfterEndMs (DWORD)    ProcessTrace returns only this long after its session
 *                                 ended or CloseTrace came (a consumer that hangs)
 *   <root>\Sessions\<name>  one key per running session
 *   <root>\Ledger           "000001", ... REG_SZ: every start, stop, refusal, open and end
 */
#ifndef PERCH_TEST_ETW_FAKE_H
#define PERCH_TEST_ETW_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERCH_FAKE_ETW_DEFAULT_ROOT "Software\\Perch\\EtwFake"

/* Deletes every session, the scenario and the ledger under the current root. Returns 0 or a
 * Win32 error. */
uint32_t perch_fake_etw_reset(void);

/* Sets a scenario value (REG_DWORD / REG_SZ / REG_MULTI_SZ from "a\0b\0\0"). value NULL
 * deletes it. Returns 0 or a Win32 error. */
uint32_t perch_fake_etw_set_dword(const char *name, uint32_t value);
uint32_t perch_fake_etw_set_string(const char *name, const char *value);
uint32_t perch_fake_etw_set_multi(const char *name, const char *values);

/* Registers a running session owned by someone else (owner: an image name such as
 * "xperf.exe"), as if another program had started it. kernel_logger: the NT Kernel Logger's
 * GUID and modes. log_file may be NULL. Returns 0 or a Win32 error. */
uint32_t perch_fake_etw_plant(const char *name, const char *owner, const char *log_file,
                              bool kernel_logger);

/* What the fake knows of a running session. */
typedef struct perch_fake_etw_session_info {
    uint32_t logger_id;
    uint32_t owner_pid;
    char owner[260];
    uint32_t log_file_mode;
    uint32_t enable_flags;
    uint32_t group_mask[8];
    uint32_t stack_events; /* CLASSIC_EVENT_IDs set by TraceStackTracingInfo */
    uint32_t pmc_counters; /* ULONGs set by TracePmcCounterListInfo */
    uint32_t pmc_events;   /* CLASSIC_EVENT_IDs set by TracePmcEventListInfo */
    uint32_t lbr_filter;
    uint32_t lbr_events; /* HookIds set by TraceLbrEventListInfo */
    uint32_t delivered;  /* events handed to a callback so far */
    bool replay_done;    /* the replay reached the end of its .etl */
} perch_fake_etw_session_info;

/* True (and *info filled, may be NULL) when a session of that name is running. */
bool perch_fake_etw_session(const char *name, perch_fake_etw_session_info *info);

/* Number of running sessions whose name starts with prefix ("" counts all). */
unsigned perch_fake_etw_count(const char *prefix);

/* The ledger, one entry per line ("start name=... pid=... mode=0x..."), into out[n]. Returns
 * the number of entries. */
unsigned perch_fake_etw_ledger(char *out, size_t n);

/* Waits up to timeout_ms for the named session's replay to reach its end. */
bool perch_fake_etw_wait_replay(const char *name, uint32_t timeout_ms);

/* Writes a `perch synth` trace (seed, about bytes long) to path, for a Replay. Returns 0 or
 * a PERCH_E* code. */
int perch_fake_etw_write_synth(const char *path, uint64_t seed, uint64_t bytes);

#endif
