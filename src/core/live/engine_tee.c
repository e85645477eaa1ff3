/*
 * The live engine's fan-out (include/perch/live.h): the sink the model writes to hands every
 * record to each attached sink in turn. A sink that returns an error is switched off (its
 * error kept for the status) and never called again; the model and the other sinks go on, so
 * a full disk under the recording does not stop the flight recorder or the live queries.
 */
#include "engine_internal.h"

/* Records the result of one slot's callback. */
static void slot_result(perch_live *l, struct live_slot *s, int err)
{
    if (err < 0 && atomic_load(&s->error) == 0) {
        atomic_store(&s->error, err);
        atomic_fetch_add(&l->failed_sinks, 1);
    }
}

#define ACTIVE(s) ((s)->used && atomic_load_explicit(&(s)->error, memory_order_relaxed) == 0)

/* The state tracker sees every record first; its failure only stops later attaches. */
#define STATE(member, rec)                                                                         \
    do {                                                                                           \
        if (l->state != NULL && l->state_sink.member != NULL &&                                    \
            atomic_load_explicit(&l->state_error, memory_order_relaxed) == 0) {                    \
            int serr = l->state_sink.member(l->state_sink.ctx, rec);                               \
            if (serr < 0)                                                                          \
                atomic_store(&l->state_error, serr);                                               \
        }                                                                                          \
    } while (0)

#define TEE(member, type)                                                                          \
    static int tee_##member(void *ctx, const type *rec)                                            \
    {                                                                                              \
        perch_live *l = ctx;                                                                       \
        STATE(member, rec);                                                                        \
        for (size_t i = 0; i < l->slot_count; i++) {                                               \
            struct live_slot *s = &l->slots[i];                                                    \
            if (s->sink.member != NULL && ACTIVE(s))                                               \
                slot_result(l, s, s->sink.member(s->sink.ctx, rec));                               \
        }                                                                                          \
        return 0;                                                                                  \
    }

TEE(trace_info, perch_trace_info)
TEE(process, perch_process_rec)
TEE(thread, perch_thread_rec)
TEE(module, perch_module_rec)
TEE(counters, perch_counters_rec)
TEE(stack, perch_stack_rec)
TEE(slice, perch_slice_rec)
TEE(sample, perch_sample_rec)
TEE(lbr, perch_lbr_rec)
/* The ledger and statistics come at the model's finish and count from the engine's start: a
 * sink that came late gets the ledger's growth since it came, and no statistics (they
 * describe the session, not its window: engine_counts.c). */
static int tee_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch_live *l = ctx;
    STATE(ledger, rec);
    for (size_t i = 0; i < l->slot_count; i++) {
        struct live_slot *s = &l->slots[i];
        perch_ledger_rec own = {rec->reason, 0};
        if (s->sink.ledger == NULL || !ACTIVE(s))
            continue;
        own.count = perch__live_counts_growth(&s->counts, rec->reason, rec->count);
        if (own.count > 0)
            slot_result(l, s, s->sink.ledger(s->sink.ctx, &own));
    }
    return 0;
}

static int tee_stat(void *ctx, const perch_stat_rec *rec)
{
    perch_live *l = ctx;
    STATE(stat, rec);
    for (size_t i = 0; i < l->slot_count; i++) {
        struct live_slot *s = &l->slots[i];
        if (s->sink.stat != NULL && ACTIVE(s) && !s->counts.taken)
            slot_result(l, s, s->sink.stat(s->sink.ctx, rec));
    }
    return 0;
}

static int tee_finish(void *ctx)
{
    perch_live *l = ctx;
    for (size_t i = 0; i < l->slot_count; i++) {
        struct live_slot *s = &l->slots[i];
        if (s->sink.finish != NULL && ACTIVE(s) && !s->finished)
            slot_result(l, s, s->sink.finish(s->sink.ctx));
        s->finished = true;
    }
    return 0;
}

void perch__live_tee_init(perch_live *l)
{
    perch_sink *t = &l->tee;
    t->ctx = l;
    t->trace_info = tee_trace_info;
    t->process = tee_process;
    t->thread = tee_thread;
    t->module = tee_module;
    t->counters = tee_counters;
    t->stack = tee_stack;
    t->slice = tee_slice;
    t->sample = tee_sample;
    t->lbr = tee_lbr;
    t->ledger = tee_ledger;
    t->stat = tee_stat;
    t->finish = tee_finish;
}

void perch__live_idle(perch_live *l)
{
    atomic_store_explicit(&l->samples_waiting, perch_model_samples_waiting(l->model),
                          memory_order_relaxed);
    for (size_t i = 0; i < l->slot_count; i++) {
        struct live_slot *s = &l->slots[i];
        if (s->idle != NULL && ACTIVE(s))
            s->idle(s->idle_ctx);
    }
}
