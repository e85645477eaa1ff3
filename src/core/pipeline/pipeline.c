/*
 * The offline pipeline (include/perch/pipeline.h): opens the .etl reader over an input, builds
 * the trace info from the logfile header, feeds the model record by record, reports progress
 * every PERCH_PIPELINE_PROGRESS_RECORDS records, then adds the reader's losses to the ledger
 * and finishes the model.
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

static int run(perch_etl_reader *r, perch_model *m, const perch_pipeline_options *o,
               uint64_t total)
{
    perch_event ev;
    uint64_t n = 0;
    int err;
    while ((err = perch_etl_next(r, &ev)) == 0) {
        err = perch_model_feed(m, &ev);
        if (err < 0)
            return err;
        if (o != NULL && o->progress != NULL && ++n % PERCH_PIPELINE_PROGRESS_RECORDS == 0)
            o->progress(o->progress_ctx, perch_etl_last_position(r).buffer, total);
    }
    if (err != PERCH_EOF)
        return err;
    if (o != NULL && o->progress != NULL)
        o->progress(o->progress_ctx, total, total);
    err = add_reader_losses(m, perch_etl_stats_of(r));
    return err ? err : perch_model_finish(m);
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
    if (err == 0)
        err = run(r, m, o, total);
    if (o != NULL && o->reader_stats != NULL)
        *o->reader_stats = *perch_etl_stats_of(r);
    perch_model_destroy(m);
    perch_etl_destroy(r);
    return err;
}
