/*
 * Snapshot files of a capture directory (snapshot_files.h): which names are snapshots, and
 * how much of the directory they take, for SnapshotCapMb.
 */
#include "capture/snapshot_files.h"

#include <stdio.h>
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
    size_t n = 0, count = 0;
    uint64_t total = 0;
    int err = perch_fs_list(dir, LISTING_MAX, &e, &n);
    if (err < 0 && err != PERCH_ENOENT)
        return err;
    for (size_t i = 0; i < n; i++) {
        if (perch__snapshot_file(e[i].name)) {
            total += e[i].size;
            count++;
        }
    }
    perch_fs_list_free(e, n);
    *bytes = total;
    *files = count;
    return 0;
}

int perch__snapshot_cap_check(const char *dir, uint32_t cap_mb, size_t max_files, char *why,
                              size_t why_len)
{
    uint64_t bytes = 0;
    size_t files = 0;
    int err = perch__snapshot_usage(dir, &bytes, &files);
    if (err < 0) {
        if (why_len > 0)
            snprintf(why, why_len,
                     "the snapshots already kept could not be counted for SnapshotCapMb (%s%s); "
                     "the directory is %s",
                     perch_strerror(err), err == PERCH_ELIMIT ? ": over 100000 files" : "", dir);
        return err;
    }
    if (bytes < (uint64_t)cap_mb << 20 && files < max_files)
        return 0;
    if (files >= max_files) {
        if (why_len > 0)
            snprintf(why, why_len,
                     "the snapshots already kept number %zu, the most perchd keeps (%.1f MiB in "
                     "all); delete old ones (snapshot-*.perch); they are in %s",
                     files, (double)bytes / 1048576.0, dir);
        return PERCH_ELIMIT;
    }
    if (why_len > 0)
        snprintf(why, why_len,
                 "the snapshots already kept reach SnapshotCapMb (%u MiB): %zu file(s), %.1f "
                 "MiB; delete old ones (snapshot-*.perch) or raise the cap ('perchd config set "
                 "SnapshotCapMb N', then restart perchd); they are in %s",
                 cap_mb, files, (double)bytes / 1048576.0, dir);
    return PERCH_ELIMIT;
}
