/*
 * The model's allocation helpers on top of Perch's one replaceable allocator
 * (src/core/util/mem.h): the capped array growth every model table uses.
 */
#ifndef PERCH_MODEL_MEM_H
#define PERCH_MODEL_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "util/mem.h"

/* Grows *arr (elements of elem bytes, *cap of them) to hold at least need, doubling, never
 * beyond max elements. 0, PERCH_ENOMEM or PERCH_ELIMIT; on error *arr and *cap are untouched. */
int perch__grow_array_to(void **arr, size_t elem, uint32_t *cap, uint32_t need, uint32_t max);
static inline int perch__grow_array(void **arr, size_t elem, uint32_t *cap, uint32_t need,
                                    uint32_t max)
{
    return need <= *cap ? 0 : perch__grow_array_to(arr, elem, cap, need, max);
}

#endif
