/*
 * The common base of the one-pass formats (gecko, pprof, speedscope, folded): a sink that
 * keeps the entities, the interned stacks and the sample log by group (groups.c), and at
 * finish seals the module map and calls the format's writer, which visits the groups.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

uint64_t perch__interval_ns(const perch_export_options *opt)
{
    return opt->sample_interval_ns ? opt->sample_interval_ns : 1000000u;
}

double perch__ts_ns(const perch_trace_info *info, uint64_t ts)
{
    double d =
        ts >= info->start_raw ? (double)(ts - info->start_raw) : -(double)(info->start_raw - ts);
    return d * 1e9 / (double)info->perf_freq;
}

void perch__collect_init(perch__collect *c, const perch_export_options *opt, perch_output *out)
{
    memset(c, 0, sizeof *c);
    c->opt = *opt;
    c->budget.limit = opt->memory_limit ? opt->memory_limit : (uint64_t)1 << 30;
    c->out = out;
    perch__entities_init(&c->ents, &c->budget);
    perch__vlogs_init(&c->samples.log, perch__log_memory(opt), perch__scratch_opener(opt),
                      opt->scratch_open ? opt->scratch_ctx : NULL);
}

size_t perch__log_memory(const perch_export_options *opt)
{
    return opt->log_memory && opt->log_memory < SIZE_MAX ? (size_t)opt->log_memory
                                                         : (size_t)8 << 20;
}

perch_scratch_open_fn perch__scratch_opener(const perch_export_options *opt)
{
    return opt->scratch_open ? opt->scratch_open : perch_scratch_open_temp;
}

void perch__collect_free(perch__collect *c)
{
    perch__entities_free(&c->ents);
    perch__stacks_free(&c->stacks, &c->budget);
    perch__agg_free(&c->agg, &c->budget);
    perch__samplelog_free(&c->samples, &c->budget);
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    perch__collect *c = ctx;
    return perch__stacks_add(&c->stacks, &c->budget, rec);
}

static int on_sample(void *ctx, const perch_sample_rec *rec)
{
    return perch__samplelog_add(ctx, rec);
}

static int on_finish(void *ctx)
{
    perch__collect *c = ctx;
    int err = perch__entities_seal(&c->ents);
    return err ? err : c->write(c);
}

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch__collect *c = ctx;
    return perch__entities_info(&c->ents, info);
}

static int on_process(void *ctx, const perch_process_rec *rec)
{
    perch__collect *c = ctx;
    return perch__entities_process(&c->ents, rec);
}

static int on_thread(void *ctx, const perch_thread_rec *rec)
{
    perch__collect *c = ctx;
    return perch__entities_thread(&c->ents, rec);
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    perch__collect *c = ctx;
    return perch__entities_module(&c->ents, rec);
}

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    perch__collect *c = ctx;
    return perch__entities_symbol(&c->ents, rec);
}

void perch__collect_bind(perch__collect *c, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = c;
    sink->trace_info = on_info;
    sink->process = on_process;
    sink->thread = on_thread;
    sink->module = on_module;
    sink->stack = on_stack;
    sink->sample = on_sample;
    sink->finish = on_finish;
    sink->symbol = on_symbol;
}

int perch__collect_create(const perch_export_options *opt, perch_output *out, void **state,
                          int (*write)(perch__collect *c))
{
    perch__collect *c = perch__alloc(sizeof *c);
    if (!c)
        return PERCH_ENOMEM;
    perch__collect_init(c, opt, out);
    c->write = write;
    *state = c;
    return 0;
}

void perch__collect_destroy(void *state)
{
    if (!state)
        return;
    perch__collect_free(state);
    perch__free(state);
}

void perch__collect_bind_pass(void *state, unsigned pass, perch_sink *sink)
{
    (void)pass;
    perch__collect_bind(state, sink);
}

size_t perch__thread_short_name(const perch__entities *e, const perch__thread *t, uint32_t tid,
                                char *buf, size_t cap)
{
    const char *name = t ? perch__str(&e->strings, t->name) : "";
    if (t)
        tid = t->tid;
    if (tid == 0)
        return perch__snlen(t && t->cpu >= 0 ? snprintf(buf, cap, "Idle (CPU %" PRId32 ")", t->cpu)
                                             : snprintf(buf, cap, "Idle"),
                            cap);
    if (tid == UINT32_MAX) /* no thread entity and no tid: the model's "unknown" thread */
        return perch__snlen(snprintf(buf, cap, "thread ?"), cap);
    if (*name)
        return perch__snlen(snprintf(buf, cap, "%.100s (%" PRIu32 ")", name, tid), cap);
    return perch__snlen(snprintf(buf, cap, "thread %" PRIu32, tid), cap);
}

