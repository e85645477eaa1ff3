/*
 * The few file-system calls the portable core needs beyond reading and appending files
 * (include/perch/io.h): listing a directory, a file's size, deleting, renaming, creating a
 * directory, and the wall clock used to name files. The capture rotation
 * (include/perch/capture_rotate.h) is their user. One implementation per platform, chosen by
 * CMake: src/posix/fs.c and src/win/fs.c (Win32 wide-character calls; paths are UTF-8 here and
 * converted there). Errors are PERCH_E* codes; Win32 errors are translated in src/win/error.c.
 *
 * Paths are UTF-8. perch_fs_join uses '/' on every platform (Win32 accepts it).
 */
#ifndef PERCH_FS_H
#define PERCH_FS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One regular file of a directory listing. */
typedef struct perch_fs_entry {
    char *name;        /* the file's name (no directory part), UTF-8 */
    uint64_t size;     /* bytes */
    uint64_t mtime_ms; /* last write, ms since 1970-01-01 UTC */
} perch_fs_entry;

/* Lists the regular files of dir (no subdirectories, no "." / ".."), in no particular order.
 * On success *entries (free with perch_fs_list_free) and *count are set; an empty directory
 * gives *entries NULL and *count 0. At most max_entries files are returned (PERCH_ELIMIT past
 * that, nothing returned). PERCH_ENOENT when dir does not exist, PERCH_EACCES, PERCH_ENOMEM,
 * PERCH_EIO. Outputs untouched on error. */
int perch_fs_list(const char *dir, size_t max_entries, perch_fs_entry **entries, size_t *count);

/* For the platform backends: appends an entry (name copied) to a growing listing. 0 or
 * PERCH_ENOMEM (the listing is unchanged). */
int perch__fs_list_append(perch_fs_entry **entries, size_t *count, size_t *cap, const char *name,
                          uint64_t size, uint64_t mtime_ms);

/* Frees a listing (accepts NULL). */
void perch_fs_list_free(perch_fs_entry *entries, size_t count);

/* The size in bytes of the file at path. PERCH_ENOENT, PERCH_EACCES, PERCH_EIO. */
int perch_fs_size(const char *path, uint64_t *size);

/* Deletes the file at path. PERCH_ENOENT when it does not exist, PERCH_EACCES (on Windows
 * also while another process holds it open without delete sharing), PERCH_EIO. */
int perch_fs_remove(const char *path);

/* Renames from to to, replacing to when it exists (same volume). PERCH_ENOENT, PERCH_EACCES,
 * PERCH_EIO. */
int perch_fs_rename(const char *from, const char *to);

/* Creates the directory path (its parent must exist). 0 when it already exists as a
 * directory; PERCH_EEXIST when a non-directory has that name; PERCH_ENOENT, PERCH_EACCES. */
int perch_fs_mkdir(const char *path);

/* Writes "dir/name" into a new string (free with perch_free); NULL on allocation failure.
 * No separator is added when dir is empty or already ends with '/' or '\\'. */
char *perch_fs_join(const char *dir, const char *name);

/* The wall clock: ms since 1970-01-01 UTC. The ctx argument is ignored, so the function can
 * be passed as a clock callback (perch_capture_rotate_opts.wall_ms). */
uint64_t perch_fs_wall_ms(void *ctx);

#ifdef __cplusplus
}
#endif

#endif
