/*
 * A bounded single-producer / single-consumer queue of normalized event records, the one
 * hand-off between a source thread and the model thread.
 *
 * The same queue carries both pipelines Perch has (ARCHITECTURE.md, "The live path"):
 *   - offline: the .etl reader thread (read + XPRESS) pushes, blocking when the queue is
 *     full, and the model thread pops; the output is the same, byte for byte, as feeding the
 *     model on one thread;
 *   - live: the ETW EventRecordCallback pushes without ever blocking (try_push: when the queue
 *     is full the record is dropped and counted, later reported as `live.queue_full`), and the
 *     model thread pops.
 *
 * A push copies the record, its payload and its extended data into the queue's own ring of
 * bytes, so the producer's buffers may be reused as soon as push returns. A popped record (and
 * the bytes it points to) stays valid until the next pop or perch_event_queue_release by the
 * consumer. Memory is fixed at create time: nothing is allocated per record. The
 * implementation (src/core/pipeline/event_queue.c) is lock-free on both fast paths; a lock is
 * taken only to sleep, to wake a sleeping side, and by perch_event_queue_wake.
 *
 * Exactly one thread may push and exactly one thread may pop; close, wake and the statistics
 * may be called from any thread.
 */
#ifndef PERCH_EVENT_QUEUE_H
#define PERCH_EVENT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_event_queue perch_event_queue;

/* Smallest and largest ring sizes (bytes) a queue accepts. */
#define PERCH_EVENT_QUEUE_MIN_BYTES (64u << 10)
#define PERCH_EVENT_QUEUE_MAX_BYTES (1u << 30)

/* Creates a queue with a ring of capacity_bytes (rounded up to a power of two within
 * [MIN, MAX]). A record larger than a quarter of the ring is refused by push (PERCH_ELIMIT,
 * counted as oversized). Returns 0, PERCH_EINVAL or PERCH_ENOMEM; *out untouched on error. */
int perch_event_queue_create(size_t capacity_bytes, perch_event_queue **out);

/* Frees the queue. Accepts NULL. No thread may be using it. */
void perch_event_queue_destroy(perch_event_queue *q);

/* Producer, never blocks: copies ev in, or returns PERCH_EBUSY (full: counted as dropped),
 * PERCH_ELIMIT (oversized: counted) or PERCH_ESTATE (closed). Safe to call from an ETW
 * callback: no lock, no allocation, no system call on the fast path (a wake-up of a waiting
 * consumer may signal). */
int perch_event_queue_try_push(perch_event_queue *q, const perch_event *ev);

/* Producer, blocks while the queue is full (the offline pipeline). Returns 0, PERCH_ELIMIT
 * (oversized) or PERCH_ECANCELED when the queue was closed by the consumer side while
 * waiting. */
int perch_event_queue_push(perch_event_queue *q, const perch_event *ev);

/* Producer: no more records will come. The consumer drains what is queued, then gets
 * PERCH_EOF. status is handed to the consumer by perch_event_queue_close_status (0 for a
 * normal end, or the producer's error). */
void perch_event_queue_close(perch_event_queue *q, int status);

/* Consumer side: stop the producer (a blocked push returns PERCH_ECANCELED, later pushes
 * PERCH_ESTATE). Used when the model failed and the reader must not wait forever. After a
 * cancel, pop returns PERCH_ECANCELED; the producer should still close (its status then says
 * how it stopped). */
void perch_event_queue_cancel(perch_event_queue *q);

/* Consumer: the next record into *ev (borrowed until the next pop or release). Waits up to
 * timeout_ms (0: do not wait; UINT32_MAX: forever). Returns 0, PERCH_ETIMEDOUT, PERCH_EOF
 * once the producer closed the queue and every record was popped, or PERCH_ECANCELED after
 * perch_event_queue_cancel. *ev is untouched unless 0 is returned. */
int perch_event_queue_pop(perch_event_queue *q, perch_event *ev, uint32_t timeout_ms);

/* Any thread: makes the consumer's pop return PERCH_ETIMEDOUT now if it sleeps in a wait,
 * else the next pop that would sleep returns PERCH_ETIMEDOUT at once (so a wake sent just
 * before the consumer goes to sleep is not lost), even a pop with no time limit. For a
 * consumer that has work besides records (the live engine's calls). Records already queued
 * are still popped first. */
void perch_event_queue_wake(perch_event_queue *q);

/* Consumer: gives the record popped last back to the producer before the next pop (when the
 * consumer is done with its bytes but will not pop again soon). No effect when nothing is
 * held. */
void perch_event_queue_release(perch_event_queue *q);

/* The status given to perch_event_queue_close (0 until closed). */
int perch_event_queue_close_status(const perch_event_queue *q);

typedef struct perch_event_queue_stats {
    uint64_t pushed; /* records accepted */
    uint64_t popped;
    uint64_t dropped;    /* try_push found the queue full */
    uint64_t oversized;  /* refused: larger than a quarter of the ring */
    uint64_t bytes_high; /* most bytes ever queued at once, as the producer saw it (it may
                          * overstate by what the consumer had just released) */
    uint64_t capacity;   /* ring bytes */
    uint64_t push_waits; /* blocking pushes that had to wait */
} perch_event_queue_stats;

/* A consistent-enough snapshot of the counters (each read atomically), from any thread. */
void perch_event_queue_get_stats(const perch_event_queue *q, perch_event_queue_stats *st);

#ifdef __cplusplus
}
#endif

#endif
