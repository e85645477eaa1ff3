/*
 * The names of a record stream (perch_symnames, include/perch/sym.h): what a report or an
 * exporter keeps to name frames. Module records map each module key to its identity; symbol
 * records add runs of names to the identity's table; the first lookup of a module seals its
 * table. Identities are found through a hash of their text (verified on a hit).
 */
#include <string.h>

#include "model/hmap.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"

#define MAX_IDENTS (1u << 20)
#define ID_MAX     640

struct ident {
    char *key;
    perch_symtab *tab; /* NULL until a symbol record names the identity */
    bool sealed, broken;
};

struct perch_symnames {
    perch__hmap by_module; /* module key -> ident index */
    perch__hmap by_hash;   /* identity hash -> ident index (first of a colliding pair) */
    struct ident *ids;
    uint32_t count, cap;
    perch_symnames_stats st;
};

int perch_symnames_create(perch_symnames **out)
{
    perch_symnames *n = perch__calloc(1, sizeof *n);
    if (n == NULL)
        return PERCH_ENOMEM;
    *out = n;
    return 0;
}

void perch_symnames_destroy(perch_symnames *n)
{
    if (n == NULL)
        return;
    for (uint32_t i = 0; i < n->count; i++) {
        perch__free(n->ids[i].key);
        perch_symtab_destroy(n->ids[i].tab);
    }
    perch__free(n->ids);
    perch__hmap_free(&n->by_module);
    perch__hmap_free(&n->by_hash);
    perch__free(n);
}

static uint64_t hash_of(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* The index of identity key, added when new. */
static int ident_of(perch_symnames *n, const char *key, uint32_t *index)
{
    uint64_t h = hash_of(key);
    uint32_t at;
    if (perch__hmap_get(&n->by_hash, h, &at)) {
        if (strcmp(n->ids[at].key, key) == 0) {
            *index = at;
            return 0;
        }
        for (uint32_t i = 0; i < n->count; i++) /* a 64-bit hash collision: rare */
            if (strcmp(n->ids[i].key, key) == 0) {
                *index = i;
                return 0;
            }
    }
    int err =
        perch__grow_array((void **)&n->ids, sizeof *n->ids, &n->cap, n->count + 1, MAX_IDENTS);
    if (err)
        return err;
    struct ident *id = &n->ids[n->count];
    memset(id, 0, sizeof *id);
    if ((id->key = perch__strdup(key)) == NULL)
        return PERCH_ENOMEM;
    if (!perch__hmap_get(&n->by_hash, h, &at) &&
        (err = perch__hmap_put(&n->by_hash, h, n->count)) != 0) {
        perch__free(id->key);
        return err;
    }
    *index = n->count++;
    return 0;
}

int perch_symnames_module(perch_symnames *n, const perch_module_rec *rec)
{
    perch_sym_module m;
    char key[ID_MAX];
    uint32_t index;
    perch_sym_module_from_rec(rec, &m);
    perch_sym_module_identity(&m, key, sizeof key);
    int err = ident_of(n, key, &index);
    return err ? err : perch__hmap_put(&n->by_module, rec->key, index);
}

int perch_symnames_symbol(perch_symnames *n, const perch_symbol_rec *rec)
{
    uint32_t index;
    if (!perch__hmap_get(&n->by_module, rec->module_key, &index)) {
        n->st.unknown_module++;
        return 0;
    }
    struct ident *id = &n->ids[index];
    if (id->sealed) {
        n->st.late++;
        return 0;
    }
    int err = id->tab ? 0 : perch_symtab_create(&id->tab);
    if (!err && rec->span_size > 0)
        err = perch_symtab_add_fragment(id->tab, rec->source, rec->span_rva, rec->span_size,
                                        rec->func_rva, rec->func_size, rec->name,
                                        rec->name ? strlen(rec->name) : 0);
    if (err == PERCH_EINVAL)
        err = 0; /* a source this build does not know: the record names nothing */
    n->st.names += err == 0;
    return err;
}

/* Seals id's table once: a table that fails to seal is broken and names nothing. */
static void seal_ident(struct ident *id)
{
    if (!id->sealed) {
        id->sealed = true;
        id->broken = perch_symtab_seal(id->tab) != 0;
    }
}

bool perch_symnames_lookup(perch_symnames *n, uint64_t module_key, uint32_t rva, perch_sym_func *f,
                           int64_t *offset)
{
    uint32_t index;
    if (!perch__hmap_get(&n->by_module, module_key, &index))
        return false;
    struct ident *id = &n->ids[index];
    if (id->tab == NULL || id->broken)
        return false;
    seal_ident(id);
    return !id->broken && perch_symtab_lookup(id->tab, rva, f, offset);
}

void perch_symnames_seal_all(perch_symnames *n)
{
    for (uint32_t i = 0; i < n->count; i++)
        if (n->ids[i].tab != NULL)
            seal_ident(&n->ids[i]);
}

void perch_symnames_get_stats(const perch_symnames *n, perch_symnames_stats *st)
{
    *st = n->st;
}
