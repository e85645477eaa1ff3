/*
 * A string interner for the writers: strings go once into an arena and get dense indices
 * (0, 1, 2...) in first-seen order, as the pprof string table, the speedscope frame list, the
 * Firefox Profiler stringArray and the folded lines need. Lookup by a 64-bit text hash with a
 * probe chain for collisions; every byte is charged to the exporter's budget.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

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

int perch__loctab_get(perch__loctab *t, perch__budget *b, uint64_t owner, uint64_t addr,
                      uint32_t *index, bool *is_new)
{
    uint64_t k = perch__hash64(addr ^ perch__hash64(owner)) | 1;
    uint32_t idx;
    int err;
    for (; perch__map_get(&t->map, k, &idx); k = perch__hash64(k) | 1) {
        if (t->locs[idx].addr == addr && t->locs[idx].owner == owner) {
            *index = idx;
            *is_new = false;
            return 0;
        }
    }
    if (t->count >= UINT32_MAX - 1)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&t->locs, &t->cap, t->count + 1, sizeof *t->locs);
    if (!err)
        err = perch__map_put(&t->map, b, k, (uint32_t)t->count);
    if (err)
        return err;
    t->locs[t->count] = (perch__loc){addr, owner, 0};
    *index = (uint32_t)t->count++;
    *is_new = true;
    return 0;
}

void perch__loctab_free(perch__loctab *t, perch__budget *b)
{
    perch__release(b, (void **)&t->locs, &t->cap, sizeof *t->locs);
    perch__map_free(&t->map, b);
    t->count = 0;
}
