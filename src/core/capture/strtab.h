/*
 * The capture string table: the writer's interning map (string -> id) and the reader's table
 * (id -> string). Ids start at 1 (0 is the NULL string) and count up in the order strings are
 * first written; both sides cap the table at PERCH_CAPTURE_MAX_STRTAB_BYTES and
 * PERCH_CAPTURE_MAX_STRTAB_COUNT, and a reset (a strings chunk flag) empties both.
 */
#ifndef PERCH_CAPTURE_STRTAB_H
#define PERCH_CAPTURE_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct perch__strtab {
    char *arena; /* the strings, each NUL-terminated */
    size_t arena_len;
    size_t arena_cap;
    uint32_t *offset; /* offset[id - 1] into arena */
    uint32_t *length; /* length[id - 1] in bytes (strings may hold NUL bytes on disk) */
    uint32_t count;
    uint32_t index_cap;
    uint32_t *hash;    /* writer only: open addressing, slot = id or 0; NULL in readers */
    uint32_t hash_cap; /* power of two */
} perch__strtab;

/* Empties the table (keeps its memory). */
void perch__strtab_clear(perch__strtab *t);
void perch__strtab_free(perch__strtab *t);

/* Writer: the id of (s, len), or 0 when it is not in the table. */
uint32_t perch__strtab_find(const perch__strtab *t, const char *s, size_t len);

/* True when n more strings of `bytes` total length fit under the caps. */
bool perch__strtab_fits(const perch__strtab *t, size_t n, size_t bytes);

/* Appends (s, len) as the next id (the caller checked it is new and fits); with_hash makes it
 * findable (writer). PERCH_ELIMIT over the caps, PERCH_ENOMEM. */
int perch__strtab_add(perch__strtab *t, const char *s, size_t len, bool with_hash, uint32_t *id);

/* Reader: the NUL-terminated string of id (>= 1), or NULL when id is not in the table. */
const char *perch__strtab_get(const perch__strtab *t, uint64_t id);

#endif
