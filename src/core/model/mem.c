/*
 * The capped array growth helper of src/core/model (see mem.h).
 */
#include <stdint.h>

#include "model/mem.h"
#include "perch/error.h"

/* The growing half of perch__grow_array (mem.h), which answers inline when need fits. */
int perch__grow_array_to(void **arr, size_t elem, uint32_t *cap, uint32_t need, uint32_t max)
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
