/*
 * The report's modules by address, for naming stack frames: the M5 rule of report_names.c
 * (among the ranges of one process key holding an address, the highest base, then the
 * smallest size, then the smaller name, then the module seen first) as a sorted index
 * instead of a scan of every module for every frame (200,000 modules times 160,000 frames
 * took a crafted capture's report a minute).
 *
 * The known modules with a size are sorted by (process key, base, size descending, name
 * descending, row descending), so among the ranges that hold an address the best one is the
 * last in that order. Every range at or below the address in its process key lies in one run
 * of the order; a max-tree over the runs' last addresses finds the last range in it that
 * reaches the address in O(log n), whatever the ranges' sizes (a scan backwards from the
 * address, bounded by the largest size, is linear again once one module spans everything).
 */
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "model/module_order.h"
#include "perch/error.h"
#include "report/report_internal.h"

/* M5, then the later row first among equals (rows are distinct). */
static int cmp_rec(const void *a, const void *b)
{
    const perch__module_sort *x = a, *y = b;
    int c = perch__module_sort_cmp(a, b);
    return c != 0 ? c : x->index > y->index ? -1 : 1;
}

void perch__rmodmap_free(rmodmap *m)
{
    perch__free(m->order);
    perch__free(m->last);
    memset(m, 0, sizeof *m);
}

/* The sort records of the known modules with a size into *out (perch__free), *n of them. */
static int collect(const rtable *mods, perch__module_sort **out, uint32_t *n)
{
    perch__module_sort *v = perch__alloc(sizeof *v * ((size_t)mods->count + 1));
    if (v == NULL)
        return PERCH_ENOMEM;
    *n = 0;
    for (uint32_t i = 0; i < mods->count; i++) {
        const rmod *md = (const rmod *)mods->rows + i;
        if (md->known && md->size > 0)
            v[(*n)++] = (perch__module_sort){md->process_key, md->base, md->size,
                                             md->name ? md->name : "", i};
    }
    qsort(v, *n, sizeof *v, cmp_rec);
    *out = v;
    return 0;
}

int perch__rmodmap_build(rmodmap *m, const rtable *mods)
{
    perch__module_sort *v = NULL;
    uint32_t n = 0, leaves = 1;
    int err = collect(mods, &v, &n);
    if (err)
        return err;
    while (leaves < n)
        leaves *= 2;
    uint32_t *order = perch__alloc(sizeof *order * ((size_t)n + 1));
    uint64_t *last = perch__alloc(sizeof *last * 2 * (size_t)leaves);
    if (order == NULL || last == NULL) {
        perch__free(order);
        perch__free(last);
        perch__free(v);
        return PERCH_ENOMEM;
    }
    memset(last, 0, sizeof *last * 2 * (size_t)leaves);
    for (uint32_t i = 0; i < n; i++) {
        order[i] = v[i].index;
        last[leaves + i] =
            v[i].size - 1 > UINT64_MAX - v[i].base ? UINT64_MAX : v[i].base + (v[i].size - 1);
    }
    for (uint32_t k = leaves - 1; k > 0; k--)
        last[k] = last[2 * k] > last[2 * k + 1] ? last[2 * k] : last[2 * k + 1];
    perch__free(v);
    perch__rmodmap_free(m);
    *m = (rmodmap){order, last, n, leaves, true};
    return 0;
}

/* The first position whose (process key, base) is above (pk, addr). */
static uint32_t upper_bound(const rmodmap *m, const rtable *mods, uint64_t pk, uint64_t addr)
{
    uint32_t lo = 0, hi = m->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const rmod *md = (const rmod *)mods->rows + m->order[mid];
        if (md->process_key < pk || (md->process_key == pk && md->base <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last position in [lo, hi) under node (which covers span positions from first) whose
 * range reaches addr, or UINT32_MAX. Visits O(log n) nodes: a node inside [lo, hi) whose
 * maximum reaches addr always holds an answer. */
static uint32_t last_reaching(const rmodmap *m, uint32_t node, uint32_t first, uint32_t span,
                              uint32_t lo, uint32_t hi, uint64_t addr)
{
    if (first >= hi || first + span <= lo || m->last[node] < addr)
        return UINT32_MAX;
    if (span == 1)
        return first;
    uint32_t half = span / 2;
    uint32_t p = last_reaching(m, 2 * node + 1, first + half, half, lo, hi, addr);
    return p != UINT32_MAX ? p : last_reaching(m, 2 * node, first, half, lo, hi, addr);
}

const rmod *perch__rmodmap_find(const rmodmap *m, const rtable *mods, uint64_t process_key,
                                uint64_t addr)
{
    uint32_t lo = process_key == 0 ? 0 : upper_bound(m, mods, process_key - 1, UINT64_MAX);
    uint32_t hi = upper_bound(m, mods, process_key, addr);
    uint32_t p = lo < hi ? last_reaching(m, 1, 0, m->leaves, lo, hi, addr) : UINT32_MAX;
    return p != UINT32_MAX ? (const rmod *)mods->rows + m->order[p] : NULL;
}
