/*
 * The model's output records and the sink that receives them.
 *
 * The model (src/core/model) turns decoded events into these records and hands each one to a
 * perch_sink: a slice when it closes, a sample when its stack is assembled, a stack the first
 * time it is interned. Everything downstream is a sink: the capture writer stores the records,
 * the capture reader replays them into another sink, the report and the exports aggregate
 * them. So a report computed from an .etl and from a capture of it see the same record stream.
 *
 * Process, thread and module records are upserts keyed by `key`: the producer sends an
 * entity's record as soon as it knows the entity (a provisional one made from a reference
 * included), before any record that refers to its key (a thread's process_key, a module's
 * process_key, a sample's thread_key and module_key, a slice's or LBR record's thread_key),
 * and sends the full, current record again whenever it changes (thread name, pid learned,
 * end, exit status, command line, PDB identity, unload). A consumer keys its tables by `key`
 * and lets a later record replace the earlier one; the last record of a key is the entity's
 * final state. The model sends nothing for an entity after its final record (its end, its
 * replacement by a reused id, or the end of the trace).
 *
 * Entities are referred to by keys, not by OS ids, because pids and tids are reused: a key is
 * unique within one trace and never reused. Key 0 means "none/unknown". All strings are UTF-8,
 * borrowed for the duration of the callback. Timestamps are raw clock ticks of the trace
 * (convert with perch_trace_info).
 */
#ifndef PERCH_RECORDS_H
#define PERCH_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_trace_info {
    const char *source;      /* "etl:<file name>", "live:<session>", "synth" */
    uint32_t os_build;       /* e.g. 18362; 0 when unknown */
    uint32_t cpu_count;
    uint32_t pointer_size;   /* 4 or 8 */
    uint32_t clock_type;     /* 1 QPC, 2 system time, 3 CPU cycles */
    uint64_t perf_freq;      /* raw clock ticks per second */
    uint64_t start_filetime; /* wall clock start, FILETIME (100 ns since 1601) */
    uint64_t end_filetime;
    uint64_t start_raw;      /* raw timestamp that corresponds to start_filetime */
    uint64_t events_lost;    /* reported by the session / file header */
    uint64_t buffers_lost;
    const char *session_config; /* free text (enabled groups, intervals); may be NULL */
} perch_trace_info;

/* Flags shared by processes and threads. */
#define PERCH_ENTITY_RUNDOWN 0x1u    /* existed before the trace (seen via DCStart) */
#define PERCH_ENTITY_STARTED 0x2u    /* its Start event was seen */
#define PERCH_ENTITY_ENDED 0x4u      /* its End event was seen */
#define PERCH_ENTITY_PROVISIONAL 0x8u /* created from a reference only (no event of its own) */

typedef struct perch_process_rec {
    uint64_t key;
    uint32_t pid;
    uint32_t parent_pid;
    uint32_t session_id;
    int32_t exit_status;
    uint32_t flags;          /* PERCH_ENTITY_* */
    uint64_t start_ts;       /* 0 when before the trace */
    uint64_t end_ts;         /* 0 when still running at the end */
    const char *image_name;  /* "svchost.exe"; "" when unknown */
    const char *command_line;
} perch_process_rec;

typedef struct perch_thread_rec {
    uint64_t key;
    uint64_t process_key;    /* 0 when the owning process is unknown */
    uint32_t tid;
    uint32_t pid;            /* UINT32_MAX when unknown */
    uint32_t flags;          /* PERCH_ENTITY_* */
    uint64_t start_ts;
    uint64_t end_ts;
    const char *name;        /* "" when unnamed */
} perch_thread_rec;

typedef struct perch_module_rec {
    uint64_t key;
    uint64_t process_key;    /* 0 for kernel/system-wide modules */
    uint32_t pid;            /* 0 for kernel modules */
    uint64_t base;
    uint64_t size;
    uint64_t load_ts;        /* 0 when loaded before the trace */
    uint64_t unload_ts;      /* 0 when still loaded at the end */
    uint32_t checksum;
    uint32_t time_date_stamp;
    const char *path;        /* as logged: \Device\HarddiskVolume3\Windows\System32\ntdll.dll */
    bool has_pdb;
    perch_guid pdb_guid;
    uint32_t pdb_age;
    const char *pdb_name;    /* "" when unknown */
} perch_module_rec;

