/*
 * The report: a perch_sink that aggregates the model's record stream (from an .etl through the
 * model, or later from a capture) and writes either a readable text summary or one JSON object
 * (docs/report.md). It keeps per-key counts, the entity and module names, and the distinct
 * stacks (for top stacks and the stack hash); never the samples or slices themselves. The
 * stacks are held in bounded memory: past memory_limit they go to scratch files
 * (include/perch/scratch.h), so the report's memory does not grow with the trace; every
 * figure stays exact.
 */
#ifndef PERCH_REPORT_H
#define PERCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perch/json.h"
#include "perch/records.h"
#include "perch/scratch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_report perch_report;

typedef struct perch_report_options {
    size_t sz;    /* sizeof(perch_report_options) */
    uint32_t top; /* rows in each top list; 0: 10 */
    /* Bytes of stack state held in memory before the rest goes to scratch stores; 0: 16 MiB. */
    uint64_t memory_limit;
    /* Opens the scratch stores; NULL: temporary files in the system's temp folder
     * (perch_scratch_open_temp). */
    perch_scratch_open_fn scratch_open;
    void *scratch_ctx;
} perch_report_options;

/* Creates an empty report. opts may be NULL. 0, PERCH_EINVAL or PERCH_ENOMEM. */
int perch_report_create(const perch_report_options *opts, perch_report **out);

/* Makes the report also keep what perch_report_write_html draws (the call tree, CPU over
 * time per process, the top functions). Call before perch_report_sink. 0 or PERCH_ENOMEM. */
int perch_report_enable_html(perch_report *r);

/* Fills *sink with the report's callbacks (ctx = r). */
void perch_report_sink(perch_report *r, perch_sink *sink);

/* Writes the JSON object (call on an empty writer). Returns the writer's sticky error. */
int perch_report_write_json(perch_report *r, perch_json *w);

/* Writes the HTML report to f: one self-contained page (no network, no external script) with
 * the trace summary, CPU over time per process, a flame graph (click to zoom, search), the top
 * processes, threads, modules and functions, the slice and wait-reason summary and the ledger,
 * and the JSON of perch_report_write_json embedded. Needs perch_report_enable_html before the
 * records. 0, PERCH_EINVAL (not enabled), PERCH_ENOMEM or PERCH_ELIMIT, or PERCH_EIO. */
int perch_report_write_html(perch_report *r, FILE *f);

/* Writes the text summary to f. 0, PERCH_EIO, PERCH_ENOMEM or a scratch store's error. */
int perch_report_write_text(perch_report *r, FILE *f);

/* Frees the report. Accepts NULL. */
void perch_report_destroy(perch_report *r);

#ifdef __cplusplus
}
#endif

#endif
