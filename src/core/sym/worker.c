/*
 * The symbol worker (include/perch/sym.h): the model thread collects what samples and stacks
 * hit through a perch_symhits, and at each pump credits the records since the last one to
 * module identities and queues every (identity, RVA) never queued before into a bounded ring;
 * the worker thread pops them, loads each identity once through the backend, looks each
 * address up and keeps one symbol record per run of addresses (written for the identity's
 * first module key). Results only grow; the taps (worker_tap.c) hand them on.
 */
#include <string.h>

#include "model/hmap.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "perch/sym.h"
#include "perch/thread.h"
#include "sym/hits_internal.h"
#include "sym/worker_internal.h"

static char *dup_str(const char *s)
{
    return perch__strdup(s ? s : "");
}

/* Worker thread: makes the record for f (identity id, first key key) unless its run exists
 * (a run is its start and size: a backend that knows no sizes gives runs of one start). */
static int keep(perch_symworker *w, uint32_t ident, uint64_t key, const perch_sym_func *f)
{
    uint64_t k = perch__mix64((uint64_t)ident << 32 | f->span_rva) ^ f->span_size;
    uint32_t v;
    if (perch__hmap_get(&w->spans, k, &v))
        return 0;
    struct perch__sw_result *rec = perch__alloc(sizeof *rec);
    char *name = dup_str(f->name);
    int err = rec && name ? perch__hmap_put(&w->spans, k, 1) : PERCH_ENOMEM;
    perch_mutex_lock(w->lock);
    if (!err)
        err = perch__grow_array((void **)&w->results, sizeof *w->results, &w->cap_results,
                                w->nresults + 1, w->opt.max_records);
    w->st.records_dropped += err == PERCH_ELIMIT;
    if (!err) {
        rec->rec =
            (perch_symbol_rec){key, f->span_rva, f->span_size, f->rva, f->size, f->source, name};
        rec->ident = ident;
        w->results[w->nresults++] = rec;
        w->st.records++;
        rec = NULL;
        name = NULL;
    }
    perch_mutex_unlock(w->lock);
    perch__free(rec);
    perch__free(name);
    return err;
}

/* Worker thread: one address. */
static void answer(perch_symworker *w, struct perch__sw_request rq)
{
    const perch_symbackend *b = &w->opt.backend;
    perch_mutex_lock(w->lock);
    struct perch__sw_ident *id = rq.ident < w->nids ? w->ids[rq.ident] : NULL;
    perch_mutex_unlock(w->lock);
    if (id == NULL)
        return;
    if (id->state == 0) {
        id->state = b->load(b->ctx, rq.ident, &id->rec) == 0 ? 1 : -1;
        perch_mutex_lock(w->lock);
        if (id->state > 0)
            w->st.modules_loaded++;
        else
            w->st.modules_failed++;
        perch_mutex_unlock(w->lock);
    }
    perch_sym_func f;
    bool hit = id->state > 0 && b->lookup(b->ctx, rq.ident, rq.rva, &f);
    if (hit)
        keep(w, rq.ident, id->rec.key, &f);
    perch_mutex_lock(w->lock);
    w->st.looked_up++;
    w->st.named += hit;
    perch_mutex_unlock(w->lock);
}

static int run(void *arg)
{
    perch_symworker *w = arg;
    perch_mutex_lock(w->lock);
    for (;;) {
        while (w->count == 0 && !w->stop) {
            w->busy = false;
            perch_cond_broadcast(w->idle);
            perch_cond_wait(w->wake, w->lock, UINT32_MAX);
        }
        if (w->stop)
            break;
        struct perch__sw_request rq = w->queue[w->head];
        w->head = (w->head + 1) % w->opt.queue_cap;
        w->count--;
        w->busy = true;
        perch_mutex_unlock(w->lock);
        answer(w, rq);
        perch_mutex_lock(w->lock);
    }
    w->busy = false;
    perch_cond_broadcast(w->idle);
    perch_mutex_unlock(w->lock);
    return 0;
}

