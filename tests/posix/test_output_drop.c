/*
 * The deferred output's page cache (src/posix/file_io.c, writeback.h): a file written through
 * perch_output_open_file_deferred has each step handed to writeback and the steps more than
 * PERCH_POSIX_DROP_LAG behind the newest dropped from the page cache. The test writes 40 small
 * steps and syncs after each, so every range is on the disk before its turn to be dropped
 * comes (the export never waits; here the drop is then certain), and reads the file's
 * residency back with mincore: the first 32 steps gone, the last 8 still cached, every byte
 * right. On a file system whose page cache cannot be dropped this way (tmpfs, overlayfs) the
 * residency check is skipped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "perch/io.h"
#include "writeback.h"

#define STEP                   ((uint64_t)64 << 10)
#define STEPS                  40u
#define TMPFS_MAGIC_NUMBER     0x01021994
#define OVERLAYFS_MAGIC_NUMBER 0x794c7630

/* The pages of [off, off + len) of the mapping at map that mincore says are resident. */
static size_t resident(void *map, size_t off, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, count = 0;
    unsigned char *vec = malloc(n);
    assert_non_null(vec);
    assert_int_equal(mincore((char *)map + off, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        count += vec[i] & 1;
    free(vec);
    return count;
}

static void test_drop_behind(void **state)
{
    const char *dir = getenv("TMPDIR");
    char buf[4096];
    perch_output out;
    struct statfs fs;
    (void)state;
    int n = snprintf(buf, sizeof buf, "%s/perch-drop-XXXXXX", dir && *dir ? dir : "/tmp");
    assert_true(n > 0 && (size_t)n < sizeof buf);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);

    perch__posix_writeback_step = STEP;
    assert_int_equal(perch_output_open_file_deferred(&out, buf), 0);
    uint8_t *chunk = malloc(STEP);
    assert_non_null(chunk);
    for (unsigned s = 0; s < STEPS; s++) {
        memset(chunk, 'a' + (int)(s % 26), STEP);
        assert_int_equal(out.write(out.ctx, chunk, STEP), 0);
        assert_int_equal(out.sync(out.ctx), 0); /* on the disk before the next step's drop */
    }
    assert_int_equal(out.close(out.ctx), 0);
    perch__posix_writeback_step = 0;

    fd = open(buf, O_RDONLY);
    assert_true(fd >= 0);
    size_t size = (size_t)(STEPS * STEP);
    assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)size);
    uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    size_t kept = (size_t)(PERCH_POSIX_DROP_LAG * STEP), dropped = size - kept;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(fstatfs(fd, &fs), 0);
    if (fs.f_type == TMPFS_MAGIC_NUMBER || fs.f_type == OVERLAYFS_MAGIC_NUMBER) {
        fprintf(stderr,
                "test_output_drop: %s keeps its pages (tmpfs or overlayfs): residency "
                "not checked\n",
                buf);
    } else {
        assert_int_equal(resident(map, 0, dropped), 0);
        assert_int_equal(resident(map, dropped, kept), kept / page);
    }
    for (unsigned s = 0; s < STEPS; s++) /* every byte right (read back after the residency) */
        for (size_t i = 0; i < STEP; i += 512)
            assert_int_equal(map[s * STEP + i], 'a' + (int)(s % 26));
    munmap(map, size);
    close(fd);
    unlink(buf);
    free(chunk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
