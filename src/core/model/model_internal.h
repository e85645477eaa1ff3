/*
 * The model's internal state, shared by its files: entities.c (processes, threads), slices.c
 * (CSwitch / ReadyThread), samples.c (samples waiting for their stack parts), intern.c (the
 * stack table), modules.c (address maps), counters.c (ledger and statistics) and model.c
 * (entry points and dispatch). Everything is indexed by u32 positions in capped arrays, never
 * by pointers, so arrays can grow.
 */
#ifndef PERCH_MODEL_INTERNAL_H
#define PERCH_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/hmap.h"
#include "model/module_index.h"
#include "perch/decode.h"
#include "perch/model.h"
#include "perch/records.h"

/* On a function of a path taken rarely (growth, a miss): kept out of its hot caller, whose
 * registers then need no saving on every call. */
#define PERCH_NOINLINE __attribute__((noinline))

#define NONE32      UINT32_MAX
#define UNKNOWN_PID UINT32_MAX

/* Caps (every growable array has one). */
#define MAX_ENTITIES                (1u << 22) /* hard ceiling of opts.max_entities */
#define DEFAULT_MAX_ENTITIES        (1u << 20)
#define DEFAULT_MAX_MODULES_PER_MAP (1u << 16)
#define MAX_CPUS                    4096u
#define MAX_MODULES_PER_MAP         (1u << 20)
#define MAX_NAME_BYTES              4096u
#define MAX_PARTS                   (1u << 22)
#define MAX_PART_FRAMES             4096u
#define MAX_ASSEMBLED_FRAMES        (MAX_PART_FRAMES * 64u) /* one sample's stack, all parts */
#define MAX_STACKS                  (1u << 24)
#define MAX_STACK_FRAMES            (1u << 28)
/* The stack table is a window: when a new stack would take the frame pool past this many frames
 * (8 MiB), the table is forgotten (not the ids, which stay dense) and a stack seen again gets
 * a new id. Keeps memory flat on traces whose distinct stacks keep growing. */
#define STACK_WINDOW_FRAMES (1u << 20)
/* The frame pool holds a window's frames and one header word per stack: it grows to this many
 * words (a window of stacks of 8 frames or more) and only past it for smaller stacks. */
#define STACK_POOL_WORDS (STACK_WINDOW_FRAMES + STACK_WINDOW_FRAMES / 8)
#define MAX_DEFS         (1u << 22) /* definitions remembered at one timestamp */
#define MAX_GROUPS       (1u << 22) /* sample groups; samples too */
/* The window queues (perch_model.queues): by the wait of their groups' windows. */
#define STACK_WAIT       0u
#define KERNEL_WAIT      1u
#define FRAME_CLASSES    10u        /* frame blocks of 8 << c frames, up to MAX_PART_FRAMES */
#define MAX_LBR          1024u
#define TID_CACHE        1024u
/* Windows thread ids are multiples of 4. */
#define TID_SLOT(tid)     (((tid) >> 2) % TID_CACHE)
#define KIND_CACHE_GROUPS 32u

/* Counters: X(enum, name, ledger?). Ledger entries are things that did not become model data;
 * the others are statistics. */
