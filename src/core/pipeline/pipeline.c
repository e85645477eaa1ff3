/*
 * The offline pipeline (include/perch/pipeline.h): opens the .etl reader over an input, builds
 * the trace info from the logfile header, feeds the model record by record (behind a reader
 * thread, feeder.c + consume.c, or on the calling thread alone), reports progress every
 * PERCH_PIPELINE_PROGRESS_RECORDS records, then adds the reader's losses to the ledger and
 * finishes the model. Both paths end in end_run, so they differ only in where reading runs.
 */
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/pipeline.h"

/* Ticks per second of the raw timestamps, by clock type, as perch_etl_filetime reads them:
 * the logfile's PerfFreq is the QPC rate even when the events carry another clock. */
static uint64_t raw_clock_rate(const perch_etl_header *h)
{
    switch (h->clock_type) {
    case 1:
        return h->perf_freq;
    case 3:
        return (uint64_t)h->cpu_speed_mhz * 1000000u;
    default:
        return 10000000u; /* system time: 100 ns units */
    }
}

void perch_pipeline_trace_info(const perch_etl_header *h, const char *source,
                               perch_trace_info *info)
{
    memset(info, 0, sizeof *info);
    info->source = source;
    info->os_build = h->build;
    info->cpu_count = h->cpus;
    info->pointer_size = h->pointer_size;
    info->clock_type = h->clock_type;
    info->perf_freq = raw_clock_rate(h);
    info->start_filetime = h->start_time;
    info->end_filetime = h->end_time;
    info->start_raw = h->ref_raw;
    info->events_lost = h->events_lost;
    info->buffers_lost = h->buffers_lost;
}

static int add_reader_losses(perch_model *m, const perch_etl_stats *st)
{
    int err = perch_model_ledger_add(m, "etl.skipped_records", st->skipped_records);
    for (int i = 0; i < PERCH_ETL_REASON_COUNT && err == 0; i++) {
        char reason[64];
        if (st->errors[i] == 0)
            continue;
        snprintf(reason, sizeof reason, "etl.%s", perch_etl_reason_name((perch_etl_reason)i));
        err = perch_model_ledger_add(m, reason, st->errors[i]);
    }
    return err;
}

/* The end of both paths, once the reader has stopped: its losses go into the ledger and the
 * model is finished, also after a reader error (what was read is kept and the ledger says the
 * reading stopped); the reader's error, if any, is what the pipeline returns. */
static int end_run(perch_model *m, const perch_etl_reader *r, const perch_pipeline_options *o,
                   uint64_t total, int read_err)
{
    int err;
    if (read_err == 0 && o != NULL && o->progress != NULL)
        o->progress(o->progress_ctx, total, total);
    err = add_reader_losses(m, perch_etl_stats_of(r));
    if (err == 0 && read_err < 0)
        err = perch_model_ledger_add(m, "etl.read_error", 1);
    err = err ? err : perch_model_finish(m);
    return read_err < 0 ? read_err : err;
}

static int run_one_thread(perch_etl_reader *r, perch_model *m, const perch_pipeline_options *o,
                          uint64_t total)
{
    perch_event ev;
    uint64_t n = 0, furthest = 0;
    int err;
    while ((err = perch_etl_next(r, &ev)) == 0) {
        err = perch_model_feed(m, &ev);
        if (err < 0)
            return err;
        if (o == NULL || o->progress == NULL)
            continue;
        if (perch_etl_last_position(r).buffer > furthest)
            furthest = perch_etl_last_position(r).buffer;
        if (++n % PERCH_PIPELINE_PROGRESS_RECORDS == 0)
            o->progress(o->progress_ctx, furthest, total);
    }
    return end_run(m, r, o, total, err == PERCH_EOF ? 0 : err);
}

struct progress_tick {
    const perch_pipeline_options *o;
    const perch_etl_feeder *f;
    uint64_t total;
};

static int progress_tick(void *ctx, uint64_t records)
{
    const struct progress_tick *p = ctx;
    (void)records;
    p->o->progress(p->o->progress_ctx, perch_etl_feeder_position(p->f), p->total);
    return 0;
}

/* The model on this thread behind a reader thread. Returns 1 when no reader thread could be
 * started (nothing was read: the caller runs on one thread). */
static int run_two_threads(perch_etl_reader *r, perch_model *m, const perch_pipeline_options *o,
                           uint64_t total)
{
    perch_etl_feeder *f = NULL;
    struct progress_tick pt = {o, NULL, total};
    perch_consume_options co = {sizeof co, progress_tick, &pt, PERCH_PIPELINE_PROGRESS_RECORDS, 0};
    int err, read_err;
    if (perch_etl_feeder_start(r, o != NULL ? o->queue_bytes : 0, 0, &f) < 0)
        return 1;
    pt.f = f;
    err = perch_pipeline_consume(perch_etl_feeder_queue(f), m,
                                 o != NULL && o->progress != NULL ? &co : NULL, NULL);
    read_err = perch_etl_feeder_finish(f); /* joined: the reader's stats are final */
    if (err < 0)
        return err; /* the model or sink failed; the reader was canceled */
    return end_run(m, r, o, total, read_err);
}

int perch_pipeline_etl(perch_input *in, const char *source, const perch_sink *sink,
                       const perch_pipeline_options *opts, perch_etl_open_error *diag)
{
    const perch_pipeline_options *o = opts != NULL && opts->sz >= sizeof *opts ? opts : NULL;
    perch_etl_reader *r = NULL;
    perch_model *m = NULL;
    perch_trace_info info;
    uint64_t total = in != NULL ? in->size : 0;
    if (in == NULL || sink == NULL)
        return PERCH_EINVAL;
    int err = perch_etl_open_owned(in, o ? o->etl : NULL, &r, diag);
    if (err < 0)
        return err;
    perch_pipeline_trace_info(perch_etl_header_of(r), source ? source : "etl", &info);
    err = perch_model_create(sink, &info, o ? o->model : NULL, &m);
    if (err == 0) {
        err = o == NULL || o->threads != 1 ? run_two_threads(r, m, o, total) : 1;
        if (err > 0)
            err = run_one_thread(r, m, o, total);
    }
    if (o != NULL && o->reader_stats != NULL) /* the reader thread has been joined */
        *o->reader_stats = *perch_etl_stats_of(r);
    perch_model_destroy(m);
    perch_etl_destroy(r);
    return err;
}
