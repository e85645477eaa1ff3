/*
 * The symbol worker's names for outputs that stand on their own (include/perch/sym.h,
 * perch_symworker_names): a perch_sink_wrap whose every output forwards each record to its
 * writer and collects, in its own perch_symhits, what that output's samples and stacks hit.
 * At the output's end (its first ledger or stat record, or its finish) it gives the worker a
 * bounded time, then credits the hits to the output's module identities, finds each identity
 * among the worker's by its identity text, puts the worker's records of those identities in
 * a perch_symnames under the output's own module keys, and writes one record per run of hit
 * addresses, as perch symbolize does. The output may be written on any thread: the worker's
 * shared state is read under its lock only.
 */
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/hits_internal.h"
#include "sym/worker_internal.h"

typedef struct names_out {
    perch_symworker *w;
    bool model_thread;
    bool ended; /* the names were written (or tried) */
    perch_sink inner;
    perch_symhits *hits;
    perch_sink hits_sink;
} names_out;

static int add_hit(void *ctx, uint32_t ident, uint32_t rva)
{
    return perch__symhits_add(ctx, ident, rva);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Each output identity with hits that the worker knows: its module record under the output's
 * first key goes into names; want[worker ident] is that key (0: not wanted). */
static int want_idents(names_out *o, perch_symnames *names, uint64_t *want, uint32_t nwant)
{
    int err = 0;
    for (uint32_t i = 0; i < o->hits->nid && !err; i++) {
        uint32_t wi;
        if (o->hits->ids[i].nrva == 0 ||
            !perch__symworker_find_ident(o->w, o->hits->ids[i].key, &wi) || wi >= nwant)
            continue;
        perch_module_rec rec = o->hits->ids[i].rec;
        rec.key = perch__symhits_first_key(o->hits, i);
        want[wi] = rec.key;
        err = perch_symnames_module(names, &rec);
    }
    return err;
}

/* The worker's records of the wanted identities, moved to the output's keys. */
static int take_results(names_out *o, perch_symnames *names, const uint64_t *want, uint32_t nwant)
{
    const struct perch__sw_result *r;
    int err = 0;
    for (uint32_t i = 0; !err && (r = perch__symworker_result(o->w, i)) != NULL; i++) {
        if (r->ident >= nwant || want[r->ident] == 0)
            continue;
        perch_symbol_rec rec = r->rec;
        rec.module_key = want[r->ident];
        err = perch_symnames_symbol(names, &rec);
    }
    return err;
}

/* One record per run of identity i's hit addresses that names covers. */
static int emit(names_out *o, perch_symnames *names, uint32_t i)
{
    struct perch__hit_ident *id = &o->hits->ids[i];
    uint64_t key = perch__symhits_first_key(o->hits, i);
    uint32_t last_start = 0, last_end = 0;
    qsort(id->rvas, id->nrva, sizeof *id->rvas, cmp_u32);
    for (uint32_t k = 0; k < id->nrva; k++) {
        perch_sym_func f;
        int64_t off;
        if (last_end > last_start && id->rvas[k] >= last_start && id->rvas[k] < last_end)
            continue; /* the run already written */
        if (!perch_symnames_lookup(names, key, id->rvas[k], &f, &off))
            continue;
        last_start = f.span_rva;
        last_end = f.span_rva + f.span_size;
        perch_symbol_rec rec = {key, f.span_rva, f.span_size, f.rva, f.size, f.source, f.name};
        int err = o->inner.symbol ? o->inner.symbol(o->inner.ctx, &rec) : 0;
        if (err)
            return err;
    }
    return 0;
}

static uint32_t worker_idents(perch_symworker *w)
{
    perch_mutex_lock(w->lock);
    uint32_t n = w->nids;
    perch_mutex_unlock(w->lock);
    return n;
}

/* The output's end: what the worker names of this output's hits, written once. */
static int end_names(names_out *o)
{
    perch_symnames *names = NULL;
    if (o->ended)
        return 0;
    o->ended = true;
    int err = o->model_thread ? perch_symworker_pump(o->w) : 0;
    if (!err)
        perch_symworker_wait(o->w, o->w->opt.finish_wait_ms);
    uint32_t nwant = worker_idents(o->w);
    uint64_t *want = nwant ? perch__calloc(nwant, sizeof *want) : NULL;
    if (!err && nwant)
        err = want ? perch_symnames_create(&names) : PERCH_ENOMEM;
    if (!err && nwant)
        err = perch__symhits_credit(o->hits, 0, 0, add_hit, o->hits);
    err = err || !nwant ? err : want_idents(o, names, want, nwant);
    err = err || !nwant ? err : take_results(o, names, want, nwant);
    for (uint32_t i = 0; i < o->hits->nid && !err && nwant; i++)
        if (o->hits->ids[i].nrva > 0)
            err = emit(o, names, i);
    perch_symnames_destroy(names);
    perch__free(want);
    return err;
}

/* Every record goes to the hits (those it takes) and then to the output. */
#define BOTH(name, type)                                                                           \
    static int wn_##name(void *ctx, const type *rec)                                               \
    {                                                                                              \
        names_out *o = ctx;                                                                        \
        int err = o->hits_sink.name ? o->hits_sink.name(o->hits_sink.ctx, rec) : 0;                \
        return err ? err : o->inner.name ? o->inner.name(o->inner.ctx, rec) : 0;                   \
    }
BOTH(trace_info, perch_trace_info)
BOTH(process, perch_process_rec)
BOTH(thread, perch_thread_rec)
BOTH(module, perch_module_rec)
BOTH(counters, perch_counters_rec)
BOTH(stack, perch_stack_rec)
BOTH(slice, perch_slice_rec)
BOTH(sample, perch_sample_rec)
BOTH(lbr, perch_lbr_rec)
BOTH(symbol, perch_symbol_rec)

/* The end's records: the names first. */
#define LAST(name, type)                                                                           \
    static int wn_##name(void *ctx, const type *rec)                                               \
    {                                                                                              \
        names_out *o = ctx;                                                                        \
        int err = end_names(o);                                                                    \
        return err ? err : o->inner.name ? o->inner.name(o->inner.ctx, rec) : 0;                   \
    }
LAST(ledger, perch_ledger_rec)
LAST(stat, perch_stat_rec)

static int wn_finish(void *ctx)
{
    names_out *o = ctx;
    int err = end_names(o);
    return err ? err : o->inner.finish ? o->inner.finish(o->inner.ctx) : 0;
}

static int wn_open(perch_symworker *w, bool model_thread, const perch_sink *inner, perch_sink *out,
                   void **state)
{
    names_out *o = perch__calloc(1, sizeof *o);
    if (o == NULL || perch_symhits_create(&o->hits) != 0) {
        perch__free(o);
        return PERCH_ENOMEM;
    }
    o->w = w;
    o->model_thread = model_thread;
    o->inner = *inner;
    perch_symhits_sink(o->hits, &o->hits_sink);
    *out = (perch_sink){o,         wn_trace_info, wn_process, wn_thread, wn_module, wn_counters,
                        wn_stack,  wn_slice,      wn_sample,  wn_lbr,    wn_ledger, wn_stat,
                        wn_finish, wn_symbol,     false,      false};
    *state = o;
    return 0;
}

static int open_model(void *ctx, const perch_sink *inner, perch_sink *out, void **state)
{
    return wn_open(ctx, true, inner, out, state);
}

static int open_any(void *ctx, const perch_sink *inner, perch_sink *out, void **state)
{
    return wn_open(ctx, false, inner, out, state);
}

static void wn_close(void *ctx, void *state)
{
    names_out *o = state;
    (void)ctx;
    if (o != NULL) {
        perch_symhits_destroy(o->hits);
        perch__free(o);
    }
}

void perch_symworker_names(perch_symworker *w, bool model_thread, perch_sink_wrap *out)
{
    *out = (perch_sink_wrap){w, model_thread ? open_model : open_any, wn_close};
}
