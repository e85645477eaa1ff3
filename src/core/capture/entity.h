/*
 * Version 2 entity records (docs/capture-format.md 4.2-4.4): a process, thread or module record
 * is its key and a field mask, then only the fields the mask names; every other field keeps
 * the value of the previous record of that key (or the default: 0 and the NULL string, for a
 * key not seen before). The writer and the reader each keep one table per entity type with the
 * current state of every key, updated by the same rules (perch__cap_ents_commit), so a change
 * costs only its own fields.
 *
 * The entity types are described by field tables (kind and slot of each field), so one
 * encoder, one decoder and one diff serve all three. An entity's state is a vector of numbers
 * and strings (perch__cap_ent); the conversions to and from the record structs are here.
 */
#ifndef PERCH_CAPTURE_ENTITY_H
#define PERCH_CAPTURE_ENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "model/hmap.h"
#include "perch/records.h"

enum { CAP_ENT_PROCESS, CAP_ENT_THREAD, CAP_ENT_MODULE, CAP_ENT_TYPES };

#define CAP_ENT_NUMS   12
#define CAP_ENT_STRS   2
#define CAP_ENT_FIELDS 10

/* Field kinds, as stored. */
enum cap_field_kind {
    CF_U32,  /* varint <= UINT32_MAX */
    CF_U64,  /* varint */
    CF_I32,  /* zigzag varint of an int32 */
    CF_PKEY, /* delta(value, state.id), then state.id = value (threads' process_key) */
    CF_STR,  /* string id (0 = NULL) */
    CF_PDB,  /* u8 flags (bit 0 has_pdb, bit 1 a GUID follows), [guid], varint age, string id:
              * numbers slot..slot+3 (has_pdb, guid low 8 bytes, guid high 8 bytes, age), string
              * str */
};

typedef struct perch__cap_field {
    uint8_t kind;
    uint8_t slot; /* into num[] (or str[] for CF_STR) */
    uint8_t str;  /* CF_PDB: its string slot */
} perch__cap_field;

typedef struct perch__cap_ent_type {
    unsigned chunk; /* PERCH_CHUNK_PROCESS, ... */
    unsigned count; /* fields */
    perch__cap_field field[CAP_ENT_FIELDS];
} perch__cap_ent_type;

extern const perch__cap_ent_type perch__cap_ent_types[CAP_ENT_TYPES];

/* One entity's state. Strings are borrowed or owned depending on the holder (the tables own
 * theirs). */
typedef struct perch__cap_ent {
    uint64_t key;
    uint64_t num[CAP_ENT_NUMS];
    const char *str[CAP_ENT_STRS];
} perch__cap_ent;

/* Records <-> state vectors. The strings of the vector point at the record's (borrowed);
 * those of the record at the vector's. */
void perch__cap_ent_from_process(perch__cap_ent *e, const perch_process_rec *r);
void perch__cap_ent_from_thread(perch__cap_ent *e, const perch_thread_rec *r);
void perch__cap_ent_from_module(perch__cap_ent *e, const perch_module_rec *r);
void perch__cap_ent_to_process(const perch__cap_ent *e, perch_process_rec *r);
void perch__cap_ent_to_thread(const perch__cap_ent *e, perch_thread_rec *r);
void perch__cap_ent_to_module(const perch__cap_ent *e, perch_module_rec *r);

/* The mask of fields of `type` where a and b differ (strings by content, NULL != ""). */
uint32_t perch__cap_ent_diff(unsigned type, const perch__cap_ent *a, const perch__cap_ent *b);

/* The "no more changes" rule both sides apply after a record: a process or thread with
 * PERCH_ENTITY_ENDED, a module with a non-zero unload_ts. Such a key is dropped from the table
 * (a later record of it is coded against the defaults). */
bool perch__cap_ent_final(unsigned type, const perch__cap_ent *e);

/* The current state of every key of one type, strings owned. Holds at most
 * PERCH_CAPTURE_MAX_ENTITIES keys; past that a new key is not added (its records are then
 * always coded against the defaults, on both sides alike). */
typedef struct perch__cap_ent_table {
    perch__hmap index; /* key -> slot */
    perch__cap_ent *slots;
    uint32_t count, cap, free; /* free: head of the free list (through num[0]), UINT32_MAX */
    uint32_t live;
} perch__cap_ent_table;

typedef struct perch__cap_ents {
    perch__cap_ent_table t[CAP_ENT_TYPES];
} perch__cap_ents;

void perch__cap_ents_init(perch__cap_ents *ents);
void perch__cap_ents_free(perch__cap_ents *ents);

/* The state of key (NULL when the table does not hold it). */
const perch__cap_ent *perch__cap_ents_get(const perch__cap_ents *ents, unsigned type, uint64_t key);

/* Fills *e with the defaults for key (0, NULL strings). */
void perch__cap_ent_default(perch__cap_ent *e, uint64_t key);

/* Applies the table rule after a record whose full new state is *e: dropped when final,
 * replaced when held, added when new and there is room. Copies the strings. PERCH_ENOMEM
 * (the table is then unchanged). */
int perch__cap_ents_commit(perch__cap_ents *ents, unsigned type, const perch__cap_ent *e);

/* An owned copy of e (its strings duplicated) into *out; PERCH_ENOMEM (out untouched). */
int perch__cap_ent_copy(perch__cap_ent *out, const perch__cap_ent *e);

/* Frees the strings of an owned state (they become NULL). */
void perch__cap_ent_release(perch__cap_ent *e);

/* Sends e to the sink's process, thread or module callback (as a record of `type`). */
int perch__cap_ent_send(const perch_sink *sink, unsigned type, const perch__cap_ent *e);

/* Entity callbacks for a perch_sink whose ctx points at a struct that starts with this
 * adapter (the rotation, the recorder): each converts its record to a state vector and calls
 * on_entity(ctx, type, state). */
typedef struct perch__cap_ent_adapter {
    int (*on_entity)(void *ctx, unsigned type, const perch__cap_ent *e);
} perch__cap_ent_adapter;

int perch__cap_ent_on_process(void *ctx, const perch_process_rec *rec);
int perch__cap_ent_on_thread(void *ctx, const perch_thread_rec *rec);
int perch__cap_ent_on_module(void *ctx, const perch_module_rec *rec);

/* Bytes held (for memory accounting). */
uint64_t perch__cap_ents_bytes(const perch__cap_ents *ents);

#endif
