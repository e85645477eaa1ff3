/*
 * The model's one replaceable allocation point: every allocation in src/core/model goes
 * through perch__alloc/perch__realloc/perch__free, which call perch__model_realloc_fn. Tests
 * replace that pointer to make allocations fail.
 */
#ifndef PERCH_MODEL_MEM_H
#define PERCH_MODEL_MEM_H

#include <stddef.h>
#include <stdint.h>

/* realloc semantics; size 0 frees and returns NULL. */
typedef void *(*perch__realloc_fn)(void *p, size_t size);
extern perch__realloc_fn perch__model_realloc_fn;

static inline void *perch__alloc(size_t n)
{
    return perch__model_realloc_fn(NULL, n ? n : 1);
}
static inline void *perch__realloc(void *p, size_t n)
{
    return perch__model_realloc_fn(p, n ? n : 1);
}
static inline void perch__free(void *p)
{
    if (p != NULL)
        perch__model_realloc_fn(p, 0);
}

/* Grows *arr (elements of elem bytes, *cap of them) to hold at least need, doubling, never
 * beyond max elements. 0, PERCH_ENOMEM or PERCH_ELIMIT; on error *arr and *cap are untouched. */
int perch__grow_array(void **arr, size_t elem, uint32_t *cap, uint32_t need, uint32_t max);

#endif
