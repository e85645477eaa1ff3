/*
 * perch_symbolize (include/perch/sym.h): turns what perch_symhits collected into symbol
 * records. Every (stack, thread) pair's frames and every (module, IP) pair are credited to a
 * module (the frame's process's modules, the kernel's for kernel addresses; the highest base
 * holding the address, then the smallest size, the rule of the report and the exporters) and
 * so to the module's identity; each identity's distinct RVAs not yet named by the stream are
 * looked up in the table the resolver found for it, and each run of addresses that one
 * answer covers becomes one record, written for the identity's first module key.
 */
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "model/module_index.h"
#include "model/module_order.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/hits_internal.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int build_map(const perch_symhits *h, perch__module_index *m)
{
    perch__module_sort *v = perch__calloc(h->nmod + 1u, sizeof *v);
    if (v == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < h->nmod; i++) {
        const struct perch__hit_module *md = &h->mods[i];
        v[i] = (perch__module_sort){md->process_key, md->base, md->size, "", i};
    }
    qsort(v, h->nmod, sizeof *v, perch__module_sort_cmp_last); /* nameless: the later wins */
    int err = perch__module_index_build(m, v, h->nmod);
    perch__free(v);
    return err;
}

/* The module of process pk holding addr, or NULL. */
static const struct perch__hit_module *owner(const perch_symhits *h, const perch__module_index *m,
                                             uint64_t pk, uint64_t addr)
{
    uint32_t i = perch__module_index_find(m, pk, addr);
    return i != PERCH_MODULE_INDEX_NONE ? &h->mods[i] : NULL;
}

struct credit_ctx {
    int (*fn)(void *ctx, uint32_t ident, uint32_t rva);
    void *ctx;
};

static int credit(const struct credit_ctx *cc, const struct perch__hit_module *md, uint64_t addr)
{
    if (md == NULL || addr - md->base >= md->size || addr - md->base > UINT32_MAX)
        return 0;
    return cc->fn(cc->ctx, md->ident, (uint32_t)(addr - md->base));
}

/* The frames of pairs [pair_from, npair) and the IPs [ip_from, nip), credited to their
 * module's identity through cc. */
static int credit_range(perch_symhits *h, const perch__module_index *m, uint32_t pair_from,
                        uint32_t ip_from, const struct credit_ctx *cc)
{
    int err = 0;
    for (uint32_t i = pair_from; i < h->npair && !err; i++) {
        uint32_t s, t = (uint32_t)h->pairs[i];
        if (!perch__hmap_get(&h->stack_by_id, h->pairs[i] >> 32, &s))
            continue;
        uint64_t pk = t < h->nthread ? h->thread_process[t] : 0;
        const struct perch__hit_stack *st = &h->stacks[s];
        for (uint32_t f = 0; f < st->count && !err; f++) {
            uint64_t a = h->frames[st->first + f];
            bool kernel = perch_is_kernel_address(a, h->pointer_size) &&
                          !(h->pointer_size == 4 && a > 0xffffffffu);
            if (kernel || pk != 0)
                err = credit(cc, owner(h, m, kernel ? 0 : pk, a), a);
        }
    }
    for (uint32_t i = ip_from; i < h->nip && !err; i++) {
        uint32_t at;
        if (perch__hmap_get(&h->mod_by_key, h->ips[i].module_key, &at))
            err = credit(cc, &h->mods[at], h->ips[i].ip);
    }
    return err;
}

int perch__symhits_credit(perch_symhits *h, uint32_t pair_from, uint32_t ip_from,
                          int (*fn)(void *ctx, uint32_t ident, uint32_t rva), void *ctx)
{
    perch__module_index m = {0};
    struct credit_ctx cc = {fn, ctx};
    int err = build_map(h, &m);
    if (!err)
        err = credit_range(h, &m, pair_from, ip_from, &cc);
    perch__module_index_free(&m);
    return err;
}

static int add_hit(void *ctx, uint32_t ident, uint32_t rva)
{
    return perch__symhits_add(ctx, ident, rva);
}

/* The first module key of identity i (in module record order). */
uint64_t perch__symhits_first_key(const perch_symhits *h, uint32_t i)
{
    for (uint32_t k = 0; k < h->nmod; k++)
        if (h->mods[k].ident == i)
            return h->mods[k].key;
    return 0;
}

/* Emits the records for identity id's unnamed hits from tab. */
static int emit(const perch_symtab *tab, const perch_symbolize_ops *ops,
                perch_symbolize_module *out, const uint32_t *rva, const bool *named, uint32_t n)
{
    uint32_t last_start = 0, last_end = 0;
    for (uint32_t i = 0; i < n; i++) {
        perch_sym_func f;
        int64_t off;
        if (named[i])
            continue;
        if (tab == NULL || !perch_symtab_lookup(tab, rva[i], &f, &off))
            continue;
        out->named++;
        if (last_end > last_start && rva[i] >= last_start && rva[i] < last_end)
            continue; /* the run already written */
        last_start = f.span_rva;
        last_end = f.span_rva + f.span_size;
        perch_symbol_rec rec = {out->module_key, f.span_rva, f.span_size, f.rva,
                                f.size,          f.source,   f.name};
        out->records++;
        int err = ops->symbol ? ops->symbol(ops->ctx, &rec) : 0;
        if (err)
            return err;
    }
    return 0;
}

static int one_identity(perch_symhits *h, perch_resolver *r, const perch_symbolize_ops *ops,
                        uint32_t i, bool *named)
{
    struct perch__hit_ident *id = &h->ids[i];
    perch_symbolize_module out;
    uint32_t n = 0;
    qsort(id->rvas, id->nrva, sizeof *id->rvas, cmp_u32);
    for (uint32_t k = 0; k < id->nrva; k++)
        if (n == 0 || id->rvas[k] != id->rvas[n - 1])
            id->rvas[n++] = id->rvas[k];
    id->nrva = n;
    memset(&out, 0, sizeof out);
    out.module_key = perch__symhits_first_key(h, i);
    out.rec = &id->rec;
    out.modules = id->modules;
    out.addresses = n;
    for (uint32_t k = 0; k < n; k++) {
        perch_sym_func f;
        int64_t off;
        named[k] = perch_symnames_lookup(h->existing, out.module_key, id->rvas[k], &f, &off);
        out.named_before += named[k];
    }
    const perch_symtab *tab = NULL;
    int err = 0;
    if (out.named_before < n) {
        perch_sym_module m;
        perch_sym_module_from_rec(&id->rec, &m);
        err = perch_resolver_module(r, &m, &tab, &out.rep);
    }
    if (!err)
        err = emit(tab, ops, &out, id->rvas, named, n);
    if (!err && ops->module)
        err = ops->module(ops->ctx, &out);
    return err;
}

int perch_symbolize(perch_symhits *h, perch_resolver *r, const perch_symbolize_ops *ops)
{
    int err = perch__symhits_credit(h, 0, 0, add_hit, h);
    for (uint32_t i = 0; i < h->nid && !err; i++) {
        if (h->ids[i].nrva == 0)
            continue;
        bool *named = perch__calloc(h->ids[i].nrva, sizeof *named);
        err = named ? one_identity(h, r, ops, i, named) : PERCH_ENOMEM;
        perch__free(named);
    }
    return err;
}
