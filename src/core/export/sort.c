/*
 * Sorting for the exporters' per-group arrays without qsort's comparison callback: a stable
 * order by a 64-bit time from an LSD radix sort of packed keys ((time - smallest) << b | index,
 * b the bits of the largest index, so ties keep their index order), 8 bits a pass over the
 * bytes the keys use, an insertion sort for short arrays, and the records moved to their
 * places in place by following the permutation's cycles. Memory: two keys of 8 bytes per
 * record, no copy of the records. The sample log's rows and samples go through it; the
 * order is the one qsort with the same total comparison gives, so the outputs do not change.
 *
 * A group's samples come nearly in time order (the model emits a sample once its stack is
 * complete): at 512 MB 10 % of them come after a later one. perch__time_order_late sorts only
 * those (the run of the others is in order already) and merges the two.
 */
#include <string.h>

#include "export/export_internal.h"

#define SHORT_SORT 48

static void insertion_sort(uint64_t *k, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t x = k[i];
        size_t j = i;
        for (; j > 0 && k[j - 1] > x; j--)
            k[j] = k[j - 1];
        k[j] = x;
    }
}

static void radix_sort(uint64_t *k, uint64_t *tmp, size_t n)
{
    size_t count[8][256];
    uint64_t *src = k, *dst = tmp, hi = 0;
    unsigned digits = 0;
    if (n < SHORT_SORT) {
        insertion_sort(k, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        hi |= k[i];
    for (; hi; hi >>= 8)
        digits++;
    memset(count, 0, digits * sizeof count[0]);
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < digits; d++)
            count[d][(k[i] >> (8 * d)) & 0xff]++;
    for (unsigned d = 0; d < digits; d++) {
        size_t sum = 0, *c = count[d];
        uint64_t *t;
        for (unsigned b = 0; b < 256; b++) {
            size_t x = c[b];
            c[b] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i] >> (8 * d)) & 0xff]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
}

bool perch__time_order(uint64_t *keys, uint64_t *tmp, const void *base, size_t stride, size_t off,
                       size_t n, unsigned *bits)
{
    const uint8_t *p = base;
    uint64_t lo = UINT64_MAX, hi = 0, t;
    unsigned b = 0;
    if (n == 0)
        return false;
    while (b < 64 && (n - 1) >> b)
        b++;
    for (size_t i = 0; i < n; i++) {
        memcpy(&t, p + i * stride + off, sizeof t);
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
    }
    if (b && (hi - lo) >> (64 - b))
        return false; /* the times and indices do not fit one 64-bit key */
    for (size_t i = 0; i < n; i++) {
        memcpy(&t, p + i * stride + off, sizeof t);
        keys[i] = (t - lo) << b | i;
    }
    radix_sort(keys, tmp, n);
    *bits = b;
    return true;
}

static uint64_t time_at(const uint8_t *p, size_t stride, size_t off, size_t i)
{
    uint64_t t;
    memcpy(&t, p + i * stride + off, sizeof t);
    return t;
}

/* Merges the in-order indices run[0, a) and the sorted late keys late[0, b) (time << bits |
 * index) into late[0, a + b) as indices, by (time, index), from the back: a place written is
 * never a late key not read yet. */
static void merge_back(const uint8_t *p, size_t stride, size_t off, const uint64_t *run, size_t a,
                       uint64_t *late, size_t b, uint64_t mask)
{
    size_t w = a + b;
    while (b > 0) {
        uint64_t li = late[b - 1] & mask, lt = time_at(p, stride, off, li);
        if (a > 0) {
            uint64_t ri = run[a - 1], rt = time_at(p, stride, off, ri);
            if (rt > lt || (rt == lt && ri > li)) {
                late[--w] = ri;
                a--;
                continue;
            }
        }
        late[--w] = li;
        b--;
    }
    while (a > 0)
        late[--w] = run[--a];
}

bool perch__time_order_late(uint64_t *keys, uint64_t *tmp, const void *base, size_t stride,
                            size_t off, size_t n)
{
    const uint8_t *p = base;
    uint64_t top = 0, lo = UINT64_MAX, hi = 0;
    size_t a = 0, b = 0;
    unsigned bits = 0;
    if (n == 0)
        return false;
    while (bits < 64 && (n - 1) >> bits)
        bits++;
    for (size_t i = 0; i < n; i++) { /* the run in order to keys, the late ones to tmp */
        uint64_t t = time_at(p, stride, off, i);
        if (i == 0 || t >= top) {
            top = t;
            keys[a++] = i;
        } else {
            tmp[b++] = i;
            lo = t < lo ? t : lo;
            hi = t > hi ? t : hi;
        }
    }
    if (b && bits && (hi - lo) >> (64 - bits))
        return false; /* the late times and indices do not fit one 64-bit key */
    for (size_t j = 0; j < b; j++)
        tmp[j] = (time_at(p, stride, off, tmp[j]) - lo) << bits | tmp[j];
    radix_sort(tmp, keys + a, b); /* keys[a, n) is free: its scratch */
    merge_back(p, stride, off, keys, a, tmp, b, bits ? ((uint64_t)1 << bits) - 1 : 0);
    return true;
}

void perch__permute(void *base, size_t size, uint64_t *order, size_t n)
{
    uint8_t *p = base, hold[128];
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        if (order[i] == i)
            continue;
        memcpy(hold, p + i * size, size);
        while (order[j] != i) { /* place j takes the record at order[j] */
            size_t next = (size_t)order[j];
            memcpy(p + j * size, p + next * size, size);
            order[j] = j;
            j = next;
        }
        memcpy(p + j * size, hold, size);
        order[j] = j;
    }
}
