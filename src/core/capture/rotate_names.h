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

/* Checks the name a client gives a recording ("build-42" or "build-42.perch"), which becomes
 * the prefix of its files: 1 to 32 bytes of [A-Za-z0-9_.-] (perch__rotate_prefix_ok), not
 * starting or ending with '.', not a device name Windows reserves (CON, PRN, AUX, NUL, COM0-9,
 * LPT0-9, with any extension) and not perchd's own prefixes (perch, snapshot). Returns 0 with
 * the stem (the name without ".perch") in stem, or PERCH_EINVAL with stem "" and one sentence
 * in why (when why_len > 0) naming the name and the rule. stem holds len bytes: 33 hold any
 * stem, and a stem that would not fit is refused rather than cut. */
int perch__rotate_check_name(const char *name, char *stem, size_t len, char *why, size_t why_len);

/* True for a name a pipe client may FETCH from the capture directory: a plain file name (no
 * \, /, :, wildcard, quote, <, >, | or control character) ending in ".perch" in any case
 * (the listing matches *.perch as Windows does, without regard to case), and not a device
 * name Windows reserves, which would open the device and not a file. */
bool perch__capture_fetch_name_ok(const char *name);

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
