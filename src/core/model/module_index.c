/*
 * The address index of modules (module_index.h): positions in the caller's order, a binary
 * search for the run of one process key at or below an address, and a max-tree over the
 * positions' last addresses for the last range in that run that still reaches the address.
 */
#include <string.h>

#include "model/module_index.h"
#include "perch/error.h"
#include "util/mem.h"

/* Positions are uint32_t, and leaves (a power of two) must fit one too. */
#define MAX_RANGES ((size_t)1 << 31)

/* The power of two at or above n (n at most MAX_RANGES). */
static uint64_t leaves_for(uint64_t n)
{
    uint64_t leaves = 1;
    while (leaves < n)
        leaves *= 2;
    return leaves;
}

uint64_t perch__module_index_bytes(size_t n)
{
    if (n > MAX_RANGES)
        return UINT64_MAX; /* no budget holds it; build refuses it */
    uint64_t leaves = leaves_for(n);
    return (leaves + 1) * (2 * sizeof(uint64_t) + sizeof(uint32_t)) +
           2 * leaves * sizeof(uint64_t);
}

void perch__module_index_free(perch__module_index *ix)
{
    perch__free(ix->pk);
    perch__free(ix->base);
    perch__free(ix->last);
    perch__free(ix->index);
    memset(ix, 0, sizeof *ix);
}

static uint64_t last_address(uint64_t base, uint64_t size)
{
    return size - 1 > UINT64_MAX - base ? UINT64_MAX : base + (size - 1);
}

/* Arrays for `leaves` positions into *next; 0 or PERCH_ENOMEM (nothing allocated then). */
static int alloc_arrays(perch__module_index *next, uint32_t leaves)
{
    size_t n = (size_t)leaves + 1;
    *next = (perch__module_index){perch__alloc(sizeof *next->pk * n),
                                  perch__alloc(sizeof *next->base * n),
                                  perch__alloc(sizeof *next->last * 2 * (size_t)leaves),
                                  perch__alloc(sizeof *next->index * n),
                                  0,
                                  leaves,
                                  leaves};
    if (next->pk == NULL || next->base == NULL || next->last == NULL || next->index == NULL) {
        perch__module_index_free(next);
        return PERCH_ENOMEM;
    }
    return 0;
}

int perch__module_index_build(perch__module_index *ix, const perch__module_sort *recs, size_t n)
{
    if (n > MAX_RANGES)
        return PERCH_ELIMIT;
    uint32_t leaves = (uint32_t)leaves_for(n);
    perch__module_index next = *ix;
    if (ix->pk == NULL || leaves > ix->cap_leaves) { /* else the arrays are used again */
        if (alloc_arrays(&next, leaves) != 0)
            return PERCH_ENOMEM; /* ix untouched */
        perch__module_index_free(ix);
    }
    next.count = 0;
    next.leaves = leaves;
    memset(next.last, 0, sizeof *next.last * 2 * (size_t)leaves);
    for (size_t i = 0; i < n; i++) {
        if (recs[i].size == 0)
            continue;
        uint32_t at = next.count++;
        next.pk[at] = recs[i].process_key;
        next.base[at] = recs[i].base;
        next.index[at] = recs[i].index;
        next.last[leaves + at] = last_address(recs[i].base, recs[i].size);
    }
    for (uint32_t k = leaves - 1; k > 0; k--)
        next.last[k] =
            next.last[2 * k] > next.last[2 * k + 1] ? next.last[2 * k] : next.last[2 * k + 1];
    *ix = next;
    return 0;
}

/* The first position whose (process key, base) is above (pk, addr). */
static uint32_t upper_bound(const perch__module_index *ix, uint64_t pk, uint64_t addr)
{
    uint32_t lo = 0, hi = ix->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->pk[mid] < pk || (ix->pk[mid] == pk && ix->base[mid] <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last position in [lo, hi) under node (which covers span positions from first) whose
 * range reaches addr, or NONE. Visits O(log n) nodes: a node inside [lo, hi) whose maximum
 * reaches addr always holds an answer. */
static uint32_t last_reaching(const perch__module_index *ix, uint32_t node, uint32_t first,
                              uint32_t span, uint32_t lo, uint32_t hi, uint64_t addr)
{
    if (first >= hi || first + span <= lo || ix->last[node] < addr)
        return PERCH_MODULE_INDEX_NONE;
    if (span == 1)
        return first;
    uint32_t half = span / 2;
    uint32_t p = last_reaching(ix, 2 * node + 1, first + half, half, lo, hi, addr);
    return p != PERCH_MODULE_INDEX_NONE ? p
                                        : last_reaching(ix, 2 * node, first, half, lo, hi, addr);
}

uint32_t perch__module_index_find(const perch__module_index *ix, uint64_t process_key,
                                  uint64_t addr)
{
    if (ix->count == 0)
        return PERCH_MODULE_INDEX_NONE;
    uint32_t lo = process_key == 0 ? 0 : upper_bound(ix, process_key - 1, UINT64_MAX);
    uint32_t hi = upper_bound(ix, process_key, addr);
    uint32_t p =
        lo < hi ? last_reaching(ix, 1, 0, ix->leaves, lo, hi, addr) : PERCH_MODULE_INDEX_NONE;
    return p != PERCH_MODULE_INDEX_NONE ? ix->index[p] : PERCH_MODULE_INDEX_NONE;
}
