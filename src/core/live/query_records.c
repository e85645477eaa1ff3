/*
 * Records queries of the live query state: the slices of one thread and the samples of one
 * process over a window, copied out bucket by bucket under the lock, then played into a sink
 * after the entities (and, for samples, the stacks, renumbered 1..n) they refer to, so the
 * sink receives a self-contained record stream (a capture, once a capture writer is the
 * sink).
 */
#include <string.h>

#include "live/query_internal.h"
#include "model/mem.h"
#include "perch/error.h"
#include "util/mem.h"

#define DEFAULT_MAX 100000u
#define HARD_MAX    (1u << 20)

typedef struct recq {
    perch_live_span span;
    uint64_t k0, k1;
    uint32_t max;
    uint64_t matched;
    void *rows;
    uint32_t n, cap;
    int err;
} recq;

/* Resolves the window and the buckets to visit; samples stop at the window's end bucket,
 * slices may end (and be held) later. */
static int begin(perch_live_query *q, const perch_proto_window *w, uint32_t max, bool to_end,
                 recq *r)
{
    memset(r, 0, sizeof *r);
    r->max = max == 0 ? DEFAULT_MAX : max > HARD_MAX ? HARD_MAX : max;
    perch_mutex_lock(q->lock);
    perch__q_drain(q);
    int err = perch__q_window(q, w, false, &r->span);
    uint64_t oldest = perch__q_oldest_index(q);
    r->k0 = r->span.from_ts / q->bucket_ticks;
    r->k0 = r->k0 > oldest ? r->k0 : oldest;
    r->k1 = to_end ? q->newest_index : (r->span.to_ts - 1) / q->bucket_ticks;
    r->k1 = r->k1 < q->newest_index ? r->k1 : q->newest_index;
    if (!q->any) { /* nothing held yet: visit no bucket */
        r->k0 = 1;
        r->k1 = 0;
    }
    perch_mutex_unlock(q->lock);
    return err;
}

static void *append(recq *r, size_t elem)
{
    r->matched++;
    if (r->n >= r->max || r->err)
        return NULL;
    if (r->n == r->cap &&
        (r->err = perch__grow_array(&r->rows, elem, &r->cap, r->n + 1, HARD_MAX)) < 0)
        return NULL;
    return (char *)r->rows + (size_t)r->n++ * elem;
}

static void finish_info(const recq *r, perch_live_records *info)
{
    info->span = r->span;
    info->matched = r->matched;
    info->truncated = r->matched > r->n;
}

/* ---- slices ------------------------------------------------------------------------------ */

static void copy_slices(perch_live_query *q, recq *r, const qbucket *b, uint32_t tid)
{
    (void)q;
    for (uint32_t i = 0; i < b->nslices; i++) {
        const qslice *s = &b->slices[i];
        if (s->tid != tid || s->start_ts >= r->span.to_ts || s->end_ts <= r->span.from_ts)
            continue;
        perch_slice_rec *d = append(r, sizeof *d);
        if (d == NULL)
            continue;
        memset(d, 0, sizeof *d);
        *d = (perch_slice_rec){
            s->thread_key, s->tid,       s->cpu,      s->flags,       s->start_ts,
            s->end_ts,     s->ready_ts,  s->priority, s->wait_reason, s->wait_mode,
            s->state,      s->pmc_count, {0}};
        if (s->pmc_count)
            memcpy(d->pmc_delta, b->pmc + s->pmc_off, sizeof *b->pmc * s->pmc_count);
    }
}

/* The threads with tid and their processes (processes first), under the lock. */
static int emit_tid(const perch_live_query *q, uint32_t tid, const perch_sink *sink)
{
    const perch_thread_rec *t = q->threads.rows;
    perch__hmap seen = {0};
    int err = 0;
    for (uint32_t pass = 0; pass < 2 && err == 0; pass++) {
        for (uint32_t i = 0; i < q->threads.count && err == 0; i++) {
            uint32_t v;
            if (t[i].tid != tid)
                continue;
            if (pass == 1) {
                err = sink->thread ? sink->thread(sink->ctx, &t[i]) : 0;
                continue;
            }
            const perch_process_rec *p = perch__q_process_rec(q, t[i].process_key);
            if (p == NULL || perch__hmap_get(&seen, p->key, &v))
                continue;
            err = perch__hmap_put(&seen, p->key, 1);
            if (err == 0 && sink->process)
                err = sink->process(sink->ctx, p);
        }
    }
    perch__hmap_free(&seen);
    return err;
}

static int tid_entities(const perch_live_query *q, recq *r, uint32_t tid, const perch_sink *s)
{
    (void)r;
    return emit_tid(q, tid, s);
}

static int play_slice(const perch_sink *s, const void *rec)
{
    return s->slice ? s->slice(s->ctx, rec) : 0;
}

/* ---- samples ----------------------------------------------------------------------------- */

static void copy_samples(perch_live_query *q, recq *r, const qbucket *b, uint32_t pid)
{
    uint64_t last_key = 0;
    bool last_match = false, have_last = false;
    for (uint32_t i = 0; i < b->nsamples; i++) {
        const qsample *s = &b->samples[i];
        if (s->ts < r->span.from_ts || s->ts >= r->span.to_ts)
            continue;
        if (!have_last || s->thread_key != last_key) {
            const perch_thread_rec *t = perch__q_thread_rec(q, s->thread_key);
            last_key = s->thread_key;
            last_match = t != NULL && t->pid == pid;
            have_last = true;
        }
        if (!last_match)
            continue;
        perch_sample_rec *d = append(r, sizeof *d);
        if (d != NULL)
            *d = (perch_sample_rec){s->thread_key,     s->tid, s->cpu, s->kind,       s->flags,
                                    s->profile_source, s->ts,  s->ip,  s->module_key, s->stack_id,
                                    s->count};
    }
}

