/*
 * The paged array of paged.h. The page table grows with the highest index (one small entry
 * per page); page memory is capped by max_resident. Page i lives at i * page size in the
 * scratch store, which is opened the first time a page must leave memory.
 */
#include <string.h>

#include "perch/error.h"
#include "util/mem.h"
#include "util/paged.h"

void perch__paged_init(perch__paged *p, size_t elem, size_t page_bytes, size_t memory,
                       perch_scratch_open_fn open, void *open_ctx)
{
    memset(p, 0, sizeof *p);
    p->elem = elem ? elem : 1;
    p->page_elems = page_bytes / p->elem ? page_bytes / p->elem : 1;
    p->max_resident = memory / (p->page_elems * p->elem);
    if (p->max_resident < 2)
        p->max_resident = 2;
    p->open = open;
    p->open_ctx = open_ctx;
}

static size_t page_bytes(const perch__paged *p)
{
    return p->page_elems * p->elem;
}

static int table_grow(perch__paged *p, size_t need)
{
    size_t ncap = p->page_cap ? p->page_cap : 16;
    if (need <= p->page_cap)
        return 0;
    while (ncap < need)
        ncap *= 2;
    perch__page *t = perch__realloc(p->pages, ncap * sizeof *t);
    if (t == NULL)
        return PERCH_ENOMEM;
    memset(t + p->page_cap, 0, (ncap - p->page_cap) * sizeof *t);
    p->pages = t;
    p->page_cap = ncap;
    return 0;
}

/* Takes the memory of a resident page the clock picks, writing it out first when changed. */
static int evict(perch__paged *p, uint8_t **mem)
{
    for (;;) {
        perch__page *g = &p->pages[p->hand];
        p->hand = (p->hand + 1) % p->page_count;
        if (g->mem == NULL)
            continue;
        if (g->used) {
            g->used = false;
            continue;
        }
        if (!p->scratch_open) {
            int err = p->open(p->open_ctx, &p->scratch);
            if (err)
                return err;
            p->scratch_open = true;
        }
        size_t idx = (size_t)(g - p->pages);
        if (g->dirty || !g->on_scratch) {
            int err = p->scratch.write_at(p->scratch.ctx, (uint64_t)idx * page_bytes(p), g->mem,
                                          page_bytes(p));
            if (err)
                return err;
            p->page_outs++;
        }
        g->on_scratch = true;
        g->dirty = false;
        *mem = g->mem;
        g->mem = NULL;
        p->resident--;
        return 0;
    }
}

/* Makes page i resident. */
static int load(perch__paged *p, size_t i)
{
    perch__page *g = &p->pages[i];
    uint8_t *mem = NULL;
    int err = 0;
    if (p->open != NULL && p->resident >= p->max_resident)
        err = evict(p, &mem);
    if (err == 0 && mem == NULL && (mem = perch__alloc(page_bytes(p))) == NULL)
        err = PERCH_ENOMEM;
    if (err)
        return err;
    if (g->on_scratch) {
        err = p->scratch.read_at(p->scratch.ctx, (uint64_t)i * page_bytes(p), mem, page_bytes(p));
        p->page_ins++;
    } else {
        memset(mem, 0, page_bytes(p));
    }
    if (err) {
        perch__free(mem);
        return err;
    }
    g->mem = mem;
    p->resident++;
    return 0;
}

void *perch__paged_at(perch__paged *p, uint64_t index, bool write)
{
    uint64_t pi = index / p->page_elems;
    if (p->error)
        return NULL;
    if (pi >= SIZE_MAX / sizeof *p->pages) {
        p->error = PERCH_ELIMIT;
        return NULL;
    }
    if (pi >= p->page_count) {
        if ((p->error = table_grow(p, (size_t)pi + 1)) != 0)
            return NULL;
        p->page_count = (size_t)pi + 1;
    }
    perch__page *g = &p->pages[pi];
    if (g->mem == NULL && (p->error = load(p, (size_t)pi)) != 0)
        return NULL;
    g->used = true;
    g->dirty |= write;
    return g->mem + (size_t)(index % p->page_elems) * p->elem;
}

void perch__paged_free(perch__paged *p)
{
    for (size_t i = 0; i < p->page_count; i++)
        perch__free(p->pages[i].mem);
    perch__free(p->pages);
    if (p->scratch_open)
        perch_scratch_close(&p->scratch);
    memset(p, 0, sizeof *p);
}
