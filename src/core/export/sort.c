/*
 * Sorting for the exporters' per-group arrays without qsort's comparison callback: a stable
 * order by a 64-bit time from an LSD radix sort of packed keys ((time - smallest) << b | index,
 * b the bits of the largest index, so ties keep their index order), 8 bits a pass over the
 * bytes the keys use, an insertion sort for short arrays, and the records moved to their
 * places in place by following the permutation's cycles. Memory: two keys of 8 bytes per
 * record, no copy of the records. The sample log's rows and samples go through it; the
 * order is the one qsort with the same total comparison gives, so the outputs do not change.
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
