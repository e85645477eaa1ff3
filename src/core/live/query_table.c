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
    return (size_t)t->cap * (3 * sizeof(uint64_t) + 1);
}

static int qagg_grow(qagg *t, size_t *bytes)
{
    qagg n = {NULL, NULL, NULL, NULL, t->cap ? t->cap * 2 : QAGG_MIN, 0};
    n.keys = perch__alloc(sizeof *n.keys * n.cap);
    n.a = perch__alloc(sizeof *n.a * n.cap);
    n.b = perch__alloc(sizeof *n.b * n.cap);
    n.used = perch__calloc(n.cap, 1);
    if (!n.keys || !n.a || !n.b || !n.used) {
        perch__qagg_free(&n);
        return PERCH_ENOMEM;
    }
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->used[i])
            continue;
        uint32_t j = (uint32_t)perch__mix64(t->keys[i]) & (n.cap - 1);
        while (n.used[j])
            j = (j + 1) & (n.cap - 1);
        n.used[j] = 1;
        n.keys[j] = t->keys[i];
        n.a[j] = t->a[i];
        n.b[j] = t->b[i];
    }
    n.count = t->count;
    *bytes += perch__qagg_bytes(&n) - perch__qagg_bytes(t);
    perch__qagg_free(t);
    *t = n;
    return 0;
}

int perch__qagg_add(qagg *t, uint64_t key, uint64_t a, uint64_t b, bool keep_first_b, size_t *bytes)
{
    if ((t->count + 1) * 2 > t->cap) {
        int err = qagg_grow(t, bytes);
        if (err < 0)
            return err;
    }
    uint32_t j = (uint32_t)perch__mix64(key) & (t->cap - 1);
    while (t->used[j] && t->keys[j] != key)
        j = (j + 1) & (t->cap - 1);
    if (!t->used[j]) {
        t->used[j] = 1;
        t->keys[j] = key;
        t->a[j] = 0;
        t->b[j] = 0;
        t->count++;
    }
    t->a[j] += a;
    if (!keep_first_b)
        t->b[j] += b;
    else if (t->b[j] == 0)
        t->b[j] = b;
    return 0;
}

void perch__qagg_free(qagg *t)
{
    perch__free(t->keys);
    perch__free(t->a);
    perch__free(t->b);
    perch__free(t->used);
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
