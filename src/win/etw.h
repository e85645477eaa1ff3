/*
 * Perch's live kernel session on Windows: the internal API perchd uses (PLAN seam 6).
 *
 * Three layers, each usable alone:
 *   - the session (etw_session.c, etw_features.c): configure and start a kernel-logger
 *     session, preferring a private system-logger session (Windows 8+,
 *     EVENT_TRACE_SYSTEM_LOGGER_MODE, kernel groups enabled through TraceSetInformation) and
 *     falling back to the NT Kernel Logger only where the private session is refused. It
 *     queries before it starts, never stops a session it does not own (a busy NT Kernel Logger
 *     is reported with what ETW says about its holder), and restarts a stale Perch session
 *     left by a crashed run, recognised by its name. Every optional feature (stacks, sample
 *     interval, PMC sources, PMC counters on CSwitch, LBR) is enabled one by one; a refusal is
 *     reported by feature name and reason and the rest keeps working. Loss counters come from
 *     ControlTrace(EVENT_TRACE_CONTROL_QUERY).
 *   - the consumer (etw_consumer.c): a thread that opens the session in real time
 *     (PROCESS_TRACE_MODE_EVENT_RECORD | PROCESS_TRACE_MODE_RAW_TIMESTAMP) and runs
 *     ProcessTrace; its EventRecordCallback converts each EVENT_RECORD into a perch_event
 *     (etw_convert.c) and try_pushes it into a perch_event_queue. It never blocks: a full
 *     queue drops the record and counts it (live.queue_full).
 *   - the supervisor (etw_live.c): session + consumer, polled about once a second by the
 *     engine: accumulates losses across restarts, notices a session stopped from outside
 *     (ProcessTrace returned or the query failed), restarts it with backoff and reports the
 *     gap's duration so the engine can put it in the ledger.
 *
 * Nothing here has run on Windows: only under Wine, against the fake advapi32 in
 * tests/win/etw_fake and against Wine's stub (docs/etw-session.md). Strings are UTF-8.
 * Sentences for users ("why", "message", feature reasons) never end with a newline.
 */
#ifndef PERCH_WIN_ETW_H
#define PERCH_WIN_ETW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/event_queue.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The private session's name. A session of this name found running at start is a stale Perch
 * session (an earlier perchd that crashed) and is stopped and started again. */
#define PERCH_ETW_SESSION_NAME       "Perch Kernel Session"
#define PERCH_ETW_KERNEL_LOGGER_NAME "NT Kernel Logger"

/* --- configuration ------------------------------------------------------------------------ */

/* Kernel event groups: X(suffix, config name, mask index, bit). Mask 0 is the classic
 * EVENT_TRACE_FLAG_* word (also EVENT_TRACE_PROPERTIES.EnableFlags); mask 1 holds extended
 * groups (PERF_PMC_PROFILE), enabled through TraceSetInformation only. */
#define PERCH_ETW_GROUP_MAP(X)                                                                     \
    X(PROCESS, "process", 0, 0x00000001u)                                                          \
    X(THREAD, "thread", 0, 0x00000002u)                                                            \
    X(IMAGE_LOAD, "image_load", 0, 0x00000004u)                                                    \
    X(CSWITCH, "cswitch", 0, 0x00000010u)                                                          \
    X(DISPATCHER, "dispatcher", 0, 0x00000800u)                                                    \
    X(PROFILE, "profile", 0, 0x01000000u)                                                          \
    X(PMC_PROFILE, "pmc_profile", 1, 0x00000400u)

enum {
#define PERCH_ETW_GROUP_BIT(s, name, mask, bit) PERCH_ETW_GROUP_BIT_##s,
    PERCH_ETW_GROUP_MAP(PERCH_ETW_GROUP_BIT)
#undef PERCH_ETW_GROUP_BIT
        PERCH_ETW_GROUP_COUNT
};
#define PERCH_ETW_GROUP_PROCESS     (1u << PERCH_ETW_GROUP_BIT_PROCESS)
#define PERCH_ETW_GROUP_THREAD      (1u << PERCH_ETW_GROUP_BIT_THREAD)
#define PERCH_ETW_GROUP_IMAGE_LOAD  (1u << PERCH_ETW_GROUP_BIT_IMAGE_LOAD)
#define PERCH_ETW_GROUP_CSWITCH     (1u << PERCH_ETW_GROUP_BIT_CSWITCH)
#define PERCH_ETW_GROUP_DISPATCHER  (1u << PERCH_ETW_GROUP_BIT_DISPATCHER)
#define PERCH_ETW_GROUP_PROFILE     (1u << PERCH_ETW_GROUP_BIT_PROFILE)
#define PERCH_ETW_GROUP_PMC_PROFILE (1u << PERCH_ETW_GROUP_BIT_PMC_PROFILE)

