/*
 * The rotating log file (src/win/logfile.h). Rotation renames from the oldest down:
 * base.(keep-1).log is deleted, base.(i).log becomes base.(i+1).log, base.log becomes
 * base.1.log, and a new base.log is started. A failed rename is not fatal: the current file
 * is truncated instead, so the log never grows past its cap.
 */
#include <windows.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "logfile.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

#define PATH_CHARS 1100

struct perch_logfile {
    HANDLE h;
    wchar_t dir[PATH_CHARS];
    wchar_t base[64];
    uint64_t size, max;
    uint32_t keep;
};

/* True for the part of a path that cannot be created: "", "C:", a UNC server or share. */
static bool is_root_prefix(const wchar_t *w, size_t n)
{
    size_t seps = 0;
    if (n == 0 || (n == 2 && w[1] == L':'))
        return true;
    if (n < 2 || w[0] != L'\\' || w[1] != L'\\')
        return false;
    for (size_t i = 2; i < n; i++)
        seps += w[i] == L'\\' || w[i] == L'/';
    return seps <= 1;
}

int perch__make_dirs(const char *dir)
{
    wchar_t *w = perch__utf8_to_wide(dir);
    int err = 0;
    if (w == NULL)
        return PERCH_EINVAL;
    size_t len = wcslen(w);
    for (size_t i = 1; i <= len && err == 0; i++) {
        if (i < len && w[i] != L'\\' && w[i] != L'/')
            continue;
        wchar_t saved = w[i];
        w[i] = L'\0';
        if (!is_root_prefix(w, i) && !CreateDirectoryW(w, NULL) &&
            GetLastError() != ERROR_ALREADY_EXISTS)
            err = perch_win_last_error();
        w[i] = saved;
    }
    DWORD attr = GetFileAttributesW(w);
    if (err == 0 && (attr == INVALID_FILE_ATTRIBUTES || !(attr & FILE_ATTRIBUTE_DIRECTORY)))
        err = PERCH_ENOENT;
    perch__free(w);
    return err;
}

static void name_of(const perch_logfile *f, uint32_t i, wchar_t *out)
{
    if (i == 0)
        swprintf(out, PATH_CHARS, L"%ls\\%ls.log", f->dir, f->base);
    else
        swprintf(out, PATH_CHARS, L"%ls\\%ls.%u.log", f->dir, f->base, i);
}

static int open_current(perch_logfile *f)
{
    wchar_t path[PATH_CHARS];
    LARGE_INTEGER size;
    name_of(f, 0, path);
    f->h = CreateFileW(path, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                       OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (f->h == INVALID_HANDLE_VALUE)
        return perch_win_last_error();
    f->size = GetFileSizeEx(f->h, &size) ? (uint64_t)size.QuadPart : 0;
    return 0;
}

int perch__logfile_open(const char *dir, const char *base, uint64_t max_bytes, uint32_t keep,
                        perch_logfile **out)
{
    if (dir == NULL || base == NULL || out == NULL || max_bytes < 1024 || keep < 1 ||
        strlen(base) >= 64)
        return PERCH_EINVAL;
    int err = perch__make_dirs(dir);
    if (err < 0)
        return err;
    perch_logfile *f = perch__calloc(1, sizeof *f);
    wchar_t *wdir = perch__utf8_to_wide(dir), *wbase = perch__utf8_to_wide(base);
    err = f && wdir && wbase && wcslen(wdir) < PATH_CHARS - 80 ? 0 : PERCH_ENOMEM;
    if (err == 0) {
        wcscpy(f->dir, wdir);
        wcscpy(f->base, wbase);
        f->max = max_bytes;
        f->keep = keep;
        err = open_current(f);
    }
    perch__free(wdir);
    perch__free(wbase);
    if (err < 0) {
        perch__free(f);
        return err;
    }
    *out = f;
    return 0;
}

static int rotate(perch_logfile *f)
{
    wchar_t from[PATH_CHARS], to[PATH_CHARS];
    CloseHandle(f->h);
    f->h = INVALID_HANDLE_VALUE;
    for (uint32_t i = f->keep - 1; i > 0; i--) {
        name_of(f, i - 1, from);
        name_of(f, i, to);
        MoveFileExW(from, to, MOVEFILE_REPLACE_EXISTING);
    }
    name_of(f, 0, from);
    if (f->keep == 1 || GetFileAttributesW(from) != INVALID_FILE_ATTRIBUTES)
        DeleteFileW(from); /* keep == 1, or the rename failed: start over */
    return open_current(f);
}

int perch__logfile_write(perch_logfile *f, const char *line, size_t len)
{
    DWORD n = 0;
    if (f == NULL)
        return PERCH_EINVAL;
    if (f->h != INVALID_HANDLE_VALUE && f->size > 0 && f->size + len > f->max) {
        int err = rotate(f);
        if (err < 0)
            return err;
    }
    if (f->h == INVALID_HANDLE_VALUE && open_current(f) < 0)
        return PERCH_EIO;
    if (!WriteFile(f->h, line, (DWORD)len, &n, NULL))
        return perch_win_last_error();
    f->size += n;
    return 0;
}

void perch__logfile_close(perch_logfile *f)
{
    if (f == NULL)
        return;
    if (f->h != INVALID_HANDLE_VALUE)
        CloseHandle(f->h);
    perch__free(f);
}
