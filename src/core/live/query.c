/*
 * The writing side of the live query state (query.h): the sink callbacks on the model
 * thread, the lock-free staging ring of samples and slices (one producer: the model thread;
 * drained by whoever holds the lock), and publishing them into the
 * bucket ring (advancing it, splitting slices over the buckets they ran in, keeping the
 * totals, enforcing the memory cap). Also create, destroy and the statistics.
 */
#include <string.h>

#include "live/query_internal.h"
#include "model/mem.h"
#include "perch/error.h"
#include "util/mem.h"
#include "util/ticks.h"

#define MAX_BUCKETS  (1u << 20)

void perch_live_query_opts_default(perch_live_query_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->size = sizeof *opts;
    opts->span_ms = 60000;
    opts->bucket_ms = 100;
    opts->mem_cap = (size_t)256 << 20;
    opts->batch = 256;
    opts->max_entities = 1u << 20;
    opts->max_stacks = 1u << 20;
}

static bool opts_valid(const perch_live_query_opts *o)
{
    return o->size == sizeof *o && o->span_ms > 0 && o->bucket_ms > 0 &&
           o->bucket_ms <= o->span_ms && o->span_ms / o->bucket_ms < MAX_BUCKETS &&
           o->mem_cap >= ((size_t)1 << 20) && o->batch > 0 && o->batch <= (1u << 16) &&
           o->max_entities > 0 && o->max_stacks > 0;
}

static void set_bucket_ticks(perch_live_query *q, uint64_t freq)
{
    uint64_t t = perch__clock_hz(freq) / 1000 * q->o.bucket_ms; /* 0: before trace_info */
    q->bucket_ticks = t ? t : 1;
}

int perch_live_query_create(const perch_live_query_opts *opts, perch_live_query **out)
{
    perch_live_query_opts o;
    perch_live_query *q;
    if (opts == NULL)
        perch_live_query_opts_default(&o);
    else
        o = *opts;
    if (out == NULL || !opts_valid(&o))
        return PERCH_EINVAL;
    if ((q = perch__calloc(1, sizeof *q)) == NULL)
        return PERCH_ENOMEM;
    q->o = o;
    q->nbuckets = o.span_ms / o.bucket_ms + 1;
    q->ngroups = q->nbuckets / QGROUP + 2;
    q->ring = perch__calloc(q->nbuckets, sizeof *q->ring);
    q->groups = perch__calloc(q->ngroups, sizeof *q->groups);
    for (q->stage_cap = 2; q->stage_cap < 2 * o.batch; q->stage_cap *= 2)
        ;
    q->stage = perch__alloc(sizeof *q->stage * q->stage_cap);
    atomic_init(&q->stage_head, 0);
    atomic_init(&q->stage_tail, 0);
    perch__qtable_init(&q->procs, sizeof(perch_process_rec));
    perch__qtable_init(&q->threads, sizeof(perch_thread_rec));
    perch__qtable_init(&q->mods, sizeof(perch_module_rec));
    perch__qtable_init(&q->stacks, sizeof(qstack));
    set_bucket_ticks(q, 0);
    if (!q->ring || !q->groups || !q->stage || perch_mutex_create(&q->lock) < 0) {
        perch_live_query_destroy(q);
        return PERCH_ENOMEM;
    }
    *out = q;
    return 0;
}

static void totals_free(qtotals *t)
{
    perch__qagg_free(&t->threads);
    perch__qagg_free(&t->stacks);
    memset(t, 0, sizeof *t);
}

static void group_clear(perch_live_query *q, qgroup *g)
{
    q->bytes -= g->bytes;
    totals_free(&g->t);
    memset(g, 0, sizeof *g);
}

const qgroup *perch__q_group(const perch_live_query *q, uint64_t k)
{
    const qgroup *g = &q->groups[k / QGROUP % q->ngroups];
    return g->used && g->index == k / QGROUP && !g->tainted ? g : NULL;
}

