/*
 * Scratch stores: temporary byte arrays that hold what a bounded-memory consumer (the report,
 * the exporters) moves out of memory: spilled pages of a table, the runs of an external sort,
 * a log of interned stacks. A scratch store is written and read at absolute offsets and is
 * gone when closed: the file backend is a temporary file deleted on close (src/posix/file_io.c,
 * src/win/file_io.c), the memory backend (src/core/util/scratch_memory.c) a growable buffer
 * for tests and for callers that must not touch the disk.
 */
#ifndef PERCH_SCRATCH_H
#define PERCH_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_scratch {
    /* Writes len bytes at off (a hole before off reads as zeroes). 0 or a negative PERCH_E*. */
    int (*write_at)(void *ctx, uint64_t off, const void *buf, size_t len);
    /* Reads exactly len bytes at off: PERCH_ETRUNC when they were never written. */
    int (*read_at)(void *ctx, uint64_t off, void *buf, size_t len);
    /* Releases ctx and deletes what was written. */
    void (*close)(void *ctx);
    void *ctx;
} perch_scratch;

/* Opens s as a new scratch store. ctx is the opener's own. 0 or a negative PERCH_E*; on
 * error *s is untouched. */
typedef int (*perch_scratch_open_fn)(void *ctx, perch_scratch *s);

/* A temporary file in dir (UTF-8; NULL: $TMPDIR or /tmp, GetTempPath on Windows), deleted
 * when closed, and by the system if the process dies (unlinked at once on POSIX,
 * FILE_FLAG_DELETE_ON_CLOSE on Windows). Implemented per platform. */
int perch_scratch_open_file(perch_scratch *s, const char *dir);

/* A perch_scratch_open_fn over perch_scratch_open_file; ctx is the directory (const char *,
 * may be NULL). */
int perch_scratch_open_temp(void *ctx, perch_scratch *s);

/* A scratch store in memory of at most *(const size_t *)ctx bytes (ctx NULL: no cap past
 * SIZE_MAX); PERCH_ELIMIT past the cap. A perch_scratch_open_fn. */
int perch_scratch_open_memory(void *ctx, perch_scratch *s);

/* Closes s (calls s->close if set) and clears it. Accepts a cleared store. */
void perch_scratch_close(perch_scratch *s);

#ifdef __cplusplus
}
#endif

#endif
