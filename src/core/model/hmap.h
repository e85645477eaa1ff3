/*
 * A u64 -> u32 hash map with open addressing (linear probing, backward-shift deletion) for
 * the model's entity, stack and pending-sample indexes. Capacity doubles at half load up to a
 * hard cap; keys are any 64-bit value (occupancy is tracked by the value, UINT32_MAX = empty).
 */
#ifndef PERCH_MODEL_HMAP_H
#define PERCH_MODEL_HMAP_H

#include <stdbool.h>
#include <stdint.h>

#define PERCH__HMAP_MAX_CAP (1u << 26)

typedef struct perch__hmap {
    uint64_t *keys;
    uint32_t *vals;
    uint32_t cap; /* power of two, or 0 */
    uint32_t count;
} perch__hmap;

static inline uint64_t perch__mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Inserts or replaces key -> val (val != UINT32_MAX). 0, PERCH_ENOMEM or PERCH_ELIMIT. */
int perch__hmap_put(perch__hmap *m, uint64_t key, uint32_t val);
/* True and *val when key is present. */
bool perch__hmap_get(const perch__hmap *m, uint64_t key, uint32_t *val);
/* The value slot of key for an update in place, or NULL when key is absent. Valid until the
 * next put or del. */
uint32_t *perch__hmap_ref(perch__hmap *m, uint64_t key);
/* The slot of key (its value is vals[slot], updated in place), or UINT32_MAX when absent. Valid
 * until the next put or del. */
uint32_t perch__hmap_slot(const perch__hmap *m, uint64_t key);
/* Removes key; true when it was present. */
bool perch__hmap_del(perch__hmap *m, uint64_t key);
void perch__hmap_free(perch__hmap *m);

#endif
