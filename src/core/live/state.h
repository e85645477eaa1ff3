/*
 * What the model has told its sinks so far, kept so that a sink attached to a running engine
 * (a recording started by a client) can be brought up to date: the trace info, the counter
 * names, the current record of every live process, thread and module (entity records are
 * upserts: the latest replaces the earlier), the most recently ended ones (a sample or slice
 * still waiting in the model may name them), and the frames of every interned stack within a
 * cap. perch__live_state_replay plays all of it into a sink in the order the sink contract
 * asks for, as if the sink had been there from the start.
 *
 * Model thread only (the engine calls everything between two records).
 */
#ifndef PERCH_LIVE_STATE_H
#define PERCH_LIVE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/records.h"

typedef struct perch__live_state perch__live_state;

typedef struct perch__live_state_stats {
    uint64_t entities;         /* held now, ended ones included */
    uint64_t stacks;           /* held now */
    uint64_t frames;           /* of those stacks */
    uint64_t stacks_forgotten; /* dropped by the frame cap, oldest first */
    uint64_t ended_forgotten;  /* ended entities dropped past the ended cap */
} perch__live_state_stats;

/* max_frames: frames of stacks held (oldest stacks forgotten past it); max_ended: ended
 * entities of each type kept. 0, PERCH_EINVAL or PERCH_ENOMEM. */
int perch__live_state_create(uint32_t max_frames, uint32_t max_ended, perch__live_state **out);

void perch__live_state_destroy(perch__live_state *s);

/* The callbacks that keep *s current (ctx = s). They return 0 or PERCH_ENOMEM. */
void perch__live_state_sink(perch__live_state *s, perch_sink *sink);

/* Plays into sink: trace_info, counters, processes, threads, modules, stacks (ascending id).
 * Returns 0, or the sink's first error. Nothing when no trace info arrived yet. */
int perch__live_state_replay(const perch__live_state *s, const perch_sink *sink);

void perch__live_state_get_stats(const perch__live_state *s, perch__live_state_stats *st);

#endif
