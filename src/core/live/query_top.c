/*
 * Top queries of the live query state: the window a request names, adding up the buckets
 * it covers (their totals when a bucket is wholly inside, their records when an end of the
 * window cuts it), folding threads into processes, sorting, and playing the entities the
 * rows name into a sink. The lock is taken one bucket at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "live/query_internal.h"
#include "perch/error.h"
#include "util/mem.h"
#include "util/ticks.h"

#define DEFAULT_ROWS 10u

int perch__q_window(perch_live_query *q, const perch_proto_window *w, bool snap,
                    perch_live_span *span)
{
    uint64_t freq = perch__clock_hz(q->have_info ? q->info.perf_freq : 0);
    uint64_t from, to;
    memset(span, 0, sizeof *span);
    span->perf_freq = freq;
    if (w->last_ms != 0) {
        uint64_t len = w->last_ms > UINT64_MAX / freq ? UINT64_MAX : w->last_ms * freq / 1000;
        to = q->newest_ts + 1;
        from = to > len ? to - len : 0;
        if (snap)
            from -= from % q->bucket_ticks;
    } else {
        from = w->from_ts;
        to = w->to_ts ? w->to_ts : q->newest_ts + 1;
        if (from >= to)
            return PERCH_EINVAL;
    }
    span->from_ts = from;
    span->to_ts = to;
    span->complete = from >= q->held_from_ts;
    return 0;
}

int perch__q_emit_info(const perch_live_query *q, const perch_sink *sink)
{
    perch_trace_info empty;
    memset(&empty, 0, sizeof empty);
    empty.source = "live";
    return sink->trace_info ? sink->trace_info(sink->ctx, q->have_info ? &q->info : &empty) : 0;
}

/* A top query in progress. */
typedef struct topq {
    const perch_proto_top_req *req;
    uint64_t from, to; /* to: UINT64_MAX for an open "last" window */
    qagg res;
    size_t bytes;
    uint64_t samples, cpu, idle;
    int err;
} topq;

static bool pid_matches(const perch_live_query *q, uint64_t thread_key, uint32_t pid)
{
    const perch_thread_rec *t = perch__q_thread_rec(q, thread_key);
    return t != NULL && t->pid == pid;
}

static void add(topq *t, uint64_t key, uint64_t a, uint64_t b, bool first)
{
    if (t->err == 0)
        t->err = perch__qagg_add(&t->res, key, a, b, first, &t->bytes);
}

static void merge_totals(topq *t, const qagg *a, bool stacks)
{
    for (uint32_t j = 0; j < a->count; j++)
        add(t, a->keys[j], a->a[j], a->b[j], stacks);
}

static void scan_time(topq *t, uint64_t key, uint32_t tid, uint64_t lo, uint64_t hi)
{
    lo = lo > t->from ? lo : t->from;
    hi = hi < t->to ? hi : t->to;
    if (hi <= lo)
        return;
    if (tid == 0) {
        t->idle += hi - lo;
        return;
    }
    t->cpu += hi - lo;
    if (t->req->what != PERCH_TOP_STACKS)
        add(t, key, 0, hi - lo, false);
}

static void scan_bucket(perch_live_query *q, topq *t, const qbucket *b)
{
    bool stacks = t->req->what == PERCH_TOP_STACKS;
    uint64_t lo = b->index * q->bucket_ticks;
    for (uint32_t i = 0; i < b->nsamples; i++) {
        const qsample *s = &b->samples[i];
        if (s->ts < t->from || s->ts >= t->to || s->kind != PERCH_SAMPLE_TIMER)
            continue;
        t->samples++;
        if (!stacks)
            add(t, s->thread_key, 1, 0, false);
        else if (s->stack_id != 0 &&
                 (!t->req->has_pid || pid_matches(q, s->thread_key, t->req->pid)))
            add(t, s->stack_id, 1, s->thread_key, true);
    }
    for (uint32_t i = 0; i < b->nslices; i++) {
        const qslice *s = &b->slices[i];
        scan_time(t, s->thread_key, s->tid, s->start_ts > lo ? s->start_ts : lo, s->end_ts);
    }
    for (uint32_t i = 0; i < b->npieces; i++)
        scan_time(t, b->pieces[i].thread_key, b->pieces[i].tid, b->pieces[i].lo, b->pieces[i].hi);
}

static void add_totals(topq *t, const qtotals *x)
{
    bool stacks = t->req->what == PERCH_TOP_STACKS;
    merge_totals(t, stacks ? &x->stacks : &x->threads, stacks);
    t->samples += x->samples;
    t->cpu += x->cpu_ticks;
    t->idle += x->idle_ticks;
}

/* Adds bucket k, or the whole group starting at k when it lies inside the window; returns
 * how many buckets it covered. */
