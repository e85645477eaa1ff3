/*
 * The offline pipeline: .etl reader -> model -> sink. It derives the trace info from the
 * logfile header, feeds every record to the model in time order, adds the reader's own losses
 * (damaged buffers and records, skipped records) to the model's ledger, and finishes the model.
 * A progress callback reports bytes read against the input's total size.
 *
 * By default the reading (file reads, XPRESS, the per-CPU merge) runs on a reader thread ahead
 * of the model, through a perch_event_queue (include/perch/event_queue.h); the model, the sink
 * and the progress callback stay on the calling thread. The records the model sees, and so
 * every output, are the same byte for byte as with one thread (options.threads = 1).
 *
 * Two pieces are public for other pipelines of the same shape: the reader thread
 * (perch_etl_feeder, used by perch dump) and the model-thread loop (perch_pipeline_consume,
 * used by the live engine: pop from a queue, feed the model, until the producer closes it).
 */
#ifndef PERCH_PIPELINE_H
#define PERCH_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/etl.h"
#include "perch/event_queue.h"
#include "perch/io.h"
#include "perch/model.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The progress callback runs once every this many records read, then once at the end. */
#define PERCH_PIPELINE_PROGRESS_RECORDS 4096u

/* done: bytes of the input read so far (the furthest buffer read, so it never goes back);
 * total: the input's size. */
typedef void (*perch_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* The default ring of the reader thread's queue (raised to fit the file's largest record). */
#define PERCH_PIPELINE_QUEUE_BYTES (4u << 20)

typedef struct perch_pipeline_options {
    size_t sz;                  /* sizeof(perch_pipeline_options) */
    perch_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    const perch_model_options *model; /* may be NULL */
    const perch_etl_options *etl;     /* may be NULL */
    /* When not NULL, receives the reader's statistics (damage and its offsets included) once
     * the reader has been opened, whatever the result. */
    perch_etl_stats *reader_stats;
    /* 1: read and model on the calling thread. 0 or 2: a reader thread ahead of the model
     * (when no thread or queue can be had, the pipeline runs on one thread instead). */
    unsigned threads;
    size_t queue_bytes; /* the reader thread's ring; 0: PERCH_PIPELINE_QUEUE_BYTES */
    /* Nonzero, with a reader thread: the sink runs on the reader thread too, behind a sink
     * relay (the same records in the same order, one call at a time, as perch_sink_relay_start
     * describes), played between reads. For a sink whose work is worth a thread (perch
     * import's capture writer); two busy threads then, not three. */
    unsigned relay_sink;
} perch_pipeline_options;

/* Runs the pipeline over *in (ownership taken: closed before returning, whatever happens).
 * source names the input in the trace info ("etl:<name>"). opts and diag may be NULL; diag is
 * filled when the .etl cannot be opened. Returns 0, the open error, or the first error of the
 * model or the sink (the model is then not finished), or an error that stopped the reader
 * (PERCH_ENOMEM): the model is then finished with what was read, its ledger holding the
 * reader's losses and "etl.read_error", and the reader's error is returned. */
int perch_pipeline_etl(perch_input *in, const char *source, const perch_sink *sink,
                       const perch_pipeline_options *opts, perch_etl_open_error *diag);

/* perch_pipeline_etl over a reader the caller opened (ownership taken: destroyed before
 * returning, whatever happens; no record read from it yet), so that a caller who opens the
 * .etl to check it first does not open it twice. opts->etl is not used. */
int perch_pipeline_etl_reader(perch_etl_reader *r, const char *source, const perch_sink *sink,
                              const perch_pipeline_options *opts);

/* ---- the model-thread loop ------------------------------------------------------------ */

/* Called on the consumer's thread; a negative return stops the loop with that error. */
typedef int (*perch_consume_tick_fn)(void *ctx, uint64_t records);

typedef struct perch_consume_options {
    size_t sz;                  /* sizeof(perch_consume_options) */
    perch_consume_tick_fn tick; /* may be NULL */
    void *tick_ctx;
    uint32_t tick_records; /* tick after every this many records (0: not by count) */
    uint32_t tick_ms;      /* and at least this often, idle or busy (0: not by time) */
} perch_consume_options;