#define PERCH_MAX_PMC 8

/* Slice flags */
#define PERCH_SLICE_OPEN_START 0x1u /* switched in before the trace (or before the CPU's first switch) */
#define PERCH_SLICE_OPEN_END 0x2u   /* still running at the end of the trace: closed at trace end */
#define PERCH_SLICE_STALE 0x4u      /* closed because another thread switched out on its CPU */
#define PERCH_SLICE_HAS_READY 0x8u  /* ready_ts is valid */

typedef struct perch_slice_rec {
    uint64_t thread_key;     /* the idle thread (tid 0) has its own key per CPU */
    uint32_t tid;
    uint16_t cpu;
    uint16_t flags;          /* PERCH_SLICE_* */
    uint64_t start_ts;       /* switch-in */
    uint64_t end_ts;         /* switch-out */
    uint64_t ready_ts;       /* last ReadyThread of this thread before start_ts */
    int8_t priority;         /* at switch-in */
    int8_t wait_reason;      /* at switch-out (OldThreadWaitReason); -1 when unknown */
    int8_t wait_mode;        /* at switch-out; -1 when unknown */
    int8_t state;            /* OldThreadState at switch-out; -1 when unknown */
    uint8_t pmc_count;       /* counter deltas over the slice */
    uint64_t pmc_delta[PERCH_MAX_PMC];
} perch_slice_rec;

typedef enum perch_sample_kind {
    PERCH_SAMPLE_TIMER = 0, /* SampledProfile */
    PERCH_SAMPLE_PMC = 1,   /* PmcCounterProf (PMC overflow), with profile_source */
} perch_sample_kind;

typedef struct perch_sample_rec {
    uint64_t thread_key;
    uint32_t tid;
    uint16_t cpu;
    uint8_t kind;            /* perch_sample_kind */
    uint8_t flags;           /* SampledProfile flags byte (DPC, ISR, priority) */
    uint16_t profile_source; /* PMC samples */
    uint64_t ts;
    uint64_t ip;
    uint64_t module_key;     /* module containing ip at ts (time-aware map); 0 = none */
    uint32_t stack_id;       /* 0 = no stack */
    uint32_t count;          /* SampledProfile Count (usually 1) */
} perch_sample_rec;

/* A distinct interned stack: frames innermost first, the kernel part then the user part. */
typedef struct perch_stack_rec {
    uint32_t id;             /* 1-based, dense, in first-seen order */
    uint32_t frame_count;
    uint32_t kernel_frames;  /* length of the kernel part (the leading frames) */
    const uint64_t *frames;
} perch_stack_rec;

/* LBR record: branches most recent first. */
typedef struct perch_lbr_rec {
    uint64_t thread_key;
    uint32_t tid;
    uint32_t pid;
    uint64_t ts;             /* the timestamp of the event it belongs to */
    uint32_t filters;
    uint32_t branch_count;
    const uint64_t *from;
    const uint64_t *to;
} perch_lbr_rec;

/* A named count of something not turned into model data ("decode.short_payload",
 * "stack.orphan_user", "cswitch.stale_old_thread", "etl.events_lost", ...). */
typedef struct perch_ledger_rec {
    const char *reason;
    uint64_t count;
} perch_ledger_rec;

/* A named statistic about the input ("records.total", "kind.SampledProfile", ...): facts
 * that are not model data and not losses, kept so a capture reproduces the same report. */
typedef struct perch_stat_rec {
    const char *name;
    uint64_t value;
} perch_stat_rec;

/* PMC counter i (as it rides on events and in slice deltas) is called names[i]. */
typedef struct perch_counters_rec {
    uint32_t count;
    const char *const *names;
} perch_counters_rec;

