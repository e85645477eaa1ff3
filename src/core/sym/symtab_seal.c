/*
 * Sealing a symbol table: extents for unsized names, then one map of disjoint pieces that
 * applies the precedence of sources (docs/symbols.md "Precedence").
 *
 * (1) An unsized name (a public or an export) extends up to the next name of the same source
 * and never past the end of its section; a public stops at the end of the section
 * contribution that holds its start, an export at the end of the .pdata function that holds
 * it or, in a leaf function, at the next .pdata function. A name outside every section is
 * dropped. (2) Within one precedence rank the ranges are made disjoint: a range nested in
 * another wins over it, and of identical ranges the smallest name is kept. (3) Ranks are laid
 * over each other from the highest: a lower rank only fills the addresses still uncovered.
 * (4) A chained .pdata fragment takes the name of whatever covers its primary entry's start.
 */
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym/symtab_internal.h"
#include "util/mem.h"

#define RANKS 4

typedef struct perch__sym_range range;
typedef struct perch__sym_piece piece;

struct ival {
    uint32_t start, end, entry;
    const char *name;
};

static int cmp_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

static int cmp_ival(const void *a, const void *b)
{
    const struct ival *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int cmp_piece(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Index of the first range of v (sorted by start) that starts after rva. */
static uint32_t upper(const range *v, uint32_t n, uint32_t rva)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid].start <= rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The range holding rva with the latest start (a bounded walk back over nested ranges). */
static const range *range_at(const range *v, uint32_t n, uint32_t rva)
{
    for (uint32_t i = upper(v, n, rva), steps = 0; i-- > 0 && steps < 64; steps++)
        if (rva < v[i].end)
            return &v[i];
    return NULL;
}

/* Gives unsized entry e its extent; next is the next start of its source. False when e lies
 * in no section (it is dropped). */
static bool extent(const perch_symtab *t, const range *pd, uint32_t npd, struct perch__sym_entry *e,
                   uint32_t next)
{
    const range *s = range_at(t->sec, t->sec_count, e->rva), *b = NULL;
    uint32_t end = next;
    if (s == NULL)
        return false;
    end = s->end < end ? s->end : end;
    if (e->source == PERCH_SYM_PUBLIC) {
        b = range_at(t->con, t->con_count, e->rva);
    } else if (e->source == PERCH_SYM_EXPORT) {
        b = range_at(pd, npd, e->rva);
        uint32_t i = upper(pd, npd, e->rva);
        if (b == NULL && i < npd && pd[i].start < end)
            end = pd[i].start;
    }
    if (b != NULL && b->end < end)
        end = b->end;
    e->range = e->rva;
    e->end = end;
    e->size = end - e->rva;
    return true;
}

static int cmp_by_source_rva(const void *a, const void *b)
{
    const struct ival *x = a, *y = b;
    if (x->end != y->end) /* .end holds the source here */
        return x->end < y->end ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Step (1). pd: the .pdata ranges, sorted. */
static int compute_extents(perch_symtab *t, const range *pd, uint32_t npd)
{
    uint32_t n = 0;
    struct ival *v = perch__calloc(t->count + 1u, sizeof *v);
    if (v == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < t->count; i++)
        if (t->e[i].unsized)
            v[n++] = (struct ival){t->e[i].rva, t->e[i].source, i, NULL};
    qsort(v, n, sizeof *v, cmp_by_source_rva);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i + 1, next = UINT32_MAX;
        while (j < n && v[j].end == v[i].end && v[j].start == v[i].start)
            j++;
        if (j < n && v[j].end == v[i].end)
            next = v[j].start;
        struct perch__sym_entry *e = &t->e[v[i].entry];
        if (!extent(t, pd, npd, e, next))
            e->end = e->range = e->rva; /* dropped: names nothing */
    }
    perch__free(v);
    return 0;
}

/* Step (2) for one rank: v (m ivals, sorted, duplicates removed) becomes disjoint pieces in
 * out (capacity 2m + 1). Returns the piece count. */
static uint32_t disjoin(const struct ival *v, uint32_t m, uint32_t *stack, piece *out)
{
    uint32_t top = 0, n = 0, cur = 0;
    for (uint32_t i = 0; i <= m; i++) {
        uint32_t at = i < m ? v[i].start : UINT32_MAX;
        while (top > 0 && (i == m || v[stack[top - 1]].end <= at)) {
            const struct ival *s = &v[stack[--top]];
            uint32_t from = cur > s->start ? cur : s->start;
            if (from < s->end)
                out[n++] = (piece){from, s->end, s->entry};
            cur = cur > s->end ? cur : s->end;
        }
        if (i == m)
            break;
        if (top > 0) {
            const struct ival *s = &v[stack[top - 1]];
            uint32_t from = cur > s->start ? cur : s->start;
            if (from < at)
                out[n++] = (piece){from, at, s->entry};
        }
        cur = cur > at ? cur : at;
        stack[top++] = i;
    }
    return n;
}

/* Step (3): acc[0..*n) (disjoint, sorted) plus the parts of low[0..nl) it leaves uncovered,
 * sorted, into out (capacity 2 * *n + nl). Returns the new count. */
static uint32_t overlay(const piece *acc, uint32_t n, const piece *low, uint32_t nl, piece *out)
{
    uint32_t m = n, j = 0;
    memcpy(out, acc, n * sizeof *acc);
    for (uint32_t i = 0; i < nl; i++) {
        uint32_t s = low[i].start, e = low[i].end;
        while (j < n && acc[j].end <= s)
            j++;
        for (uint32_t k = j; s < e;) {
            if (k < n && acc[k].start < e) {
                if (acc[k].start > s)
                    out[m++] = (piece){s, acc[k].start, low[i].entry};
                s = acc[k].end > s ? acc[k].end : s;
                k++;
            } else {
                out[m++] = (piece){s, e, low[i].entry};
                s = e;
            }
        }
    }
    qsort(out, m, sizeof *out, cmp_piece);
    return m;
}

/* The ranges of rank r, sorted and without identical duplicates, into v. */
static uint32_t collect(const perch_symtab *t, int r, struct ival *v)
{
    uint32_t m = 0, w = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        const struct perch__sym_entry *e = &t->e[i];
        if (perch_sym_source_rank(e->source) == r && e->range < e->end)
            v[m++] = (struct ival){e->range, e->end, i, t->pool + e->name};
    }
    qsort(v, m, sizeof *v, cmp_ival);
    for (uint32_t i = 0; i < m; i++)
        if (w == 0 || v[i].start != v[w - 1].start || v[i].end != v[w - 1].end)
            v[w++] = v[i];
    return w;
}

