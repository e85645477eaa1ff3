/*
 * Records the model only counts, handed over in runs: the import's reader thread (feeder.c)
 * gives the model's thread a run of consecutive records that perch_model_reads_payload says the
 * model does not read as one queue record, and the model's thread (consume.c) feeds them one
 * by one through perch__model_feed_counted (model/feed_counted.h), which does for each exactly
 * what perch_model_feed does for such a record: the same counts, time and pending-sample
 * window, so every output is the same byte for byte. On the real x64 trace these are 42 % of the
 * records; each one pushed, popped and fed alone had cost both threads its hand-over. Internal to
 * src/core: the public contract of the queue and the model is unchanged.
 */
#ifndef PERCH_PIPELINE_COUNTED_H
#define PERCH_PIPELINE_COUNTED_H

#include "model/feed_counted.h"

/* In perch_event.flags of a queue record: its payload is a run of perch__counted entries,
 * payload_len / sizeof(perch__counted) of them; none of its other fields means anything. Only
 * the import's reader thread makes such records, and only for the model's thread. */
#define PERCH__EVENT_COUNTED 0x8000u

/* The most entries in one run (the reader thread hands a run over when it is full). */
#define PERCH__COUNTED_MAX 512u

#endif
