/*
 * Sinks that come and go while the live engine runs (include/perch/live.h): attach brings a
 * new sink up to date from the state tracker (src/core/live/state.c) and then lets it see
 * every record; detach gives it the engine's books since it came (as ledger records) and its
 * finish. Both run on the model thread through perch_live_call, so no record is half seen.
 */
#include <string.h>

#include "engine_internal.h"
#include "perch/error.h"

void perch__live_slot_fill(perch_live *l, struct live_slot *s, const char *name,
                           const perch_sink *sink, perch_live_idle_fn idle, void *idle_ctx,
                           const struct live_books *base)
{
    if (base != NULL)
        s->base = *base;
    else
        perch__live_books(l, &s->base);
    memset(&s->counts, 0, sizeof s->counts);
    perch_mutex_lock(l->mu);
    memcpy(s->name, name, strlen(name) + 1);
    s->sink = *sink;
    s->idle = idle;
    s->idle_ctx = idle_ctx;
    atomic_store(&s->error, 0);
    s->finished = false;
    s->used = true;
    /* a slot past the end is counted here, under mu, where the stats and sink_state read the
     * count (the model thread attaches while they run) */
    if ((size_t)(s - l->slots) == l->slot_count)
        l->slot_count++;
    perch_mutex_unlock(l->mu);
}

struct attach_req {
    perch_live *l;
    const char *name;
    const perch_sink *sink;
    perch_live_idle_fn idle;
    void *idle_ctx;
};

static int do_attach(void *ctx)
{
    struct attach_req *r = ctx;
    perch_live *l = r->l;
    size_t i = 0;
    while (i < l->slot_count && l->slots[i].used)
        i++;
    if (i == PERCH_LIVE_MAX_SINKS)
        return PERCH_ELIMIT;
    if (atomic_load(&l->state_error) < 0)
        return atomic_load(&l->state_error);
    struct live_counts counts;
    struct live_books books;
    int err = perch__live_state_replay(l->state, r->sink);
    err = err ? err : perch__live_counts_take(l, &counts, &books);
    if (err < 0)
        return err;
    perch__live_slot_fill(l, &l->slots[i], r->name, r->sink, r->idle, r->idle_ctx, &books);
    l->slots[i].counts = counts; /* what the model counted before it came is not its own */
    return 0;
}

int perch_live_attach_idle(perch_live *l, const char *name, const perch_sink *sink,
                           perch_live_idle_fn idle, void *idle_ctx)
{
    if (l == NULL || name == NULL || sink == NULL || strlen(name) >= LIVE_NAME_MAX)
        return PERCH_EINVAL;
    if (!atomic_load(&l->started)) {
        int err = perch_live_add_sink(l, name, sink, idle);
        if (err == 0)
            l->slots[l->slot_count - 1].idle_ctx = idle_ctx; /* not started: no reader yet */
        return err;
    }
    if (l->state == NULL)
        return PERCH_ESTATE;
    /* the request lives on this stack, so the call may not time out */
    struct attach_req r = {l, name, sink, idle, idle_ctx};
    return perch_live_call(l, do_attach, &r, UINT32_MAX);
}

int perch_live_attach(perch_live *l, const char *name, const perch_sink *sink,
                      perch_live_idle_fn idle)
{
    return perch_live_attach_idle(l, name, sink, idle, sink != NULL ? sink->ctx : NULL);
}

/* The books' reasons with their growth since the slot was attached; returns how many. */
static size_t books_growth(perch_live *l, const struct live_slot *s,
                           char (*reasons)[LIVE_REASON_MAX], uint64_t *grew)
{
    struct live_books now;
    perch__live_books(l, &now);
    return perch__live_books_list(l, &now, &s->base, reasons, grew);
}

/* Writes what grew since the slot was attached: the books (drops, losses, gaps) as ledger
 * records, then the model's own ledger (engine_counts.c). */
static int emit_books(perch_live *l, struct live_slot *s)
{
    char reasons[4 + PERCH_LIVE_MAX_LOSSES][LIVE_REASON_MAX];
    uint64_t grew[4 + PERCH_LIVE_MAX_LOSSES];
    size_t n = books_growth(l, s, reasons, grew);
    int err = 0;
    for (size_t i = 0; i < n && err == 0 && s->sink.ledger != NULL; i++) {
        perch_ledger_rec rec = {reasons[i], grew[i]};
        if (rec.count > 0)
            err = s->sink.ledger(s->sink.ctx, &rec);
    }
    return err ? err
               : perch__live_counts_emit_growth(l, s, (const char(*)[LIVE_REASON_MAX])reasons, n);
}

struct detach_req {
    perch_live *l;
    const void *ctx;
    bool finish;
};

static int do_detach(void *ctx)
{
    struct detach_req *r = ctx;
    perch_live *l = r->l;
    for (size_t i = 0; i < l->slot_count; i++) {
        struct live_slot *s = &l->slots[i];
        if (!s->used || s->sink.ctx != r->ctx)
            continue;
        int err = r->finish ? atomic_load(&s->error) : 0; /* a sink that failed says so */
        if (r->finish && err == 0 && !s->finished) {
            err = emit_books(l, s);
            if (err == 0 && s->sink.finish != NULL)
                err = s->sink.finish(s->sink.ctx);
        }
        perch_mutex_lock(l->mu);
        s->used = false;
        perch_mutex_unlock(l->mu);
        perch__live_counts_free(&s->counts);
        return err;
    }
    return PERCH_ENOENT;
}

int perch_live_detach(perch_live *l, const void *sink_ctx, bool finish)
{
    if (l == NULL)
        return PERCH_EINVAL;
    struct detach_req r = {l, sink_ctx, finish};
    return perch_live_call(l, do_detach, &r, UINT32_MAX);
}
