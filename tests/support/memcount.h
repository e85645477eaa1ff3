/*
 * A counting allocator for tests that assert bounded memory: installs itself as
 * perch__realloc_hook, keeps each block's size in a 16-byte header, and tracks the bytes live
 * now and the peak. Header-only (static functions); one test program uses one instance.
 * The counts are atomic: the live engine's tests allocate on its model thread and their own
 * at once, and plain counters lost updates (ThreadSanitizer, docs/testing.md).
 */
#ifndef PERCH_TEST_MEMCOUNT_H
#define PERCH_TEST_MEMCOUNT_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static _Atomic size_t memcount_live, memcount_peak;

static void *memcount_realloc(void *p, size_t size)
{
    size_t old = 0;
    char *base = p ? (char *)p - 16 : NULL;
    if (base)
        memcpy(&old, base, sizeof old);
    if (size == 0) {
        atomic_fetch_sub(&memcount_live, old);
        free(base);
        return NULL;
    }
    char *q = realloc(base, size + 16);
    if (!q)
        return NULL;
    memcpy(q, &size, sizeof size);
    size_t live = atomic_fetch_add(&memcount_live, size - old) + (size - old); /* mod 2^n */
    size_t peak = atomic_load(&memcount_peak);
    while (live > peak && !atomic_compare_exchange_weak(&memcount_peak, &peak, live))
        ;
    return q + 16;
}

/* Starts counting; blocks allocated before must not be freed until memcount_stop. */
static inline void memcount_start(void)
{
    atomic_store(&memcount_live, 0);
    atomic_store(&memcount_peak, 0);
    perch__realloc_hook = memcount_realloc;
}

static inline void memcount_stop(void)
{
    perch__realloc_hook = perch__default_realloc;
}

/* Restarts the peak from what is live now. */
static inline void memcount_reset_peak(void)
{
    atomic_store(&memcount_peak, atomic_load(&memcount_live));
}

#endif
