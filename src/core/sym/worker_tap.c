/*
 * The symbol worker's taps (include/perch/sym.h): a sink in front of a capture-writing sink
 * that forwards every record and adds the worker's symbol records, each once per tap, at
 * each flush and at the stream's end (its first ledger or stat record, or its finish). A record is
 * written for the first module key of its identity that went through the tap (the worker keeps it
 * for the stream's first one, which a late or partial file may not hold). Its finish first
 * pumps the worker and waits for it (bounded), so a capture ends with every name the worker
 * could give in time. Model thread only.
 */
#include <string.h>

#include "model/hmap.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/worker_internal.h"
#include "model/mem.h"

#define MAX_KEYS (1u << 24)

struct perch_symworker_tap {
    perch_symworker *w;
    perch_sink inner;
    uint32_t done;    /* results before it are all written */
    uint8_t *written; /* by result index: written through this tap */
    uint32_t cap_written;
    uint64_t *pending; /* module keys forwarded, identity not known yet */
    uint32_t npending, cap_pending;
    uint64_t *keys; /* the first module key of each identity through this tap */
    uint32_t nkeys, cap_keys;
    perch__hmap key_of; /* identity -> index in keys */
    bool waited;        /* the end's pump and wait happened */
};

int perch_symworker_tap_create(perch_symworker *w, const perch_sink *inner,
                               perch_symworker_tap **out)
{
    perch_symworker_tap *t = perch__calloc(1, sizeof *t);
    if (t == NULL)
        return PERCH_ENOMEM;
    t->w = w;
    t->inner = *inner;
    *out = t;
    return 0;
}

void perch_symworker_tap_destroy(perch_symworker_tap *t)
{
    if (t == NULL)
        return;
    perch__free(t->written);
    perch__free(t->pending);
    perch__free(t->keys);
    perch__hmap_free(&t->key_of);
    perch__free(t);
}

/* The module keys forwarded since the last flush, mapped to their identities (a key the
 * worker's sink has not seen yet stays pending). */
static int map_pending(perch_symworker_tap *t)
{
    uint32_t keep = 0;
    int err = 0;
    for (uint32_t i = 0; i < t->npending && !err; i++) {
        uint32_t ident, v;
        if (!perch__symworker_ident_of(t->w, t->pending[i], &ident))
            t->pending[keep++] = t->pending[i];
        else if (!perch__hmap_get(&t->key_of, ident, &v)) {
            err = perch__grow_array((void **)&t->keys, sizeof *t->keys, &t->cap_keys, t->nkeys + 1,
                                    MAX_KEYS);
            err = err ? err : perch__hmap_put(&t->key_of, ident, t->nkeys);
            if (!err)
                t->keys[t->nkeys++] = t->pending[i];
        }
    }
    if (!err)
        t->npending = keep;
    return err;
}

/* Result i, unless written before or its identity never went through this tap. */
static int write_one(perch_symworker_tap *t, uint32_t i, const struct perch__sw_result *r)
{
    uint32_t at, cap = t->cap_written;
    int err = perch__grow_array((void **)&t->written, 1, &t->cap_written, i + 1, MAX_KEYS);
    if (err)
        return err;
    if (t->cap_written > cap)
        memset(t->written + cap, 0, t->cap_written - cap);
    if (t->written[i] || !perch__hmap_get(&t->key_of, r->ident, &at))
        return 0;
    perch_symbol_rec rec = r->rec;
    rec.module_key = t->keys[at];
    err = t->inner.symbol ? t->inner.symbol(t->inner.ctx, &rec) : 0;
    t->written[i] = err == 0;
    return err;
}

int perch_symworker_tap_flush(perch_symworker_tap *t)
{
    const struct perch__sw_result *r;
    int err = map_pending(t);
    for (uint32_t i = t->done; !err && (r = perch__symworker_result(t->w, i)) != NULL; i++) {
        err = write_one(t, i, r);
        if (!err && i == t->done && t->written[i])
            t->done++;
    }
    return err;
}

static int tap_module(void *ctx, const perch_module_rec *rec)
{
    perch_symworker_tap *t = ctx;
    int err = perch__grow_array((void **)&t->pending, sizeof *t->pending, &t->cap_pending,
                                t->npending + 1, MAX_KEYS);
    if (err)
        return err;
    t->pending[t->npending++] = rec->key; /* an update of a known key maps to the same */
    return t->inner.module ? t->inner.module(t->inner.ctx, rec) : 0;
}

/* The stream's end (its ledger, stats or finish, whichever comes first): the worker gets what
 * is left and a bounded time to name it; then everything it named is written. */
static int end_flush(perch_symworker_tap *t)
{
    int err = 0;
    if (!t->waited) {
        t->waited = true;
        err = perch_symworker_pump(t->w);
        if (!err)
            perch_symworker_wait(t->w, t->w->opt.finish_wait_ms);
    }
    return err ? err : perch_symworker_tap_flush(t);
}

static int tap_finish(void *ctx)
{
    perch_symworker_tap *t = ctx;
    int err = end_flush(t);
    return err ? err : t->inner.finish ? t->inner.finish(t->inner.ctx) : 0;
}

static int tap_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch_symworker_tap *t = ctx;
    int err = end_flush(t);
    return err ? err : t->inner.ledger ? t->inner.ledger(t->inner.ctx, rec) : 0;
}

static int tap_stat(void *ctx, const perch_stat_rec *rec)
{
    perch_symworker_tap *t = ctx;
    int err = end_flush(t);
    return err ? err : t->inner.stat ? t->inner.stat(t->inner.ctx, rec) : 0;
}

#define FORWARD(name, type)                                                                        \
    static int tap_##name(void *ctx, const type *rec)                                              \
    {                                                                                              \
        perch_symworker_tap *t = ctx;                                                              \
        return t->inner.name ? t->inner.name(t->inner.ctx, rec) : 0;                               \
    }
FORWARD(trace_info, perch_trace_info)
FORWARD(process, perch_process_rec)
FORWARD(thread, perch_thread_rec)
FORWARD(counters, perch_counters_rec)
FORWARD(stack, perch_stack_rec)
FORWARD(slice, perch_slice_rec)
FORWARD(sample, perch_sample_rec)
FORWARD(lbr, perch_lbr_rec)
FORWARD(symbol, perch_symbol_rec)

void perch_symworker_tap_sink(perch_symworker_tap *t, perch_sink *s)
{
    *s = (perch_sink){t,          tap_trace_info, tap_process, tap_thread, tap_module, tap_counters,
                      tap_stack,  tap_slice,      tap_sample,  tap_lbr,    tap_ledger, tap_stat,
                      tap_finish, tap_symbol,     false,       false};
}