static uint64_t add_span(perch_live_query *q, topq *t, uint64_t k)
{
    uint64_t lo = k * q->bucket_ticks, hi = lo + q->bucket_ticks;
    bool totals_ok = !(t->req->what == PERCH_TOP_STACKS && t->req->has_pid);
    const qgroup *g = k % QGROUP == 0 ? perch__q_group(q, k) : NULL;
    if (g != NULL && totals_ok && t->from <= lo &&
        (t->to == UINT64_MAX || t->to >= lo + QGROUP * q->bucket_ticks)) {
        add_totals(t, &g->t);
        return QGROUP;
    }
    const qbucket *b = perch__q_bucket(q, k);
    if (b != NULL && totals_ok && t->from <= lo && t->to >= hi)
        add_totals(t, &b->t);
    else if (b != NULL)
        scan_bucket(q, t, b);
    return 1;
}

static int cmp_rows(const void *pa, const void *pb, uint8_t order)
{
    const perch_proto_top_row *a = pa, *b = pb;
    uint64_t a1 = order == PERCH_ORDER_CPU ? a->cpu_ticks : a->samples;
    uint64_t b1 = order == PERCH_ORDER_CPU ? b->cpu_ticks : b->samples;
    uint64_t a2 = order == PERCH_ORDER_CPU ? a->samples : a->cpu_ticks;
    uint64_t b2 = order == PERCH_ORDER_CPU ? b->samples : b->cpu_ticks;
    if (a1 != b1)
        return a1 > b1 ? -1 : 1;
    if (a2 != b2)
        return a2 > b2 ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int cmp_cpu(const void *a, const void *b)
{
    return cmp_rows(a, b, PERCH_ORDER_CPU);
}

static int cmp_samples(const void *a, const void *b)
{
    return cmp_rows(a, b, PERCH_ORDER_SAMPLES);
}

/* Thread rows folded by process (under the lock); a thread not known goes to key 0. */
static int fold_processes(perch_live_query *q, topq *t)
{
    qagg procs = {0};
    for (uint32_t j = 0; j < t->res.count && t->err == 0; j++) {
        const perch_thread_rec *th = perch__q_thread_rec(q, t->res.keys[j]);
        uint64_t pk = th ? th->process_key : 0;
        t->err = perch__qagg_add(&procs, pk, t->res.a[j], t->res.b[j], false, &t->bytes);
    }
    perch__qagg_free(&t->res);
    t->res = procs;
    return t->err;
}

/* The rows of the result (under the lock: thread and process lookups). */
static perch_proto_top_row *make_rows(perch_live_query *q, topq *t, uint32_t *n)
{
    const perch_proto_top_req *r = t->req;
    perch_proto_top_row *rows = perch__alloc(sizeof *rows * (t->res.count + 1));
    *n = 0;
    if (rows == NULL)
        return NULL;
    for (uint32_t j = 0; j < t->res.count; j++) {
        perch_proto_top_row row = {t->res.keys[j], 0, t->res.a[j], t->res.b[j]};
        if (r->what == PERCH_TOP_STACKS) {
            row.owner = t->res.b[j];
            row.cpu_ticks = 0;
        } else if (r->what == PERCH_TOP_THREADS) {
            const perch_thread_rec *th = perch__q_thread_rec(q, row.key);
            row.owner = th ? th->process_key : 0;
            if (r->has_pid && (th == NULL || th->pid != r->pid))
                continue;
        } else if (r->has_pid) {
            const perch_process_rec *p = perch__q_process_rec(q, row.key);
            if (p == NULL || p->pid != r->pid)
                continue;
        }
        rows[(*n)++] = row;
    }
    qsort(rows, *n, sizeof *rows, r->order == PERCH_ORDER_CPU ? cmp_cpu : cmp_samples);
    return rows;
}

int perch_live_query_top(perch_live_query *q, const perch_proto_top_req *req, perch_live_top *out)
{
    topq t = {req, 0, 0, {0}, 0, 0, 0, 0, 0};
    perch_live_span span;
    uint64_t k0, k1;
    if (req->what > PERCH_TOP_STACKS || req->order > PERCH_ORDER_SAMPLES ||
        req->limit > PERCH_PROTO_MAX_TOP)
        return PERCH_EINVAL;
    perch_mutex_lock(q->lock);
    perch__q_drain(q);
    int err = perch__q_window(q, &req->window, true, &span);
    bool open = req->window.last_ms != 0, any = q->any;
    k0 = span.from_ts / q->bucket_ticks;
    k1 = (span.to_ts - 1) / q->bucket_ticks;
    k0 = k0 > perch__q_oldest_index(q) ? k0 : perch__q_oldest_index(q);
    k1 = k1 < q->newest_index ? k1 : q->newest_index;
    perch_mutex_unlock(q->lock);
    if (err < 0)
        return err;
    t.from = span.from_ts;
    t.to = open ? UINT64_MAX : span.to_ts;
    for (uint64_t k = k0; any && k <= k1 && t.err == 0;) {
        perch_mutex_lock(q->lock);
        k += add_span(q, &t, k);
        perch_mutex_unlock(q->lock);
    }
    uint32_t n = 0;
    perch_proto_top_row *rows = NULL;
    perch_mutex_lock(q->lock);
    if (t.err == 0 && req->what == PERCH_TOP_PROCESSES)
        fold_processes(q, &t);
    if (t.err == 0 && (rows = make_rows(q, &t, &n)) == NULL)
        t.err = PERCH_ENOMEM;
    if (open)
        span.to_ts = q->newest_ts + 1;
    span.complete = span.complete && span.from_ts >= q->held_from_ts;
    perch_mutex_unlock(q->lock);
    perch__qagg_free(&t.res);
    if (t.err < 0) {
        perch__free(rows);
        return t.err;
    }
    uint32_t limit = req->limit ? req->limit : DEFAULT_ROWS;
    out->span = span;
    out->samples = t.samples;
    out->cpu_ticks = t.cpu;
    out->idle_ticks = t.idle;
    out->row_count = n < limit ? n : limit;
    out->rows = rows;
    return 0;
}

/* ---- entities of the rows --------------------------------------------------------------- */

/* Plays process key pk once (seen guards repeats). */
static int emit_process(const perch_live_query *q, uint64_t pk, perch__hmap *seen,
                        const perch_sink *sink)
{
    uint32_t v;
    const perch_process_rec *p = perch__q_process_rec(q, pk);
    if (p == NULL || perch__hmap_get(seen, pk, &v))
        return 0;
    int err = perch__hmap_put(seen, pk, 1);
    return err < 0 ? err : sink->process ? sink->process(sink->ctx, p) : 0;
}

/* Plays the threads of keys[] (stride apart) and, first, their processes. */
static int emit_threads(const perch_live_query *q, const perch_proto_top_row *rows, uint32_t n,
                        bool owner, perch__hmap *seen, const perch_sink *sink)
{
    int err = 0;
    for (uint32_t pass = 0; pass < 2 && err == 0; pass++) {
        for (uint32_t i = 0; i < n && err == 0; i++) {
            const perch_thread_rec *th =
                perch__q_thread_rec(q, owner ? rows[i].owner : rows[i].key);
            if (th == NULL)
                continue;
            if (pass == 0)
                err = emit_process(q, th->process_key, seen, sink);
            else if (sink->thread)
                err = sink->thread(sink->ctx, th);
        }
    }
    return err;
}

static int emit_stacks(const perch_live_query *q, perch_live_top *top, const perch_sink *sink)
{
    int err = 0;
    for (uint32_t i = 0; i < top->row_count && err == 0; i++) {
        const qstack *s = perch__q_stack_row(q, top->rows[i].key);
        perch_stack_rec rec = {i + 1, 0, 0, NULL};
        if (s != NULL) {
            rec.frame_count = s->count;
            rec.kernel_frames = s->kernel;
            rec.frames = s->frames;
        }
        top->rows[i].key = i + 1;
        if (sink->stack)
            err = sink->stack(sink->ctx, &rec);
    }
    return err;
}

static int emit_rows(perch_live_query *q, unsigned what, perch_live_top *top, perch__hmap *seen,
                     const perch_sink *sink)
{
    int err = 0;
    if (what == PERCH_TOP_PROCESSES) {
        for (uint32_t i = 0; i < top->row_count && err == 0; i++)
            err = emit_process(q, top->rows[i].key, seen, sink);
        return err;
    }
    if (what == PERCH_TOP_THREADS)
        return emit_threads(q, top->rows, top->row_count, false, seen, sink);
    err = emit_threads(q, top->rows, top->row_count, true, seen, sink);
    err = err < 0 ? err : perch__q_emit_modules(q, 0, sink);
    for (uint32_t i = 0; i < seen->cap && err == 0; i++)
        if (seen->vals[i] != UINT32_MAX)
            err = perch__q_emit_modules(q, seen->keys[i], sink);
    return err < 0 ? err : emit_stacks(q, top, sink);
}

int perch_live_query_top_entities(perch_live_query *q, unsigned what, perch_live_top *top,
                                  const perch_sink *sink)
{
    perch__hmap seen = {0};
    perch_mutex_lock(q->lock);
    int err = perch__q_emit_info(q, sink);
    if (err == 0)
        err = emit_rows(q, what, top, &seen, sink);
    perch_mutex_unlock(q->lock);
    perch__hmap_free(&seen);
    if (err == 0 && sink->finish)
        err = sink->finish(sink->ctx);
    return err;
}
