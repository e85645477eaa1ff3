/*
 * Guarded outputs of the perch commands: a guard sits between a command and the output it
 * writes (a file, standard output) and remembers the first error of a write, sync or close.
 * When an import or export fails because its output failed (a full disk, a file-size limit,
 * a closed pipe), the command then names the output, once, instead of the input it was
 * reading, and the input-side messages of input_kind.c stay quiet.
 */
#ifndef PERCH_TOOLS_OUT_GUARD_H
#define PERCH_TOOLS_OUT_GUARD_H

#include <stdbool.h>

#include "perch/io.h"

typedef struct perch_cli_out {
    perch_output inner; /* the output being guarded */
    int error;          /* its first error (0: none so far) */
} perch_cli_out;

/* Routes *out through g: afterwards writes to *out reach the original output through g.
 * g must outlive every use of *out. */
void perch_cli_out_guard(perch_cli_out *g, perch_output *out);

/* True once a guarded output of this process has failed. */
bool perch_cli_output_failed(void);

/* For a failed write to a stdio stream (standard output): PERCH_ENOSPC when the C library
 * said the disk is full (errno, right after the failure), else PERCH_EIO. */
int perch_cli_stdio_error(void);

/* The name to show for an output path: "standard output" for NULL or "-". */
const char *perch_cli_out_name(const char *path);

#endif
