/*
 * The input seam of the commands that read a record stream (perch export, later report):
 * open a capture (.perch) or an .etl file as a perch_record_source (include/perch/export.h)
 * whose replay() plays the model's records into a sink, as many times as asked.
 *
 * perch_open_record_source is the one function to fill in when the capture reader and the
 * .etl -> model pipeline are merged; until then record_source.c returns PERCH_ENOTSUP.
 */
#ifndef PERCH_TOOLS_RECORD_SOURCE_H
#define PERCH_TOOLS_RECORD_SOURCE_H

#include <stdbool.h>

#include "perch/export.h"

/* Opens path as a record source. On success the caller closes it with src->close(src->ctx)
 * (when set). PERCH_ENOTSUP for an input kind that is not supported (yet); *src untouched on
 * error. */
int perch_open_record_source(const char *path, perch_record_source *src);

typedef int (*perch_record_source_open_fn)(const char *path, perch_record_source *src);

/* True when a replay of src met a cut or damaged input (the warning was printed once, on
 * the first pass); false for other sources. perch export then exits PERCH_EXIT_PARTIAL. */
bool perch_record_source_partial(const perch_record_source *src);

/* Replays of src (a source perch_open_record_source opened) call the sink on the replaying
 * thread, without a relay (perch_export_relay_pays false); other sources are left as they are. */
void perch_record_source_direct(perch_record_source *src);

/* perch export with its input opener injected: perch_cmd_export passes
 * perch_open_record_source, tests pass a synthetic stream. Same exit statuses as a command. */
int perch_export_command(int argc, char **argv, perch_record_source_open_fn open_source);

#endif
