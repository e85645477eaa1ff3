/*
 * What a sink is owed of the model's ledger at its end (include/perch/live.h, attach and
 * detach). The model's ledger counts from the engine's start, so a sink attached while the
 * engine runs (a recording started while the service runs) takes a copy of it when it comes,
 * and its end gets only the growth since: at the engine's finish the fan-out subtracts the copy
 * from what the model writes (engine_tee.c), and at a detach the model's ledger as of then,
 * less the copy, is written to it (engine_attach.c). A sink added before the start has no
 * copy: everything is its own. The statistics are not given to a sink that came late: they
 * describe the session (records, processes seen), not a window of it. A sink that comes
 * before the first record of a lazily described session (no model yet) takes the books as its
 * copy, since the model will count them when it exists.
 */
#include <string.h>

#include "engine_internal.h"
#include "perch/error.h"
#include "perch/model.h"
#include "util/mem.h"

#define MAX_COUNTS 1024u /* the model's counters, kinds and extra reasons fit many times */

static int add(struct live_counts *c, const char *name, uint64_t value)
{
    if (c->count == MAX_COUNTS)
        return PERCH_ELIMIT;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct live_count *e = perch__realloc(c->e, cap * sizeof *e);
        if (e == NULL)
            return PERCH_ENOMEM;
        c->e = e;
        c->cap = cap;
    }
    char *copy = perch__strdup(name);
    if (copy == NULL)
        return PERCH_ENOMEM;
    c->e[c->count++] = (struct live_count){copy, value};
    return 0;
}

static int take_ledger(void *ctx, const perch_ledger_rec *rec)
{
    return add(ctx, rec->reason, rec->count);
}

/* Before the first record there is no model: the books wait unapplied, and go into its
 * ledger once it exists, so the copy holds them as they are now. */
static int take_waiting_books(perch_live *l, struct live_counts *c, const struct live_books *books)
{
    char reasons[4 + PERCH_LIVE_MAX_LOSSES][LIVE_REASON_MAX];
    uint64_t values[4 + PERCH_LIVE_MAX_LOSSES];
    size_t n = perch__live_books_list(l, books, NULL, reasons, values);
    int err = 0;
    for (size_t i = 0; i < n && err == 0; i++)
        if (values[i] > 0)
            err = add(c, reasons[i], values[i]);
    return err;
}

int perch__live_counts_take(perch_live *l, struct live_counts *out, struct live_books *books)
{
    struct live_counts c = {0};
    perch_sink taker = {0};
    c.taken = true;
    /* the books first: a loss from before the sink came belongs in the copy */
    int err = perch__live_apply_books(l, perch__live_now(l), books);
    taker.ctx = &c;
    taker.ledger = take_ledger;
    if (l->model != NULL)
        err = err ? err : perch_model_emit_counters(l->model, &taker);
    else if (err == 0)
        err = take_waiting_books(l, &c, books);
    if (err < 0) {
        perch__live_counts_free(&c);
        return err;
    }
    *out = c;
    return 0;
}

uint64_t perch__live_counts_growth(const struct live_counts *c, const char *reason, uint64_t now)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->e[i].name, reason) == 0)
            return now > c->e[i].value ? now - c->e[i].value : 0;
    return now;
}

void perch__live_counts_free(struct live_counts *c)
{
    for (size_t i = 0; i < c->count; i++)
        perch__free(c->e[i].name);
    perch__free(c->e);
    memset(c, 0, sizeof *c);
}

/* The detach: the model's ledger now, less the slot's copy, to the slot's sink; the reasons of
 * the books are left out (emit_books wrote them from the books themselves). */
struct growth {
    const struct live_slot *s;
    const char (*skip)[LIVE_REASON_MAX];
    size_t skip_count;
};

static bool skipped(const struct growth *g, const char *reason)
{
    for (size_t i = 0; i < g->skip_count; i++)
        if (strcmp(g->skip[i], reason) == 0)
            return true;
    return false;
}

static int growth_ledger(void *ctx, const perch_ledger_rec *rec)
{
    struct growth *g = ctx;
    perch_ledger_rec own = {rec->reason,
                            perch__live_counts_growth(&g->s->counts, rec->reason, rec->count)};
    if (own.count == 0 || g->s->sink.ledger == NULL || skipped(g, rec->reason))
        return 0;
    return g->s->sink.ledger(g->s->sink.ctx, &own);
}

int perch__live_counts_emit_growth(perch_live *l, const struct live_slot *s,
                                   const char (*skip)[LIVE_REASON_MAX], size_t skip_count)
{
    struct growth g = {s, skip, skip_count};
    perch_sink through = {0};
    through.ctx = &g;
    through.ledger = growth_ledger;
    return l->model != NULL ? perch_model_emit_counters(l->model, &through) : 0;
}
