/*
 * The page cache behind file_io.c's deferred outputs (the exports' files), with Linux's calls
 * (writeback.c): each range is handed to the kernel's writeback as it is written, so the close
 * has little left to flush (ext4 flushes a file truncated to zero and rewritten when it is
 * closed); and a range written well before is dropped from the page cache once it is on the
 * disk, so an export of hundreds of MB reuses the same few pages instead of taking fresh ones
 * (docs/exports.md, "Writes"). Both are hints: errors are ignored, nothing ever waits for the
 * disk, and a range not yet on the disk when its turn to be dropped comes stays cached.
 */
#ifndef PERCH_POSIX_WRITEBACK_H
#define PERCH_POSIX_WRITEBACK_H

#include <stdint.h>

/* Bytes between hand-overs to writeback (0: the default, 16 MiB); tests set it small. */
extern uint64_t perch__posix_writeback_step;
/* How many such steps behind the newest a range is dropped. */
#define PERCH_POSIX_DROP_LAG 8u

/* Asks the kernel to start writing [off, off + len) of fd back. */
void perch__posix_writeback(int fd, uint64_t off, uint64_t len);
/* Asks the kernel to drop the clean pages of [off, off + len) of fd from the page cache (pages
 * still dirty or being written are left). */
void perch__posix_drop_cache(int fd, uint64_t off, uint64_t len);

#endif
