/*
 * What the ETW session, feature, consumer and supervisor files share (src/win/etw*.c): the
 * session object, the EVENT_TRACE_PROPERTIES buffer with room for both names, UTF-8/UTF-16
 * conversion into fixed buffers, and the sentence for a Win32 error.
 */
#ifndef PERCH_WIN_ETW_INTERNAL_H
#define PERCH_WIN_ETW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etw.h"
#include "etw_sdk.h"

/* EVENT_TRACE_PROPERTIES followed by room for the logger name and the log file name, each
 * up to the documented 1024 characters plus the NUL (StartTraceW, ControlTraceW). */
#define PERCH_ETW_NAME_CHARS (PERCH_ETW_MAX_SESSION_NAME + 1u)
typedef struct perch_etw_props {
    EVENT_TRACE_PROPERTIES p;
    WCHAR logger_name[PERCH_ETW_NAME_CHARS];
    WCHAR log_file_name[PERCH_ETW_NAME_CHARS];
} perch_etw_props;

struct perch_etw_session {
    perch_etw_config cfg;
    perch_etw_start_report rep;
    WCHAR name[PERCH_ETW_NAME_CHARS]; /* of the running session */
    TRACEHANDLE handle;
    perch_etw_kind kind;
    bool running;
    /* The system-wide sample interval found before Perch changed it (restored at stop). */
    bool restore_interval;
    TRACE_PROFILE_INTERVAL saved_interval;
};

/* Zeroes *b and sets the sizes and name offsets ControlTraceW and StartTraceW need. */
void perch__etw_props_init(perch_etw_props *b);

/* ControlTraceW(handle or name, QUERY). Returns 0 (and b holds the session), PERCH_ENOENT when
 * no such session runs, or the translated error with the Win32 code in *win32. A success that
 * describes nothing (no buffers, no handle: Wine's stub) counts as PERCH_ENOENT. */
int perch__etw_query(TRACEHANDLE handle, const WCHAR *name, perch_etw_props *b, uint32_t *win32);

/* ControlTraceW(handle or name, STOP): 0, PERCH_ENOENT when it was not running, or the error;
 * ERROR_MORE_DATA (stopped, names did not fit) counts as success. */
int perch__etw_stop(TRACEHANDLE handle, const WCHAR *name, uint32_t *win32);

/* UTF-8 → UTF-16 into out[cap] (NUL-terminated); PERCH_EINVAL when invalid or too long. */
int perch__etw_to_wide(const char *s, WCHAR *out, size_t cap);
/* UTF-16 → UTF-8 into out[cap]; "" when it does not fit or is not valid UTF-16. */
void perch__etw_to_utf8(const WCHAR *s, char *out, size_t cap);

/* A short English description of a Win32 error ETW returns ("access denied"). */
const char *perch__etw_error_text(uint32_t win32);

/* Writes "<call> failed: error <code> (<text>)" into out[n]. */
void perch__etw_say_failed(char *out, size_t n, const char *call, uint32_t win32);

/* Enables every feature of s->cfg on the session just started (etw_features.c), recording
 * each outcome in s->rep.features. groups_in_flags: the classic groups were already enabled
 * through EnableFlags (NT Kernel Logger). Returns 0, or PERCH_ENOTSUP when the kernel groups
 * themselves could not be enabled (the session is then useless). */
int perch__etw_enable_features(perch_etw_session *s, bool groups_in_flags);

/* The group mask of cfg->groups (PERFINFO_GROUPMASK). */
void perch__etw_group_mask(uint32_t groups, perch_perfinfo_groupmask *mask);

/* Puts back the system-wide sample interval saved by perch__etw_enable_features. */
void perch__etw_restore_interval(perch_etw_session *s);

/* True once the consumer's ProcessTrace returned; then *ns (perch_monotonic_ns) and *raw
 * (QPC) say when. */
bool perch__etw_consumer_ended(const perch_etw_consumer *c, uint64_t *ns, uint64_t *raw);

/* Walks a PROFILE_SOURCE_INFO chain (TraceProfileSourceListInfo) of len bytes, every offset
 * and name bounded by len, calling visit with each source's UTF-8 name until it returns false. */
typedef bool (*perch__etw_source_visit)(void *ctx, const char *name,
                                        const PROFILE_SOURCE_INFO *info);
void perch__etw_walk_sources(const uint8_t *buf, ULONG len, perch__etw_source_visit visit,
                             void *ctx);

/* For tests: how long a stop waits for ProcessTrace to return (0: the default, 30 s). */
void perch__etw_consumer_stop_timeout(uint32_t ms);

/* For tests and the benchmark: a consumer with no session, trace or thread, whose callback
 * (perch__etw_on_event, with EVENT_RECORD.UserContext = the consumer) is driven by hand.
 * Freed with perch_etw_consumer_destroy. */
int perch__etw_consumer_detached(perch_event_queue *q, unsigned pointer_size,
                                 perch_etw_consumer **out);

/* The EventRecordCallback every consumer registers. */
void WINAPI perch__etw_on_event(PEVENT_RECORD r);

#endif
