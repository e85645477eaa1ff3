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
#include "pipeline/feeder_relay.h"
#include "pipeline/relay_play.h"

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

/* The threads of a run: the reader thread, and the relay it also plays (NULL: the sink is
 * called on the model's thread). */
struct threads {
    perch_etl_feeder *f; /* NULL: one thread */
    perch_sink_relay *relay;
    perch_sink relay_sink;
};

/* Starts the reader thread, playing the sink behind a relay when asked. When no thread can be
 * had, t stays empty and the run takes one thread (the same output). */
static void start_threads(perch_etl_reader *r, const perch_sink *sink,
                          const perch_pipeline_options *o, struct threads *t)
{
    size_t queue_bytes = o != NULL ? o->queue_bytes : 0;
    bool track = o != NULL && o->progress != NULL;
    if (o != NULL && o->relay_sink && perch__sink_relay_create(sink, 0, &t->relay) == 0) {
        if (perch__etl_feeder_start_model(r, queue_bytes, t->relay, track, &t->f) == 0) {
            perch_sink_relay_sink(t->relay, &t->relay_sink);
            return;
        }
        perch_sink_relay_stop(t->relay);
        t->relay = NULL;
    }
    if (perch__etl_feeder_start_model(r, queue_bytes, NULL, track, &t->f) < 0)
        t->f = NULL;
}

/* Joins the threads (the relay has played every record given to it) and frees them. Returns
 * the relay's first error (0: none). */
static int stop_threads(struct threads *t)
{
    perch_etl_feeder_finish(t->f);
    return perch_sink_relay_stop(t->relay);
}

/* The model on this thread behind the reader thread. Without a relay the reader is joined
 * before the end of the run; with one it must outlive the model's finish, whose records it
 * plays, so the reader's status is the queue's close status (final once EOF was popped). */
static int run_two_threads(perch_etl_reader *r, perch_model *m, const perch_pipeline_options *o,
                           uint64_t total, struct threads *t)
{
    struct progress_tick pt = {o, t->f, total};
    perch_consume_options co = {sizeof co, progress_tick, &pt, PERCH_PIPELINE_PROGRESS_RECORDS, 0};
    int err, read_err;
    err =
        perch__pipeline_consume_play(perch_etl_feeder_queue(t->f), m,
                                     o != NULL && o->progress != NULL ? &co : NULL, t->relay, NULL);
    if (t->relay != NULL && err == 0) {
        read_err = perch_event_queue_close_status(perch_etl_feeder_queue(t->f));
    } else {
        read_err = perch_etl_feeder_finish(t->f); /* joined: the reader's stats are final */
        t->f = NULL;
    }
    if (err < 0)
        return err; /* the model or sink failed; the reader was canceled */
    return end_run(m, r, o, total, read_err);
}

int perch_pipeline_etl_reader(perch_etl_reader *r, const char *source, const perch_sink *sink,
                              const perch_pipeline_options *opts)
{
    const perch_pipeline_options *o = opts != NULL && opts->sz >= sizeof *opts ? opts : NULL;
    perch_model *m = NULL;
    perch_trace_info info;
    struct threads t = {NULL, NULL, {0}};
    if (r == NULL || sink == NULL) {
        perch_etl_destroy(r);
        return PERCH_EINVAL;
    }
    uint64_t total = perch_etl_input_size(r);
    perch_pipeline_trace_info(perch_etl_header_of(r), source ? source : "etl", &info);
    if (o == NULL || o->threads != 1)
        start_threads(r, sink, o, &t);
    int err = perch_model_create(t.relay ? &t.relay_sink : sink, &info, o ? o->model : NULL, &m);
    if (err == 0)
        err = t.f != NULL ? run_two_threads(r, m, o, total, &t) : run_one_thread(r, m, o, total);
    int relay_err = stop_threads(&t);
    err = err == 0 && relay_err < 0 ? relay_err : err;
    if (o != NULL && o->reader_stats != NULL) /* the reader thread has been joined */
        *o->reader_stats = *perch_etl_stats_of(r);
    perch_model_destroy(m);
    perch_etl_destroy(r);
    return err;
}

int perch_pipeline_etl(perch_input *in, const char *source, const perch_sink *sink,
                       const perch_pipeline_options *opts, perch_etl_open_error *diag)
{
    const perch_pipeline_options *o = opts != NULL && opts->sz >= sizeof *opts ? opts : NULL;
    perch_etl_reader *r = NULL;
    if (in == NULL || sink == NULL)
        return PERCH_EINVAL;
    int err = perch_etl_open_owned(in, o ? o->etl : NULL, &r, diag);
    if (err < 0)
        return err;
    return perch_pipeline_etl_reader(r, source, sink, opts);
}