/* The group of bucket k, started afresh when its slot held an older group. */
static qgroup *group_of(perch_live_query *q, uint64_t k)
{
    qgroup *g = &q->groups[k / QGROUP % q->ngroups];
    if (!g->used || g->index != k / QGROUP) {
        group_clear(q, g);
        g->used = true;
        g->index = k / QGROUP;
    }
    return g;
}

static void bucket_clear(perch_live_query *q, qbucket *b)
{
    qgroup *g = &q->groups[b->index / QGROUP % q->ngroups];
    if (b->used && g->used && g->index == b->index / QGROUP)
        g->tainted = true; /* its totals still hold what this bucket held */
    q->held_samples -= b->nsamples;
    q->held_slices -= b->nslices;
    q->bytes -= b->bytes;
    perch__free(b->samples);
    perch__free(b->slices);
    perch__free(b->pieces);
    perch__free(b->pmc);
    totals_free(&b->t);
    memset(b, 0, sizeof *b);
}

void perch_live_query_destroy(perch_live_query *q)
{
    if (q == NULL)
        return;
    for (uint32_t i = 0; q->ring != NULL && i < q->nbuckets; i++)
        bucket_clear(q, &q->ring[i]);
    for (uint32_t i = 0; q->groups != NULL && i < q->ngroups; i++)
        group_clear(q, &q->groups[i]);
    perch__free(q->groups);
    perch__q_free_entities(q);
    perch__free(q->ring);
    perch__free(q->stage);
    perch__free(q->source);
    perch__free(q->session_config);
    perch_mutex_destroy(q->lock);
    perch__free(q);
}

/* ---- the ring (under the lock) ------------------------------------------------------------ */

qbucket *perch__q_bucket(perch_live_query *q, uint64_t k)
{
    qbucket *b = &q->ring[k % q->nbuckets];
    return b->used && b->index == k ? b : NULL;
}

uint64_t perch__q_oldest_index(const perch_live_query *q)
{
    return q->newest_index >= q->nbuckets - 1 ? q->newest_index - (q->nbuckets - 1) : 0;
}

/* Moves the newest bucket to k, expiring what falls out of the span. */
static void advance(perch_live_query *q, uint64_t k)
{
    if (!q->any) {
        q->any = true;
        q->newest_index = q->sweep_index = k;
        return;
    }
    if (k <= q->newest_index)
        return;
    uint64_t steps = k - q->newest_index;
    for (uint64_t i = 1; i <= steps && i <= q->nbuckets; i++) {
        qbucket *b = &q->ring[(q->newest_index + i) % q->nbuckets];
        if (b->used && (b->index + 1) * q->bucket_ticks > q->held_from_ts)
            q->held_from_ts = (b->index + 1) * q->bucket_ticks;
        if (b->used)
            bucket_clear(q, b);
    }
    q->newest_index = k;
    uint64_t oldest_ts = perch__q_oldest_index(q) * q->bucket_ticks;
    if (q->newest_index - q->sweep_index >= q->nbuckets / 4 + 1) {
        q->sweep_index = q->newest_index;
        perch__q_sweep(q, oldest_ts);
    }
}

/* The bucket for absolute index k, created when missing; NULL when k is no longer held. */
static qbucket *bucket_at(perch_live_query *q, uint64_t k)
{
    if (k < perch__q_oldest_index(q) || (k + 1) * q->bucket_ticks <= q->held_from_ts)
        return NULL;
    qbucket *b = &q->ring[k % q->nbuckets];
    if (!b->used) {
        b->used = true;
        b->index = k;
    }
    return b;
}

static int grow(void **arr, size_t elem, uint32_t *cap, uint32_t need, qbucket *b,
                perch_live_query *q)
{
    uint32_t before = *cap;
    int err = perch__grow_array(arr, elem, cap, need, UINT32_MAX / 2);
    if (err == 0) {
        b->bytes += (size_t)(*cap - before) * elem;
        q->bytes += (size_t)(*cap - before) * elem;
    }
    return err;
}

