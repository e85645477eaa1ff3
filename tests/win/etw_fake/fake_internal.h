/*
 * What the fake advapi32 files share: the registry-backed system-wide state (fake_state.c),
 * one session's persisted record, scenario lookups, and the EVENT_RECORD builder used by the
 * replay (fake_record.c).
 *
 * Every source file of the fake defines _WMI_SOURCE_ before the Windows headers so that the
 * ETW functions it defines are not declared dllimport.
 */
#ifndef PERCH_TEST_ETW_FAKE_INTERNAL_H
#define PERCH_TEST_ETW_FAKE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "etw_sdk.h"
#include "perch/etl.h"

#define FAKE_NAME_CHARS 1025u

/* A running session, stored as the REG_BINARY "State" of <root>\Sessions\<name>. */
typedef struct fake_session {
    uint32_t size;      /* sizeof(fake_session): a layout check */
    uint32_t logger_id; /* never reused within a root */
    uint32_t owner_pid;
    uint32_t log_file_mode;
    uint32_t enable_flags;
    uint32_t buffer_kb, min_buffers, max_buffers, flush_timer, clock;
    GUID guid;
    uint64_t start_filetime;
    uint32_t group_mask[PERCH_PERF_NUM_MASKS];
    uint32_t stack_events, pmc_counters, pmc_events, lbr_filter, lbr_events;
    uint32_t pmc_set; /* TracePmcCounterListInfo / TracePmcEventListInfo done (bits 0/1) */
    uint32_t delivered, replay_done;
    uint64_t events_lost, rt_buffers_lost; /* losses the replay itself caused */
    WCHAR owner[260];
    WCHAR log_file[260];
} fake_session;

/* "Software\\Perch\\EtwFake", or PERCH_FAKE_ETW_ROOT when set (read once per process). */
const WCHAR *fake_root(void);

/* Serialises the read-modify-write of the shared state across processes. */
void fake_lock(void);
void fake_unlock(void);

/* Looks a session up by name (case-insensitive, like ETW) or by logger id (name NULL).
 * Returns true and fills *s (and name_out[FAKE_NAME_CHARS] when not NULL). Locked inside. */
bool fake_find(const WCHAR *name, uint32_t logger_id, fake_session *s, WCHAR *name_out);

/* Stores *s under name, creating the key when needed. Call with the lock held. */
uint32_t fake_store(const WCHAR *name, const fake_session *s);
/* Removes the session's key. Call with the lock held. */
uint32_t fake_remove(const WCHAR *name);
/* A fresh logger id. Call with the lock held. */
uint32_t fake_next_logger_id(void);
/* True when a running session uses guid as its session GUID. Call with the lock held. */
bool fake_guid_running(const GUID *guid);
/* Counts running sessions whose log file mode has any bit of mode_bits (0: all). */
unsigned fake_count_sessions(uint32_t mode_bits);

/* Appends one ledger entry (printf-style, UTF-8). Takes the lock itself. */
void fake_ledger(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Scenario values under <root>\Scenario. */
uint32_t fake_scenario_dword(const char *name, uint32_t fallback);
bool fake_scenario_string(const char *name, char *out, size_t cap);
/* The Win32 code a "Refuse" entry of that name asks for, or 0. */
uint32_t fake_refusal(const char *name);

/* UTF-16 → UTF-8 for ledger text. */
void fake_utf8(const WCHAR *w, char *out, size_t cap);

/* This process's image name (for a session's owner). */
void fake_self_image(WCHAR *out, size_t cap);

/* Builds the EVENT_RECORD the OS would deliver for ev: items[] (cap entries) receives the
 * extended data items, user_context goes into UserContext. filetime_header, when not NULL,
 * converts the raw timestamp to FILETIME (a consumer without PROCESS_TRACE_MODE_RAW_TIMESTAMP). */
void fake_build_record(const perch_event *ev, uint16_t logger_id, void *user_context,
                       const perch_etl_header *filetime_header,
                       EVENT_HEADER_EXTENDED_DATA_ITEM *items, unsigned cap, EVENT_RECORD *r);

/* The name of a TRACE_INFO_CLASS ("TraceStackTracingInfo"), or NULL when the fake does not
 * know it. */
const char *fake_info_class_name(TRACE_INFO_CLASS c);

#endif