int perch_symworker_create(const perch_symworker_options *o, perch_symworker **out)
{
    if (o == NULL || o->size < sizeof *o || !o->backend.load || !o->backend.lookup)
        return PERCH_EINVAL;
    perch_symworker *w = perch__calloc(1, sizeof *w);
    if (w == NULL)
        return PERCH_ENOMEM;
    w->opt = *o;
    w->opt.queue_cap = o->queue_cap ? o->queue_cap : 65536;
    w->opt.finish_wait_ms = o->finish_wait_ms ? o->finish_wait_ms : 5000;
    w->opt.max_stack_frames = o->max_stack_frames ? o->max_stack_frames : 1u << 22;
    w->opt.max_addresses = o->max_addresses ? o->max_addresses : 1u << 20;
    w->opt.max_records = o->max_records ? o->max_records : 1u << 20;
    w->queue = perch__calloc(w->opt.queue_cap, sizeof *w->queue);
    int err = w->queue ? perch_symhits_create(&w->hits) : PERCH_ENOMEM;
    err = err ? err : perch_mutex_create(&w->lock);
    err = err ? err : perch_cond_create(&w->wake);
    err = err ? err : perch_cond_create(&w->idle);
    err = err ? err : perch_thread_start(run, w, "perch-symbols", &w->thread);
    if (err) {
        perch_symworker_destroy(w);
        return err;
    }
    *out = w;
    return 0;
}

/* Under w->lock: waits on idle while still(w), at most timeout_ms in all (a deadline, not a
 * wait per wake-up: one whose idle another thread's queueing undid before this one ran must
 * not start the time over). 0 or PERCH_ETIMEDOUT. */
static int wait_while(perch_symworker *w, bool (*still)(const perch_symworker *),
                      uint32_t timeout_ms)
{
    uint64_t end = perch_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    while (still(w)) {
        uint64_t now = perch_monotonic_ns();
        if (now >= end)
            return PERCH_ETIMEDOUT;
        uint64_t left = (end - now + 999999u) / 1000000u;
        perch_cond_wait(w->idle, w->lock, left < UINT32_MAX ? (uint32_t)left : UINT32_MAX - 1);
    }
    return 0;
}

static bool in_lookup(const perch_symworker *w)
{
    return w->busy; /* run() clears it, and broadcasts idle, as it leaves */
}

static bool working(const perch_symworker *w)
{
    return (w->count > 0 || w->busy) && !w->stop;
}

int perch_symworker_stop(perch_symworker *w, uint32_t timeout_ms)
{
    if (w == NULL || w->thread == NULL)
        return 0;
    perch_mutex_lock(w->lock);
    w->stop = true;
    perch_cond_signal(w->wake);
    int err = wait_while(w, in_lookup, timeout_ms);
    perch_mutex_unlock(w->lock);
    return err;
}

void perch_symworker_destroy(perch_symworker *w)
{
    if (w == NULL)
        return;
    if (w->thread) {
        perch_mutex_lock(w->lock);
        w->stop = true;
        perch_cond_signal(w->wake);
        perch_mutex_unlock(w->lock);
        perch_thread_join(w->thread, NULL);
    }
    for (uint32_t i = 0; i < w->nids; i++)
        if (w->ids[i]) {
            perch__free((char *)w->ids[i]->rec.path);
            perch__free((char *)w->ids[i]->rec.pdb_name);
            perch__free(w->ids[i]->key);
            perch__free(w->ids[i]);
        }
    for (uint32_t i = 0; i < w->nresults; i++) {
        perch__free((char *)w->results[i]->rec.name);
        perch__free(w->results[i]);
    }
    perch__free(w->ids);
    perch__free(w->results);
    perch__free(w->queue);
    perch__hmap_free(&w->seen);
    perch__hmap_free(&w->spans);
    perch_symhits_destroy(w->hits);
    perch_cond_destroy(w->wake);
    perch_cond_destroy(w->idle);
    perch_mutex_destroy(w->lock);
    perch__free(w);
}

#define FORWARD(name, type)                                                                        \
    static int ws_##name(void *ctx, const type *rec)                                               \
    {                                                                                              \
        perch_symworker *w = ctx;                                                                  \
        return w->hits_sink.name ? w->hits_sink.name(w->hits_sink.ctx, rec) : 0;                   \
    }
FORWARD(trace_info, perch_trace_info)
FORWARD(thread, perch_thread_rec)
FORWARD(module, perch_module_rec)
FORWARD(stack, perch_stack_rec)
FORWARD(sample, perch_sample_rec)

void perch_symworker_sink(perch_symworker *w, perch_sink *sink)
{
    perch_symhits_sink(w->hits, &w->hits_sink);
    memset(sink, 0, sizeof *sink); /* the worker makes names, it does not take them */
    sink->ctx = w;
    sink->trace_info = ws_trace_info;
    sink->thread = ws_thread;
    sink->module = ws_module;
    sink->stack = ws_stack;
    sink->sample = ws_sample;
}

void perch_symworker_idle(void *sink_ctx)
{
    perch_symworker *w = sink_ctx;
    if (perch_symworker_pump(w) != 0) { /* the addresses not queued come at the next pump */
        perch_mutex_lock(w->lock);
        w->st.pump_failures++;
        perch_mutex_unlock(w->lock);
    }
}