static int add_total(perch_live_query *q, size_t *owner_bytes, qagg *t, uint64_t key, uint64_t a,
                     uint64_t bval, bool first)
{
    size_t grown = 0;
    int err = perch__qagg_add(t, key, a, bval, first, &grown);
    *owner_bytes += grown;
    q->bytes += grown;
    return err;
}

/* A timer sample into the totals of its bucket and of the bucket's group. */
static int count_sample(perch_live_query *q, qbucket *b, const qsample *s)
{
    qgroup *g = group_of(q, b->index);
    b->t.samples++;
    g->t.samples++;
    int err = add_total(q, &b->bytes, &b->t.threads, s->thread_key, 1, 0, false);
    err = err < 0 ? err : add_total(q, &g->bytes, &g->t.threads, s->thread_key, 1, 0, false);
    if (err == 0 && s->stack_id != 0)
        err = add_total(q, &b->bytes, &b->t.stacks, s->stack_id, 1, s->thread_key, true);
    if (err == 0 && s->stack_id != 0)
        err = add_total(q, &g->bytes, &g->t.stacks, s->stack_id, 1, s->thread_key, true);
    return err;
}

static int publish_sample(perch_live_query *q, const qsample *s)
{
    qbucket *b;
    advance(q, s->ts / q->bucket_ticks);
    if ((b = bucket_at(q, s->ts / q->bucket_ticks)) == NULL) {
        q->dropped_late++;
        return 0;
    }
    if (b->nsamples == b->csamples &&
        grow((void **)&b->samples, sizeof *b->samples, &b->csamples, b->nsamples + 1, b, q) < 0)
        return PERCH_ENOMEM;
    b->samples[b->nsamples++] = *s;
    q->published++;
    q->held_samples++;
    if (s->ts > q->newest_ts)
        q->newest_ts = s->ts;
    return s->kind == PERCH_SAMPLE_TIMER ? count_sample(q, b, s) : 0;
}

/* CPU time of [lo, hi) of a slice into bucket b's totals. */
static int slice_time(perch_live_query *q, qbucket *b, uint64_t key, uint32_t tid, uint64_t d)
{
    qgroup *g = group_of(q, b->index);
    if (tid == 0) {
        b->t.idle_ticks += d;
        g->t.idle_ticks += d;
        return 0;
    }
    b->t.cpu_ticks += d;
    g->t.cpu_ticks += d;
    int err = add_total(q, &b->bytes, &b->t.threads, key, 0, d, false);
    return err < 0 ? err : add_total(q, &g->bytes, &g->t.threads, key, 0, d, false);
}

/* The pieces of a slice in the buckets before its own. */
static int slice_pieces(perch_live_query *q, const perch_slice_rec *s, uint64_t home)
{
    uint64_t first = s->start_ts / q->bucket_ticks;
    if (first < perch__q_oldest_index(q))
        first = perch__q_oldest_index(q);
    for (uint64_t k = first; k < home; k++) {
        qbucket *b = bucket_at(q, k);
        uint64_t lo = k * q->bucket_ticks, hi = lo + q->bucket_ticks;
        if (b == NULL)
            continue;
        lo = s->start_ts > lo ? s->start_ts : lo;
        if (b->npieces == b->cpieces &&
            grow((void **)&b->pieces, sizeof *b->pieces, &b->cpieces, b->npieces + 1, b, q) < 0)
            return PERCH_ENOMEM;
        b->pieces[b->npieces++] = (qpiece){s->thread_key, lo, hi, s->tid};
        int err = slice_time(q, b, s->thread_key, s->tid, hi - lo);
        if (err < 0)
            return err;
    }
    return 0;
}

