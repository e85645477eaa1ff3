/*
 * The capture string table (see strtab.h). One arena holds every string NUL-terminated; two
 * parallel arrays give each id's offset and length; the writer adds an open-addressing hash
 * (FNV-1a) over the same ids. All three grow by doubling up to the format's hard caps.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/strtab.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "util/mem.h"

void perch__strtab_clear(perch__strtab *t)
{
    t->arena_len = 0;
    t->count = 0;
    if (t->hash)
        memset(t->hash, 0, t->hash_cap * sizeof *t->hash);
}

void perch__strtab_free(perch__strtab *t)
{
    perch__free(t->arena);
    perch__free(t->offset);
    perch__free(t->length);
    perch__free(t->hash);
    memset(t, 0, sizeof *t);
}

static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static bool same(const perch__strtab *t, uint32_t id, const char *s, size_t len)
{
    return t->length[id - 1] == len && memcmp(t->arena + t->offset[id - 1], s, len) == 0;
}

uint32_t perch__strtab_find(const perch__strtab *t, const char *s, size_t len)
{
    if (!t->hash_cap)
        return 0;
    uint32_t mask = t->hash_cap - 1;
    for (uint32_t i = (uint32_t)fnv1a(s, len) & mask;; i = (i + 1) & mask) {
        uint32_t id = t->hash[i];
        if (!id)
            return 0;
        if (same(t, id, s, len))
            return id;
    }
}

bool perch__strtab_fits(const perch__strtab *t, size_t n, size_t bytes)
{
    return n <= PERCH_CAPTURE_MAX_STRTAB_COUNT - t->count &&
           bytes + n <= PERCH_CAPTURE_MAX_STRTAB_BYTES - t->arena_len;
}

static int grow(void **p, size_t elem, uint32_t *cap, size_t need, size_t start)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : start;
    while (n < need)
        n *= 2;
    void *q = perch__realloc(*p, n * elem);
    if (!q)
        return PERCH_ENOMEM;
    *p = q;
    *cap = (uint32_t)n;
    return 0;
}

static void hash_insert(perch__strtab *t, uint32_t id)
{
    uint32_t mask = t->hash_cap - 1;
    uint32_t i = (uint32_t)fnv1a(t->arena + t->offset[id - 1], t->length[id - 1]) & mask;
    while (t->hash[i])
        i = (i + 1) & mask;
    t->hash[i] = id;
}

static int grow_hash(perch__strtab *t)
{
    if (t->hash_cap && (t->count + 1) * 2 <= t->hash_cap)
        return 0;
    uint32_t cap = t->hash_cap ? t->hash_cap * 2 : 1024;
    uint32_t *h = perch__calloc(cap, sizeof *h);
    if (!h)
        return PERCH_ENOMEM;
    perch__free(t->hash);
    t->hash = h;
    t->hash_cap = cap;
    for (uint32_t id = 1; id <= t->count; id++)
        hash_insert(t, id);
    return 0;
}

static int grow_arena(perch__strtab *t, size_t need)
{
    uint32_t cap = (uint32_t)t->arena_cap;
    int err = grow((void **)&t->arena, 1, &cap, need, 4096);
    t->arena_cap = cap;
    return err;
}

int perch__strtab_add(perch__strtab *t, const char *s, size_t len, bool with_hash, uint32_t *id)
{
    int err;
    if (!perch__strtab_fits(t, 1, len))
        return PERCH_ELIMIT;
    uint32_t cap = t->index_cap;
    if ((err = grow((void **)&t->offset, sizeof *t->offset, &cap, t->count + 1u, 256)) != 0)
        return err;
    if ((err = grow((void **)&t->length, sizeof *t->length, &t->index_cap, t->count + 1u, 256)) !=
        0)
        return err;
    if ((err = grow_arena(t, t->arena_len + len + 1)) != 0)
        return err;
    if (with_hash && (err = grow_hash(t)) != 0)
        return err;
    if (len)
        memcpy(t->arena + t->arena_len, s, len);
    t->arena[t->arena_len + len] = '\0';
    t->offset[t->count] = (uint32_t)t->arena_len;
    t->length[t->count] = (uint32_t)len;
    t->arena_len += len + 1;
    *id = ++t->count;
    if (with_hash)
        hash_insert(t, *id);
    return 0;
}

const char *perch__strtab_get(const perch__strtab *t, uint64_t id)
{
    if (id == 0 || id > t->count)
        return NULL;
    return t->arena + t->offset[id - 1];
}