/* Kernel events that can carry a stack walk, PMC counters or LBR:
 * X(suffix, config name, HookId). */
#define PERCH_ETW_EVENT_MAP(X)                                                                     \
    X(SAMPLED_PROFILE, "sampled_profile", 0x0F2Eu)                                                 \
    X(PMC_INTERRUPT, "pmc_interrupt", 0x0F2Fu)                                                     \
    X(CSWITCH, "cswitch", 0x0524u)                                                                 \
    X(READY_THREAD, "ready_thread", 0x0532u)

enum {
#define PERCH_ETW_EVENT_BIT(s, name, hook) PERCH_ETW_EVENT_BIT_##s,
    PERCH_ETW_EVENT_MAP(PERCH_ETW_EVENT_BIT)
#undef PERCH_ETW_EVENT_BIT
        PERCH_ETW_EVENT_COUNT
};
#define PERCH_ETW_EVENT_SAMPLED_PROFILE (1u << PERCH_ETW_EVENT_BIT_SAMPLED_PROFILE)
#define PERCH_ETW_EVENT_PMC_INTERRUPT   (1u << PERCH_ETW_EVENT_BIT_PMC_INTERRUPT)
#define PERCH_ETW_EVENT_CSWITCH         (1u << PERCH_ETW_EVENT_BIT_CSWITCH)
#define PERCH_ETW_EVENT_READY_THREAD    (1u << PERCH_ETW_EVENT_BIT_READY_THREAD)

/* LBR filter bits (TRACE_LBR_CONFIGURATION): X(config name, bit). */
#define PERCH_ETW_LBR_FILTER_MAP(X)                                                                \
    X("kernel", 0x001u)                                                                            \
    X("user", 0x002u)                                                                              \
    X("jcc", 0x004u)                                                                               \
    X("near_rel_call", 0x008u)                                                                     \
    X("near_ind_call", 0x010u)                                                                     \
    X("near_ret", 0x020u)                                                                          \
    X("near_ind_jmp", 0x040u)                                                                      \
    X("near_rel_jmp", 0x080u)                                                                      \
    X("far_branch", 0x100u)                                                                        \
    X("callstack", 0x200u)

/* Ranges the OS documents (docs/etw-session.md). */
#define PERCH_ETW_INTERVAL_MIN  1221u     /* 100 ns units: 0.1221 ms */
#define PERCH_ETW_INTERVAL_MAX  10000000u /* 1 s */
#define PERCH_ETW_BUFFER_KB_MIN 4u
#define PERCH_ETW_BUFFER_KB_MAX 1024u
#define PERCH_ETW_MAX_PMC_NAMES 8u
#define PERCH_ETW_NAME_MAX      128u /* bytes of a session or profile source name */

typedef struct perch_etw_config {
    size_t sz;                             /* sizeof(perch_etw_config) */
    char session_name[PERCH_ETW_NAME_MAX]; /* "" → PERCH_ETW_SESSION_NAME */
    uint32_t groups;                       /* PERCH_ETW_GROUP_* */
    uint32_t stacks;                       /* PERCH_ETW_EVENT_*: events that get a stack walk */
    uint32_t sample_interval;              /* 100 ns units; 0 leaves the system's setting alone */
    /* PMC overflow sampling: sources by name (as TraceProfileSourceListInfo lists them, e.g.
     * "BranchMispredictions"), each sampled every pmc_interval events. Needs the
     * pmc_profile group. */
    char pmc_sources[PERCH_ETW_MAX_PMC_NAMES][PERCH_ETW_NAME_MAX];
    uint32_t pmc_source_count;
    uint32_t pmc_interval; /* 0 leaves the system's setting alone */
    /* PMC counters read on every CSwitch (TracePmcCounterListInfo + TracePmcEventListInfo). */
    char cswitch_counters[PERCH_ETW_MAX_PMC_NAMES][PERCH_ETW_NAME_MAX];
    uint32_t cswitch_counter_count;
    bool lbr;               /* Last Branch Records on lbr_events */
    uint32_t lbr_filter;    /* PERCH_ETW_LBR_FILTER_MAP bits */
    uint32_t lbr_events;    /* PERCH_ETW_EVENT_* */
    uint32_t buffer_kb;     /* per buffer; 0 → 64 */
    uint32_t min_buffers;   /* 0 → 2 per CPU, at least 16 */
    uint32_t max_buffers;   /* 0 → min_buffers + 64 */
    uint32_t flush_seconds; /* 0 → 1 */
    bool no_kernel_logger;  /* never fall back to the NT Kernel Logger */
} perch_etw_config;