size_t perch__thread_label(const perch__entities *e, const perch__thread *t, uint32_t tid,
                           char *buf, size_t cap)
{
    const char *proc = t ? perch__thread_process_name(e, t) : "";
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    char pidtxt[16] = "?";
    size_t n;
    if ((t ? t->tid : tid) == 0) /* the idle "process" is the CPUs themselves */
        return perch__thread_short_name(e, t, tid, buf, cap);
    if (pid != UINT32_MAX)
        snprintf(pidtxt, sizeof pidtxt, "%" PRIu32, pid);
    n = perch__snlen(snprintf(buf, cap, "%.100s (%s) ", *proc ? proc : "?", pidtxt), cap);
    return n + perch__thread_short_name(e, t, tid, buf + n, cap - n);
}

/* m ticks as microseconds (3 decimals) or milliseconds (ms: 6), exactly for any 64-bit m:
 * whole seconds and the nanoseconds of the rest, as perch__ticks_to_ns splits them, so the
 * text is that of its nanoseconds while they fit in 64 bits (about 584 years), and the
 * seconds' digits followed by the rest's past that instead of a wrapped value. */
static size_t fmt_ticks(char *out, uint64_t m, uint64_t freq, bool ms)
{
    const uint64_t giga = 1000000000u;
    uint64_t f = perch__clock_hz(freq), unit = ms ? 1000000u : 1000u, per_sec = giga / unit;
    size_t n = 0, digits = ms ? 6 : 3;
    if (f == 10000000u && m <= UINT64_MAX / 100u) { /* the usual clock: ns = m * 100 */
        n = perch__put_uint(out, m * 100u / unit);
        out[n++] = '.';
        perch__put_digits(out + n, m * 100u % unit, digits);
        return n + digits;
    }
    uint64_t secs = m / f, frac = perch__ticks_to_ns(m % f, f); /* frac < 10^9 */
    if (secs <= (UINT64_MAX - per_sec) / per_sec) {
        n += perch__put_uint(out, secs * per_sec + frac / unit);
    } else {
        n += perch__put_uint(out, secs);
        perch__put_digits(out + n, frac / unit, ms ? 3 : 6); /* the units within a second */
        n += ms ? 3 : 6;
    }
    out[n++] = '.';
    perch__put_digits(out + n, frac % unit, digits); /* the fraction, zero-padded */
    return n + digits;
}

size_t perch__fmt_time(char *out, int64_t ticks, uint64_t freq, bool ms)
{
    size_t n = 0;
    if (ticks < 0)
        out[n++] = '-';
    return n + fmt_ticks(out + n, ticks < 0 ? (uint64_t)0 - (uint64_t)ticks : (uint64_t)ticks, freq,
                         ms);
}

size_t perch__fmt_time_since(char *out, uint64_t t, uint64_t from, uint64_t freq, bool ms)
{
    size_t n = 0;
    if (t < from)
        out[n++] = '-';
    return n + fmt_ticks(out + n, t < from ? from - t : t - from, freq, ms);
}

size_t perch__trim_fraction(const char *text, size_t len)
{
    if (!memchr(text, '.', len))
        return len;
    while (text[len - 1] == '0')
        len--;
    return text[len - 1] == '.' ? len - 1 : len;
}

size_t perch__fmt_us_since(char *out, uint64_t t, uint64_t from, uint64_t freq)
{
    if (perch__clock_hz(freq) == 10000000u && t >= from) { /* a tick is 0.1 us */
        uint64_t d = t - from;
        size_t n = perch__put_uint(out, d / 10u);
        out[n] = '.';
        out[n + 1] = (char)('0' + d % 10u);
        return d % 10u ? n + 2 : n;
    }
    return perch__trim_fraction(out, perch__fmt_time_since(out, t, from, freq, false));
}

int perch__counter_names(perch__collect *c, const perch_counters_rec *rec, uint32_t *names,
                         uint32_t *count)
{
    *count = 0;
    for (uint32_t i = 0; i < rec->count && i < PERCH_MAX_PMC; i++) {
        const char *n = rec->names && rec->names[i] ? rec->names[i] : "";
        int err = perch__strings_add(&c->ents.strings, &c->budget, n, strlen(n), &names[i]);
        if (err)
            return err;
        *count = i + 1;
    }
    return 0;
}
