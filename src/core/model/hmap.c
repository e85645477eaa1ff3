/*
 * Open-addressing hash map u64 -> u32 (see hmap.h). Deletion shifts later entries of the probe
 * run back so lookups never need tombstones.
 */
#include "model/hmap.h"

#include "model/mem.h"
#include "perch/error.h"

#define EMPTY UINT32_MAX

static int grow(perch__hmap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 64;
    if (ncap > PERCH__HMAP_MAX_CAP)
        return PERCH_ELIMIT;
    uint64_t *keys = perch__alloc(sizeof *keys * ncap);
    uint32_t *vals = perch__alloc(sizeof *vals * ncap);
    if (keys == NULL || vals == NULL) {
        perch__free(keys);
        perch__free(vals);
        return PERCH_ENOMEM;
    }
    for (uint32_t i = 0; i < ncap; i++)
        vals[i] = EMPTY;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->vals[i] == EMPTY)
            continue;
        uint32_t j = (uint32_t)perch__mix64(m->keys[i]) & (ncap - 1);
        while (vals[j] != EMPTY)
            j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    perch__free(m->keys);
    perch__free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return 0;
}

static uint32_t find(const perch__hmap *m, uint64_t key)
{
    uint32_t j = (uint32_t)perch__mix64(key) & (m->cap - 1);
    while (m->vals[j] != EMPTY) {
        if (m->keys[j] == key)
            return j;
        j = (j + 1) & (m->cap - 1);
    }
    return j;
}

int perch__hmap_put(perch__hmap *m, uint64_t key, uint32_t val)
{
    if (m->cap == 0 || (m->count + 1) * 2 > m->cap) {
        int err = grow(m);
        if (err < 0)
            return err;
    }
    uint32_t j = find(m, key);
    if (m->vals[j] == EMPTY)
        m->count++;
    m->keys[j] = key;
    m->vals[j] = val;
    return 0;
}

bool perch__hmap_get(const perch__hmap *m, uint64_t key, uint32_t *val)
{
    if (m->cap == 0)
        return false;
    uint32_t j = find(m, key);
    if (m->vals[j] == EMPTY)
        return false;
    *val = m->vals[j];
    return true;
}

uint32_t *perch__hmap_ref(perch__hmap *m, uint64_t key)
{
    if (m->cap == 0)
        return NULL;
    uint32_t j = find(m, key);
    return m->vals[j] == EMPTY ? NULL : &m->vals[j];
}

uint32_t perch__hmap_slot(const perch__hmap *m, uint64_t key)
{
    if (m->cap == 0)
        return EMPTY;
    uint32_t j = find(m, key);
    return m->vals[j] == EMPTY ? EMPTY : j;
}

bool perch__hmap_del(perch__hmap *m, uint64_t key)
{
    if (m->cap == 0)
        return false;
    uint32_t mask = m->cap - 1, i = find(m, key);
    if (m->vals[i] == EMPTY)
        return false;
    m->vals[i] = EMPTY;
    m->count--;
    for (uint32_t j = (i + 1) & mask; m->vals[j] != EMPTY; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)perch__mix64(m->keys[j]) & mask;
        /* move j back to i when its home is not in the cyclic range (i, j] */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in_range)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->vals[j] = EMPTY;
        i = j;
    }
    return true;
}

void perch__hmap_free(perch__hmap *m)
{
    perch__free(m->keys);
    perch__free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}
