/*
 * The symbol table of one module: names from every source as RVA ranges, and, once sealed
 * (symtab_seal.c), one sorted map of disjoint pieces so that a lookup is a binary search.
 */
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/sym_internal.h"
#include "sym/symtab_internal.h"

static const char *const source_names[PERCH_SYM_SOURCE_LIMIT] = {
    "none", "pdb-proc", "pdb-thunk", "pdb-public", "export", "pdata", "dbghelp",
};
static const int8_t source_rank[PERCH_SYM_SOURCE_LIMIT] = {-1, 0, 0, 1, 2, 3, 0};

const char *perch_sym_source_name(int source)
{
    return source > 0 && source < PERCH_SYM_SOURCE_LIMIT ? source_names[source] : "none";
}

int perch_sym_source_rank(int source)
{
    return source > 0 && source < PERCH_SYM_SOURCE_LIMIT ? source_rank[source] : -1;
}

int perch_symtab_create(perch_symtab **out)
{
    perch_symtab *t = perch__calloc(1, sizeof *t);
    if (t == NULL)
        return PERCH_ENOMEM;
    *out = t;
    return 0;
}

void perch_symtab_destroy(perch_symtab *t)
{
    if (t == NULL)
        return;
    perch__free(t->e);
    perch__free(t->pool);
    perch__free(t->sec);
    perch__free(t->con);
    perch__free(t->map);
    perch__free(t);
}

static int add_name(perch_symtab *t, const char *name, size_t len, uint32_t *off)
{
    if (len > PERCH__SYM_MAX_NAME)
        len = PERCH__SYM_MAX_NAME;
    if ((uint64_t)t->pool_len + len + 1 > PERCH__SYMTAB_MAX_POOL)
        return PERCH_ELIMIT;
    int err = perch__grow_array((void **)&t->pool, 1, &t->pool_cap, t->pool_len + (uint32_t)len + 1,
                                PERCH__SYMTAB_MAX_POOL);
    if (err)
        return err;
    if (len > 0)
        memcpy(t->pool + t->pool_len, name, len);
    t->pool[t->pool_len + len] = '\0';
    *off = t->pool_len;
    t->pool_len += (uint32_t)len + 1;
    return 0;
}

int perch_symtab_add_fragment(perch_symtab *t, int source, uint32_t range_rva, uint32_t range_size,
                              uint32_t func_rva, uint32_t func_size, const char *name,
                              size_t name_len)
{
    struct perch__sym_entry *e;
    uint32_t off;
    if (t->sealed || perch_sym_source_rank(source) < 0 || (range_size == 0 && func_size != 0))
        return PERCH_EINVAL;
    int err = perch__grow_array((void **)&t->e, sizeof *t->e, &t->cap, t->count + 1,
                                PERCH__SYMTAB_MAX_ENTRIES);
    if (err || (err = add_name(t, name, name_len, &off)) != 0)
        return err;
    e = &t->e[t->count++];
    e->rva = func_rva;
    e->size = func_size;
    e->range = range_rva;
    e->end = perch__sym_end(range_rva, range_size);
    e->name = off;
    e->source = (uint8_t)source;
    e->unsized = range_size == 0;
    return 0;
}

int perch_symtab_add(perch_symtab *t, int source, uint32_t rva, uint32_t size, const char *name,
                     size_t name_len)
{
    return perch_symtab_add_fragment(t, source, rva, size, rva, size, name, name_len);
}

static int add_range(struct perch__sym_range **v, uint32_t *count, uint32_t *cap, uint32_t rva,
                     uint32_t size, uint32_t flags)
{
    if (size == 0)
        return 0;
    int err = perch__grow_array((void **)v, sizeof **v, cap, *count + 1, PERCH__SYMTAB_MAX_ENTRIES);
    if (err)
        return err;
    (*v)[(*count)++] = (struct perch__sym_range){rva, perch__sym_end(rva, size), flags};
    return 0;
}

int perch_symtab_add_section(perch_symtab *t, uint32_t rva, uint32_t size, uint32_t characteristics)
{
    if (t->sealed)
        return PERCH_EINVAL;
    return add_range(&t->sec, &t->sec_count, &t->sec_cap, rva, size, characteristics);
}

int perch_symtab_add_contribution(perch_symtab *t, uint32_t rva, uint32_t size)
{
    if (t->sealed)
        return PERCH_EINVAL;
    return add_range(&t->con, &t->con_count, &t->con_cap, rva, size, 0);
}

static void fill(const perch_symtab *t, const struct perch__sym_entry *e, perch_sym_func *f)
{
    f->rva = e->rva;
    f->size = e->size;
    f->source = e->source;
    f->name = t->pool + e->name;
}

uint32_t perch__sym_piece_at(const struct perch__sym_piece *p, uint32_t n, uint32_t rva)
{
    const struct perch__sym_piece *base = p;
    uint32_t left = n;
    if (n == 0)
        return 0;
    while (left > 1) { /* branch-free halving: the compiler turns the choice into a move */
        uint32_t half = left / 2;
        base = base[half].start <= rva ? base + half : base;
        left -= half;
    }
    return base->start <= rva && rva < base->end ? (uint32_t)(base - p) : n;
}

bool perch_symtab_lookup(const perch_symtab *t, uint32_t rva, perch_sym_func *f, int64_t *offset)
{
    if (!t->sealed)
        return false;
    uint32_t i = perch__sym_piece_at(t->map, t->map_count, rva);
    if (i == t->map_count)
        return false;
    const struct perch__sym_entry *e = &t->e[t->map[i].entry];
    fill(t, e, f);
    *offset = (int64_t)rva - (int64_t)e->rva;
    return true;
}

size_t perch_symtab_count(const perch_symtab *t)
{
    return t->count;
}

void perch_symtab_get(const perch_symtab *t, size_t i, perch_sym_func *f)
{
    fill(t, &t->e[i], f);
}

size_t perch_symtab_memory(const perch_symtab *t)
{
    return sizeof *t + (size_t)t->cap * sizeof *t->e + t->pool_cap +
           ((size_t)t->sec_cap + t->con_cap) * sizeof *t->sec +
           (size_t)t->map_count * sizeof *t->map;
}
