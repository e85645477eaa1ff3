/*
 * What a self-contained output needs to write before the records that use it: the trace
 * info, the counter names, the current record of every process, thread and module, and the
 * frames of recent stacks by their model ids. The capture rotation (rotate.c) and the flight
 * recorder (src/core/recorder) keep one store fed from the model's records, and write from it
 * lazily into each new file or snapshot (scope.h).
 *
 * Bounded: at most max_entities keys per entity type (past it the oldest key is forgotten,
 * preferring one whose final record came: ended process or thread, unloaded module) and at
 * most max_frames stack frames (the oldest stacks forgotten first); both counted. Not thread
 * safe: the recorder guards it with its mutex.
 */
#ifndef PERCH_CAPTURE_STORE_H
#define PERCH_CAPTURE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/entity.h"
#include "model/hmap.h"
#include "perch/records.h"

typedef struct perch__store_ents {
    perch__hmap index; /* key -> slot */
    perch__cap_ent *slots;
    uint32_t count, cap, free; /* free list through num[0] */
    uint64_t *fifo;            /* keys in first-record order (a ring) */
    uint32_t head, len, fifo_cap;
} perch__store_ents;

typedef struct perch__store_stack {
    uint32_t id, count, kernel;
    uint64_t *frames;
} perch__store_stack;

typedef struct perch__cap_store {
    bool has_info;
    perch_trace_info info; /* strings owned */
    char **counters;
    uint32_t counter_count;
    bool has_counters;
    perch__store_ents ents[CAP_ENT_TYPES];
    uint32_t max_entities;
    uint64_t ent_str_bytes;       /* string bytes held by the entity tables */
    perch__hmap stack_index;      /* model stack id -> ring position (counting mod 2^32) */
    perch__store_stack *ring;     /* stacks in arrival order; position p at ring[p % ring_cap] */
    uint32_t ring_head, ring_len; /* position of the oldest; count held */
    uint32_t ring_cap;            /* a power of two */
    uint64_t frames_held, max_frames;
    uint64_t entities_forgotten, stacks_forgotten;
} perch__cap_store;

void perch__cap_store_init(perch__cap_store *s, uint32_t max_entities, uint64_t max_frames);
void perch__cap_store_free(perch__cap_store *s);

/* Copies of the trace info and the counter names. PERCH_ENOMEM. */
int perch__cap_store_info(perch__cap_store *s, const perch_trace_info *info);
int perch__cap_store_counters(perch__cap_store *s, const perch_counters_rec *rec);

/* The new state of an entity (replacing its key's). PERCH_ENOMEM. */
int perch__cap_store_entity(perch__cap_store *s, unsigned type, const perch__cap_ent *e);

/* A new stack (frames copied). PERCH_ENOMEM. */
int perch__cap_store_stack(perch__cap_store *s, const perch_stack_rec *rec);

/* The held state of key, or NULL (never stored, or forgotten). Valid until the next change. */
const perch__cap_ent *perch__cap_store_get_entity(const perch__cap_store *s, unsigned type,
                                                  uint64_t key);

/* The held stack of id, or NULL. Valid until the next change. */
const perch__store_stack *perch__cap_store_get_stack(const perch__cap_store *s, uint32_t id);

/* Bytes held (for the recorder's memory cap). */
uint64_t perch__cap_store_bytes(const perch__cap_store *s);

#endif
