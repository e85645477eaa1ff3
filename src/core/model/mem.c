/*
 * The default allocator behind src/core/model (see mem.h) and the capped array growth helper.
 */
#include <stdint.h>
#include <stdlib.h>

#include "model/mem.h"
#include "perch/error.h"

static void *default_realloc(void *p, size_t size)
{
    if (size == 0) {
        free(p);
        return NULL;
    }
    return realloc(p, size);
}

perch__realloc_fn perch__model_realloc_fn = default_realloc;

int perch__grow_array(void **arr, size_t elem, uint32_t *cap, uint32_t need, uint32_t max)
{
    if (need <= *cap)
        return 0;
    if (need > max)
        return PERCH_ELIMIT;
    uint64_t ncap = *cap ? (uint64_t)*cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > max)
        ncap = max;
    void *p = perch__realloc(*arr, (size_t)ncap * elem);
    if (p == NULL)
        return PERCH_ENOMEM;
    *arr = p;
    *cap = (uint32_t)ncap;
    return 0;
}