/* Pops records from q and feeds them to m until the producer closes q. Returns 0 after the
 * last record (the producer's own status is perch_event_queue_close_status(q); the model is
 * not finished), the model's or the tick's error (q is then canceled, so the producer stops),
 * or PERCH_ECANCELED when q was canceled by someone else. *records (may be NULL) gets the
 * number of records fed. opts may be NULL. */
int perch_pipeline_consume(perch_event_queue *q, perch_model *m, const perch_consume_options *opts,
                           uint64_t *records);

/* ---- the reader thread ---------------------------------------------------------------- */

typedef struct perch_etl_feeder perch_etl_feeder;

/* Starts a thread that reads r (borrowed: it belongs to the thread until
 * perch_etl_feeder_finish) and pushes every record, in order, into a queue of queue_bytes
 * (0: PERCH_PIPELINE_QUEUE_BYTES; raised so that no record of the file is refused), at most
 * limit records (0: all). The calling thread is taken to be the queue's consumer: on a process
 * that may run on exactly two CPUs it and the new thread get one each until
 * perch_etl_feeder_finish (perch_thread_split_cpus). Returns 0, PERCH_ENOMEM, PERCH_ELIMIT
 * (the file's records would need a ring above 64 MiB) or the thread error; *out untouched on
 * error. */
int perch_etl_feeder_start(perch_etl_reader *r, size_t queue_bytes, uint64_t limit,
                           perch_etl_feeder **out);

/* The queue to pop from (perch_event_queue_pop or perch_pipeline_consume): it ends with
 * PERCH_EOF, its close status being 0 at the end of the file or limit, or the error that
 * stopped the reader. */
perch_event_queue *perch_etl_feeder_queue(perch_etl_feeder *f);

/* The furthest file offset of a buffer whose records were pushed (for progress: buffers of
 * different CPUs interleave in the file, so the offset of the last record alone can go back),
 * from any thread. */
uint64_t perch_etl_feeder_position(const perch_etl_feeder *f);

/* Stops the thread if it still runs (the queue is canceled), joins it and frees f; r is the
 * caller's again and its stats are final, and the thread that started f has its CPUs back. Returns
 * the reader's status: 0, the error that stopped it, or PERCH_ECANCELED when it was stopped before
 * the end. Accepts NULL (0). */
int perch_etl_feeder_finish(perch_etl_feeder *f);

/* ---- the sink relay: a sink on a thread of its own ------------------------------------- */

typedef struct perch_sink_relay perch_sink_relay;

/* Starts a thread that plays into *inner (copied; its ctx borrowed until stop) the records
 * given to the relay's sink (perch_sink_relay_sink). Every record but trace_info, counters
 * and finish is copied (arrays and strings included) into batches of about batch_bytes (0:
 * 64 KiB; a ring of eight, plus one record) played by the thread while the next ones fill; those
 * three first wait until every batch has been played, then call inner on the calling thread. So
 * inner sees the same records in the same order as without the relay, one call at a time. The first
 * error of inner is returned by every later call of the relay's sink (finish included). Returns 0,
 * PERCH_ENOMEM or the thread error; *out untouched on error. */
int perch_sink_relay_start(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out);

/* Fills *out with the relay's callbacks (ctx is the relay), to be called from one thread. */
void perch_sink_relay_sink(perch_sink_relay *r, perch_sink *out);

/* Joins the thread and frees r. Records given after the last trace_info, counters or finish
 * may be dropped: call the sink's finish first to play them all. Returns the first
 * error of inner (0: none). Accepts NULL (0). */
int perch_sink_relay_stop(perch_sink_relay *r);

/* Fills *info from an .etl logfile header (strings borrowed: source as given). perf_freq is
 * the tick rate of the raw timestamps for the header's clock type (QPC, 100 ns system time or
 * CPU cycles), not always the header's QPC PerfFreq. */
void perch_pipeline_trace_info(const perch_etl_header *h, const char *source,
                               perch_trace_info *info);

#ifdef __cplusplus
}
#endif

#endif