static int store_slice(perch_live_query *q, qbucket *b, const perch_slice_rec *s, uint64_t end)
{
    uint32_t n = s->pmc_count <= PERCH_MAX_PMC ? s->pmc_count : PERCH_MAX_PMC;
    if (b->nslices == b->cslices &&
        grow((void **)&b->slices, sizeof *b->slices, &b->cslices, b->nslices + 1, b, q) < 0)
        return PERCH_ENOMEM;
    if (n && b->npmc + n > b->cpmc &&
        grow((void **)&b->pmc, sizeof *b->pmc, &b->cpmc, b->npmc + n, b, q) < 0)
        return PERCH_ENOMEM;
    qslice *d = &b->slices[b->nslices++];
    *d = (qslice){s->thread_key, s->start_ts, end,       s->ready_ts, s->tid,
                  b->npmc,       s->cpu,      s->flags,  s->priority, s->wait_reason,
                  s->wait_mode,  s->state,    (uint8_t)n};
    if (n)
        memcpy(b->pmc + b->npmc, s->pmc_delta, sizeof *b->pmc * n);
    b->npmc += n;
    q->held_slices++;
    return 0;
}

static int publish_slice(perch_live_query *q, const perch_slice_rec *s)
{
    uint64_t end = s->end_ts > s->start_ts ? s->end_ts : s->start_ts;
    uint64_t home = end > s->start_ts ? (end - 1) / q->bucket_ticks : end / q->bucket_ticks;
    qbucket *b;
    advance(q, home);
    if ((b = bucket_at(q, home)) == NULL) {
        q->dropped_late++;
        return 0;
    }
    int err = store_slice(q, b, s, end);
    if (err < 0)
        return err;
    q->published++;
    if (end > q->newest_ts)
        q->newest_ts = end;
    uint64_t lo = home * q->bucket_ticks;
    err = slice_time(q, b, s->thread_key, s->tid, end - (s->start_ts > lo ? s->start_ts : lo));
    return err < 0 ? err : slice_pieces(q, s, home);
}

/* Drops the oldest held buckets while memory is over the cap (the newest always stays). */
static void enforce_cap(perch_live_query *q)
{
    uint64_t k = perch__q_oldest_index(q);
    while (q->bytes + q->entity_bytes > q->o.mem_cap && k < q->newest_index) {
        qbucket *b = perch__q_bucket(q, k);
        if (b != NULL) {
            q->dropped_records += b->nsamples + b->nslices;
            bucket_clear(q, b);
        }
        if ((k + 1) * q->bucket_ticks > q->held_from_ts)
            q->held_from_ts = (k + 1) * q->bucket_ticks;
        k++;
    }
}

void perch__q_drain(perch_live_query *q)
{
    uint64_t head = atomic_load_explicit(&q->stage_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&q->stage_tail, memory_order_relaxed);
    int err = 0;
    for (; tail != head; tail++) {
        const qstaged *e = &q->stage[tail & (q->stage_cap - 1)];
        if (err == 0)
            err = e->is_slice ? publish_slice(q, &e->u.slice) : publish_sample(q, &e->u.sample);
        if (err < 0) /* out of memory: the record that failed and the rest are counted */
            q->dropped_records++;
    }
    atomic_store_explicit(&q->stage_tail, head, memory_order_release);
    enforce_cap(q);
}

void perch_live_query_flush(perch_live_query *q)
{
    if (atomic_load_explicit(&q->stage_head, memory_order_relaxed) ==
        atomic_load_explicit(&q->stage_tail, memory_order_acquire))
        return;
    perch_mutex_lock(q->lock);
    perch__q_drain(q);
    perch_mutex_unlock(q->lock);
}

/* The next free slot of the staging ring (model thread), draining it first when full. */
static qstaged *stage_slot(perch_live_query *q)
{
    uint64_t head = atomic_load_explicit(&q->stage_head, memory_order_relaxed);
    if (head - atomic_load_explicit(&q->stage_tail, memory_order_acquire) >= q->stage_cap)
        perch_live_query_flush(q);
    return &q->stage[head & (q->stage_cap - 1)];
}

/* Makes the slot just filled visible; publishes a batch once one has gathered. */
static void stage_commit(perch_live_query *q)
{
    uint64_t head = atomic_load_explicit(&q->stage_head, memory_order_relaxed) + 1;
    atomic_store_explicit(&q->stage_head, head, memory_order_release);
    if (head - atomic_load_explicit(&q->stage_tail, memory_order_acquire) >= q->o.batch)
        perch_live_query_flush(q);
}

