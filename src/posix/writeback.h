/*
 * Starting the kernel's writeback of a file range without waiting for it (writeback.c), for
 * file_io.c's outputs: a large output handed to writeback as it is written leaves little for
 * the close to flush (ext4 flushes a file truncated to zero and rewritten when it is closed).
 */
#ifndef PERCH_POSIX_WRITEBACK_H
#define PERCH_POSIX_WRITEBACK_H

#include <stdint.h>

/* Asks the kernel to start writing [off, off + len) of fd back; a hint: errors are ignored. */
void perch__posix_writeback(int fd, uint64_t off, uint64_t len);

#endif