/* Perch's defaults: process, thread, image load, cswitch, dispatcher and profile groups;
 * stacks on SampledProfile, CSwitch and ReadyThread; 1 ms sampling; no PMC, no LBR; 64 KiB
 * buffers. */
void perch_etw_config_defaults(perch_etw_config *cfg);

/* Checks every field against the ranges above. Returns 0, or PERCH_EINVAL with a sentence
 * naming the field, the value and the range in why[n] (may be NULL). */
int perch_etw_config_check(const perch_etw_config *cfg, char *why, size_t n);

/* Name tables for configuration parsers: the config name of bit i, or NULL past the end. */
const char *perch_etw_group_name(unsigned i);
const char *perch_etw_event_name(unsigned i);
const char *perch_etw_lbr_filter_name(unsigned i, uint32_t *bit);

/* Parses a comma-separated list of names of one table into a bit set: 0 or PERCH_EINVAL
 * with a sentence naming the unknown name. "" and "none" give 0. */
int perch_etw_parse_groups(const char *list, uint32_t *out, char *why, size_t n);
int perch_etw_parse_events(const char *list, uint32_t *out, char *why, size_t n);
int perch_etw_parse_lbr_filter(const char *list, uint32_t *out, char *why, size_t n);

/* --- the session --------------------------------------------------------------------------- */

typedef enum perch_etw_kind {
    PERCH_ETW_NONE = 0,
    PERCH_ETW_SYSTEM_LOGGER = 1, /* private system-logger session (Windows 8+) */
    PERCH_ETW_KERNEL_LOGGER = 2, /* the NT Kernel Logger */
} perch_etw_kind;

/* Features enabled one by one: X(suffix, name in status and capture). */
#define PERCH_ETW_FEATURE_MAP(X)                                                                   \
    X(GROUPS, "groups")                                                                            \
    X(STACKS, "stacks")                                                                            \
    X(SAMPLE_INTERVAL, "sample_interval")                                                          \
    X(PMC_SOURCES, "pmc_sources")                                                                  \
    X(PMC_INTERVAL, "pmc_interval")                                                                \
    X(CSWITCH_COUNTERS, "cswitch_counters")                                                        \
    X(LBR, "lbr")

typedef enum perch_etw_feature {
#define PERCH_ETW_FEATURE_ENUM(s, name) PERCH_ETW_F_##s,
    PERCH_ETW_FEATURE_MAP(PERCH_ETW_FEATURE_ENUM)
#undef PERCH_ETW_FEATURE_ENUM
        PERCH_ETW_F_COUNT
} perch_etw_feature;

const char *perch_etw_feature_name(perch_etw_feature f);

typedef enum perch_etw_feature_state {
    PERCH_ETW_OFF = 0,     /* not asked for */
    PERCH_ETW_ON = 1,      /* enabled */
    PERCH_ETW_REFUSED = 2, /* asked for, refused: see reason */
} perch_etw_feature_state;

typedef struct perch_etw_feature_status {
    uint8_t state;    /* perch_etw_feature_state */
    int err;          /* PERCH_E* when refused */
    uint32_t win32;   /* the Win32 error ETW returned, 0 when the refusal is Perch's own */
    char reason[200]; /* "TraceSetInformation(TraceLbrConfigurationInfo) failed: error 50
                       * (the request is not supported)" */
} perch_etw_feature_status;

typedef struct perch_etw_start_report {
    perch_etw_kind kind;           /* what is running, PERCH_ETW_NONE when nothing */
    char name[PERCH_ETW_NAME_MAX]; /* its session name */
    bool stale_restarted;          /* a stale Perch session was stopped first */
    bool fell_back;                /* the private session was refused */
    char note[400];                /* why it fell back / what the stale session was / who
                                    * holds the NT Kernel Logger; "" when nothing to say */
    char why[400];                 /* when start failed: the sentence for the status */
    uint32_t max_pmc_counters;     /* TraceMaxPmcCounterQuery; 0 when unknown */
    perch_etw_feature_status features[PERCH_ETW_F_COUNT];
} perch_etw_start_report;

