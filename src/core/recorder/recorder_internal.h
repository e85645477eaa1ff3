/*
 * The flight recorder's internals (include/perch/recorder.h), shared by recorder.c (the sink
 * on the model thread, the ring and its caps) and snapshot.c (writing a range as a capture
 * from another thread).
 *
 * A segment is an in-memory capture of whole chunks holding only data records (samples with
 * the model's stack ids, slices, LBR). The open segment is written by the model thread through
 * a capture writer whose output appends under the recorder's mutex; sealed segments are
 * immutable and reference counted, so a snapshot reads them without the lock.
 */
#ifndef PERCH_RECORDER_INTERNAL_H
#define PERCH_RECORDER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/store.h"
#include "perch/capture.h"
#include "perch/recorder.h"
#include "perch/thread.h"

typedef struct rec_segment {
    uint8_t *data;
    size_t len, cap;
    uint64_t first_ts, last_ts; /* data record time held (0/0 when empty) */
    uint64_t opened_at;         /* the recorder's newest time when the segment opened */
    uint64_t records;
    uint32_t refs; /* the ring's (1 while held) plus one per snapshot using it */
    bool sealed;
} rec_segment;

/* What the last dropped segments held, for the snapshot's dropped-records ledger. */
#define REC_DROP_LOG 256
typedef struct rec_drop {
    uint64_t last_ts, records;
} rec_drop;

struct perch_recorder {
    perch__cap_ent_adapter entities; /* first: the sink's entity callbacks cast ctx to it */
    perch_recorder_opts opts;
    perch_mutex *mu;    /* guards everything below except `w`, `wsink` and `since_check` */
    perch_cond *sealed; /* broadcast when seal_done moves (a snapshot waits for it) */
    uint64_t seal_asked, seal_done; /* snapshots' requests to seal the open segment, served */
    perch__cap_store store;
    rec_segment **ring; /* sealed segments, oldest first */
    uint32_t ring_len, ring_cap;
    rec_segment *open; /* being written (NULL until the first data record) */
    uint64_t bytes;    /* segments held (sealed + open) */
    uint64_t newest_ts;
    rec_drop drops[REC_DROP_LOG];
    uint32_t drop_next;
    perch_recorder_stats stats;
    /* the model thread's own */
    perch_capture_writer *w; /* of the open segment */
    perch_output wout;
    perch_sink wsink;
    bool seal_wanted; /* a snapshot asked to seal (read with the record's bookkeeping) */
    int error;
};

/* Drops one reference (under the mutex); returns the segment when it must be freed. */
rec_segment *perch__rec_unref(rec_segment *s);
void perch__rec_segment_free(rec_segment *s);

#endif
