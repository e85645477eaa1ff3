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
/* One hold of the lock copies at most this many stacks or frames (about 0.5 MiB). */
#define STACKS_PER_HOLD 4096u
#define FRAMES_PER_HOLD 65536u

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

/* Renumbers the samples' stacks 1..n in first-use order; *ids gets the state's ids of
 * stacks 1..n (perch__free). No lock: the samples are the query's own copy. */
static int renumber_stacks(perch_sample_rec *s, uint32_t n, uint64_t **ids, uint32_t *count)
{
    perch__hmap seen = {0};
    uint32_t cap = 0;
    int err = 0;
    *ids = NULL;
    *count = 0;
    for (uint32_t i = 0; i < n && err == 0; i++) {
        uint32_t id;
        if (s[i].stack_id == 0)
            continue;
        if (perch__hmap_get(&seen, s[i].stack_id, &id)) {
            s[i].stack_id = id;
            continue;
        }
        err = perch__grow_array((void **)ids, sizeof **ids, &cap, *count + 1, HARD_MAX);
        if (err == 0)
            err = perch__hmap_put(&seen, s[i].stack_id, *count + 1);
        if (err == 0) {
            (*ids)[(*count)++] = s[i].stack_id;
            s[i].stack_id = *count;
        }
    }
    perch__hmap_free(&seen);
    return err;
}

/* Stacks copied out of the state under one hold of the lock, played after it. */
typedef struct stack_batch {
    perch_stack_rec *recs;
    uint32_t *first; /* recs[i]'s frames start at frames + first[i] */
    uint64_t *frames;
    uint32_t n, cap, cap_first, nframes, cap_frames;
} stack_batch;

/* Copies stacks ids[*at..] (renumbered *at + 1..) into b under the lock, up to the batch's
 * limits, and advances *at. A stack the state no longer holds is copied without frames. */
static int copy_stacks(perch_live_query *q, const uint64_t *ids, uint32_t count, uint32_t *at,
                       stack_batch *b)
{
    int err = 0;
    b->n = b->nframes = 0;
    perch_mutex_lock(q->lock);
    while (*at < count && b->n < STACKS_PER_HOLD && b->nframes < FRAMES_PER_HOLD && err == 0) {
        const qstack *st = perch__q_stack_row(q, ids[*at]);
        uint32_t frames = st ? st->count : 0;
        err = perch__grow_array((void **)&b->recs, sizeof *b->recs, &b->cap, b->n + 1,
                                STACKS_PER_HOLD);
        if (err == 0)
            err = perch__grow_array((void **)&b->first, sizeof *b->first, &b->cap_first, b->n + 1,
                                    STACKS_PER_HOLD);
        if (err == 0 && frames > 0)
            err = perch__grow_array((void **)&b->frames, sizeof *b->frames, &b->cap_frames,
                                    b->nframes + frames, UINT32_MAX);
        if (err != 0)
            break;
        if (frames > 0)
            memcpy(b->frames + b->nframes, st->frames, sizeof *b->frames * frames);
        b->recs[b->n] = (perch_stack_rec){*at + 1u, frames, st ? st->kernel : 0, NULL};
        b->first[b->n++] = b->nframes;
        b->nframes += frames;
        ++*at;
    }
    perch_mutex_unlock(q->lock);
    return err;
}

/* Plays the samples' stacks (renumbered 1..n in first-use order) into sink. The stacks are
 * copied out a batch at a time and played without the lock: a capture writer's sink encodes
 * them, which for a million samples held the lock, and so the model thread, 155 ms. */
static int pid_stacks(perch_live_query *q, recq *r, const perch_sink *sink)
{
    uint64_t *ids = NULL;
    uint32_t count = 0, at = 0;
    stack_batch b = {0};
    int err = renumber_stacks(r->rows, r->n, &ids, &count);
    while (err == 0 && at < count) {
        err = copy_stacks(q, ids, count, &at, &b);
        for (uint32_t i = 0; i < b.n && err == 0 && sink->stack; i++) {
            b.recs[i].frames = b.recs[i].frame_count ? b.frames + b.first[i] : NULL;
            err = sink->stack(sink->ctx, &b.recs[i]);
        }
    }
    perch__free(b.recs);
    perch__free(b.first);
    perch__free(b.frames);
    perch__free(ids);
    return err;
}

static int pid_entities(const perch_live_query *q, recq *r, uint32_t pid, const perch_sink *s)
{
    (void)r;
    return emit_pid(q, pid, s);
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
    int (*stacks)(perch_live_query *q, recq *r, const perch_sink *s); /* NULL: none */
    int (*play)(const perch_sink *s, const void *rec);
} recq_kind;

static const recq_kind slices_kind = {
    true, sizeof(perch_slice_rec), copy_slices, tid_entities, NULL, play_slice};
static const recq_kind samples_kind = {
    false, sizeof(perch_sample_rec), copy_samples, pid_entities, pid_stacks, play_sample};

/* Copies the matching records bucket by bucket, then plays trace_info and the entities (under
 * the lock: the query's process or thread, bounded by the entity cap), the stacks (a batch
 * at a time) and the records into sink, then finish. */
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
    if (err == 0 && kind->stacks)
        err = kind->stacks(q, &r, sink);
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
