/*
 * A string interner for the writers: strings go once into an arena and get dense indices
 * (0, 1, 2...) in first-seen order, as the pprof string table, the speedscope frame list, the
 * Firefox Profiler stringArray and the folded lines need. Lookup by a 64-bit text hash with a
 * probe chain for collisions; every byte is charged to the exporter's budget. The location
 * table does the same for (owner, address) pairs (pprof locations, gecko frames, call-tree
 * nodes, name caches), its slots one word each (index and hash tag), so a lookup reads one
 * slot and one location.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

int perch__intern(perch__interner *t, perch__budget *b, const char *s, size_t n, uint32_t *index)
{
    uint64_t k = text_hash(s, n);
    uint32_t idx;
    int err;
    /* Two texts with the same hash: the second one takes the next key of the chain. */
    for (; perch__map_get(&t->map, k, &idx); k = perch__hash64(k) | 1) {
        if (t->len[idx] == n && memcmp(t->text.data + t->off[idx], s, n) == 0) {
            *index = idx;
            return 0;
        }
    }
    if (t->count >= UINT32_MAX - 1)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&t->off, &t->off_cap, t->count + 1, sizeof *t->off);
    if (!err)
        err = perch__grow(b, (void **)&t->len, &t->len_cap, t->count + 1, sizeof *t->len);
    if (!err)
        err = perch__strings_add(&t->text, b, s, n, &t->off[t->count]);
    if (!err)
        err = perch__map_put(&t->map, b, k, (uint32_t)t->count);
    if (err)
        return err;
    t->len[t->count] = (uint32_t)n;
    *index = (uint32_t)t->count++;
    return 0;
}

int perch__intern_str(perch__interner *t, perch__budget *b, const char *s, uint32_t *index)
{
    return perch__intern(t, b, s, strlen(s), index);
}

void perch__interner_free(perch__interner *t, perch__budget *b)
{
    perch__release(b, (void **)&t->off, &t->off_cap, sizeof *t->off);
    perch__release(b, (void **)&t->len, &t->len_cap, sizeof *t->len);
    perch__release(b, (void **)&t->text.data, &t->text.cap, 1);
    perch__map_free(&t->map, b);
    t->text.len = 0;
    t->count = 0;
}

static uint64_t loc_hash(uint64_t owner, uint64_t addr)
{
    return perch__hash64(addr ^ perch__hash64(owner));
}

#define LOC_SLOT(idx, h) (((uint64_t)(idx) + 1) | ((h)&0xffffffff00000000ull))

/* Doubles the slots (at least 64) and puts every location back. */
static int loc_rehash(perch__loctab *t, perch__budget *b)
{
    size_t ncap = t->slot_cap ? t->slot_cap * 2 : 64;
    uint64_t *slots;
    if (ncap > SIZE_MAX / sizeof *slots || !perch__budget_take(b, ncap * sizeof *slots))
        return PERCH_ELIMIT;
    slots = perch__calloc(ncap, sizeof *slots);
    if (!slots) {
        perch__budget_give(b, ncap * sizeof *slots);
        return PERCH_ENOMEM;
    }
    for (size_t r = 0; r < t->count; r++) {
        uint64_t h = loc_hash(t->locs[r].owner, t->locs[r].addr);
        size_t i = h & (ncap - 1);
        while (slots[i])
            i = (i + 1) & (ncap - 1);
        slots[i] = LOC_SLOT(r, h);
    }
    perch__free(t->slots);
    perch__budget_give(b, t->slot_cap * sizeof *slots);
    t->slots = slots;
    t->slot_cap = ncap;
    return 0;
}

int perch__loctab_get(perch__loctab *t, perch__budget *b, uint64_t owner, uint64_t addr,
                      uint32_t *index, bool *is_new)
{
    uint64_t h = loc_hash(owner, addr), tag = h & 0xffffffff00000000ull;
    size_t i, mask = t->slot_cap - 1;
    int err;
    for (i = h & mask; t->slot_cap && t->slots[i]; i = (i + 1) & mask) {
        uint64_t v = t->slots[i];
        const perch__loc *l = &t->locs[(uint32_t)v - 1];
        if ((v & 0xffffffff00000000ull) == tag && l->addr == addr && l->owner == owner) {
            *index = (uint32_t)v - 1;
            *is_new = false;
            return 0;
        }
    }
    if (t->count >= UINT32_MAX - 1)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&t->locs, &t->cap, t->count + 1, sizeof *t->locs);
    if (!err && (t->count + 1) * 4 > t->slot_cap * 3) {
        err = loc_rehash(t, b);
        mask = t->slot_cap - 1;
        for (i = h & mask; !err && t->slots[i];)
            i = (i + 1) & mask;
    }
    if (err)
        return err;
    t->slots[i] = LOC_SLOT(t->count, h);
    t->locs[t->count] = (perch__loc){addr, owner, 0};
    *index = (uint32_t)t->count++;
    *is_new = true;
    return 0;
}

void perch__loctab_free(perch__loctab *t, perch__budget *b)
{
    perch__release(b, (void **)&t->locs, &t->cap, sizeof *t->locs);
    perch__release(b, (void **)&t->slots, &t->slot_cap, sizeof *t->slots);
    t->count = 0;
}
