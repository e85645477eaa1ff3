/*
 * Batched mode of the event queue (event_queue.c), for a producer and consumer that hand over
 * many records in a row and need no record to be seen at once: the .etl reader thread and the
 * model thread of the pipelined import. Internal to src/core/pipeline: the public contract
 * (include/perch/event_queue.h) is unchanged for every other queue.
 *
 * In batched mode a blocking push makes its records visible to the consumer only once
 * publish_bytes of them are pending, before it waits for room, and on perch__event_queue_flush;
 * a pop gives the bytes it holds back to the producer only once release_bytes are held (at most
 * a quarter of the ring), before it waits for records, and on perch_event_queue_release. So the
 * shared positions are written once per batch, not once per record. try_push is never batched.
 */
#ifndef PERCH_PIPELINE_QUEUE_BATCH_H
#define PERCH_PIPELINE_QUEUE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/event_queue.h"

/* Puts q in batched mode. Call before either side uses it (the fields are not shared). */
void perch__event_queue_batch(perch_event_queue *q, uint64_t publish_bytes, uint64_t release_bytes);

/* Producer: makes every record pushed so far visible. Call it before close. */
void perch__event_queue_flush(perch_event_queue *q);

/* Producer: true when more than half the ring is still queued (the consumer has not released
 * it), so the consumer is the slower side now. From the producer's view of the consumer's
 * position, refreshed whenever a batch is published: a hint, not a count. */
bool perch__event_queue_behind(const perch_event_queue *q);

/* For a producer that sleeps elsewhere (the import's reader thread, which also plays the
 * capture writer's batches: feeder.c): the three calls below replace the blocking push.
 *
 * wake(ctx) is called (from the consumer's thread, or whichever closes or cancels) where a
 * producer waiting in push would be woken: when the ring has drained to half while the
 * producer is armed, and on close and cancel. Set it before either side uses the queue. */
void perch__event_queue_space_hook(perch_event_queue *q, void (*wake)(void *ctx), void *ctx);

/* Producer: push (batched as above) without waiting: 0, or PERCH_EBUSY when ev does not fit
 * now (every record pushed so far is then visible), or the errors of push (PERCH_ELIMIT,
 * PERCH_ESTATE once closed or canceled). Nothing is counted as dropped. */
int perch__event_queue_push_nowait(perch_event_queue *q, const perch_event *ev);

/* Producer, before it sleeps: true when ev now fits or the queue is no longer open (push
 * again); else false, and the queue is armed: the hook will be called once room comes. */
bool perch__event_queue_room_or_arm(perch_event_queue *q, const perch_event *ev);

/* Producer, after its sleep: the hook is no longer wanted. */
void perch__event_queue_disarm(perch_event_queue *q);

#endif
