/*
 * Feeding the model a record it only counts from the few fields it reads of it, for a caller
 * that hands such records over without their bytes (the import's reader thread hands them to
 * the model's thread in runs: pipeline/counted.h). Internal to src/core.
 */
#ifndef PERCH_MODEL_FEED_COUNTED_H
#define PERCH_MODEL_FEED_COUNTED_H

#include <stdint.h>

#include "perch/model.h"

/* What perch_model_feed reads of a record whose perch_model_reads_payload is false. */
typedef struct perch__counted {
    uint64_t timestamp;
    uint16_t group;
    uint8_t opcode;
} perch__counted;

/* perch_model_feed for one such record, from those fields: the same result and the same
 * changes to m (counts, time, the pending-sample window). */
int perch__model_feed_counted(perch_model *m, const perch__counted *c);

#endif
