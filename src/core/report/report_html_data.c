/*
 * What the HTML report draws beyond `perch report --json`: a second consumer of the same record
 * stream, fed by a tee in front of the report's own callbacks (perch_report_sink when the
 * report has perch_report_enable_html). It keeps the exporters' entity store, interned stacks and
 * (thread, stack) sample aggregate (src/core/export: the same resolution and frame naming as
 * every export) and, per thread, timer samples in time buckets for the CPU-over-time chart.
 * Buckets are at most HTML_BUCKETS per thread; when a sample falls past the last one, every
 * bucket doubles in width (pairs merge), so memory stays threads x HTML_BUCKETS counts. The
 * first bucket starts at the trace's start, or, for a trace with no end time (a live capture),
 * at its first timer sample (an earlier sample coming later falls in the first bucket).
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "report/report_html.h"
#include "util/mem.h"
#include "util/ticks.h"

static int widen(perch__html *h)
{
    for (size_t s = 0; s < h->series; s++) {
        uint32_t *c = &h->counts[s * HTML_BUCKETS];
        for (size_t i = 0; i < HTML_BUCKETS / 2; i++)
            c[i] = c[2 * i] + c[2 * i + 1];
        memset(c + HTML_BUCKETS / 2, 0, HTML_BUCKETS / 2 * sizeof *c);
    }
    h->bucket_ticks *= 2;
    return 0;
}

/* The bucket series of a thread key, created on first use. */
static int series_of(perch__html *h, uint64_t key, uint32_t *s)
{
    size_t old = h->counts_cap;
    int err;
    if (perch__map_get(&h->series_map, key, s))
        return 0;
    err = perch__grow(&h->c.budget, (void **)&h->counts, &h->counts_cap,
                      (h->series + 1) * HTML_BUCKETS, sizeof *h->counts);
    if (!err)
        err = perch__grow(&h->c.budget, (void **)&h->series_key, &h->series_key_cap, h->series + 1,
                          sizeof *h->series_key);
    if (!err)
        err = perch__map_put(&h->series_map, &h->c.budget, key, (uint32_t)h->series);
    if (err)
        return err;
    if (h->counts_cap > old)
        memset(h->counts + old, 0, (h->counts_cap - old) * sizeof *h->counts);
    h->series_key[h->series] = key;
    *s = (uint32_t)h->series++;
    return 0;
}

static int timeline_add(perch__html *h, const perch_sample_rec *r)
{
    uint64_t b;
    uint32_t s;
    int err;
    if (r->kind != PERCH_SAMPLE_TIMER || r->thread_key == 0)
        return 0;
    if (!h->origin_set) {
        h->origin = r->ts;
        h->origin_set = true;
    }
    b = r->ts > h->origin ? (r->ts - h->origin) / h->bucket_ticks : 0;
    while (b >= HTML_BUCKETS) {
        widen(h);
        b /= 2;
    }
    err = series_of(h, r->thread_key, &s);
    if (!err)
        h->counts[(size_t)s * HTML_BUCKETS + b] += r->count ? r->count : 1;
    if (!err && b + 1 > h->used)
        h->used = (uint32_t)b + 1;
    return err;
}

/* ---- the tee: each record goes to the report, then to the collector ------------------- */

static int tee_info(void *ctx, const perch_trace_info *info)
{
    perch__html *h = ctx;
    int err = h->inner.trace_info(h->inner.ctx, info);
    uint64_t dur = info->end_filetime > info->start_filetime
                       ? info->end_filetime - info->start_filetime
                       : 0; /* 100 ns units */
    uint64_t freq = perch__clock_hz(info->perf_freq);
    if (!err)
        err = perch__entities_info(&h->c.ents, info);
    /* The chart starts at the trace's start when the trace says where it ends (an .etl, an
     * import); else at the first timer sample: a live capture's trace info is its session's,
     * which may have started hours before this file or snapshot. */
    h->origin = info->start_raw;
    h->origin_set = info->end_filetime != 0;
    /* buckets that fit the trace's announced length (10 ms when unknown); they widen when a
     * sample comes later */
    if (dur && dur < UINT64_MAX / freq)
        h->bucket_ticks = dur * freq / (10000000u * (uint64_t)HTML_BUCKETS) + 1;
    else
        h->bucket_ticks = freq / 100 + 1;
    return err;
}

