/*
 * Internals of the live query state (query.h): the bucket ring, the per-bucket totals, the
 * entity and stack tables, and the helpers query.c (writing side), query_top.c and
 * query_records.c (reading side) share. Everything in struct perch_live_query below `lock`
 * is guarded by it, except the staging arrays, which only the model thread touches.
 */
#ifndef PERCH_LIVE_QUERY_INTERNAL_H
#define PERCH_LIVE_QUERY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "live/query.h"
#include "model/hmap.h"
#include "perch/thread.h"

/* A small total table: key -> (a, b), entries dense in insertion order (keys[i], a[i], b[i]
 * for i < count, so adding one table into another walks only its entries) behind an
 * open-addressing index (slots hold entry + 1, 0 = empty). Never shrinks; freed whole. */
typedef struct qagg {
    uint64_t *keys;
    uint64_t *a, *b;
    uint32_t *slots;
    uint32_t count, ecap, cap;
} qagg;

/* Adds (a, b) to key's totals; for stack totals b keeps the first non-zero value (the thread
 * of a sample). *bytes grows by what the table allocated. 0 or PERCH_ENOMEM. */
int perch__qagg_add(qagg *t, uint64_t key, uint64_t a, uint64_t b, bool keep_first_b,
                    size_t *bytes);
void perch__qagg_free(qagg *t);
/* Bytes the table holds. */
size_t perch__qagg_bytes(const qagg *t);

typedef struct qsample {
    uint64_t thread_key, ts, ip, module_key;
    uint32_t tid, stack_id, count;
    uint16_t cpu, profile_source;
    uint8_t kind, flags;
} qsample;

typedef struct qslice {
    uint64_t thread_key, start_ts, end_ts, ready_ts;
    uint32_t tid, pmc_off;
    uint16_t cpu, flags;
    int8_t priority, wait_reason, wait_mode, state;
    uint8_t pmc_count;
} qslice;

/* A sample or a slice waiting in the staging ring. */
typedef struct qstaged {
    bool is_slice;
    union {
        qsample sample;
        perch_slice_rec slice;
    } u;
} qstaged;

/* The part of a slice that ran in a bucket before the one that holds the slice. */
typedef struct qpiece {
    uint64_t thread_key, lo, hi;
    uint32_t tid;
} qpiece;

/* The totals of a stretch of trace time. */
typedef struct qtotals {
    qagg threads; /* thread key -> (timer samples, cpu ticks) */
    qagg stacks;  /* stack id -> (timer samples, thread key of one of them) */
    uint64_t samples, cpu_ticks, idle_ticks;
} qtotals;

typedef struct qbucket {
    uint64_t index; /* absolute: ts / bucket_ticks */
    bool used;
    qsample *samples;
    qslice *slices;
    qpiece *pieces;
    uint64_t *pmc;
    uint32_t nsamples, csamples, nslices, cslices, npieces, cpieces, npmc, cpmc;
    qtotals t;
    size_t bytes;
} qbucket;

/* The totals of QGROUP consecutive buckets (index = bucket index / QGROUP), kept beside the
 * buckets' own so a long window adds up a few groups instead of many buckets. A group one of
 * whose buckets was dropped is tainted: queries then add up its buckets instead. */
#define QGROUP 16u

typedef struct qgroup {
    uint64_t index;
    bool used, tainted;
    qtotals t;
    size_t bytes;
} qgroup;

/* A table of rows of row_size bytes indexed by key (swap-remove on delete). */
typedef struct qtable {
    perch__hmap index;
    void *rows;
    uint64_t *keys; /* key of each row */
    uint32_t count, cap;
    size_t row_size;
} qtable;

typedef struct qstack {
    uint32_t id, count, kernel, mark;
    uint64_t first_ts; /* newest timestamp when it arrived */
    uint64_t *frames;
} qstack;

struct perch_live_query {
    perch_live_query_opts o;
    perch_mutex *lock;
    /* guarded by lock */
    perch_trace_info info;
    char *source, *session_config;
    bool have_info;
    uint64_t bucket_ticks;
    uint32_t nbuckets, ngroups;
    qbucket *ring;
    qgroup *groups;
    bool any;
    uint64_t newest_index, newest_ts, held_from_ts;
    uint64_t sweep_index; /* newest_index at the last sweep */
    uint32_t sweep_gen;
    qtable procs, threads, mods, stacks;
    size_t bytes; /* buckets + entity and stack tables */
    size_t entity_bytes;
    uint64_t held_samples, held_slices;
    uint64_t dropped_records, dropped_late, dropped_entities, published;
    /* The staging ring: the model thread (the only producer) appends samples and slices
     * without a lock; whoever holds the lock (the model thread every batch, a reader before
     * it reads) drains it into the buckets. */
    qstaged *stage;
    uint32_t stage_cap; /* a power of two */
    _Atomic uint64_t stage_head, stage_tail;
};

/* Publishes what the staging ring holds (call with the lock held). */
void perch__q_drain(perch_live_query *q);

/* ---- tables (query_table.c) ---- */
void perch__qtable_init(qtable *t, size_t row_size);
void *perch__qtable_get(const qtable *t, uint64_t key);
/* The row of key, created zeroed when missing (*created). NULL on ENOMEM or cap. */
void *perch__qtable_put(qtable *t, uint64_t key, uint32_t max, bool *created);
/* Removes row i (the last row moves into its place). */
void perch__qtable_remove(qtable *t, uint32_t i);
size_t perch__qtable_bytes(const qtable *t);
void perch__qtable_free(qtable *t);

/* ---- entity records (query_entities.c), all under the lock ---- */
int perch__q_process(perch_live_query *q, const perch_process_rec *rec);
int perch__q_thread(perch_live_query *q, const perch_thread_rec *rec);
int perch__q_module(perch_live_query *q, const perch_module_rec *rec);
int perch__q_stack(perch_live_query *q, const perch_stack_rec *rec);
/* Drops entities that ended, and stacks no held bucket uses, before oldest_ts. */
void perch__q_sweep(perch_live_query *q, uint64_t oldest_ts);
void perch__q_free_entities(perch_live_query *q);
/* The thread record of key, or NULL. */
const perch_thread_rec *perch__q_thread_rec(const perch_live_query *q, uint64_t key);
const perch_process_rec *perch__q_process_rec(const perch_live_query *q, uint64_t key);
const qstack *perch__q_stack_row(const perch_live_query *q, uint64_t id);
/* Plays the modules of process_key (0: the kernel's) into sink. */
int perch__q_emit_modules(const perch_live_query *q, uint64_t process_key, const perch_sink *sink);

/* ---- reading helpers (query_top.c) ---- */
/* Resolves w to [from, to) under the lock. PERCH_EINVAL for an empty window; PERCH_ENOENT
 * (an empty span) before any record. */
int perch__q_window(perch_live_query *q, const perch_proto_window *w, bool snap,
                    perch_live_span *span);
/* trace_info into sink (under the lock). */
int perch__q_emit_info(const perch_live_query *q, const perch_sink *sink);
/* The oldest bucket index the ring can hold now (under the lock). */
uint64_t perch__q_oldest_index(const perch_live_query *q);
/* The bucket holding absolute index k, or NULL (under the lock). */
qbucket *perch__q_bucket(perch_live_query *q, uint64_t k);
/* The untainted group holding bucket k (k a multiple of QGROUP), or NULL (under the lock). */
const qgroup *perch__q_group(const perch_live_query *q, uint64_t k);

#endif
