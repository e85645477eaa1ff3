/*
 * A paged array: fixed-size elements by index, in pages of which at most max_resident are in
 * memory; the others are written to a scratch store (include/perch/scratch.h) and read back
 * when touched, chosen by a clock (second chance). Elements never written read as zeroes. The
 * report keeps one entry per interned stack here, so its memory does not grow with the number
 * of distinct stacks while recent ones (those the next samples use) stay in memory.
 */
#ifndef PERCH_UTIL_PAGED_H
#define PERCH_UTIL_PAGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/scratch.h"

typedef struct perch__page {
    uint8_t *mem;    /* NULL when not resident */
    bool on_scratch; /* a copy is in the scratch store */
    bool dirty;      /* mem differs from that copy */
    bool used;       /* touched since the clock hand last passed */
} perch__page;

typedef struct perch__paged {
    size_t elem;         /* bytes per element */
    size_t page_elems;   /* elements per page */
    size_t max_resident; /* pages held in memory; 0 or no opener: all */
    perch_scratch_open_fn open;
    void *open_ctx;
    perch__page *pages;
    size_t page_count, page_cap, resident, hand;
    perch_scratch scratch;
    bool scratch_open;
    uint64_t page_ins, page_outs; /* pages read back, pages written out */
    int error;                    /* sticky */
} perch__paged;

/* elem bytes per element, about page_bytes per page, at most memory bytes of pages in
 * memory (at least two pages). */
void perch__paged_init(perch__paged *p, size_t elem, size_t page_bytes, size_t memory,
                       perch_scratch_open_fn open, void *open_ctx);
/* The element at index, made resident (and marked changed when write). Valid until the next
 * call on p. NULL on error (p->error says which: PERCH_ENOMEM, or the scratch store's). */
void *perch__paged_at(perch__paged *p, uint64_t index, bool write);
void perch__paged_free(perch__paged *p);

#endif