static int tee_process(void *ctx, const perch_process_rec *rec)
{
    perch__html *h = ctx;
    int err = h->inner.process(h->inner.ctx, rec);
    return err ? err : perch__entities_process(&h->c.ents, rec);
}

static int tee_thread(void *ctx, const perch_thread_rec *rec)
{
    perch__html *h = ctx;
    int err = h->inner.thread(h->inner.ctx, rec);
    return err ? err : perch__entities_thread(&h->c.ents, rec);
}

static int tee_module(void *ctx, const perch_module_rec *rec)
{
    perch__html *h = ctx;
    int err = h->inner.module(h->inner.ctx, rec);
    return err ? err : perch__entities_module(&h->c.ents, rec);
}

static int tee_symbol(void *ctx, const perch_symbol_rec *rec)
{
    perch__html *h = ctx;
    int err = h->inner.symbol ? h->inner.symbol(h->inner.ctx, rec) : 0;
    return err ? err : perch__entities_symbol(&h->c.ents, rec);
}

static int tee_stack(void *ctx, const perch_stack_rec *rec)
{
    perch__html *h = ctx;
    int err = h->inner.stack(h->inner.ctx, rec);
    return err ? err : perch__stacks_add(&h->c.stacks, &h->c.budget, rec);
}

static int tee_sample(void *ctx, const perch_sample_rec *rec)
{
    perch__html *h = ctx;
    uint32_t idx;
    int err = h->inner.sample(h->inner.ctx, rec);
    if (!err)
        err = perch__entities_touch_thread(&h->c.ents, rec->thread_key, rec->tid, rec->cpu, &idx);
    if (!err && rec->kind == PERCH_SAMPLE_TIMER)
        err = perch__agg_add(&h->c.agg, &h->c.budget, rec, NULL);
    return err ? err : timeline_add(h, rec);
}

static int tee_lbr(void *ctx, const perch_lbr_rec *rec)
{
    perch__html *h = ctx;
    return h->inner.lbr(h->inner.ctx, rec);
}

static int tee_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch__html *h = ctx;
    return h->inner.ledger(h->inner.ctx, rec);
}

static int tee_stat(void *ctx, const perch_stat_rec *rec)
{
    perch__html *h = ctx;
    return h->inner.stat(h->inner.ctx, rec);
}

static int tee_finish(void *ctx)
{
    perch__html *h = ctx;
    int err = h->inner.finish ? h->inner.finish(h->inner.ctx) : 0;
    if (!err)
        err = perch__entities_seal(&h->c.ents);
    if (!err)
        perch__agg_sort(&h->c.agg);
    return err;
}

static int tee_slice(void *ctx, const perch_slice_rec *rec)
{
    perch__html *h = ctx;
    uint32_t idx;
    int err = h->inner.slice(h->inner.ctx, rec);
    return err ? err
               : perch__entities_touch_thread(&h->c.ents, rec->thread_key, rec->tid, rec->cpu,
                                              &idx);
}

int perch__html_create(perch__html **out)
{
    perch_export_options opt;
    perch__html *h = perch__calloc(1, sizeof *h);
    if (!h)
        return PERCH_ENOMEM;
    perch_export_options_init(&opt);
    perch__collect_init(&h->c, &opt, NULL);
    h->bucket_ticks = 100000;
    *out = h;
    return 0;
}

void perch__html_wrap(perch__html *h, perch_sink *sink)
{
    h->inner = *sink;
    sink->ctx = h;
    sink->trace_info = tee_info;
    sink->process = tee_process;
    sink->thread = tee_thread;
    sink->module = tee_module;
    sink->stack = tee_stack;
    sink->sample = tee_sample;
    sink->slice = tee_slice;
    sink->lbr = tee_lbr;
    sink->ledger = tee_ledger;
    sink->stat = tee_stat;
    sink->finish = tee_finish;
    sink->symbol = tee_symbol;
}

void perch__html_destroy(perch__html *h)
{
    if (!h)
        return;
    perch__release(&h->c.budget, (void **)&h->counts, &h->counts_cap, sizeof *h->counts);
    perch__release(&h->c.budget, (void **)&h->series_key, &h->series_key_cap,
                   sizeof *h->series_key);
    perch__map_free(&h->series_map, &h->c.budget);
    perch__collect_free(&h->c);
    perch__free(h);
}