#define MODEL_COUNTER_MAP(X)                                                                       \
    X(RECORDS, "records.total", 0)                                                                 \
    X(DECODED, "decode.decoded", 0)                                                                \
    X(DECODE_UNKNOWN, "decode.unknown", 0)                                                         \
    X(DECODE_NEWER, "decode.newer_version", 0)                                                     \
    X(DECODE_ERRORS, "decode.errors", 0)                                                           \
    X(TIME_ORDER, "model.time_order", 1)                                                           \
    X(SAMPLES, "samples.total", 0)                                                                 \
    X(SAMPLES_PMC, "samples.pmc", 0)                                                               \
    X(SAMPLES_WITH_STACK, "samples.with_stack", 0)                                                 \
    X(SAMPLE_NO_STACK, "sample.no_stack", 1)                                                       \
    X(SAMPLE_STACK_UNRESOLVED, "sample.stack_unresolved", 1)                                       \
    X(STACK_MERGED, "stack.merged", 0)                                                             \
    X(STACK_KERNEL_ONLY, "stack.kernel_only", 0)                                                   \
    X(STACK_USER_ONLY, "stack.user_only", 0)                                                       \
    X(FRAMES_TOTAL, "stack.frames_total", 0)                                                       \
    X(STACKS_DISTINCT, "stack.distinct", 0)                                                        \
    X(STACK_WINDOWS, "stack.window_restarts", 0)                                                   \
    X(PARTS_WALK, "stack.parts_walk", 0)                                                           \
    X(PARTS_KEY_KERNEL, "stack.parts_key_kernel", 0)                                               \
    X(PARTS_KEY_USER, "stack.parts_key_user", 0)                                                   \
    X(PART_ORPHAN, "stack.orphan_part", 1)                                                         \
    X(KEY_UNRESOLVED, "stack.key_unresolved", 1)                                                   \
    X(PART_TOO_LONG, "stack.part_too_long", 1)                                                     \
    X(STACK_TOO_LONG, "stack.too_long", 1)                                                         \
    X(KEY_WAIT_DROPPED, "stack.key_wait_dropped", 1)                                               \
    X(DEFS_DROPPED, "stack.key_def_dropped", 1)                                                    \
    X(EMIT_USER_ARRIVED, "stack.emit.user_part", 0)                                                \
    X(EMIT_WAIT_TIME, "stack.emit.wait_time", 0)                                                   \
    X(EMIT_THREAD_EXIT, "stack.emit.thread_exit", 0)                                               \
    X(EMIT_END, "stack.emit.end_of_trace", 0)                                                      \
    X(EMIT_COUNT_BOUND, "stack.emit.count_bound", 0)                                               \
    X(SLICES, "slices.total", 0)                                                                   \
    X(SLICE_OPEN_START, "slices.open_start", 0)                                                    \
    X(SLICE_OPEN_END, "slices.open_end", 0)                                                        \
    X(CSWITCH_STALE, "cswitch.stale_old_thread", 1)                                                \
    X(CPU_BUSY_TICKS, "cpu.busy_ticks", 0)                                                         \
    X(CPU_IDLE_TICKS, "cpu.idle_ticks", 0)                                                         \
    X(THREAD_UNKNOWN_PID, "thread.unknown_pid", 1)                                                 \
    X(THREAD_RESTART, "thread.start_without_end", 1)                                               \
    X(PROCESS_RESTART, "process.start_without_end", 1)                                             \
    X(THREADS, "threads.total", 0)                                                                 \
    X(PROCESSES, "processes.total", 0)                                                             \
    X(MODULES, "modules.total", 0)                                                                 \
    X(MODULE_UNLOAD_UNKNOWN, "module.unload_unknown", 1)                                           \
    X(PDB_UNMATCHED, "module.pdb_without_image", 1)                                                \
    X(PDB_OTHER, "module.dbg_id_other_opcode", 0)                                                  \
    X(LBR_RECORDS, "lbr.records", 0)                                                               \
    X(LBR_TOO_LONG, "lbr.too_long", 1)                                                             \
    X(CPU_OUT_OF_RANGE, "model.cpu_out_of_range", 1)                                               \
    X(THREAD_FORGOTTEN, "entity.thread_forgotten", 1)                                              \
    X(THREAD_EVICTED, "entity.thread_evicted", 1)                                                  \
    X(PROCESS_FORGOTTEN, "entity.process_forgotten", 1)                                            \
    X(PROCESS_EVICTED, "entity.process_evicted", 1)                                                \
    X(MODULE_MAP_FULL, "module.map_full", 1)

enum model_counter {
#define MODEL_COUNTER_ENUM(name, text, ledger) MC_##name,
    MODEL_COUNTER_MAP(MODEL_COUNTER_ENUM)
#undef MODEL_COUNTER_ENUM
        MC_COUNT
};

typedef struct named_count {
    char *name;
    uint64_t count;
} named_count;

