/*
 * Windows implementation of include/perch/fs.h: FindFirstFileW/FindNextFileW for listings,
 * GetFileAttributesExW, DeleteFileW, MoveFileExW (replacing), CreateDirectoryW, and
 * GetSystemTimeAsFileTime for the wall clock. Paths are converted from UTF-8 (wstr.h); Win32
 * errors are translated by src/win/error.c.
 */
#include <windows.h>
#include <stdbool.h>
#include <string.h>

#include "perch/error.h"
#include "perch/fs.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

/* FILETIME ticks (100 ns since 1601) at 1970-01-01. */
#define EPOCH_1970 116444736000000000ull

static uint64_t filetime_ms(FILETIME ft)
{
    uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    return t > EPOCH_1970 ? (t - EPOCH_1970) / 10000u : 0;
}

static int add_entry(const WIN32_FIND_DATAW *fd, perch_fs_entry **v, size_t *n, size_t *cap)
{
    char name[MAX_PATH * 3 + 1]; /* cFileName holds at most MAX_PATH UTF-16 units */
    int err = perch__wide_to_utf8(fd->cFileName, name, sizeof name);
    if (err)
        return err;
    return perch__fs_list_append(v, n, cap, name,
                                 (uint64_t)fd->nFileSizeHigh << 32 | fd->nFileSizeLow,
                                 filetime_ms(fd->ftLastWriteTime));
}

static bool is_file(const WIN32_FIND_DATAW *fd)
{
    return (fd->dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)) == 0;
}

int perch_fs_list(const char *dir, size_t max_entries, perch_fs_entry **entries, size_t *count)
{
    WIN32_FIND_DATAW fd;
    perch_fs_entry *v = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    char *pattern = perch_fs_join(dir, "*");
    wchar_t *w = pattern ? perch__utf8_to_wide(pattern) : NULL;
    perch__free(pattern);
    if (!w)
        return PERCH_ENOMEM;
    HANDLE h = FindFirstFileW(w, &fd);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError(); /* before perch__free(), which may touch it */
        perch__free(w);
        if (e != ERROR_FILE_NOT_FOUND) /* that one: no entry at all */
            return perch_win_error(e);
        *entries = NULL;
        *count = 0;
        return 0;
    }
    perch__free(w);
    do {
        if (is_file(&fd))
            err = n >= max_entries ? PERCH_ELIMIT : add_entry(&fd, &v, &n, &cap);
    } while (err == 0 && FindNextFileW(h, &fd));
    FindClose(h);
    if (err < 0) {
        perch_fs_list_free(v, n);
        return err;
    }
    *entries = v;
    *count = n;
    return 0;
}

/* Runs a one-path Win32 call with the UTF-16 path. */
static int with_wide(const char *path, BOOL (*call)(const wchar_t *, void *), void *arg)
{
    wchar_t *w = perch__utf8_to_wide(path);
    if (!w)
        return PERCH_EINVAL;
    int err = call(w, arg) ? 0 : perch_win_last_error(); /* read before perch__free() */
    perch__free(w);
    return err;
}

static BOOL get_size(const wchar_t *w, void *arg)
{
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (!GetFileAttributesExW(w, GetFileExInfoStandard, &a))
        return FALSE;
    *(uint64_t *)arg = (uint64_t)a.nFileSizeHigh << 32 | a.nFileSizeLow;
    return TRUE;
}

int perch_fs_size(const char *path, uint64_t *size)
{
    uint64_t s = 0;
    int err = with_wide(path, get_size, &s);
    if (err == 0)
        *size = s;
    return err;
}

static BOOL delete_file(const wchar_t *w, void *arg)
{
    (void)arg;
    return DeleteFileW(w);
}

int perch_fs_remove(const char *path)
{
    return with_wide(path, delete_file, NULL);
}

static BOOL move_to(const wchar_t *w, void *arg)
{
    return MoveFileExW(w, arg, MOVEFILE_REPLACE_EXISTING);
}

int perch_fs_rename(const char *from, const char *to)
{
    wchar_t *wt = perch__utf8_to_wide(to);
    if (!wt)
        return PERCH_EINVAL;
    int err = with_wide(from, move_to, wt);
    perch__free(wt);
    return err;
}

static BOOL make_dir(const wchar_t *w, void *arg)
{
    DWORD attr;
    (void)arg;
    if (CreateDirectoryW(w, NULL))
        return TRUE;
    if (GetLastError() != ERROR_ALREADY_EXISTS)
        return FALSE;
    attr = GetFileAttributesW(w);
    if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY))
        return TRUE;
    SetLastError(ERROR_ALREADY_EXISTS);
    return FALSE;
}

int perch_fs_mkdir(const char *path)
{
    return with_wide(path, make_dir, NULL);
}

uint64_t perch_fs_wall_ms(void *ctx)
{
    FILETIME ft;
    (void)ctx;
    GetSystemTimeAsFileTime(&ft);
    return filetime_ms(ft);
}
