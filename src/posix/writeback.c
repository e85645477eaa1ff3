/*
 * perch__posix_writeback (writeback.h) with Linux's sync_file_range: SYNC_FILE_RANGE_WRITE
 * queues the range's dirty pages for writing and returns without waiting for the device.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "writeback.h"

void perch__posix_writeback(int fd, uint64_t off, uint64_t len)
{
    (void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}