typedef struct ent_thread {
    uint64_t key;
    uint64_t process_key;
    uint32_t tid, pid;
    uint32_t flags;
    uint32_t next_free;
    uint32_t proc; /* index of its process entity when process_key != 0 */
    uint64_t start_ts, end_ts;
    uint64_t ready_ts;
    uint64_t cpu_ticks;
    char *name;
    perch_thread_rec sent; /* the last record sent (numbers only; see name_changed) */
    bool has_ready;
    bool announced;    /* a record was sent (the sink contract: before any reference) */
    bool name_changed; /* since the last record sent */
    bool emitted;      /* the final record was sent: no further change is sent */
} ent_thread;

typedef struct module {
    perch_module_rec rec; /* rec.path / rec.pdb_name point at the owned strings below */
    char *path;
    char *pdb_name;
    bool announced; /* a record was sent */
    bool dirty;     /* changed since the last record sent */
} module;

/* A lookup's answer: every address in [lo, lo + span) has the module key (0: none). span 0:
 * an empty entry. */
typedef struct modhit {
    uint64_t lo, span, key;
} modhit;

#define MODMAP_HITS 4u
#define MODMAP_SCAN_STEPS 64u
#define MODMAP_INDEX_AFTER 8u
typedef struct modmap {
    module *items; /* sorted by base */
    uint32_t count, cap;
    uint64_t max_size; /* >= every item's size: bounds a lookup's backward scan */
    /* The last lookups' answers, valid until the map changes (samples repeat IPs and modules,
     * and a process's samples come from a few modules at a time); filled round robin. */
    modhit hits[MODMAP_HITS];
    uint32_t hit_next;
    /* For a lookup the scan cannot settle in MODMAP_SCAN_STEPS (a range spanning many others
     * hides the gaps between them from the scan's bound): the items by address. Built once
     * such scans have taken MODMAP_INDEX_AFTER steps per item since the map last changed, so
     * a map that changes between lookups is scanned as before, never rebuilt each time. */
    perch__module_index by_address;
    perch__module_sort *sorted; /* the build's records, kept for the next build */
    uint32_t sorted_cap;
    uint64_t scan_spent; /* steps past MODMAP_SCAN_STEPS since the last change */
    bool by_address_fresh;
} modmap;

typedef struct ent_process {
    perch_process_rec rec; /* strings point at the owned ones below */
    char *image_name;
    char *command_line;
    modmap mods;
    uint64_t cpu_ticks;
    uint32_t next_free;
    perch_process_rec sent; /* the last record sent */
    bool announced;
    bool emitted; /* the final record was sent */
} ent_process;

typedef struct cpu_state {
    bool seen;    /* a CSwitch was seen on this CPU */
    bool running; /* a slice is open */
    uint32_t tid;
    uint32_t thread; /* index into threads */
    uint64_t thread_key;
    uint64_t start_ts;
    uint64_t ready_ts;
    uint16_t flags;
    int8_t priority;
    uint8_t pmc_count;
    uint64_t pmc[PERCH_MAX_PMC];
    uint32_t idle_thread; /* index of this CPU's idle thread entity, NONE32 until needed */
    uint64_t busy_ticks, idle_ticks;
} cpu_state;

/* A sample waiting for its stack parts: a group's second and later ones (the first is inline in
 * the group, with the same fields). */
typedef struct psample {
    perch_sample_rec rec;
    uint32_t thread;  /* index into threads at sample time */
    uint32_t next;    /* next sample of the same group, or next free */
    bool module_done; /* rec.module_key was looked up at sample time */
} psample;

/* One stack part: a StackWalk's frames, or a key reference (frames once resolved). */
typedef struct spart {
    uint64_t ts;        /* the part record's own header timestamp */
    uint64_t stack_key; /* key references */
    uint64_t *frames;
    uint32_t count;
    uint32_t nkernel;   /* frames[0, nkernel) is the kernel segment */
    uint32_t next;      /* next part of the group, or next free */
    uint32_t next_wait; /* next reference waiting on the same key */
    uint32_t prev_wait; /* previous one, NONE32: the first (the wait map's value) */
    uint32_t group;
    uint8_t is_ref, resolved, user_ref;
    uint8_t psz;          /* pointer size of the part record: decides the kernel/user split */
    uint8_t frames_class; /* the block class of frames (frames.c) */
} spart;

