/*
 * The symbol worker's taps (include/perch/sym.h): a sink in front of a capture-writing sink
 * that forwards every record and adds the worker's symbol records, each once per tap, at
 * each flush and before the first ledger or stat record and the finish. Its finish first
 * pumps the worker and waits for it (bounded), so a capture ends with every name the worker
 * could give in time. Model thread only.
 */
#include <string.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym/worker_internal.h"
#include "util/mem.h"

struct perch_symworker_tap {
    perch_symworker *w;
    perch_sink inner;
    uint32_t done; /* results forwarded */
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
    perch__free(t);
}

int perch_symworker_tap_flush(perch_symworker_tap *t)
{
    const perch_symbol_rec *r;
    while ((r = perch__symworker_result(t->w, t->done)) != NULL) {
        int err = t->inner.symbol ? t->inner.symbol(t->inner.ctx, r) : 0;
        if (err)
            return err;
        t->done++;
    }
    return 0;
}

static int tap_finish(void *ctx)
{
    perch_symworker_tap *t = ctx;
    int err = perch_symworker_pump(t->w);
    if (!err)
        perch_symworker_wait(t->w, t->w->opt.finish_wait_ms);
    err = err ? err : perch_symworker_tap_flush(t);
    return err ? err : t->inner.finish ? t->inner.finish(t->inner.ctx) : 0;
}

static int tap_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch_symworker_tap *t = ctx;
    int err = perch_symworker_tap_flush(t);
    return err ? err : t->inner.ledger ? t->inner.ledger(t->inner.ctx, rec) : 0;
}

static int tap_stat(void *ctx, const perch_stat_rec *rec)
{
    perch_symworker_tap *t = ctx;
    int err = perch_symworker_tap_flush(t);
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
FORWARD(module, perch_module_rec)
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
                      tap_finish, tap_symbol};
}
