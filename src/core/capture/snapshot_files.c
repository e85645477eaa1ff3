/*
 * Snapshot files of a capture directory (snapshot_files.h): which names are snapshots, and
 * how much of the directory they take, for SnapshotCapMb.
 */
#include "capture/snapshot_files.h"

#include <string.h>

#include "perch/error.h"
#include "perch/fs.h"

#define PREFIX      "snapshot-"
#define SUFFIX      ".perch"
#define LISTING_MAX 100000u

bool perch__snapshot_file(const char *name)
{
    size_t n = strlen(name), p = sizeof PREFIX - 1, s = sizeof SUFFIX - 1;
    return n > p + s && strncmp(name, PREFIX, p) == 0 && strcmp(name + n - s, SUFFIX) == 0;
}

int perch__snapshot_usage(const char *dir, uint64_t *bytes, size_t *files)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    int err = perch_fs_list(dir, LISTING_MAX, &e, &n);
    *bytes = 0;
    *files = 0;
    if (err == PERCH_ENOENT)
        return 0;
    if (err < 0)
        return err;
    for (size_t i = 0; i < n; i++) {
        if (perch__snapshot_file(e[i].name)) {
            *bytes += e[i].size;
            (*files)++;
        }
    }
    perch_fs_list_free(e, n);
    return 0;
}