/* All samples sharing (timestamp, thread) and the parts that belong to them (S1, S3). A group
 * always has a sample: it is created for its first one. Two cache lines (groups.c aligns them). */
typedef struct sgroup {
    /* The group's first sample, inline (its thread and module_done below): most groups have one,
     * and a group waiting its whole window is then one cold place to read when it is emitted,
     * not two (the group, then the sample's slot). */
    perch_sample_rec first;
    uint64_t ts;
    uint32_t tid;
    uint32_t gen;       /* bumped on release, so queue entries can be checked */
    uint32_t next_hash; /* next group with the same hashed key */
    uint32_t prev_hash; /* previous group with the same hashed key; NONE32: the map's head */
    uint32_t samples, samples_tail; /* the samples after first (m->samples), NONE32: none */
    uint32_t parts, parts_tail;
    uint32_t unresolved;         /* key references still waiting for their definition */
    uint32_t tid_prev, tid_next; /* pending groups of the same thread (thread exit) */
    uint32_t recent_seq;         /* its push number in the recent ring */
    uint32_t first_thread;
    uint32_t qpos; /* the number of its window queue entry (squeue.base) */
    uint8_t live, window_closed, has_user, reason;
    uint8_t queue;  /* index into queues */
    uint8_t hashed; /* in the bucket table (groups.c says when) */
    uint8_t sorted; /* its window queue entry's key is its ts: found by a binary search */
    uint8_t first_module_done;
} sgroup;

/* An entry of the cache in front of tid_groups (groups.c). */
typedef struct tid_head_cache {
    uint32_t tid, slot, gen;
} tid_head_cache;

/* The newest groups, looked up before the bucket table (groups.c). */
#define RECENT_GROUPS 64u
typedef struct recent_group {
    uint64_t ts;
    uint32_t tid;
    uint32_t g1; /* group index + 1; 0: empty or released */
} recent_group;

/* A DbgID_RSDS waiting for its image event (merged traces log it just before the image). */
#define PDB_PENDING 64
typedef struct pdb_pending {
    uint64_t base;
    uint32_t pid, age;
    perch_guid guid;
    char *name; /* NULL: slot free */
} pdb_pending;

/* A queue entry: the group and its generation, and a key that never decreases along a window
 * queue (the group's ts, or the queue's latest key when the group came out of time order).
 * g is QENTRY_GONE once the group left the queue early (samples.c), so the entry is known stale
 * without reading the group. */
#define QENTRY_GONE NONE32
typedef struct qentry {
    uint64_t key;
    uint32_t g, gen;
} qentry;

#define QUEUE_RUN_SORTED 8u /* entries of one key a search of a window queue looks at */
typedef struct squeue {
    qentry *e;
    uint64_t last_key; /* the key of the newest entry */
    uint32_t run;      /* entries pushed with that key in a row */
    uint32_t head, len, cap;
    uint32_t base;     /* the number of the entry at head: entries are numbered as pushed */
    uint32_t gone;     /* entries marked QENTRY_GONE */
    uint32_t ahead;    /* the first entry expiry has not prefetched the group of (samples.c) */
    uint64_t wait;     /* ticks a group waits for its parts */
    uint64_t deadline; /* no queued group expires at or before this time */
} squeue;

typedef struct keydef {
    uint64_t key;
    uint64_t ts; /* timestamp of the first definition at the latest definition time */
    uint64_t *frames;
    uint32_t count;
    uint8_t frames_class;
} keydef;

/* The stack table (intern.c): a slot of the open-addressing table is 0 (empty) or the pool
 * offset + 1 of a stack's entry (a header word, then the frames) with bits of its hash above
 * it; an entry of the cache in front of the table holds the stack's index in the window + 1
 * (0: empty) and its pool offset. */
typedef uint32_t stack_slot;

#define STACK_CACHE_BITS 10u
typedef struct stack_cache_entry {
    uint32_t idx1;
    uint32_t off;
    uint32_t tag; /* 32 bits of the key it was stored under (intern.c) */
} stack_cache_entry;

