/*
 * The live query state: a perch_sink the live engine tees in on the model thread, keeping a
 * bounded window of recent trace time that answers the pipe's live queries (top processes,
 * threads and stacks by CPU time and by samples, the slices of one thread, the samples of one
 * process) from other threads while the model keeps feeding it.
 *
 * Time is trace time (the records' raw ticks), cut into buckets of bucket_ms. Each bucket
 * holds its samples and slices and per-thread and per-stack totals, so a top query over a
 * window adds up bucket totals and scans records only in the (at most two) buckets the
 * window's ends cut. A slice that spans buckets counts in each the time it ran there, so a
 * window's CPU time is the slice time inside the window. Buckets older than span_ms are
 * dropped as the newest timestamp advances; when memory passes mem_cap the oldest bucket goes
 * early and its records are counted as dropped, and a window reaching into dropped time says
 * it is not complete. Processes, threads, modules and stacks are kept by key (a later record
 * replaces an earlier one: entity records are upserts) until they ended before the oldest
 * bucket.
 *
 * Threads: the sink callbacks and destroy belong to the model thread; every other function
 * may be called from any thread at any time. The model thread appends samples and slices to
 * a lock-free staging ring and publishes them under the lock every `batch` records; a reader
 * publishes what is staged before it reads, so a query always sees every record the sink
 * has received, even when the model has gone quiet. Readers take the lock one bucket at a
 * time, so neither side holds it for more than one bucket's worth of work.
 */
#ifndef PERCH_LIVE_QUERY_H
#define PERCH_LIVE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/proto.h"
#include "perch/records.h"

typedef struct perch_live_query perch_live_query;

typedef struct perch_live_query_opts {
    size_t size;           /* sizeof(perch_live_query_opts) */
    uint32_t span_ms;      /* trace time kept (default 60000) */
    uint32_t bucket_ms;    /* bucket width (default 100; 1 .. span_ms) */
    size_t mem_cap;        /* bytes of records, totals and entities (default 256 MiB) */
    uint32_t batch;        /* samples and slices staged before they are published (256, at
                              most 65536) */
    uint32_t max_entities; /* processes + threads + modules held (default 1 << 20) */
    uint32_t max_stacks;   /* distinct stacks held (default 1 << 20) */
} perch_live_query_opts;

void perch_live_query_opts_default(perch_live_query_opts *opts);

/* Creates an empty state. opts may be NULL. 0, PERCH_EINVAL (a bad option) or PERCH_ENOMEM;
 * *out is untouched on error. */
int perch_live_query_create(const perch_live_query_opts *opts, perch_live_query **out);

/* Frees the state. Accepts NULL. No reader may be using it. */
void perch_live_query_destroy(perch_live_query *q);

/* Fills *sink with the state's callbacks (ctx = q), for the model thread. They return 0 or
 * PERCH_ENOMEM; a cap reached is counted, never an error. */
void perch_live_query_sink(perch_live_query *q, perch_sink *sink);

/* Publishes the staged samples and slices now (any thread; readers do it themselves, and so
 * do the sink's ledger and finish callbacks). */
void perch_live_query_flush(perch_live_query *q);

/* ---- reads, from any thread ------------------------------------------------------------- */

/* What a read covered. */
typedef struct perch_live_span {
    uint64_t from_ts, to_ts; /* [from, to) in raw ticks */
    uint64_t perf_freq;
    bool complete; /* false: part of [from, to) had been dropped */
} perch_live_span;

/* The rows of a top query. rows is allocated (perch_free), row_count <= the limit. */
typedef struct perch_live_top {
    perch_live_span span;
    uint64_t samples, cpu_ticks, idle_ticks; /* totals over the window */
    uint32_t row_count;
    perch_proto_top_row *rows;
} perch_live_top;

/* Answers a top query (req->what, order, limit, pid filter, window). A "last" window ends
 * just after the newest timestamp and starts at the bucket boundary at or before its length
 * (so it is added up from bucket totals); an explicit [from, to) is exact. Rows sort by the
 * chosen figure, then the other, then key. Stack rows carry the state's stack ids until
 * perch_live_query_top_entities renumbers them. 0, PERCH_EINVAL (an empty window, a bad
 * field) or PERCH_ENOMEM; *out untouched on error. Free out->rows with perch_free. */
int perch_live_query_top(perch_live_query *q, const perch_proto_top_req *req, perch_live_top *out);

/* Plays what the rows of top (answered for `what`) name into sink: trace_info; for process
 * rows the processes; for thread rows their processes, then the threads; for stack rows the
 * processes and threads of their owners, the modules of those processes and the kernel's,
 * then the stacks with ids 1..n in row order (the rows' keys are rewritten to those ids).
 * Then finish. The sink is called with the state's lock held: it must not call back into q.
 * Returns 0, PERCH_ENOMEM or the sink's error. */
int perch_live_query_top_entities(perch_live_query *q, unsigned what, perch_live_top *top,
                                  const perch_sink *sink);

/* What a records query matched. */
typedef struct perch_live_records {
    perch_live_span span;
    bool truncated;   /* more than max matched */
    uint64_t matched; /* before max */
} perch_live_records;

/* Plays into sink the slices of the threads with tid overlapping the window (at most max, the
 * earliest first), preceded by trace_info, those threads and their processes; then finish.
 * 0, PERCH_EINVAL, PERCH_ENOMEM or the sink's error. */
int perch_live_query_slices(perch_live_query *q, uint32_t tid, const perch_proto_window *w,
                            uint32_t max, const perch_sink *sink, perch_live_records *info);

/* Plays into sink the timer and PMC samples of process pid inside the window (at most max),
 * preceded by trace_info, the process(es) with that pid, their threads, their modules and
 * the kernel's, and the stacks the samples use (renumbered 1..n); then finish. */
int perch_live_query_samples(perch_live_query *q, uint32_t pid, const perch_proto_window *w,
                             uint32_t max, const perch_sink *sink, perch_live_records *info);

typedef struct perch_live_query_stats {
    uint64_t bytes;      /* memory held now */
    uint64_t span_ticks; /* trace time held (newest - oldest kept bucket start) */
    uint64_t perf_freq;
    uint64_t newest_ts;
    uint64_t samples, slices;  /* records held now */
    uint64_t dropped_records;  /* samples and slices dropped by the memory cap */
    uint64_t dropped_late;     /* arrived for a bucket already gone */
    uint64_t dropped_entities; /* entity or stack records refused by their caps */
    uint64_t entities, stacks; /* held now */
    uint64_t published;        /* samples and slices accepted since creation (the ones
                                  expired or dropped since included) */
} perch_live_query_stats;

/* A consistent snapshot of the counters. */
void perch_live_query_get_stats(perch_live_query *q, perch_live_query_stats *st);

#endif
