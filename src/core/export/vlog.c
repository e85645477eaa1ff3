/*
 * Keyed logs of varints for the gecko writer: one append-only byte log per key (a thread, or
 * a thread's sample group), found through the exporters' u64 map with a probe chain for hash
 * collisions. A log entry is a few LEB128 varints (deltas and small numbers), a few bytes
 * where the fixed structs they replace took 16 to 104, and every byte is charged to the
 * exporter's budget.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

static uint64_t slot_key(uint64_t key, uint32_t tag)
{
    return perch__hash64(key ^ perch__hash64((uint64_t)tag + 0x9e3779b97f4a7c15ull)) | 1;
}

int perch__vlogs_get(perch__vlogs *s, perch__budget *b, uint64_t key, uint32_t tag, bool create,
                     perch__vlog **out)
{
    uint64_t k = slot_key(key, tag);
    uint32_t idx;
    int err;
    *out = NULL;
    for (; perch__map_get(&s->index, k, &idx); k = perch__hash64(k) | 1) {
        if (s->v[idx].key == key && s->v[idx].tag == tag) {
            *out = &s->v[idx];
            return 0;
        }
    }
    if (!create)
        return 0;
    err = perch__grow(b, (void **)&s->v, &s->cap, s->count + 1, sizeof *s->v);
    if (!err)
        err = perch__map_put(&s->index, b, k, (uint32_t)s->count);
    if (err)
        return err;
    *out = memset(&s->v[s->count++], 0, sizeof *s->v);
    (*out)->key = key;
    (*out)->tag = tag;
    return 0;
}

int perch__vlog_put(perch__vlog *l, perch__budget *b, const uint64_t *vals, size_t n)
{
    int err = perch__grow(b, (void **)&l->data, &l->cap, l->len + n * 10, 1);
    if (err)
        return err;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = vals[i];
        while (v >= 0x80) {
            l->data[l->len++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        l->data[l->len++] = (uint8_t)v;
    }
    l->count++;
    return 0;
}

uint64_t perch__vlog_next(const perch__vlog *l, size_t *off)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *off < l->len && shift < 64; shift += 7) {
        uint8_t c = l->data[(*off)++];
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            break;
    }
    return v;
}

void perch__vlogs_free(perch__vlogs *s, perch__budget *b)
{
    for (size_t i = 0; i < s->count; i++)
        perch__release(b, (void **)&s->v[i].data, &s->v[i].cap, 1);
    perch__release(b, (void **)&s->v, &s->cap, sizeof *s->v);
    perch__map_free(&s->index, b);
    s->count = 0;
}