#define PID_HITS 16u /* a power of two */
typedef struct pid_hit {
    uint32_t pid, idx, gen1;
} pid_hit;

struct perch_model {
    perch_sink sink;
    perch_trace_info info;
    char *source, *session_config;
    perch_model_options opts;
    uint64_t wait_ticks, kernel_wait_ticks;
    int error; /* sticky */
    bool finished;
    bool any_event;
    uint64_t first_ts, last_ts;
    uint64_t next_key;
    uint8_t pointer_size;

    uint64_t counters[MC_COUNT];
    uint64_t by_kind[PERCH_KIND_COUNT];
    uint32_t timer_interval; /* 100 ns units, from the last timer-source SetInterval; 0 unknown */
    named_count *extra;      /* other ledger reasons (decode errors, producer losses) */
    uint32_t extra_count, extra_cap;

    ent_thread *threads;
    uint32_t thread_count, thread_cap, thread_free;
    perch__hmap tid_map;                                         /* tid -> current thread entity */
    uint32_t tid_cache_tid[TID_CACHE], tid_cache_idx[TID_CACHE]; /* front of tid_map */
    uint8_t kind_cache[KIND_CACHE_GROUPS][256]; /* perch_kind + 1 of (group, opcode); 0 unset */
    uint32_t thread_cursor; /* where the next search for a thread to reclaim starts */
    ent_process *procs;
    uint32_t proc_count, proc_cap, proc_free;
    uint32_t proc_cursor;
    perch__hmap pid_map;
    /* pid_map's answers to the last samples' module lookups (modules.c), by pid: an entry is
     * valid when its gen1 is pid_hit_gen + 1; perch__pid_hits_drop drops them all whenever
     * pid_map changes. */
    pid_hit pid_hits[PID_HITS];
    uint32_t pid_hit_gen;
    modmap kernel_mods;
    pdb_pending pdb[PDB_PENDING];
    uint32_t pdb_next;

    cpu_state *cpus;
    uint32_t cpu_cap;

    psample *samples;
    uint32_t sample_count, sample_cap, sample_free, samples_pending;
    spart *parts;
    uint32_t part_count, part_cap, part_free;
    sgroup *groups;   /* in groups_raw, aligned (groups.c) */
    void *groups_raw; /* the allocation */
    uint32_t group_count, group_cap, groups_live;
    /* Free group slots, a stack (the last freed is taken first, as a list through the groups
     * did), apart from the groups: the next slot to be taken is known before it is needed,
     * so it is prefetched (groups.c). Room for group_cap. */
    uint32_t *group_free;
    uint32_t group_free_count;
    uint32_t *group_heads;              /* bucket of mixed (ts, tid) -> first group, NONE32: none */
    uint32_t group_buckets;             /* power of two, > groups_hashed; 0 before the first */
    uint32_t groups_hashed;             /* live groups in the bucket table */
    recent_group recent[RECENT_GROUPS]; /* the last groups created, by push number */
    uint32_t recent_seq;                /* groups pushed so far */
    uint64_t group_max_ts;              /* the latest ts of any group created */
    perch__hmap tid_groups;             /* tid -> first pending group of that thread (groups.c) */
    /* In front of tid_groups: a tid and the slot of its value, by TID_SLOT, valid while its
     * gen is tg_gen, which changes whenever tid_groups gains or loses a key (a thread's first
     * group, a thread exit), as slots may move then. */
    tid_head_cache tg_cache[TID_CACHE];
    uint32_t tg_gen;
    /* Groups in creation order, (gen << 32 | group), by the wait of their window:
     * [STACK_WAIT] groups with a stack part whose thread may run user mode (they wait for
     * their user part), [KERNEL_WAIT] every other (no stack part yet, or a thread that never
     * runs user mode: idle, System), which waits only for a kernel part (samples.c). */
    squeue queues[2];
    squeue key_wait;             /* groups whose window closed while a key reference waits */
    perch__hmap wait_map;        /* stack key -> first waiting reference part */
    keydef *defs;                /* the definitions logged at def_time, the only ones a later */
    uint32_t def_count, def_cap; /* reference can still use (parts.c) */
    uint64_t def_time;
    perch__hmap def_map;                 /* stack key -> defs index */
    uint64_t *frame_free[FRAME_CLASSES]; /* free frame blocks by class (frames.c) */

