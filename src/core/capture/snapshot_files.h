/*
 * The flight recorder's snapshot files in a capture directory: perchd names them
 * snapshot-YYYYMMDD-HHMMSS[-N].perch (src/win/daemon_captures.c), and their total size is held
 * to SnapshotCapMb (include/perch/config.h). A recording may not take the snapshot- prefix
 * (perch__rotate_check_name), so every file of that shape is a snapshot; no snapshot is ever
 * deleted by perchd, a new one is refused instead.
 */
#ifndef PERCH_CAPTURE_SNAPSHOT_FILES_H
#define PERCH_CAPTURE_SNAPSHOT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True for a name that starts with "snapshot-" and ends with ".perch", with something between
 * (names are matched as perchd writes them: lower case). */
bool perch__snapshot_file(const char *name);

/* The number and total size of the snapshot files in dir (0 and 0 when it does not exist).
 * PERCH_EACCES, PERCH_ELIMIT (more than 100,000 files), PERCH_ENOMEM, PERCH_EIO; the outputs
 * are untouched on error. */
int perch__snapshot_usage(const char *dir, uint64_t *bytes, size_t *files);

/* How many snapshot files perchd keeps at most, whatever their size: a snapshot of the last
 * millisecond is tiny, and a user who may only read could otherwise fill the directory with
 * files past what a CAPTURES reply can list. */
#define PERCH_SNAPSHOT_MAX_FILES 10000u

/* SnapshotCapMb: 0 while the snapshots already in dir take less than cap_mb MiB and number
 * fewer than max_files. Otherwise PERCH_ELIMIT, or the listing's error when they cannot be
 * counted, each with one sentence in why (when why_len > 0) for the client and the log, the
 * directory last (a reply's 300 bytes may cut a long one). */
int perch__snapshot_cap_check(const char *dir, uint32_t cap_mb, size_t max_files, char *why,
                              size_t why_len);

#endif
