/*
 * The one place the perch commands tell a capture from an .etl file and play either into a
 * sink: a capture (magic "\x89PERCH\r\n", docs/capture-format.md) is replayed chunk by chunk,
 * anything else goes through the .etl reader -> model pipeline. perch report, perch export
 * (record_source.c) and perch import all go through here, so they agree on what a file is.
 */
#ifndef PERCH_TOOLS_INPUT_KIND_H
#define PERCH_TOOLS_INPUT_KIND_H

#include <stdbool.h>

#include "perch/capture.h"
#include "perch/io.h"
#include "perch/pipeline.h"
#include "perch/records.h"

/* True when in starts with the capture magic. */
bool perch_cli_is_capture(const perch_input *in);

/* After a replay of in that ended at its end chunk: true when bytes follow it (st's
 * trailing_bytes), *joined true when another capture's magic starts there (files joined with
 * cat: the reader stops at the first capture's end). */
bool perch_cli_capture_trailing(const perch_input *in, const perch_capture_status *st,
                                bool *joined);

/* "etl:<file name>" for the trace info of an .etl read from path. */
void perch_cli_etl_source(const char *path, char *buf, size_t len);

/* The number of threads the .etl pipeline uses (perch_pipeline_options.threads): the value
 * given to perch_cli_set_threads (a command's --threads), else the PERCH_THREADS environment
 * variable (1: one thread, 2: a reader thread ahead of the model), else 0 (the default: two).
 * PERCH_EINVAL, after one line on stderr, for any other value of PERCH_THREADS. */
int perch_cli_threads(unsigned *threads);
void perch_cli_set_threads(unsigned threads);

/* What perch_cli_play_file returns (besides 0 and a negative error) when the input was
 * partial: cut or damaged, every readable record played, one warning printed (partial.h). */
#define PERCH_CLI_PARTIAL 1

/* Runs the .etl in *in (ownership taken) through the pipeline into sink. On failure prints
 * "perch <cmd>: <path>: <reason>[ at byte N]" to stderr and returns the error. When the reader
 * skipped damaged parts, prints the one warning line of partial.h (when warn) and returns
 * PERCH_CLI_PARTIAL. progress may be NULL. relay_sink: with a reader thread, sink runs on it
 * too, behind a sink relay (perch_pipeline_options.relay_sink: perch import's writer). */
int perch_cli_run_etl(const char *cmd, perch_input *in, const char *path, const perch_sink *sink,
                      perch_progress_fn progress, void *progress_ctx, bool warn, bool relay_sink);

/* perch_cli_run_etl over a reader already opened on path (ownership taken), for a command that
 * opens the .etl to check it before it creates its output (perch import): one open, not two. */
int perch_cli_run_etl_reader(const char *cmd, perch_etl_reader *r, const char *path,
                             const perch_sink *sink, perch_progress_fn progress, void *progress_ctx,
                             bool warn, bool relay_sink);

/* Opens path and plays every record of it into sink once (capture or .etl, by magic). On
 * failure prints one line "perch <cmd>: <path>: <reason>" and returns the error; a cut or
 * damaged input whose readable part was played returns PERCH_CLI_PARTIAL after one warning
 * line (none when warn is false: a later pass over the same input). With percent_progress a
 * percentage is drawn on stderr for an .etl when stderr is a terminal. */
int perch_cli_play_file_ex(const char *cmd, const char *path, const perch_sink *sink,
                           bool percent_progress, bool warn);

/* perch_cli_play_file_ex with warn = true. */
int perch_cli_play_file(const char *cmd, const char *path, const perch_sink *sink,
                        bool percent_progress);

#endif
