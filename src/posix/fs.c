/*
 * POSIX implementation of include/perch/fs.h: opendir/readdir and stat for listings, unlink,
 * rename, mkdir, and CLOCK_REALTIME for the wall clock.
 */
#define _POSIX_C_SOURCE   200809L
#define _FILE_OFFSET_BITS 64
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errno_map.h"
#include "perch/error.h"
#include "perch/fs.h"
#include "util/mem.h"

/* Adds one regular file to the listing. 1 when it was not a regular file (skipped). */
static int add_entry(const char *dir, const char *name, perch_fs_entry **v, size_t *n, size_t *cap)
{
    struct stat st;
    char *path = perch_fs_join(dir, name);
    if (!path)
        return PERCH_ENOMEM;
    int rc = stat(path, &st);
    perch__free(path);
    if (rc != 0 || !S_ISREG(st.st_mode))
        return 1; /* vanished meanwhile, or not a file */
    return perch__fs_list_append(v, n, cap, name, (uint64_t)st.st_size,
                                 (uint64_t)st.st_mtim.tv_sec * 1000u +
                                     (uint64_t)st.st_mtim.tv_nsec / 1000000u);
}

int perch_fs_list(const char *dir, size_t max_entries, perch_fs_entry **entries, size_t *count)
{
    DIR *d = opendir(dir);
    perch_fs_entry *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int err = 0;
    if (!d)
        return perch__posix_error(errno);
    while (err >= 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        err = n >= max_entries ? PERCH_ELIMIT : add_entry(dir, de->d_name, &v, &n, &cap);
    }
    closedir(d);
    if (err < 0) {
        perch_fs_list_free(v, n);
        return err;
    }
    *entries = v;
    *count = n;
    return 0;
}

int perch_fs_size(const char *path, uint64_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return perch__posix_error(errno);
    *size = (uint64_t)st.st_size;
    return 0;
}

int perch_fs_remove(const char *path)
{
    return unlink(path) == 0 ? 0 : perch__posix_error(errno);
}

int perch_fs_rename(const char *from, const char *to)
{
    return rename(from, to) == 0 ? 0 : perch__posix_error(errno);
}

int perch_fs_mkdir(const char *path)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return 0;
    int e = errno;
    if (e == EEXIST)
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : PERCH_EEXIST;
    return perch__posix_error(e);
}

uint64_t perch_fs_wall_ms(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