bool perch__symworker_ident_of(const perch_symworker *w, uint64_t module_key, uint32_t *ident)
{
    uint32_t at;
    if (!perch__hmap_get(&w->hits->mod_by_key, module_key, &at))
        return false;
    *ident = w->hits->mods[at].ident;
    return true;
}

/* Model thread: the identity's first module record, shared with the worker (under lock). */
static int share_ident(perch_symworker *w, uint32_t ident)
{
    if (ident < w->nids && w->ids[ident])
        return 0;
    const struct perch__hit_ident *h = &w->hits->ids[ident];
    struct perch__sw_ident *id = perch__calloc(1, sizeof *id);
    if (id == NULL)
        return PERCH_ENOMEM;
    id->rec = h->rec;
    id->rec.key = perch__symhits_first_key(w->hits, ident);
    id->rec.path = dup_str(h->rec.path);
    id->rec.pdb_name = dup_str(h->rec.pdb_name);
    id->key = dup_str(h->key);
    struct perch__sw_ident **v = NULL;
    perch_mutex_lock(w->lock);
    int err = id->rec.path && id->rec.pdb_name && id->key ? 0 : PERCH_ENOMEM;
    if (!err && ident >= w->nids) {
        v = perch__realloc(w->ids, (ident + 1u) * sizeof *v);
        if (v == NULL)
            err = PERCH_ENOMEM;
        else {
            memset(v + w->nids, 0, (ident + 1u - w->nids) * sizeof *v);
            w->ids = v;
            w->nids = ident + 1;
        }
    }
    if (!err)
        w->ids[ident] = id;
    perch_mutex_unlock(w->lock);
    if (err) {
        perch__free((char *)id->rec.path);
        perch__free((char *)id->rec.pdb_name);
        perch__free(id->key);
        perch__free(id);
    }
    return err;
}

bool perch__symworker_find_ident(perch_symworker *w, const char *key, uint32_t *ident)
{
    bool found = false;
    perch_mutex_lock(w->lock);
    for (uint32_t i = 0; i < w->nids && !found; i++)
        if (w->ids[i] && strcmp(w->ids[i]->key, key) == 0) {
            *ident = i;
            found = true;
        }
    perch_mutex_unlock(w->lock);
    return found;
}

static int enqueue(void *ctx, uint32_t ident, uint32_t rva)
{
    perch_symworker *w = ctx;
    uint64_t k = (uint64_t)ident << 32 | rva;
    uint32_t v;
    if (perch__hmap_get(&w->seen, k, &v))
        return 0;
    int err = perch__hmap_put(&w->seen, k, 1);
    if (err)
        return err;
    if ((err = share_ident(w, ident)) != 0) {
        perch__hmap_del(&w->seen, k); /* not queued: the next pump tries it again */
        return err;
    }
    perch_mutex_lock(w->lock);
    if (w->count < w->opt.queue_cap) {
        w->queue[(w->head + w->count++) % w->opt.queue_cap] =
            (struct perch__sw_request){ident, rva};
        w->st.queued++;
        perch_cond_signal(w->wake);
    } else {
        w->st.dropped++;
    }
    perch_mutex_unlock(w->lock);
    return 0;
}

int perch_symworker_pump(perch_symworker *w)
{
    if (w->pair_done == w->hits->npair && w->ip_done == w->hits->nip)
        return 0; /* nothing new since the last pump (the idle call is frequent) */
    int err = perch__symhits_credit(w->hits, w->pair_done, w->ip_done, enqueue, w);
    if (err)
        return err;
    uint32_t gone = perch__symhits_trim(w->hits, w->opt.max_stack_frames); /* the bounds */
    bool reset = w->seen.count > w->opt.max_addresses;
    if (reset)
        perch__hmap_free(&w->seen);
    w->pair_done = w->ip_done = 0;
    perch_mutex_lock(w->lock);
    w->st.stacks_forgotten += gone;
    w->st.address_resets += reset;
    perch_mutex_unlock(w->lock);
    return 0;
}

int perch_symworker_wait(perch_symworker *w, uint32_t timeout_ms)
{
    perch_mutex_lock(w->lock);
    int err = wait_while(w, working, timeout_ms);
    perch_mutex_unlock(w->lock);
    return err;
}

void perch_symworker_get_stats(perch_symworker *w, perch_symworker_stats *st)
{
    perch_mutex_lock(w->lock);
    *st = w->st;
    perch_mutex_unlock(w->lock);
}

const struct perch__sw_result *perch__symworker_result(perch_symworker *w, uint32_t i)
{
    perch_mutex_lock(w->lock);
    const struct perch__sw_result *r = i < w->nresults ? w->results[i] : NULL;
    perch_mutex_unlock(w->lock);
    return r;
}