    uint64_t *frame_pool;
    uint64_t frame_count; /* frames of the window's stacks (STACK_WINDOW_FRAMES) */
    uint64_t pool_used;   /* words of frame_pool in use: frames and one header per stack */
    uint64_t frame_cap;
    stack_slot *slots; /* the stack table, at most half full */
    uint32_t slot_cap; /* power of two, or 0 */
    uint32_t stack_count;
    uint32_t stack_base; /* ids given before the current window (STACK_WINDOW_FRAMES) */
    stack_cache_entry stack_cache[1u << STACK_CACHE_BITS];
    uint64_t *scratch; /* assembly buffer */
    uint32_t scratch_cap;
};

/* counters.c */
static inline void model_count(perch_model *m, enum model_counter c, uint64_t n)
{
    m->counters[c] += n;
}
int perch__model_extra_add(perch_model *m, const char *reason, uint64_t count);
char *perch__strdup_n(const char *s, size_t n);
char *perch__utf16_dup(const perch_wstr *w);

/* entities.c */
int perch__thread_event(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__thread_set_name(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__process_event(perch_model *m, const perch_event *ev, const perch_decoded *d);
/* The thread entity for tid now (tid 0: the CPU's idle thread), created provisional when
 * unknown. NONE32 on allocation failure (m->error set). Inline for the answers of tid_cache and
 * of a CPU's idle thread (every sample, switch and ready-thread asks). */
uint32_t perch__thread_for_slow(perch_model *m, uint32_t tid, uint16_t cpu);
static inline uint32_t perch__thread_for(perch_model *m, uint32_t tid, uint16_t cpu)
{
    if (tid == 0) {
        if (cpu < m->cpu_cap && m->cpus[cpu].idle_thread != NONE32)
            return m->cpus[cpu].idle_thread;
    } else if (m->tid_cache_tid[TID_SLOT(tid)] == tid &&
               m->tid_cache_idx[TID_SLOT(tid)] != NONE32) {
        /* An empty slot is (NONE32, NONE32): tid 0xFFFFFFFF must not take it for a hit. */
        return m->tid_cache_idx[TID_SLOT(tid)];
    }
    return perch__thread_for_slow(m, tid, cpu);
}
/* The process entity for pid, created provisional when unknown; NONE32 on failure. */
uint32_t perch__process_for(perch_model *m, uint32_t pid);
/* The current process entity for pid, or NONE32. */
uint32_t perch__process_find(const perch_model *m, uint32_t pid);
int perch__model_entities_finish(perch_model *m);
void perch__model_entities_free(perch_model *m);
/* The state of cpu, grown when needed; NULL when out of range (counted) or on failure. */
cpu_state *perch__cpu_slow(perch_model *m, uint16_t cpu);
static inline cpu_state *perch__cpu(perch_model *m, uint16_t cpu)
{
    return cpu < m->cpu_cap ? &m->cpus[cpu] : perch__cpu_slow(m, cpu);
}

/* slices.c */
int perch__cswitch(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__ready_thread(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__slices_finish(perch_model *m);

/* samples.c */
int perch__sample(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__stack_walk(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__stack_key_ref(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__stack_key_def(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__samples_advance(perch_model *m, uint64_t now);
/* True when perch__samples_advance(m, now) may have work: a queue's earliest deadline has
 * passed or too many samples are pending. Lets the per-record call be skipped cheaply. */
static inline bool perch__samples_due(const perch_model *m, uint64_t now)
{
    return now > m->queues[0].deadline || now > m->queues[1].deadline ||
           m->samples_pending > m->opts.max_pending_samples;
}
int perch__samples_thread_exit(perch_model *m, uint32_t tid);
/* A stack part is about to join g: a group that waited for a first part and may still get a
 * user part (its thread may run user mode) waits the stack wait from now on. 0 or an error
 * (the queue could not grow). */
int perch__samples_first_part(perch_model *m, uint32_t g);
static inline int perch__samples_part_coming(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    return gr->queue == KERNEL_WAIT && gr->parts == NONE32 ? perch__samples_first_part(m, g) : 0;
}
int perch__samples_finish(perch_model *m);
int perch__group_finalize(perch_model *m, uint32_t g, enum model_counter reason);
/* Finalizes g, which has no part, with the frames of its one StackWalk (count > 0, with user
 * frames, kernel of them leading), as a user part arriving: the stack perch__group_finalize
 * would assemble from that walk as its only part, without storing the part. */
int perch__group_finalize_alone(perch_model *m, uint32_t g, const uint64_t *frames, uint32_t count,
                                uint32_t kernel);
void perch__samples_free(perch_model *m);

/* groups.c: the group of (ts, tid) or NONE32; a new live group (NONE32 on failure, m->error
 * set; sorted says whether its window queue entry's key is ts); the window of g closed while g
 * stays live (0 or an error); unlink and free a group; a thread's first pending group (NONE32:
 * none) and the end of its list once it exited. */
uint32_t perch__group_find_slow(const perch_model *m, uint64_t ts, uint32_t tid);
static inline uint32_t perch__group_find(const perch_model *m, uint64_t ts, uint32_t tid)
{
    return ts > m->group_max_ts ? NONE32 /* newer than every group: a sample in time order */
                                : perch__group_find_slow(m, ts, tid);
}
uint32_t perch__group_add(perch_model *m, uint64_t ts, uint32_t tid, uint8_t queue, bool sorted);
int perch__group_window_closed(perch_model *m, uint32_t g);
/* g moved to another window queue, where a search finds it (findable) or not (it is then put
 * into the bucket table once it is out of the ring). */
int perch__group_requeued(perch_model *m, uint32_t g, bool findable);
void perch__group_unlink(perch_model *m, uint32_t g);
uint32_t perch__group_first_of_thread(const perch_model *m, uint32_t tid);
void perch__group_thread_done(perch_model *m, uint32_t tid);
void perch__groups_free(perch_model *m);

/* parts.c: takes an unresolved reference part off its key's wait chain. */
void perch__part_stop_waiting(perch_model *m, uint32_t p);

/* frames.c: blocks of at least count frames from size-class free lists (*cls gets the class),
 * given back with perch__frames_free (accepts NULL); the lists are freed by
 * perch__frames_free_all. */
uint64_t *perch__frames_alloc(perch_model *m, uint32_t count, uint8_t *cls);
void perch__frames_free(perch_model *m, uint64_t *f, uint8_t cls);
void perch__frames_free_all(perch_model *m);

/* intern.c: returns the 1-based stack id (emitting the stack the first time), 0 on error. */
uint32_t perch__stack_intern(perch_model *m, const uint64_t *frames, uint32_t count,
                             uint32_t kernel);
void perch__intern_free(perch_model *m);

/* modules.c */
int perch__image_event(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__dbg_id(perch_model *m, const perch_event *ev, const perch_decoded *d);
uint64_t perch__module_lookup(perch_model *m, uint32_t pid, uint64_t ip);
void perch__pid_hits_drop(perch_model *m); /* pid_map changed */
int perch__modmap_emit_all(perch_model *m, modmap *mm, uint64_t unload_ts);
/* entities.c: sends the thread's / process's current record when it changed since the last
 * one sent (the first time always). No-op once its final record was sent. */
int perch__thread_upsert(perch_model *m, uint32_t i);
int perch__process_upsert(perch_model *m, uint32_t i);
void perch__modmap_free(modmap *mm);
void perch__pdb_finish(perch_model *m);

/* lbr (samples.c) */
int perch__lbr(perch_model *m, const perch_event *ev, const perch_decoded *d);
int perch__pmc_config(perch_model *m, const perch_event *ev, const perch_decoded *d);

/* counters.c */
int perch__profile_interval(perch_model *m, const perch_event *ev, const perch_decoded *d);

static inline bool perch__is_kernel_addr(uint8_t pointer_size, uint64_t a)
{
    return perch_is_kernel_address(a, pointer_size);
}

static inline uint64_t perch__new_key(perch_model *m)
{
    return ++m->next_key;
}

#endif
