/*
 * Helpers for the live query and protocol tests: a sink that keeps a copy of every record it
 * receives (to check what a query or a replayed capture produced), and a window filter sink
 * that forwards a record stream restricted to [from, to) the way the live window counts it
 * (samples by timestamp, slices clipped to the window), so a report over the filtered stream
 * is "perch report over the same window". Header-only: static helpers.
 */
#ifndef PERCH_TEST_LIVE_FIXTURE_H
#define PERCH_TEST_LIVE_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perch/records.h"

typedef struct kept {
    perch_trace_info info;
    perch_process_rec *procs;
    perch_thread_rec *threads;
    perch_module_rec *mods;
    perch_stack_rec *stacks;
    perch_slice_rec *slices;
    perch_sample_rec *samples;
    size_t nprocs, nthreads, nmods, nstacks, nslices, nsamples;
    int order_errors; /* a sample before its stack, a record before trace_info */
    int finished;
    int got_info;
} kept;

#define KEEP_PUSH(arr, n, rec)                                                                     \
    do {                                                                                           \
        (arr) = realloc((arr), sizeof *(arr) * ((n) + 1));                                         \
        (arr)[(n)++] = *(rec);                                                                     \
    } while (0)

static inline char *kept_dup(const char *s)
{
    char *c = s ? malloc(strlen(s) + 1) : NULL;
    if (c)
        memcpy(c, s, strlen(s) + 1);
    return c;
}

static int kept_info(void *ctx, const perch_trace_info *r)
{
    kept *k = ctx;
    k->info = *r;
    k->info.source = kept_dup(r->source);
    k->info.session_config = NULL;
    k->got_info++;
    return 0;
}

static int kept_process(void *ctx, const perch_process_rec *r)
{
    kept *k = ctx;
    k->order_errors += !k->got_info;
    KEEP_PUSH(k->procs, k->nprocs, r);
    k->procs[k->nprocs - 1].image_name = kept_dup(r->image_name);
    k->procs[k->nprocs - 1].command_line = kept_dup(r->command_line);
    return 0;
}

static int kept_thread(void *ctx, const perch_thread_rec *r)
{
    kept *k = ctx;
    KEEP_PUSH(k->threads, k->nthreads, r);
    k->threads[k->nthreads - 1].name = kept_dup(r->name);
    return 0;
}

static int kept_module(void *ctx, const perch_module_rec *r)
{
    kept *k = ctx;
    KEEP_PUSH(k->mods, k->nmods, r);
    k->mods[k->nmods - 1].path = kept_dup(r->path);
    k->mods[k->nmods - 1].pdb_name = kept_dup(r->pdb_name);
    return 0;
}

static int kept_stack(void *ctx, const perch_stack_rec *r)
{
    kept *k = ctx;
    KEEP_PUSH(k->stacks, k->nstacks, r);
    uint64_t *f = malloc(sizeof *f * (r->frame_count + 1));
    if (r->frame_count)
        memcpy(f, r->frames, sizeof *f * r->frame_count);
    k->stacks[k->nstacks - 1].frames = f;
    return 0;
}

static int kept_slice(void *ctx, const perch_slice_rec *r)
{
    kept *k = ctx;
    KEEP_PUSH(k->slices, k->nslices, r);
    return 0;
}

static int kept_sample(void *ctx, const perch_sample_rec *r)
{
    kept *k = ctx;
    bool found = r->stack_id == 0;
    for (size_t i = 0; i < k->nstacks && !found; i++)
        found = k->stacks[i].id == r->stack_id;
    k->order_errors += !found;
    KEEP_PUSH(k->samples, k->nsamples, r);
    return 0;
}

static int kept_finish(void *ctx)
{
    ((kept *)ctx)->finished++;
    return 0;
}

static inline void kept_sink(kept *k, perch_sink *s)
{
    memset(k, 0, sizeof *k);
    memset(s, 0, sizeof *s);
    s->ctx = k;
    s->trace_info = kept_info;
    s->process = kept_process;
    s->thread = kept_thread;
    s->module = kept_module;
    s->stack = kept_stack;
    s->slice = kept_slice;
    s->sample = kept_sample;
    s->finish = kept_finish;
}

static inline void kept_free(kept *k)
{
    free((char *)k->info.source);
    for (size_t i = 0; i < k->nprocs; i++) {
        free((char *)k->procs[i].image_name);
        free((char *)k->procs[i].command_line);
    }
    for (size_t i = 0; i < k->nthreads; i++)
        free((char *)k->threads[i].name);
    for (size_t i = 0; i < k->nmods; i++) {
        free((char *)k->mods[i].path);
        free((char *)k->mods[i].pdb_name);
    }
    for (size_t i = 0; i < k->nstacks; i++)
        free((uint64_t *)k->stacks[i].frames);
    free(k->procs);
    free(k->threads);
    free(k->mods);
    free(k->stacks);
    free(k->slices);
    free(k->samples);
    memset(k, 0, sizeof *k);
}

