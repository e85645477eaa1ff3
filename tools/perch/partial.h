/*
 * Partial input: what the perch commands say and return when a capture or an .etl is cut or
 * damaged but still readable up to some point. The command then produces its output from
 * everything before that point, prints exactly one warning line on stderr saying where the
 * input stopped and how much was not used, and exits with PERCH_EXIT_PARTIAL (commands.h).
 */
#ifndef PERCH_TOOLS_PARTIAL_H
#define PERCH_TOOLS_PARTIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/capture.h"
#include "perch/etl.h"

/* True when a capture replay stopped early in a way that still leaves the records before it
 * usable: a cut (no end chunk, a chunk cut short), a checksum mismatch, a malformed chunk or
 * the string table cap. False for a clean end and for failures (bad header, I/O, a sink). */
bool perch_cli_capture_partial(const perch_capture_status *st);

/* "perch <cmd>: warning: <path>: partial capture: ..." (one line on stderr): the stop offset,
 * the reason, the bytes used (every complete chunk) and the bytes ignored after them. */
void perch_cli_warn_capture(const char *cmd, const char *path, const perch_capture_status *st,
                            uint64_t file_size);

/* "perch <cmd>: warning: <path>: N bytes after the capture's end (at byte X) were not read:
 * ..." (one line on stderr), saying whether another capture starts there (joined). */
void perch_cli_warn_trailing(const char *cmd, const char *path, const perch_capture_status *st,
                             bool joined);

/* When the .etl reader met damage (any perch_etl_reason counted in st), prints one line
 * "perch <cmd>: warning: <path>: damaged .etl: <reason> at byte N (k skipped), ..." and
 * returns true. */
bool perch_cli_warn_etl(const char *cmd, const char *path, const perch_etl_stats *st);

#endif
