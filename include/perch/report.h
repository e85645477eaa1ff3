/*
 * The report: a perch_sink that aggregates the model's record stream (from an .etl through the
 * model, or later from a capture) and writes either a readable text summary or one JSON object
 * (docs/report.md). It keeps per-key counts, the entity and module names, and the distinct
 * stacks (for top stacks and the stack hash); never the samples or slices themselves.
 */
#ifndef PERCH_REPORT_H
#define PERCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perch/json.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_report perch_report;

typedef struct perch_report_options {
    size_t sz;    /* sizeof(perch_report_options) */
    uint32_t top; /* rows in each top list; 0: 10 */
} perch_report_options;

/* Creates an empty report. opts may be NULL. 0, PERCH_EINVAL or PERCH_ENOMEM. */
int perch_report_create(const perch_report_options *opts, perch_report **out);

/* Fills *sink with the report's callbacks (ctx = r). */
void perch_report_sink(perch_report *r, perch_sink *sink);

/* Writes the JSON object (call on an empty writer). Returns the writer's sticky error. */
int perch_report_write_json(perch_report *r, perch_json *w);

/* Writes the text summary to f. 0 or PERCH_EIO. */
int perch_report_write_text(perch_report *r, FILE *f);

/* Frees the report. Accepts NULL. */
void perch_report_destroy(perch_report *r);

#ifdef __cplusplus
}
#endif

#endif
