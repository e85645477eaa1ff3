/*
 * Modules by address, for naming stack frames: which module of a process holds an address.
 * The report (report_modmap.c), the exports (export/frames.c) and the symbolizer
 * (sym/symbolize.c) each sort their modules in their own order (module_order.h) and build
 * this index over it; a lookup answers the last range in that order, within the address's
 * process key, that holds the address. Every range at or below the address in its process key
 * lies in one run of the order; a max-tree over the ranges' last addresses finds the last one
 * in that run that reaches the address in O(log n), whatever the sizes (a scan backwards from
 * the address, bounded by the largest size, is linear once one module spans everything: a
 * crafted capture of 200,000 modules and one huge one took an export half a minute).
 */
#ifndef PERCH_MODEL_MODULE_INDEX_H
#define PERCH_MODEL_MODULE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "model/module_order.h"

#define PERCH_MODULE_INDEX_NONE UINT32_MAX

typedef struct perch__module_index {
    uint64_t *pk, *base; /* position -> the range's process key and base, for the search */
    uint64_t *last;      /* max-tree: node k's children 2k and 2k + 1, leaf i at leaves + i
                          * holding position i's last address */
    uint32_t *index;     /* position -> the caller's index */
    uint32_t count, leaves;
    uint32_t cap_leaves; /* the arrays hold this many positions: a build that fits reuses them */
} perch__module_index;

/* The bytes an index of n ranges takes when built anew (for callers that budget their memory:
 * they free the index before each build). UINT64_MAX past 2^31 ranges. */
uint64_t perch__module_index_bytes(size_t n);

/* Builds *ix (replacing what it held) over recs[0..n), already in the caller's order; ranges of
 * size 0 hold no address and are left out. The arrays are used again when they are large
 * enough (a map rebuilt after each change touches no fresh memory). 0, PERCH_ENOMEM (ix
 * unchanged) or PERCH_ELIMIT (n past 2^31). */
int perch__module_index_build(perch__module_index *ix, const perch__module_sort *recs, size_t n);

/* The caller's index of the last range in order, among those of process_key, that holds addr;
 * PERCH_MODULE_INDEX_NONE when none does (or the index is empty). */
uint32_t perch__module_index_find(const perch__module_index *ix, uint64_t process_key,
                                  uint64_t addr);

void perch__module_index_free(perch__module_index *ix);

#endif
