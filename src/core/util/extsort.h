/*
 * An external sort with duplicate merging: records are (key bytes, fixed-size value); at the
 * end every distinct key is visited once, in key order (bytewise, a key before its longer
 * extensions), with the values of its duplicates merged. Records are held in memory up to a
 * byte budget; past it the held records are sorted, merged and written as a run to a scratch
 * store (include/perch/scratch.h), and the runs are merged at the end (32 at a time), so memory
 * stays bounded however many records come. Without a scratch opener nothing spills and memory
 * grows with the distinct records. Used by the report's stack hash and the exporters.
 */
#ifndef PERCH_UTIL_EXTSORT_H
#define PERCH_UTIL_EXTSORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/scratch.h"

typedef struct perch__extsort_opts {
    size_t value_len; /* bytes of value after each key (0: keys only) */
    size_t memory;    /* bytes held in memory before a run is written; 0: 8 MiB */
    /* Equal keys: merge the value v into acc (value_len bytes each). NULL: keep the first. */
    void (*merge)(void *acc, const void *v);
    perch_scratch_open_fn open; /* NULL: never spill */
    void *open_ctx;
} perch__extsort_opts;

typedef union perch__extsort_ref {
    size_t off;       /* while adding: offset of the record in the arena */
    const uint8_t *p; /* while sorting */
} perch__extsort_ref;

typedef struct perch__extsort_run {
    uint64_t begin, end; /* bytes in the scratch store */
} perch__extsort_run;

typedef struct perch__extsort {
    perch__extsort_opts o;
    uint8_t *arena; /* records: u32 key length, key, value */
    size_t arena_len, arena_cap;
    perch__extsort_ref *refs;
    size_t count, refs_cap;
    perch_scratch scratch;
    bool scratch_open;
    uint64_t scratch_end;
    perch__extsort_run *runs;
    size_t run_count, run_cap;
    uint64_t records; /* added */
    uint64_t spilled; /* bytes written to the scratch store */
    int error;        /* sticky */
} perch__extsort;

/* The visitor of perch__extsort_finish: one call per distinct key. Non-zero stops. */
typedef int (*perch__extsort_visit)(void *ctx, const uint8_t *key, size_t klen, const void *value);

void perch__extsort_init(perch__extsort *s, const perch__extsort_opts *o);
/* Adds a record (value: value_len bytes, may be NULL when value_len is 0). 0, PERCH_ENOMEM,
 * PERCH_ELIMIT (a key of 4 GiB), or the scratch store's error; errors are sticky. */
int perch__extsort_add(perch__extsort *s, const void *key, size_t klen, const void *value);
/* Visits every distinct key in order; once, after the last add. 0, the first error, or the
 * visitor's non-zero return. */
int perch__extsort_finish(perch__extsort *s, perch__extsort_visit visit, void *ctx);
/* Releases everything (and the scratch store). Accepts a zeroed or finished sorter. */
void perch__extsort_free(perch__extsort *s);

#endif
