/*
 * One self-contained output (a rotated file, a snapshot) being written from a store
 * (store.h): the scope remembers which entities and stacks this output already holds and
 * writes each one from the store just before the first record that uses it: a thread's or
 * module's process before it, a sample's thread, module and stack, a slice's or LBR record's
 * thread. Stack ids are renumbered per output, dense from 1 in first-use order (the order the
 * sink contract asks for). A record naming an entity or stack the store no longer holds is
 * written without it and counted (missing_entities, missing_stacks).
 *
 * The store may be shared with another thread: every store access goes through the lock
 * callbacks (NULL: none), held for one lookup and copy, never while writing to the output.
 */
#ifndef PERCH_CAPTURE_SCOPE_H
#define PERCH_CAPTURE_SCOPE_H

#include "capture/store.h"
#include "model/hmap.h"
#include "perch/records.h"

typedef struct perch__cap_scope {
    perch__cap_store *store;
    const perch_sink *out;
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
    void *lock_ctx;
    perch__hmap written[CAP_ENT_TYPES]; /* keys this output holds */
    perch__hmap stacks;                 /* model stack id -> id in this output */
    uint32_t next_stack;
    uint64_t *frames; /* copy buffer for a stack taken from the store */
    uint32_t frame_cap;
    uint64_t missing_entities, missing_stacks;
    bool eager; /* write every new entity at once too, not only before its first use */
} perch__cap_scope;

/* Starts an output: writes the store's trace info and counter names to out (borrowed). */
int perch__cap_scope_begin(perch__cap_scope *sc, perch__cap_store *store, const perch_sink *out);

/* Forgets what the output holds (frees the scope's memory). Accepts a zeroed scope. */
void perch__cap_scope_end(perch__cap_scope *sc);

/* Data records, written after what they use (sample: its stack id renumbered). */
int perch__cap_scope_sample(perch__cap_scope *sc, const perch_sample_rec *rec);
int perch__cap_scope_slice(perch__cap_scope *sc, const perch_slice_rec *rec);
int perch__cap_scope_lbr(perch__cap_scope *sc, const perch_lbr_rec *rec);

/* A new state of an entity (already in the store): written at once when the output holds
 * the entity (a change) or the scope is eager, else left for its first use. */
int perch__cap_scope_entity(perch__cap_scope *sc, unsigned type, const perch__cap_ent *e);

#endif
