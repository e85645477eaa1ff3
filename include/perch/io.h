/*
 * The small I/O interfaces every Perch format goes through, so the same parser and writer
 * code runs against memory (tests, fuzzing, the pipe) and files (import, captures).
 *
 * perch_input reads at an absolute offset (the .etl reader seeks between per-CPU buffers;
 * the capture reader scans forward). perch_output appends and syncs (the capture writer only
 * ever appends whole chunks and syncs at chunk boundaries). Memory backends live in
 * src/core/util/io_memory.c; file backends in src/posix/file_io.c and src/win/file_io.c.
 */
#ifndef PERCH_IO_H
#define PERCH_IO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_input {
    /* Reads up to len bytes at off into buf; *got receives the count (0 at or past the end).
     * Returns 0 or a negative PERCH_E*. perch_capture_replay with a touch or decode_ahead
     * sink calls it from two threads at once (capture.h), so it must not rely on a shared
     * position; the memory and file inputs read at off (pread, ReadFile with an OVERLAPPED
     * offset). */
    int (*read_at)(void *ctx, uint64_t off, void *buf, size_t len, size_t *got);
    /* Releases ctx (may be NULL). */
    void (*close)(void *ctx);
    uint64_t size; /* total bytes available */
    void *ctx;
} perch_input;

typedef struct perch_output {
    /* Appends len bytes; returns 0 or a negative PERCH_E*. */
    int (*write)(void *ctx, const void *buf, size_t len);
    /* Makes everything written so far durable (fsync / FlushFileBuffers); may be NULL. */
    int (*sync)(void *ctx);
    /* Flushes and releases ctx; returns 0 or the first error not yet reported. */
    int (*close)(void *ctx);
    void *ctx;
} perch_output;

/* An input over caller-owned memory; the memory must outlive the input. */
void perch_input_memory(perch_input *in, const void *data, size_t len);

/* Reads exactly len bytes at off: PERCH_ETRUNC if the input ends first. */
int perch_input_read_exact(const perch_input *in, uint64_t off, void *buf, size_t len);

/* Closes in (calls in->close if set) and clears it. Accepts a cleared input. */
void perch_input_close(perch_input *in);

/* A growable memory output with a hard cap (bytes). The buffer is owned by the output until
 * perch_output_memory_take(). */
typedef struct perch_memory_out {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t limit;
} perch_memory_out;

void perch_output_memory(perch_output *out, perch_memory_out *mem, size_t limit);

/* Hands the written bytes to the caller (who frees them with perch_free()); resets mem. */
uint8_t *perch_output_memory_take(perch_memory_out *mem, size_t *len);

/* Opens a file for reading (UTF-8 path). PERCH_ENOENT, PERCH_EACCES or PERCH_EIO on error;
 * *in is untouched on error. Implemented per platform. */
int perch_input_open_file(perch_input *in, const char *path);

/* Creates or truncates a file for appending (UTF-8 path). Implemented per platform. */
int perch_output_open_file(perch_output *out, const char *path);
/* Creates a new file for appending: PERCH_EEXIST when the path exists (never truncated), so
 * the caller knows the file is its own (a capture rotation, which may delete it again). */
int perch_output_create_file(perch_output *out, const char *path);

/* Like perch_output_open_file, for an output written by a thread of its own (perch export's):
 * an existing file keeps its bytes until the first write (an empty one too) or the close,
 * which truncate it, so the file system's work of dropping a large old file runs on the
 * thread that makes that first write; and (Linux) the written bytes are handed to the kernel's
 * writeback as they come, so the close has little left to flush, and those written more than
 * 128 MiB before are dropped from the page cache once they are on the disk (never waiting for
 * it): an export is read by another program, often on another machine, and a large one would
 * otherwise fill the page cache with fresh pages (docs/exports.md, "Writes"). */
int perch_output_open_file_deferred(perch_output *out, const char *path);

/* The standard output stream as a perch_output (never closes stdout itself). */
void perch_output_stdout(perch_output *out);

#ifdef __cplusplus
}
#endif

#endif