/* One line per feature ("stacks: on", "lbr: refused: ..."), for logs and the capture's
 * session_config text. Returns the length written (truncated to n - 1). */
size_t perch_etw_report_text(const perch_etw_start_report *rep, char *out, size_t n);

typedef struct perch_etw_session perch_etw_session;

/* Starts the session described by cfg (copied; NULL: the defaults). rep (may be NULL) is
 * filled in every case. Returns 0; PERCH_EINVAL (bad config), PERCH_EACCES (not allowed:
 * elevation or SeSystemProfilePrivilege missing), PERCH_EBUSY (the private session was
 * refused and the NT Kernel Logger is held by someone else), PERCH_ENOTSUP (this system's
 * ETW cannot start a kernel session), PERCH_ENOMEM or another mapped Win32 error. On failure
 * nothing Perch started is left running and *out is untouched. */
int perch_etw_session_start(const perch_etw_config *cfg, perch_etw_session **out,
                            perch_etw_start_report *rep);

/* The report of the last (re)start. */
const perch_etw_start_report *perch_etw_session_report(const perch_etw_session *s);
const char *perch_etw_session_name(const perch_etw_session *s);
perch_etw_kind perch_etw_session_kind(const perch_etw_session *s);
const perch_etw_config *perch_etw_session_config(const perch_etw_session *s);

typedef struct perch_etw_losses {
    uint64_t events_lost;           /* EventsLost */
    uint64_t realtime_buffers_lost; /* RealTimeBuffersLost */
    uint64_t log_buffers_lost;      /* LogBuffersLost */
    uint32_t buffers;               /* NumberOfBuffers */
    uint32_t free_buffers;          /* FreeBuffers */
} perch_etw_losses;

/* ControlTrace(EVENT_TRACE_CONTROL_QUERY) of the running session. Returns 0 and fills *out;
 * PERCH_ENOENT when the session no longer exists (stopped from outside), or another error.
 * *out untouched on error. */
int perch_etw_session_query(perch_etw_session *s, perch_etw_losses *out);

/* Stops the session if it is still running and still Perch's (the same logger it started).
 * Returns 0, PERCH_ENOENT when it was already gone, or the error of ControlTrace. */
int perch_etw_session_stop(perch_etw_session *s);

/* Stops (if needed) and starts the session again with the same configuration; the report is
 * replaced. Same errors as perch_etw_session_start; on failure the session is stopped. */
int perch_etw_session_restart(perch_etw_session *s);

/* Stops the session (if running) and frees it. Accepts NULL. */
void perch_etw_session_destroy(perch_etw_session *s);

/* PMC sources this machine offers (TraceQueryInformation(TraceProfileSourceListInfo)): calls
 * fn for each with its name, id and interval range. Returns 0 or the error. */
typedef void (*perch_etw_source_fn)(void *ctx, const char *name, uint32_t id, uint32_t min,
                                    uint32_t max);
int perch_etw_list_profile_sources(perch_etw_source_fn fn, void *ctx);

/* --- the consumer -------------------------------------------------------------------------- */

typedef struct perch_etw_consumer perch_etw_consumer;

typedef struct perch_etw_consumer_stats {
    uint64_t events;         /* callbacks */
    uint64_t pushed;         /* records accepted by the queue */
    uint64_t queue_full;     /* live.queue_full: dropped, queue full */
    uint64_t oversized;      /* live.oversized: larger than the queue takes */
    uint64_t closed;         /* live.queue_closed: pushed after the queue was closed */
    uint64_t bad_records;    /* live.bad_record: EVENT_RECORDs that could not be converted */
    uint64_t pmc_malformed;  /* live.pmc_malformed: PMC extended items that were unusable */
    uint64_t last_timestamp; /* raw timestamp of the last record */
} perch_etw_consumer_stats;

/* Opens s (real time) and starts the consumer thread. Records go to q (borrowed: it must
 * outlive the consumer; the consumer never closes it). Waits up to 1 s for the first event (the
 * session's header event), so that the trace info is final when it returns; an idle session
 * may deliver none. Returns 0, or the OpenTraceW error (with a sentence in why[n], may be
 * NULL); *out untouched on error. */
