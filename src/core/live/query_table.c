/*
 * The two small containers of the live query state: the per-bucket total tables (qagg,
 * open addressing, insert and add only) and the keyed row tables of entities and stacks
 * (qtable: rows in an array, a perch__hmap from key to row, swap-remove on delete).
 */
#include <string.h>

#include "live/query_internal.h"
#include "model/mem.h"
#include "perch/error.h"
#include "util/mem.h"

#define QAGG_MIN   16u
#define QTABLE_MAX (1u << 24)

size_t perch__qagg_bytes(const qagg *t)
{
    return (size_t)t->ecap * 3 * sizeof(uint64_t) + (size_t)t->cap * sizeof(uint32_t);
}

static int grow_entries(qagg *t, size_t *bytes)
{
    uint32_t n = t->ecap ? t->ecap * 2 : QAGG_MIN / 2;
    uint64_t *k = perch__realloc(t->keys, sizeof *k * n);
    if (k == NULL)
        return PERCH_ENOMEM;
    t->keys = k;
    uint64_t *a = perch__realloc(t->a, sizeof *a * n);
    if (a == NULL)
        return PERCH_ENOMEM;
    t->a = a;
    uint64_t *b = perch__realloc(t->b, sizeof *b * n);
    if (b == NULL)
        return PERCH_ENOMEM;
    t->b = b;
    *bytes += (size_t)(n - t->ecap) * 3 * sizeof(uint64_t);
    t->ecap = n;
    return 0;
}

static int grow_slots(qagg *t, size_t *bytes)
{
    uint32_t n = t->cap ? t->cap * 2 : QAGG_MIN;
    uint32_t *slots = perch__calloc(n, sizeof *slots);
    if (slots == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t j = (uint32_t)perch__mix64(t->keys[i]) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = i + 1;
    }
    *bytes += (size_t)(n - t->cap) * sizeof *slots;
    perch__free(t->slots);
    t->slots = slots;
    t->cap = n;
    return 0;
}

int perch__qagg_add(qagg *t, uint64_t key, uint64_t a, uint64_t b, bool keep_first_b, size_t *bytes)
{
    if ((t->count + 1) * 2 > t->cap) {
        int err = grow_slots(t, bytes);
        if (err < 0)
            return err;
    }
    uint32_t j = (uint32_t)perch__mix64(key) & (t->cap - 1);
    while (t->slots[j] && t->keys[t->slots[j] - 1] != key)
        j = (j + 1) & (t->cap - 1);
    if (!t->slots[j]) {
        if (t->count == t->ecap) {
            int err = grow_entries(t, bytes);
            if (err < 0)
                return err;
        }
        t->keys[t->count] = key;
        t->a[t->count] = 0;
        t->b[t->count] = 0;
        t->slots[j] = ++t->count;
    }
    uint32_t e = t->slots[j] - 1;
    t->a[e] += a;
    if (!keep_first_b)
        t->b[e] += b;
    else if (t->b[e] == 0)
        t->b[e] = b;
    return 0;
}

void perch__qagg_free(qagg *t)
{
    perch__free(t->keys);
    perch__free(t->a);
    perch__free(t->b);
    perch__free(t->slots);
    memset(t, 0, sizeof *t);
}

void perch__qtable_init(qtable *t, size_t row_size)
{
    memset(t, 0, sizeof *t);
    t->row_size = row_size;
}

void *perch__qtable_get(const qtable *t, uint64_t key)
{
    uint32_t i;
    if (!perch__hmap_get(&t->index, key, &i))
        return NULL;
    return (char *)t->rows + (size_t)i * t->row_size;
}

void *perch__qtable_put(qtable *t, uint64_t key, uint32_t max, bool *created)
{
    void *row = perch__qtable_get(t, key);
    uint32_t kcap = t->cap;
    *created = false;
    if (row != NULL)
        return row;
    if (t->count >= max ||
        perch__grow_array(&t->rows, t->row_size, &t->cap, t->count + 1, QTABLE_MAX) < 0 ||
        perch__grow_array((void **)&t->keys, sizeof *t->keys, &kcap, t->cap, QTABLE_MAX) < 0 ||
        perch__hmap_put(&t->index, key, t->count) < 0)
        return NULL;
    row = (char *)t->rows + (size_t)t->count * t->row_size;
    memset(row, 0, t->row_size);
    t->keys[t->count++] = key;
    *created = true;
    return row;
}

void perch__qtable_remove(qtable *t, uint32_t i)
{
    uint32_t last = t->count - 1;
    perch__hmap_del(&t->index, t->keys[i]);
    if (i != last) {
        memcpy((char *)t->rows + (size_t)i * t->row_size,
               (char *)t->rows + (size_t)last * t->row_size, t->row_size);
        t->keys[i] = t->keys[last];
        perch__hmap_put(&t->index, t->keys[i], i); /* replaces: cannot grow */
    }
    t->count--;
}

size_t perch__qtable_bytes(const qtable *t)
{
    return (size_t)t->cap * (t->row_size + sizeof *t->keys) +
           (size_t)t->index.cap * (sizeof *t->index.keys + sizeof *t->index.vals);
}

void perch__qtable_free(qtable *t)
{
    size_t row_size = t->row_size;
    perch__hmap_free(&t->index);
    perch__free(t->rows);
    perch__free(t->keys);
    memset(t, 0, sizeof *t);
    t->row_size = row_size;
}