/* ---- the window filter ------------------------------------------------------------------ */

typedef struct window_filter {
    const perch_sink *next;
    uint64_t from, to;
} window_filter;

#define WF_FORWARD(name, type, cb)                                                                 \
    static int name(void *ctx, const type *r)                                                      \
    {                                                                                              \
        window_filter *w = ctx;                                                                    \
        return w->next->cb ? w->next->cb(w->next->ctx, r) : 0;                                     \
    }
WF_FORWARD(wf_info, perch_trace_info, trace_info)
WF_FORWARD(wf_process, perch_process_rec, process)
WF_FORWARD(wf_thread, perch_thread_rec, thread)
WF_FORWARD(wf_module, perch_module_rec, module)
WF_FORWARD(wf_counters, perch_counters_rec, counters)
WF_FORWARD(wf_stack, perch_stack_rec, stack)
WF_FORWARD(wf_ledger, perch_ledger_rec, ledger)
WF_FORWARD(wf_stat, perch_stat_rec, stat)

static int wf_sample(void *ctx, const perch_sample_rec *r)
{
    window_filter *w = ctx;
    if (r->ts < w->from || r->ts >= w->to)
        return 0;
    return w->next->sample ? w->next->sample(w->next->ctx, r) : 0;
}

static int wf_slice(void *ctx, const perch_slice_rec *r)
{
    window_filter *w = ctx;
    perch_slice_rec c = *r;
    c.start_ts = r->start_ts > w->from ? r->start_ts : w->from;
    c.end_ts = r->end_ts < w->to ? r->end_ts : w->to;
    if (c.end_ts <= c.start_ts)
        return 0;
    c.flags &= (uint16_t)~PERCH_SLICE_HAS_READY;
    return w->next->slice ? w->next->slice(w->next->ctx, &c) : 0;
}

static int wf_finish(void *ctx)
{
    window_filter *w = ctx;
    return w->next->finish ? w->next->finish(w->next->ctx) : 0;
}

static inline void window_filter_sink(window_filter *w, const perch_sink *next, uint64_t from,
                                      uint64_t to, perch_sink *s)
{
    const perch_sink t = {w,         wf_info,  wf_process, wf_thread, wf_module, wf_counters,
                          wf_stack,  wf_slice, wf_sample,  NULL,      wf_ledger, wf_stat,
                          wf_finish, NULL,     false,      false};
    w->next = next;
    w->from = from;
    w->to = to;
    *s = t;
}

/* A sink that forwards every record to two sinks (either may have NULL callbacks). */
typedef struct tee {
    const perch_sink *a, *b;
} tee;

#define TEE(name, type, cb)                                                                        \
    static int name(void *ctx, const type *r)                                                      \
    {                                                                                              \
        tee *t = ctx;                                                                              \
        int e = t->a->cb ? t->a->cb(t->a->ctx, r) : 0;                                             \
        return e ? e : t->b->cb ? t->b->cb(t->b->ctx, r) : 0;                                      \
    }
TEE(tee_info, perch_trace_info, trace_info)
TEE(tee_process, perch_process_rec, process)
TEE(tee_thread, perch_thread_rec, thread)
TEE(tee_module, perch_module_rec, module)
TEE(tee_counters, perch_counters_rec, counters)
TEE(tee_stack, perch_stack_rec, stack)
TEE(tee_slice, perch_slice_rec, slice)
TEE(tee_sample, perch_sample_rec, sample)
TEE(tee_lbr, perch_lbr_rec, lbr)
TEE(tee_ledger, perch_ledger_rec, ledger)
TEE(tee_stat, perch_stat_rec, stat)

static int tee_finish(void *ctx)
{
    tee *t = ctx;
    int e = t->a->finish ? t->a->finish(t->a->ctx) : 0;
    return e ? e : t->b->finish ? t->b->finish(t->b->ctx) : 0;
}

static inline void tee_sink(tee *t, const perch_sink *a, const perch_sink *b, perch_sink *s)
{
    const perch_sink table = {t,          tee_info,     tee_process, tee_thread,
                              tee_module, tee_counters, tee_stack,   tee_slice,
                              tee_sample, tee_lbr,      tee_ledger,  tee_stat,
                              tee_finish, NULL,         false,       false};
    t->a = a;
    t->b = b;
    *s = table;
}

#endif
