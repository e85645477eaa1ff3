/*
 * The k-way merge of per-CPU streams: a binary min-heap of stream heads keyed by (event
 * timestamp, cpu). A stream's next key is copied into its heap item, so comparisons never
 * chase pointers. Ties between CPUs go to the lower CPU; inside one CPU, file order holds
 * because a stream only ever offers its next record.
 */
#include "etl/reader.h"

static inline bool less(const struct perch__etl_heap_item *a, const struct perch__etl_heap_item *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->cpu < b->cpu);
}

static void sift_down(struct perch__etl_heap_item *h, uint32_t n, uint32_t i)
{
    struct perch__etl_heap_item item = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && less(&h[c + 1], &h[c]))
            c++;
        if (!less(&h[c], &item))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = item;
}

void perch__etl_heap_push(struct perch__etl_heap_item *h, uint32_t *n,
                          struct perch__etl_heap_item item)
{
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!less(&item, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = item;
}

void perch__etl_heap_replace_top(struct perch__etl_heap_item *h, uint32_t n,
                                 struct perch__etl_heap_item item)
{
    h[0] = item;
    sift_down(h, n, 0);
}

void perch__etl_heap_pop(struct perch__etl_heap_item *h, uint32_t *n)
{
    if (*n == 0)
        return;
    h[0] = h[--(*n)];
    if (*n > 0)
        sift_down(h, *n, 0);
}
