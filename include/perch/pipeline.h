/*
 * The offline pipeline: .etl reader -> model -> sink. It derives the trace info from the
 * logfile header, feeds every record to the model in time order, adds the reader's own losses
 * (damaged buffers and records, skipped records) to the model's ledger, and finishes the model.
 * A progress callback reports bytes read against the input's total size.
 */
#ifndef PERCH_PIPELINE_H
#define PERCH_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/etl.h"
#include "perch/io.h"
#include "perch/model.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The progress callback runs once every this many records read, then once at the end. */
#define PERCH_PIPELINE_PROGRESS_RECORDS 4096u

/* done: bytes of the input read so far (buffer granularity); total: the input's size. */
typedef void (*perch_progress_fn)(void *ctx, uint64_t done, uint64_t total);

typedef struct perch_pipeline_options {
    size_t sz;                          /* sizeof(perch_pipeline_options) */
    perch_progress_fn progress;         /* may be NULL */
    void *progress_ctx;
    const perch_model_options *model;   /* may be NULL */
    const perch_etl_options *etl;       /* may be NULL */
    /* When not NULL, receives the reader's statistics (damage and its offsets included) once
     * the reader has been opened, whatever the result. */
    perch_etl_stats *reader_stats;
} perch_pipeline_options;

/* Runs the pipeline over *in (ownership taken: closed before returning, whatever happens).
 * source names the input in the trace info ("etl:<name>"). opts and diag may be NULL; diag is
 * filled when the .etl cannot be opened. Returns 0, the open error, or the first error of the
 * model or the sink. */
int perch_pipeline_etl(perch_input *in, const char *source, const perch_sink *sink,
                       const perch_pipeline_options *opts, perch_etl_open_error *diag);

/* Fills *info from an .etl logfile header (strings borrowed: source as given). perf_freq is
 * the tick rate of the raw timestamps for the header's clock type (QPC, 100 ns system time or
 * CPU cycles), not always the header's QPC PerfFreq. */
void perch_pipeline_trace_info(const perch_etl_header *h, const char *source,
                               perch_trace_info *info);

#ifdef __cplusplus
}
#endif

#endif