/* The processes with pid, their threads and modules, and the kernel's modules. */
static int emit_pid(const perch_live_query *q, uint32_t pid, const perch_sink *sink)
{
    const perch_process_rec *p = q->procs.rows;
    const perch_thread_rec *t = q->threads.rows;
    int err = perch__q_emit_modules(q, 0, sink);
    for (uint32_t i = 0; i < q->procs.count && err == 0; i++)
        if (p[i].pid == pid && sink->process)
            err = sink->process(sink->ctx, &p[i]);
    for (uint32_t i = 0; i < q->threads.count && err == 0; i++)
        if (t[i].pid == pid && sink->thread)
            err = sink->thread(sink->ctx, &t[i]);
    for (uint32_t i = 0; i < q->procs.count && err == 0; i++)
        if (p[i].pid == pid)
            err = perch__q_emit_modules(q, p[i].key, sink);
    return err;
}

/* Renumbers the samples' stacks 1..n in first-use order and plays those stacks. */
static int emit_stacks(const perch_live_query *q, perch_sample_rec *s, uint32_t n,
                       const perch_sink *sink)
{
    perch__hmap ids = {0};
    uint32_t next = 0;
    int err = 0;
    for (uint32_t i = 0; i < n && err == 0; i++) {
        uint32_t id;
        if (s[i].stack_id == 0)
            continue;
        if (perch__hmap_get(&ids, s[i].stack_id, &id)) {
            s[i].stack_id = id;
            continue;
        }
        const qstack *st = perch__q_stack_row(q, s[i].stack_id);
        perch_stack_rec rec = {next + 1, st ? st->count : 0, st ? st->kernel : 0,
                               st ? st->frames : NULL};
        err = perch__hmap_put(&ids, s[i].stack_id, ++next);
        if (err == 0 && sink->stack)
            err = sink->stack(sink->ctx, &rec);
        s[i].stack_id = next;
    }
    perch__hmap_free(&ids);
    return err;
}

static int pid_entities(const perch_live_query *q, recq *r, uint32_t pid, const perch_sink *s)
{
    int err = emit_pid(q, pid, s);
    return err < 0 ? err : emit_stacks(q, r->rows, r->n, s);
}

static int play_sample(const perch_sink *s, const void *rec)
{
    return s->sample ? s->sample(s->ctx, rec) : 0;
}

/* ---- one way to run both ------------------------------------------------------------------ */

typedef struct recq_kind {
    bool to_end; /* records may end after the window (slices) */
    size_t elem;
    void (*copy)(perch_live_query *q, recq *r, const qbucket *b, uint32_t id);
    int (*entities)(const perch_live_query *q, recq *r, uint32_t id, const perch_sink *s);
    int (*play)(const perch_sink *s, const void *rec);
} recq_kind;

static const recq_kind slices_kind = {true, sizeof(perch_slice_rec), copy_slices, tid_entities,
                                      play_slice};
static const recq_kind samples_kind = {false, sizeof(perch_sample_rec), copy_samples, pid_entities,
                                       play_sample};

/* Copies the matching records bucket by bucket, then plays trace_info, the entities and the
 * records into sink, then finish. */
static int run(perch_live_query *q, const recq_kind *kind, uint32_t id, const perch_proto_window *w,
               uint32_t max, const perch_sink *sink, perch_live_records *info)
{
    recq r;
    int err = begin(q, w, max, kind->to_end, &r);
    for (uint64_t k = r.k0; err == 0 && k <= r.k1 && r.err == 0; k++) {
        perch_mutex_lock(q->lock);
        const qbucket *b = perch__q_bucket(q, k);
        if (b != NULL)
            kind->copy(q, &r, b, id);
        perch_mutex_unlock(q->lock);
    }
    err = err < 0 ? err : r.err;
    if (err == 0) {
        perch_mutex_lock(q->lock);
        err = perch__q_emit_info(q, sink);
        err = err < 0 ? err : kind->entities(q, &r, id, sink);
        r.span.complete = r.span.complete && r.span.from_ts >= q->held_from_ts;
        perch_mutex_unlock(q->lock);
    }
    for (uint32_t i = 0; err == 0 && i < r.n; i++)
        err = kind->play(sink, (const char *)r.rows + (size_t)i * kind->elem);
    if (err == 0 && sink->finish)
        err = sink->finish(sink->ctx);
    if (err == 0)
        finish_info(&r, info);
    perch__free(r.rows);
    return err;
}

int perch_live_query_slices(perch_live_query *q, uint32_t tid, const perch_proto_window *w,
                            uint32_t max, const perch_sink *sink, perch_live_records *info)
{
    return run(q, &slices_kind, tid, w, max, sink, info);
}

int perch_live_query_samples(perch_live_query *q, uint32_t pid, const perch_proto_window *w,
                             uint32_t max, const perch_sink *sink, perch_live_records *info)
{
    return run(q, &samples_kind, pid, w, max, sink, info);
}
