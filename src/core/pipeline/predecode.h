/*
 * Decoding on the reader thread (predecode.c): the import's reader thread decodes each record
 * as it copies it into the queue to the model (perch__event_queue_extra), so the model thread
 * only applies it (perch_model_feed_decoded). The decoded form rides in the queue after the
 * record, packed: the result, the fields perch_decoded has before its PMC values, and only the
 * union member of its type; its pointers point into the record's payload in the ring, which
 * stays put until the model has applied it. Internal to src/core/pipeline.
 */
#ifndef PERCH_PIPELINE_PREDECODE_H
#define PERCH_PIPELINE_PREDECODE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/decode.h"
#include "perch/event.h"

/* The most bytes perch__predecode_pack writes. */
size_t perch__predecode_max(void);

/* A perch__queue_extra_fn (ctx unused): decodes ev and packs the result at out (8-aligned).
 * Returns the bytes written. */
size_t perch__predecode_pack(void *ctx, const perch_event *ev, uint8_t *out);

/* Unpacks what perch__predecode_pack wrote for ev (len bytes at p) into *d: returns what
 * perch_decode returned; *d then holds what it wrote (its type's member, the fields before it
 * and ev's PMC values), read only when the result is 0. */
int perch__predecode_unpack(const perch_event *ev, const uint8_t *p, uint32_t len,
                            perch_decoded *d);

#endif
