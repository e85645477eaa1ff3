/*
 * The names of rotated capture files (include/perch/capture_rotate.h):
 * <prefix>-YYYYMMDD-HHMMSS-<seq>.perch with the UTC time and a sequence number of at least six
 * digits, so that the names of one prefix sort by age.
 */
#ifndef PERCH_CAPTURE_ROTATE_NAMES_H
#define PERCH_CAPTURE_ROTATE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/fs.h"

/* True for 1..32 bytes of [A-Za-z0-9_.-]. */
bool perch__rotate_prefix_ok(const char *prefix);

/* Writes the name of file seq created at wall_ms (ms since 1970 UTC). */
void perch__rotate_name(const char *prefix, uint64_t wall_ms, uint32_t seq, char *out, size_t len);

/* The sequence number of a name of this prefix; false when the name is not one. */
bool perch__rotate_parse(const char *prefix, const char *name, uint32_t *seq);

/* Keeps the entries whose names are files of this prefix (freeing the others' names), sorted
 * oldest first (by sequence number); returns how many. */
size_t perch__rotate_keep_ours(const char *prefix, perch_fs_entry *e, size_t n);

/* The same, also keeping the file called first (when not NULL) as the oldest (sequence 0). */
size_t perch__rotate_keep_named(const char *prefix, const char *first, perch_fs_entry *e, size_t n);

/* The highest sequence number among dir's files of this prefix (0 when none). */
int perch__rotate_last_seq(const char *dir, const char *prefix, uint32_t *seq);

#endif
