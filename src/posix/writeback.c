/*
 * writeback.h with Linux's calls: sync_file_range with SYNC_FILE_RANGE_WRITE queues a range's
 * dirty pages for writing and returns without waiting for the device (sync_file_range(2));
 * posix_fadvise with POSIX_FADV_DONTNEED drops a range's clean pages from the page cache and
 * leaves those that are dirty or under writeback (posix_fadvise(2)).
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "writeback.h"

uint64_t perch__posix_writeback_step;

void perch__posix_writeback(int fd, uint64_t off, uint64_t len)
{
    (void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

void perch__posix_drop_cache(int fd, uint64_t off, uint64_t len)
{
    (void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}