/* A chained .pdata fragment belongs to the function at its primary entry's start: when a
 * better source names that function, the fragment takes its name. */
static void credit_fragments(const perch_symtab *t, piece *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct perch__sym_entry *e = &t->e[p[i].entry];
        if (e->source != PERCH_SYM_PDATA || e->range == e->rva)
            continue;
        uint32_t j = perch__sym_piece_at(p, n, e->rva);
        if (j < n && t->e[p[j].entry].source != PERCH_SYM_PDATA)
            p[i].entry = p[j].entry;
    }
}

static uint32_t coalesce(piece *p, uint32_t n)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (w > 0 && p[w - 1].entry == p[i].entry && p[w - 1].end == p[i].start)
            p[w - 1].end = p[i].end;
        else
            p[w++] = p[i];
    }
    return w;
}

/* Steps (2) and (3): the map in *out (*count pieces). */
static int build_map(const perch_symtab *t, piece **out, uint32_t *count)
{
    size_t cap = 3 * (size_t)t->count + 1;
    struct ival *v = perch__calloc(t->count + 1u, sizeof *v);
    uint32_t *stack = perch__calloc(t->count + 1u, sizeof *stack);
    piece *acc = perch__calloc(cap, sizeof *acc), *rank = perch__calloc(cap, sizeof *rank);
    piece *tmp = perch__calloc(cap, sizeof *tmp);
    uint32_t n = 0;
    int err = v && stack && acc && rank && tmp ? 0 : PERCH_ENOMEM;
    for (int r = 0; r < RANKS && !err; r++) {
        uint32_t m = collect(t, r, v);
        uint32_t nr = disjoin(v, m, stack, rank);
        n = overlay(acc, n, rank, nr, tmp);
        piece *swap = acc;
        acc = tmp;
        tmp = swap;
    }
    perch__free(v);
    perch__free(stack);
    perch__free(rank);
    perch__free(tmp);
    if (err) {
        perch__free(acc);
        return err;
    }
    credit_fragments(t, acc, n);
    *out = acc;
    *count = coalesce(acc, n);
    return 0;
}

/* The .pdata ranges of t, sorted, in *out. */
static int pdata_ranges(const perch_symtab *t, range **out, uint32_t *count)
{
    uint32_t n = 0;
    range *pd = perch__calloc(t->count + 1u, sizeof *pd);
    if (pd == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < t->count; i++)
        if (t->e[i].source == PERCH_SYM_PDATA && t->e[i].range < t->e[i].end)
            pd[n++] = (range){t->e[i].range, t->e[i].end, 0};
    qsort(pd, n, sizeof *pd, cmp_range);
    *out = pd;
    *count = n;
    return 0;
}

int perch_symtab_seal(perch_symtab *t)
{
    range *pd = NULL;
    uint32_t npd = 0, count = 0;
    piece *map = NULL;
    if (t->sealed)
        return 0;
    if (t->sec_count > 0)
        qsort(t->sec, t->sec_count, sizeof *t->sec, cmp_range);
    if (t->con_count > 0)
        qsort(t->con, t->con_count, sizeof *t->con, cmp_range);
    int err = pdata_ranges(t, &pd, &npd);
    if (!err)
        err = compute_extents(t, pd, npd);
    perch__free(pd);
    if (!err)
        err = build_map(t, &map, &count);
    if (err)
        return err;
    perch__free(t->map);
    t->map = map;
    t->map_count = count;
    t->sealed = true;
    return 0;
}
