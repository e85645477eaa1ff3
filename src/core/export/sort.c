/*
 * Sorting for the exporters' per-group arrays without qsort's comparison callback: a stable
 * LSD radix sort of (64-bit key, index) pairs, 8 bits a pass over the bytes in which the keys
 * differ from the smallest (a group's timestamps span a few bytes), with an insertion
 * sort for short arrays. The sample log's rows and samples go through it: the pairs are
 * sorted by time, ties keep their index order (then the rows' ties are settled by their full
 * comparison), and the records are moved once to their sorted places. The order is the one
 * qsort with the same total comparison gives, so the outputs do not change by one byte.
 */
#include <string.h>

#include "export/export_internal.h"

#define SHORT_SORT 48

static void insertion_sort(perch__sortkey *k, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        perch__sortkey x = k[i];
        size_t j = i;
        for (; j > 0 && (k[j - 1].key > x.key || (k[j - 1].key == x.key && k[j - 1].idx > x.idx));
             j--)
            k[j] = k[j - 1];
        k[j] = x;
    }
}

void perch__radix_sort(perch__sortkey *k, perch__sortkey *tmp, size_t n)
{
    size_t count[8][256];
    perch__sortkey *src = k, *dst = tmp;
    uint64_t lo, hi;
    unsigned digits = 0;
    if (n < SHORT_SORT) {
        insertion_sort(k, n);
        return;
    }
    lo = hi = k[0].key;
    for (size_t i = 1; i < n; i++) {
        lo = k[i].key < lo ? k[i].key : lo;
        hi = k[i].key > hi ? k[i].key : hi;
    }
    for (uint64_t r = hi - lo; r; r >>= 8)
        digits++; /* the passes over the digits of key - lo that differ */
    memset(count, 0, digits * sizeof count[0]);
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < digits; d++)
            count[d][((k[i].key - lo) >> (8 * d)) & 0xff]++;
    for (unsigned d = 0; d < digits; d++) {
        size_t sum = 0, *c = count[d];
        for (unsigned b = 0; b < 256; b++) {
            size_t x = c[b];
            c[b] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[((src[i].key - lo) >> (8 * d)) & 0xff]++] = src[i];
        perch__sortkey *t = src;
        src = dst;
        dst = t;
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
}
