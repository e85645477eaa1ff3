/*
 * The reader thread of the pipelined import (include/perch/pipeline.h, perch_etl_feeder): one
 * thread runs perch_etl_next (file reads, XPRESS, the per-CPU merge) and copies each record
 * into a perch_event_queue with the blocking push, so the consumer sees exactly the records,
 * in exactly the order, the reader yields. The ring is sized from the file's largest buffer so
 * that no record is ever refused as oversized: the one-thread and two-thread paths cannot
 * differ on a large record. The queue is in batched mode (queue_batch.h): the two threads
 * exchange positions once per BATCH_BYTES, not once per record.
 */
#include <stdatomic.h>

#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/thread.h"
#include "pipeline/queue_batch.h"
#include "util/mem.h"

/* A queue record adds at most this much to the record's own bytes (16-byte header, fixed
 * fields, 8 PMC values; see event_queue.c). */
#define RECORD_OVERHEAD 256u
#define MAX_FEEDER_RING (64u << 20)
/* Publish and release every this many bytes (about 500 records of the synthetic traces). */
#define BATCH_BYTES (64u << 10)

struct perch_etl_feeder {
    perch_etl_reader *r;
    perch_event_queue *q;
    perch_thread *thread;
    uint64_t limit;
    _Atomic uint64_t position;
};

static int feed(void *arg)
{
    struct perch_etl_feeder *f = arg;
    perch_event ev;
    uint64_t n = 0;
    int err = 0;
    uint64_t furthest = 0;
    while ((f->limit == 0 || n < f->limit) && (err = perch_etl_next(f->r, &ev)) == 0) {
        uint64_t at = perch_etl_last_position(f->r).buffer;
        if (at > furthest) { /* buffers of different CPUs interleave in the file */
            furthest = at;
            atomic_store_explicit(&f->position, at, memory_order_relaxed);
        }
        err = perch_event_queue_push(f->q, &ev);
        if (err == PERCH_ESTATE)
            err = PERCH_ECANCELED; /* canceled while this reader was not waiting */
        if (err < 0)
            break;
        n++;
    }
    if (err == PERCH_EOF)
        err = 0; /* the end of the file; reaching the limit leaves err 0 too */
    perch__event_queue_flush(f->q);
    perch_event_queue_close(f->q, err);
    return err;
}

/* The ring: at least four records of the largest size fit (a record may take a quarter). */
static int ring_size(const perch_etl_reader *r, size_t want, size_t *out)
{
    uint64_t need = 4u * (perch_etl_max_record_len(r) + RECORD_OVERHEAD);
    uint64_t size = want != 0 ? want : PERCH_PIPELINE_QUEUE_BYTES;
    if (size < need)
        size = need;
    if (size > MAX_FEEDER_RING)
        return PERCH_ELIMIT;
    *out = (size_t)size;
    return 0;
}

int perch_etl_feeder_start(perch_etl_reader *r, size_t queue_bytes, uint64_t limit,
                           perch_etl_feeder **out)
{
    struct perch_etl_feeder *f;
    size_t ring = 0;
    int err;
    if (r == NULL || out == NULL)
        return PERCH_EINVAL;
    err = ring_size(r, queue_bytes, &ring);
    if (err < 0)
        return err;
    f = perch__calloc(1, sizeof *f);
    if (f == NULL)
        return PERCH_ENOMEM;
    f->r = r;
    f->limit = limit;
    err = perch_event_queue_create(ring, &f->q);
    if (err == 0)
        perch__event_queue_batch(f->q, BATCH_BYTES, BATCH_BYTES);
    if (err == 0)
        err = perch_thread_start(feed, f, "perch-reader", &f->thread);
    if (err < 0) {
        perch_event_queue_destroy(f->q);
        perch__free(f);
        return err;
    }
    *out = f;
    return 0;
}

perch_event_queue *perch_etl_feeder_queue(perch_etl_feeder *f)
{
    return f->q;
}

uint64_t perch_etl_feeder_position(const perch_etl_feeder *f)
{
    return atomic_load_explicit(&f->position, memory_order_relaxed);
}

int perch_etl_feeder_finish(perch_etl_feeder *f)
{
    int result = 0, err;
    if (f == NULL)
        return 0;
    perch_event_queue_cancel(f->q); /* no effect on a reader that already closed */
    err = perch_thread_join(f->thread, &result);
    perch_event_queue_destroy(f->q);
    perch__free(f);
    return err < 0 ? err : result;
}
