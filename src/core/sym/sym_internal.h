/*
 * Limits and small helpers shared by the symbol readers in src/core/sym (PE, MSF, PDB, the
 * symbol path and the resolver).
 */
#ifndef PERCH_SYM_INTERNAL_H
#define PERCH_SYM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/sym.h"

/* Longest name kept (longer ones are cut): a CodeView record is at most 64 KiB anyway. */
#define PERCH__SYM_MAX_NAME 4096u
/* Largest table read into memory in one piece (a PDB stream, a PE directory). */
#define PERCH__SYM_MAX_READ (1u << 30)

/* Sets *why (when why is not NULL) and returns err. */
static inline int perch__sym_fail(const char **why, int err, const char *reason)
{
    if (why != NULL)
        *why = reason;
    return err;
}

/* A read's error as the reader reports it: a short read (PERCH_ETRUNC) becomes code with
 * reason; anything else (out of memory, an I/O error) passes through unchanged. */
static inline int perch__sym_read_fail(const char **why, int err, int code, const char *reason)
{
    return err == PERCH_ETRUNC ? perch__sym_fail(why, code, reason) : err;
}

/* Length of the NUL-terminated string at p within [p, p + left), or left when unterminated. */
static inline size_t perch__sym_strnlen(const uint8_t *p, size_t left)
{
    const void *z = memchr(p, 0, left);
    return z ? (size_t)((const uint8_t *)z - p) : left;
}

/* The last path component of path (after '/' or '\\'). */
const char *perch__sym_basename(const char *path);

#endif
