/*
 * The default allocator behind src/core/util/mem.h, and perch_free for memory that public
 * calls hand to their callers.
 */
#include <stdlib.h>

#include "perch/error.h"
#include "util/mem.h"

void *perch__default_realloc(void *p, size_t size)
{
    if (size == 0) {
        free(p);
        return NULL;
    }
    return realloc(p, size);
}

perch__realloc_fn perch__realloc_hook = perch__default_realloc;

void perch_free(void *p)
{
    perch__free(p);
}