/* Function names for a module, from its PDB, exports or .pdata (perch symbolize) or from
 * DbgHelp (perchd): the addresses [span_rva, span_rva + span_size) of module module_key lie
 * in the function at func_rva (func_size bytes) called name, a name that came from source
 * (perch_sym_source, include/perch/sym.h). A producer sends only the runs its frames hit,
 * each once, after the module's record and before finish. The names hold for every module
 * with the same identity as module_key (PDB name, GUID and age, else image name, stamp and
 * size: the same file loaded in another process). */
typedef struct perch_symbol_rec {
    uint64_t module_key;
    uint32_t span_rva, span_size;
    uint32_t func_rva, func_size;
    uint8_t source;
    const char *name;
} perch_symbol_rec;

/* The receiver of model output. Every callback may be NULL (ignored). Each returns 0 or a
 * negative PERCH_E*; the first error stops the producer, which returns it. Pointers in the
 * records are borrowed for the duration of the call. Order guarantees: trace_info first, and
 * once; an entity's first record before any record naming its key (above); a stack before the
 * first sample that uses it, stack ids dense from 1 (a sink attached to the live engine late
 * gets the model's ids instead: perch_live_attach); ledger and stat entries, each name once
 * and valid UTF-8, then finish, last. Replaying a version
 * 1 capture keeps only the order within each record type (entities then arrive before the
 * data chunks written after them, not necessarily before every reference). */
typedef struct perch_sink {
    void *ctx;
    int (*trace_info)(void *ctx, const perch_trace_info *info);
    int (*process)(void *ctx, const perch_process_rec *rec);
    int (*thread)(void *ctx, const perch_thread_rec *rec);
    int (*module)(void *ctx, const perch_module_rec *rec);
    int (*counters)(void *ctx, const perch_counters_rec *rec);
    int (*stack)(void *ctx, const perch_stack_rec *rec);
    int (*slice)(void *ctx, const perch_slice_rec *rec);
    int (*sample)(void *ctx, const perch_sample_rec *rec);
    int (*lbr)(void *ctx, const perch_lbr_rec *rec);
    int (*ledger)(void *ctx, const perch_ledger_rec *rec);
    int (*stat)(void *ctx, const perch_stat_rec *rec);
    int (*finish)(void *ctx);
    int (*symbol)(void *ctx, const perch_symbol_rec *rec); /* before finish */
    /* Optional, for a sink whose own work per sample and slice is small beside decoding them
     * (gecko's sample log, the report): true lets a capture reader decode sample and slice
     * chunks (and stack and LBR chunks the sink has no callback for, only to check them) on a
     * second thread ahead of its walk, reading its input from both threads (capture.h). Every
     * callback still runs on the caller's thread, with the same records in the same order,
     * and every stop is the one-thread walk's. */
    bool decode_ahead;
    /* Optional, for a sink that takes no stack, slice, sample or LBR record and that a second
     * replay of the same capture follows (chrome's first pass, which only gathers entities):
     * true lets a capture reader pass over those chunks' payloads unread (their headers
     * checked: the length within the limit and the input); the next replay reads, checks and
     * decodes them. A bad CRC or a malformed record in such a chunk then stops only the next
     * replay, which has seen fewer entities. */
    bool skip_events;
} perch_sink;

/* A wrapper that an owner of several outputs (rotated capture files, flight-recorder
 * snapshots) puts in front of each output's writer, e.g. to add a symbol chunk at its end
 * (perch_symworker_names, include/perch/sym.h). open fills *out with a sink that forwards to
 * inner (copied) and makes *state; the owner then writes the output only through *out, its
 * finish included, and calls close(ctx, state) once the output is closed, also when it failed
 * or was never finished. open NULL: no wrapper. open returns 0 or PERCH_ENOMEM (out and state
 * untouched on error). */
typedef struct perch_sink_wrap {
    void *ctx;
    int (*open)(void *ctx, const perch_sink *inner, perch_sink *out, void **state);
    void (*close)(void *ctx, void *state);
} perch_sink_wrap;

#ifdef __cplusplus
}
#endif

#endif
