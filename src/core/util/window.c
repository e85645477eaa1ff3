/*
 * The time-window filter of include/perch/window.h: timed records (samples, LBR records,
 * slices) are compared with the window in the trace's own clock, placed when the trace info
 * arrives; everything else is passed on as it comes.
 */
#include <string.h>

#include "perch/error.h"
#include "perch/window.h"
#include "util/ticks.h"

/* ns from the trace start, in raw ticks after start_raw (saturating). */
static uint64_t raw_of(const perch_trace_info *info, uint64_t ns)
{
    if (ns == PERCH_WINDOW_END)
        return UINT64_MAX;
    const uint64_t giga = 1000000000u;
    uint64_t f = perch__clock_hz(info->perf_freq), s = ns / giga, frac = ns % giga;
    if (s > UINT64_MAX / f)
        return UINT64_MAX;
    /* the fraction of a second: exact while frac * f fits (any real clock), else per GHz */
    uint64_t part = f <= UINT64_MAX / giga ? frac * f / giga : frac * (f / giga);
    uint64_t ticks = s * f;
    if (part > UINT64_MAX - ticks || ticks + part > UINT64_MAX - info->start_raw)
        return UINT64_MAX;
    ticks += part;
    return info->start_raw + ticks;
}

#define PASS(name, type, cb)                                                                       \
    static int name(void *ctx, const type *r)                                                      \
    {                                                                                              \
        const perch_window *w = ctx;                                                               \
        return w->next->cb ? w->next->cb(w->next->ctx, r) : 0;                                     \
    }
PASS(pass_process, perch_process_rec, process)
PASS(pass_thread, perch_thread_rec, thread)
PASS(pass_module, perch_module_rec, module)
PASS(pass_counters, perch_counters_rec, counters)
PASS(pass_stack, perch_stack_rec, stack)
PASS(pass_ledger, perch_ledger_rec, ledger)
PASS(pass_stat, perch_stat_rec, stat)
PASS(pass_symbol, perch_symbol_rec, symbol)

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_window *w = ctx;
    w->from_raw = raw_of(info, w->from_ns);
    w->to_raw = raw_of(info, w->to_ns);
    w->start_raw = info->start_raw;
    w->perf_freq = perch__clock_hz(info->perf_freq);
    w->placed = true;
    return w->next->trace_info ? w->next->trace_info(w->next->ctx, info) : 0;
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    perch_window *w = ctx;
    if (!w->placed)
        return PERCH_EFORMAT;
    if (w->samples_in + w->samples_out == 0 || r->ts < w->first_raw)
        w->first_raw = r->ts;
    if (r->ts > w->last_raw)
        w->last_raw = r->ts;
    if (r->ts < w->from_raw || r->ts >= w->to_raw) {
        w->samples_out++;
        return 0;
    }
    w->samples_in++;
    return w->next->sample ? w->next->sample(w->next->ctx, r) : 0;
}

static int on_lbr(void *ctx, const perch_lbr_rec *r)
{
    perch_window *w = ctx;
    if (!w->placed)
        return PERCH_EFORMAT;
    if (r->ts < w->from_raw || r->ts >= w->to_raw)
        return 0;
    return w->next->lbr ? w->next->lbr(w->next->ctx, r) : 0;
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    perch_window *w = ctx;
    if (!w->placed)
        return PERCH_EFORMAT;
    perch_slice_rec c = *r;
    if (c.start_ts < w->from_raw) {
        c.start_ts = w->from_raw;
        c.flags &= (uint16_t)~PERCH_SLICE_HAS_READY; /* it was readied before the window */
    }
    c.end_ts = c.end_ts < w->to_raw ? c.end_ts : w->to_raw;
    if (c.end_ts <= c.start_ts)
        return 0;
    return w->next->slice ? w->next->slice(w->next->ctx, &c) : 0;
}

static int on_finish(void *ctx)
{
    const perch_window *w = ctx;
    return w->next->finish ? w->next->finish(w->next->ctx) : 0;
}

void perch_window_sink(perch_window *w, const perch_sink *next, uint64_t from_ns, uint64_t to_ns,
                       perch_sink *out)
{
    memset(w, 0, sizeof *w);
    w->next = next;
    w->from_ns = from_ns;
    w->to_ns = to_ns;
    memset(out, 0, sizeof *out);
    out->ctx = w;
    out->trace_info = on_info;
    out->process = pass_process;
    out->thread = pass_thread;
    out->module = pass_module;
    out->counters = pass_counters;
    out->stack = pass_stack;
    out->slice = on_slice;
    out->sample = on_sample;
    out->lbr = on_lbr;
    out->ledger = pass_ledger;
    out->stat = pass_stat;
    out->finish = on_finish;
    out->symbol = pass_symbol;
}

/* raw ticks of the trace's clock as ns after its start (0 before it). */
static uint64_t ns_of(const perch_window *w, uint64_t raw)
{
    return perch__ticks_to_ns(raw > w->start_raw ? raw - w->start_raw : 0, w->perf_freq);
}

bool perch_window_sample_span(const perch_window *w, uint64_t *first_ns, uint64_t *last_ns)
{
    if (!w->placed || w->samples_in + w->samples_out == 0)
        return false;
    *first_ns = ns_of(w, w->first_raw);
    *last_ns = ns_of(w, w->last_raw);
    return true;
}
