/*
 * The flight recorder: a perch_sink that keeps the last N seconds of model output in memory
 * and writes any recent part of it as a normal capture on request, for the service's always-on
 * mode (a hitch is noticed after it happened).
 *
 * The data records (slices, samples, LBR) go into a ring of sealed segments, each a small
 * in-memory capture of whole chunks; the recorder also keeps the current record of every
 * process, thread and module and the frames of recent stacks. A segment is sealed when it
 * reaches segment_bytes or once the recorder's time has moved segment_ms past its opening.
 * Segments whose newest record is more than window_ms older than the recorder's time are
 * dropped, and so are the oldest ones while the memory held (segments and stores) passes
 * max_bytes; dropped segments and records are counted (perch_recorder_stats). The memory held
 * stays under max_bytes plus the open segment (at most segment_bytes and one chunk); the stack
 * store is kept within a quarter of max_bytes (and max_stack_frames), oldest stacks first.
 *
 * Time is trace time: raw clock ticks of the trace converted with its perf_freq. The "now" of
 * the recorder is the largest timestamp of any data record received so far (a sample's ts, a
 * slice's end_ts, an LBR record's ts).
 *
 * Snapshot range (the precise definition the tests check): perch_recorder_snapshot(rec, S, out)
 * writes every sample and LBR record with ts >= now - S seconds and every slice with end_ts >=
 * now - S seconds (slices that overlap the window), among those the ring still holds, in the
 * order received; before them the trace info, the counter names, and every process, thread,
 * module and stack they use (processes of those threads and modules too), each as its current
 * record at snapshot time; stack ids renumbered dense from 1 in first-use order; then the
 * ledger entry "recorder.dropped_records" when records of the range had been dropped (counted
 * over the last 256 dropped segments whose newest record is in the range), the entries
 * "capture.entity_forgotten" / "capture.stack_forgotten" when a record's entity or stack had
 * left the stores, and the end chunk. The open segment is in it too: with seal_wait_ms, the
 * snapshot asks the model thread to seal it (after its next data record, or at its next
 * perch_recorder_idle call) and waits up to seal_wait_ms for that, so every record the
 * recorder received before the snapshot began is in it; without (or when the wait times out),
 * the open segment's unflushed chunks (at most segment_bytes / 4 per record type) are not.
 * After the sink's finish every record is. So `perch report` of the snapshot equals the report
 * of the full record stream filtered by that rule (tests/unit/test_recorder.c holds them
 * equal). Records the model itself still holds (samples waiting for their stack) have not
 * reached the recorder; perch_recorder_snapshot_counted can say how many in the snapshot.
 *
 * Threads: the sink callbacks run on the model thread; perch_recorder_snapshot and
 * perch_recorder_get_stats may be called from any other thread at the same time. One mutex
 * guards the ring and the stores. A snapshot that waits for the seal waits on a condition
 * variable (the lock released); the model thread is not held up by it, nor is its producer.
 * The model thread holds the mutex for one record's store update or
 * time bookkeeping, one chunk appended to the open segment (a memcpy of at most
 * segment_bytes / 4), or one segment hand-off (a pointer push; dropped segments' memory is
 * freed outside it). The snapshot holds it to take references to the sealed segments and to
 * copy the bytes of the open segment (at most segment_bytes and one chunk, one memcpy), then
 * once per entity or stack it writes (a hash lookup and a copy of that one record; a stack is
 * at most 16 384 frames). Decoding the segments, encoding and writing the snapshot happen
 * outside the lock, so the producer never waits longer than one such step.
 */
