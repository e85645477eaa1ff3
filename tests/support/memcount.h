/*
 * A counting allocator for tests that assert bounded memory: installs itself as
 * perch__realloc_hook, keeps each block's size in a 16-byte header, and tracks the bytes live
 * now and the peak. Header-only (static functions); one test program uses one instance.
 */
#ifndef PERCH_TEST_MEMCOUNT_H
#define PERCH_TEST_MEMCOUNT_H

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static size_t memcount_live, memcount_peak;

static void *memcount_realloc(void *p, size_t size)
{
    size_t old = 0;
    char *base = p ? (char *)p - 16 : NULL;
    if (base)
        memcpy(&old, base, sizeof old);
    if (size == 0) {
        memcount_live -= old;
        free(base);
        return NULL;
    }
    char *q = realloc(base, size + 16);
    if (!q)
        return NULL;
    memcpy(q, &size, sizeof size);
    memcount_live = memcount_live - old + size;
    if (memcount_live > memcount_peak)
        memcount_peak = memcount_live;
    return q + 16;
}

/* Starts counting; blocks allocated before must not be freed until memcount_stop. */
static inline void memcount_start(void)
{
    memcount_live = memcount_peak = 0;
    perch__realloc_hook = memcount_realloc;
}

static inline void memcount_stop(void)
{
    perch__realloc_hook = perch__default_realloc;
}

/* Restarts the peak from what is live now. */
static inline void memcount_reset_peak(void)
{
    memcount_peak = memcount_live;
}

#endif
