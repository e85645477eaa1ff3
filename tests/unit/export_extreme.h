/*
 * A tiny record stream for the exporters' tests of extreme numbers (sample counts whose
 * weights pass 64 bits, times far from the trace start, clocks of absurd rates): one process,
 * one thread, one module, one stack, and the samples a test lists as (time, count) pairs, all
 * timer samples of that thread with that stack; and for the far-time tests one slice of that
 * thread 2^63 + 1 ticks after the start. Header-only, like export_fixture.h.
 */
#ifndef PERCH_TEST_EXPORT_EXTREME_H
#define PERCH_TEST_EXPORT_EXTREME_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/export.h"
#include "perch/io.h"
#include "perch/records.h"

#include "export_fixture.h"

#define XT_APP 0x140000000ull

struct xt_sample {
    uint64_t ts;
    uint32_t count;
};

/* The stream: the clock, and n samples (repeat times each, in order). */
struct xt_stream {
    uint64_t freq, start_raw;
    const struct xt_sample *samples;
    size_t n, repeat;
};

static inline int xt_head(const struct xt_stream *x, const perch_sink *k)
{
    static const uint64_t frames[] = {XT_APP + 0x100, XT_APP + 0x200};
    perch_stack_rec st = {1, 2, 0, frames};
    perch_trace_info info;
    int err = 0;
    memset(&info, 0, sizeof info);
    info.source = "extreme";
    info.cpu_count = 1;
    info.pointer_size = 8;
    info.clock_type = 1;
    info.perf_freq = x->freq;
    info.start_raw = x->start_raw;
    info.start_filetime = 133000000000000000ull;
    if (k->trace_info)
        err = k->trace_info(k->ctx, &info);
    if (!err && k->stack)
        err = k->stack(k->ctx, &st);
    return err;
}

static inline int xt_sample_out(const perch_sink *k, const struct xt_sample *s)
{
    perch_sample_rec r;
    memset(&r, 0, sizeof r);
    r.thread_key = 11;
    r.tid = 1001;
    r.kind = PERCH_SAMPLE_TIMER;
    r.ts = s->ts;
    r.ip = XT_APP + 0x100;
    r.module_key = 503;
    r.stack_id = 1;
    r.count = s->count;
    return k->sample ? k->sample(k->ctx, &r) : 0;
}

static inline int xt_tail(const perch_sink *k)
{
    perch_process_rec p;
    perch_thread_rec t;
    perch_module_rec m;
    int err = 0;
    memset(&p, 0, sizeof p);
    memset(&t, 0, sizeof t);
    memset(&m, 0, sizeof m);
    t.key = 11;
    t.process_key = 100;
    t.tid = 1001;
    t.pid = 1234;
    t.name = "main";
    m.key = 503;
    m.process_key = 100;
    m.pid = 1234;
    m.base = XT_APP;
    m.size = 0x10000;
    m.path = "C:\\app.exe";
    m.pdb_name = "";
    p.key = 100;
    p.pid = 1234;
    p.image_name = "app.exe";
    p.command_line = "";
    if (k->thread)
        err = k->thread(k->ctx, &t);
    if (!err && k->module)
        err = k->module(k->ctx, &m);
    if (!err && k->process)
        err = k->process(k->ctx, &p);
    if (!err && k->finish)
        err = k->finish(k->ctx);
    return err;
}

/* The perch_record_source.replay of a struct xt_stream. */
static inline int xt_replay(void *ctx, const perch_sink *k)
{
    const struct xt_stream *x = ctx;
    int err = xt_head(x, k);
    for (size_t i = 0; !err && i < x->n; i++)
        for (size_t r = 0; !err && r < (x->repeat ? x->repeat : 1); r++)
            err = xt_sample_out(k, &x->samples[i]);
    return err ? err : xt_tail(k);
}

/* The perch_record_source.replay of x's head, its samples (each once), one slice 2^63 + 1
 * ticks after the start and ready at the start, and x's tail. */
static inline int xt_far_slice_replay(void *ctx, const perch_sink *k)
{
    perch_slice_rec r;
    int err = xt_head(ctx, k);
    memset(&r, 0, sizeof r);
    r.thread_key = 11;
    r.tid = 1001;
    r.flags = PERCH_SLICE_HAS_READY;
    r.start_ts = ((uint64_t)1 << 63) + 1;
    r.end_ts = r.start_ts + 10000; /* 1 ms */
    r.ready_ts = 0;
    r.priority = 8;
    r.wait_reason = r.wait_mode = r.state = -1;
    for (size_t i = 0; !err && i < ((const struct xt_stream *)ctx)->n; i++)
        err = xt_sample_out(k, &((const struct xt_stream *)ctx)->samples[i]);
    if (!err && k->slice)
        err = k->slice(k->ctx, &r);
    return err ? err : xt_tail(k);
}

/* Exports x as fmt into memory: the NUL-terminated bytes (malloc'd, length in *len) with
 * *err 0, or NULL with *err the export's error. */
static inline char *xt_export(perch_export_format fmt, const perch_export_options *opt,
                              const struct xt_stream *x, size_t *len, int *err)
{
    perch_record_source src = {(void *)x, xt_replay, NULL};
    return fx_export_from(fmt, opt, &src, (size_t)16 << 20, len, err);
}

#endif
