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

#include <stdint.h>

#include "perch/event_queue.h"

/* Puts q in batched mode. Call before either side uses it (the fields are not shared). */
void perch__event_queue_batch(perch_event_queue *q, uint64_t publish_bytes, uint64_t release_bytes);

/* Producer: makes every record pushed so far visible. Call it before close. */
void perch__event_queue_flush(perch_event_queue *q);

#endif