/* ---- the sink ------------------------------------------------------------------------------- */

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_live_query *q = ctx;
    char *src = perch__strdup(info->source ? info->source : "");
    char *cfg = perch__strdup(info->session_config ? info->session_config : "");
    if (src == NULL || cfg == NULL) {
        perch__free(src);
        perch__free(cfg);
        return PERCH_ENOMEM;
    }
    perch_live_query_flush(q);
    perch_mutex_lock(q->lock);
    perch__free(q->source);
    perch__free(q->session_config);
    q->info = *info;
    q->info.source = q->source = src;
    q->info.session_config = q->session_config = cfg;
    q->have_info = true;
    if (!q->any)
        set_bucket_ticks(q, info->perf_freq);
    perch_mutex_unlock(q->lock);
    return 0;
}

#define LOCKED(name, type, fn)                                                                     \
    static int name(void *ctx, const type *rec)                                                    \
    {                                                                                              \
        perch_live_query *q = ctx;                                                                 \
        perch_mutex_lock(q->lock);                                                                 \
        int err = fn(q, rec);                                                                      \
        perch_mutex_unlock(q->lock);                                                               \
        return err;                                                                                \
    }
LOCKED(on_process, perch_process_rec, perch__q_process)
LOCKED(on_thread, perch_thread_rec, perch__q_thread)
LOCKED(on_module, perch_module_rec, perch__q_module)
LOCKED(on_stack, perch_stack_rec, perch__q_stack)

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    perch_live_query *q = ctx;
    qstaged *e = stage_slot(q);
    e->is_slice = false;
    e->u.sample = (qsample){r->thread_key, r->ts,    r->ip,  r->module_key,     r->tid,
                            r->stack_id,   r->count, r->cpu, r->profile_source, r->kind,
                            r->flags};
    stage_commit(q);
    return 0;
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    perch_live_query *q = ctx;
    qstaged *e = stage_slot(q);
    e->is_slice = true;
    e->u.slice = *r;
    stage_commit(q);
    return 0;
}

static int on_flush(void *ctx, const void *rec)
{
    (void)rec;
    perch_live_query_flush(ctx);
    return 0;
}

static int on_ledger(void *ctx, const perch_ledger_rec *rec)
{
    return on_flush(ctx, rec);
}

static int on_finish(void *ctx)
{
    return on_flush(ctx, NULL);
}

void perch_live_query_sink(perch_live_query *q, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = q;
    sink->trace_info = on_info;
    sink->process = on_process;
    sink->thread = on_thread;
    sink->module = on_module;
    sink->stack = on_stack;
    sink->slice = on_slice;
    sink->sample = on_sample;
    sink->ledger = on_ledger;
    sink->finish = on_finish;
}

void perch_live_query_get_stats(perch_live_query *q, perch_live_query_stats *st)
{
    memset(st, 0, sizeof *st);
    perch_mutex_lock(q->lock);
    perch__q_drain(q);
    st->bytes = q->bytes + q->entity_bytes;
    st->perf_freq = q->have_info ? q->info.perf_freq : 0;
    st->newest_ts = q->newest_ts;
    if (q->any) {
        uint64_t from = perch__q_oldest_index(q) * q->bucket_ticks;
        from = from > q->held_from_ts ? from : q->held_from_ts;
        st->span_ticks = q->newest_ts > from ? q->newest_ts - from : 0;
    }
    st->samples = q->held_samples;
    st->slices = q->held_slices;
    st->dropped_records = q->dropped_records;
    st->dropped_late = q->dropped_late;
    st->dropped_entities = q->dropped_entities;
    st->entities = q->procs.count + q->threads.count + q->mods.count;
    st->stacks = q->stacks.count;
    st->published = q->published;
    perch_mutex_unlock(q->lock);
}