int perch_etw_consumer_start(perch_etw_session *s, perch_event_queue *q, perch_etw_consumer **out,
                             char *why, size_t n);

/* Waits up to timeout_ms for ProcessTrace to return. PERCH_ETIMEDOUT while it runs; else 0,
 * with ProcessTrace's result (0 or a PERCH_E*) in *status (may be NULL). */
int perch_etw_consumer_wait(perch_etw_consumer *c, uint32_t timeout_ms, int *status);

/* Counters, callable from any thread while the consumer runs. */
void perch_etw_consumer_get_stats(const perch_etw_consumer *c, perch_etw_consumer_stats *st);

/* The trace info of the session as OpenTraceW reported it (TRACE_LOGFILE_HEADER): build,
 * CPUs, pointer size, clock, start time, derived as perch import derives it from an .etl
 * (perch_pipeline_trace_info). start_raw is the raw timestamp of the session's header event
 * (the first record ETW delivers); when none came, a QPC value read beside the wall clock at
 * OpenTraceW (with that wall clock as the start). source points into the consumer
 * ("live:<session name>"). */
void perch_etw_consumer_trace_info(const perch_etw_consumer *c, perch_trace_info *info);

/* CloseTrace, then waits for the thread. Returns ProcessTrace's result. The queue is not
 * closed. */
int perch_etw_consumer_stop(perch_etw_consumer *c);

/* Stops (if needed) and frees. Accepts NULL. Returns true when ProcessTrace did not return
 * within the stop's wait: the consumer and its thread are then left as they are (never
 * freed), and the thread may still push into the queue, whose owner must neither free it nor
 * give it to another consumer (a queue has one producer). */
bool perch_etw_consumer_destroy(perch_etw_consumer *c);

/* --- the supervisor ------------------------------------------------------------------------ */

typedef struct perch_etw_live perch_etw_live;

typedef enum perch_etw_live_state {
    PERCH_ETW_LIVE_RUNNING = 1, /* session and consumer up */
    PERCH_ETW_LIVE_DOWN = 2,    /* stopped from outside; restarting with backoff */
} perch_etw_live_state;

typedef struct perch_etw_poll {
    uint8_t state;          /* perch_etw_live_state */
    bool went_down;         /* the session was found stopped during this poll */
    bool restarted;         /* a restart succeeded during this poll */
    uint64_t gap_ns;        /* with restarted: how long no events could come */
    uint64_t gap_start_raw; /* the gap in the trace clock (QPC ticks) */
    uint64_t gap_end_raw;
    uint32_t restarts;                 /* since perch_etw_live_start */
    uint32_t next_retry_ms;            /* when DOWN: delay before the next attempt */
    bool no_restart;                   /* DOWN for good: a consumer never returned */
    perch_etw_losses losses;           /* cumulative over every session started */
    perch_etw_consumer_stats consumer; /* cumulative over every consumer */
    char message[400];                 /* a sentence for the log when something happened, else "" */
} perch_etw_poll;

/* Backoff between restart attempts: 1 s doubling to 60 s. */
#define PERCH_ETW_BACKOFF_FIRST_MS 1000u
#define PERCH_ETW_BACKOFF_MAX_MS   60000u

/* Starts the session and its consumer feeding q. Same errors and report as
 * perch_etw_session_start plus the consumer's (then the session is stopped again). */
int perch_etw_live_start(const perch_etw_config *cfg, perch_event_queue *q, perch_etw_live **out,
                         perch_etw_start_report *rep);

/* Called by the engine about once a second (now_ns: perch_monotonic_ns()). Reads the losses,
 * detects an outside stop, and restarts when the backoff allows. Fills *out. Returns 0, or an
 * error only for failures that stop supervision (PERCH_ENOMEM). */
int perch_etw_live_poll(perch_etw_live *l, uint64_t now_ns, perch_etw_poll *out);

const perch_etw_session *perch_etw_live_session(const perch_etw_live *l);
const perch_etw_consumer *perch_etw_live_consumer(const perch_etw_live *l);

/* Stops the consumer and the session, then frees. Accepts NULL. Returns true when a consumer
 * of this supervisor was left running (perch_etw_consumer_destroy): the queue must outlive
 * the process. */
bool perch_etw_live_destroy(perch_etw_live *l);

#ifdef __cplusplus
}
#endif

#endif
