/*
 * Perch's one replaceable allocation point. Every allocation in src/ goes through
 * perch__alloc / perch__calloc / perch__realloc / perch__strdup / perch__free, which all call
 * perch__realloc_hook. Tests replace that pointer to make the N-th allocation fail (the
 * allocation-failure sweeps) or to count allocations; nothing else may call malloc directly.
 *
 * Memory handed to a caller through a public API (perch_output_memory_take, ...) is released
 * with perch_free (include/perch/error.h), never with free(), so a replaced hook stays
 * consistent.
 */
#ifndef PERCH_UTIL_MEM_H
#define PERCH_UTIL_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* realloc semantics; size 0 frees p and returns NULL. */
typedef void *(*perch__realloc_fn)(void *p, size_t size);

/* The allocator every perch__ function calls. Defaults to the C library's realloc/free. */
extern perch__realloc_fn perch__realloc_hook;

/* The C library allocator the hook starts as (for wrappers that forward to it). */
void *perch__default_realloc(void *p, size_t size);

static inline void *perch__alloc(size_t n)
{
    return perch__realloc_hook(NULL, n ? n : 1);
}

static inline void *perch__realloc(void *p, size_t n)
{
    return perch__realloc_hook(p, n ? n : 1);
}

static inline void perch__free(void *p)
{
    if (p != NULL)
        perch__realloc_hook(p, 0);
}

/* Zeroed array of count elements of size bytes; NULL on overflow or failure. */
static inline void *perch__calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    size_t n = count * size;
    void *p = perch__alloc(n);
    if (p != NULL && n != 0)
        memset(p, 0, n);
    return p;
}

/* A copy of s (NULL for NULL s or on failure). */
static inline char *perch__strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = (char *)perch__alloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

#endif
