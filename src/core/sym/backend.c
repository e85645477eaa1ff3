/*
 * The symbol worker's portable backend (include/perch/sym.h): each identity's table from a
 * perch_resolver (its PDB and image found on the symbol path or beside the module), kept for
 * the worker's lookups.
 */
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"

#define MAX_IDENTS (1u << 20)

struct resolver_backend {
    perch_resolver *r;
    const perch_symtab **tabs; /* by identity, n of them set; NULL when none */
    uint32_t n, cap;
};

static int rb_load(void *ctx, uint32_t ident, const perch_module_rec *rec)
{
    struct resolver_backend *b = ctx;
    perch_sym_module m;
    const perch_symtab *tab = NULL;
    const perch_sym_report *rep = NULL;
    int err =
        perch__grow_array((void **)&b->tabs, sizeof *b->tabs, &b->cap, ident + 1u, MAX_IDENTS);
    if (err)
        return err;
    for (; b->n <= ident; b->n++)
        b->tabs[b->n] = NULL;
    perch_sym_module_from_rec(rec, &m);
    err = perch_resolver_module(b->r, &m, &tab, &rep);
    b->tabs[ident] = err ? NULL : tab;
    return err ? err : tab ? 0 : PERCH_ENOENT;
}

static bool rb_lookup(void *ctx, uint32_t ident, uint32_t rva, perch_sym_func *f)
{
    struct resolver_backend *b = ctx;
    int64_t off;
    return ident < b->n && b->tabs[ident] && perch_symtab_lookup(b->tabs[ident], rva, f, &off);
}

int perch_symbackend_resolver_create(perch_resolver *r, perch_symbackend *out)
{
    struct resolver_backend *b = perch__calloc(1, sizeof *b);
    if (b == NULL)
        return PERCH_ENOMEM;
    b->r = r;
    *out = (perch_symbackend){b, rb_load, rb_lookup};
    return 0;
}

void perch_symbackend_resolver_destroy(perch_symbackend *b)
{
    if (b == NULL || b->ctx == NULL)
        return;
    struct resolver_backend *rb = b->ctx;
    perch__free(rb->tabs);
    perch__free(rb);
    b->ctx = NULL;
}
