/*
 * How many samples the model holds back now (include/perch/model.h): samples waiting for their
 * stack parts, not yet given to the sink. For the live engine's status and the flight
 * recorder's snapshots, which cannot hold them yet.
 */
#include "model/model_internal.h"

uint64_t perch_model_samples_waiting(const perch_model *m)
{
    return m != NULL ? m->samples_pending : 0;
}