#ifndef PERCH_RECORDER_H
#define PERCH_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "perch/capture.h"
#include "perch/io.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_recorder_opts {
    size_t size;               /* sizeof(perch_recorder_opts) */
    uint32_t window_ms;        /* keep this much trace time (default 60 000) */
    uint64_t max_bytes;        /* memory cap of segments + stores (default 256 MiB; >= 1 MiB) */
    uint32_t segment_bytes;    /* seal a segment at this size (default 256 KiB; 16 KiB .. 4 MiB) */
    uint32_t segment_ms;       /* ... or at this much trace time (default 1000) */
    uint32_t max_stack_frames; /* stack store cap, oldest forgotten (default 1 << 22) */
    uint32_t max_entities;     /* entity store cap, oldest ended forgotten (default 1 << 20) */
    /* How long a snapshot waits for the model thread to seal the open segment, so that the
     * records it holds are in the snapshot too (default 0: no wait; see perch_recorder_idle). */
    uint32_t seal_wait_ms;
    /* Called with wake_ctx once a snapshot has asked for the seal, so that a model thread
     * asleep until its next tick makes its idle call now (perchd: perch_event_queue_wake on
     * the engine's queue); NULL: none, the seal waits for the next idle call. Called on the
     * snapshot's thread with the recorder's mutex held: it must not call into the recorder
     * nor block. */
    void (*wake)(void *ctx);
    void *wake_ctx;
    perch_sink_wrap names; /* put in front of each snapshot's writer, on the snapshot's
                            * thread (function names: perch_symworker_names); none by default */
} perch_recorder_opts;

void perch_recorder_opts_default(perch_recorder_opts *opts);

typedef struct perch_recorder perch_recorder;

/* Creates a recorder (opts NULL: defaults). PERCH_EINVAL, PERCH_ENOMEM; *out untouched on
 * error. */
int perch_recorder_create(const perch_recorder_opts *opts, perch_recorder **out);

/* Fills *sink with the recorder's callbacks (ctx is rec). finish seals the open segment; the
 * recorder can still be snapshot after it. */
void perch_recorder_sink(perch_recorder *rec, perch_sink *sink);

/* Writes the last last_seconds of trace time (see the range rule above; 0 or more than the
 * window: everything held) to out as a complete capture (header, records, end chunk) with the
 * default writer options. out is borrowed (not closed). Callable from any thread while the
 * model thread feeds. 0, PERCH_ESTATE before any trace info arrived, PERCH_ENOMEM, or out's
 * error (the capture written so far is then cut, and readable up to its last chunk). */
int perch_recorder_snapshot(perch_recorder *rec, double last_seconds, perch_output *out);

/* The model thread's idle call (a perch_live_idle_fn, with rec): serves a snapshot waiting
 * for the open segment to be sealed when no record arrives to do it. A sealing request is
 * otherwise served after the next data record. */
void perch_recorder_idle(void *rec);

typedef struct perch_recorder_snap_counts {
    uint64_t samples, slices, lbr; /* data records written into the snapshot */
} perch_recorder_snap_counts;

/* perch_recorder_snapshot, also writing the ledger entry "recorder.samples_waiting" with
 * samples_waiting when it is not 0 (samples the model still held back for their stack, which
 * no snapshot holds yet), and counting what it wrote into *counts (may be NULL). */
int perch_recorder_snapshot_counted(perch_recorder *rec, double last_seconds,
                                    uint64_t samples_waiting, perch_output *out,
                                    perch_recorder_snap_counts *counts);

typedef struct perch_recorder_stats {
    uint64_t segments;         /* held now, the open one included */
    uint64_t bytes;            /* memory held now: segments and stores */
    uint64_t records;          /* data records received */
    uint64_t segments_dropped; /* by age or the memory cap */
    uint64_t records_dropped;
    uint64_t dropped_by_cap; /* segments dropped by the memory cap (not by age) */
    uint64_t stacks_forgotten;
    uint64_t entities_forgotten;
    uint64_t snapshots;
    uint64_t oldest_ts, newest_ts; /* trace time held (raw ticks); 0 when empty */
} perch_recorder_stats;

/* Any thread. */
void perch_recorder_get_stats(perch_recorder *rec, perch_recorder_stats *stats);

/* Frees rec; no snapshot may be running. Accepts NULL. */
void perch_recorder_destroy(perch_recorder *rec);

#ifdef __cplusplus
}
#endif

#endif
