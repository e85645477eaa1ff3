/*
 * Windows file backends of include/perch/io.h: CreateFileW on the UTF-16 form of a UTF-8
 * path; positioned reads with ReadFile and an OVERLAPPED offset (synchronous handle, so the
 * OVERLAPPED only carries the offset); appends with WriteFile; durability with
 * FlushFileBuffers; a deferred output truncated by SetEndOfFile at its first write. The
 * scratch file of include/perch/scratch.h: GetTempFileNameW in the folder, reopened
 * FILE_FLAG_DELETE_ON_CLOSE, positioned reads and writes. Win32 errors are translated by
 * src/win/error.c, the one place for that.
 */
#include <windows.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/scratch.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

struct file_ctx {
    HANDLE h;
};

static bool is_directory(const wchar_t *wpath)
{
    DWORD attr = GetFileAttributesW(wpath);
    return attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY) != 0;
}

static int open_handle(const char *path, DWORD access, DWORD disposition, HANDLE *out)
{
    wchar_t *wpath = perch__utf8_to_wide(path);
    HANDLE h;
    if (wpath == NULL)
        return PERCH_EINVAL;
    /* a reader lets others write and delete (perchd's disk cap deletes old files a client
     * may be fetching or reporting on: the reader keeps its bytes until it closes) */
    h = CreateFileW(wpath, access,
                    FILE_SHARE_READ |
                        (access == GENERIC_READ ? FILE_SHARE_WRITE | FILE_SHARE_DELETE : 0),
                    NULL, disposition, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        int err = perch_win_last_error(); /* before perch__free(), which may touch the last error */
        if (is_directory(wpath))          /* CreateFileW says only "access denied" for one */
            err = PERCH_EISDIR;
        perch__free(wpath);
        return err;
    }
    perch__free(wpath);
    *out = h;
    return 0;
}

static int file_read_at(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    const struct file_ctx *f = ctx;
    OVERLAPPED ov;
    DWORD n = 0, want = len > 0x40000000u ? 0x40000000u : (DWORD)len;
    ZeroMemory(&ov, sizeof ov);
    ov.Offset = (DWORD)(off & 0xffffffffu);
    ov.OffsetHigh = (DWORD)(off >> 32);
    *got = 0;
    if (!ReadFile(f->h, buf, want, &n, &ov)) {
        DWORD e = GetLastError();
        return e == ERROR_HANDLE_EOF ? 0 : perch_win_error(e);
    }
    *got = n;
    return 0;
}

/* A context owning h; on allocation failure h is closed and NULL returned. */
static struct file_ctx *wrap_handle(HANDLE h)
{
    struct file_ctx *f = perch__alloc(sizeof *f);
    if (f == NULL) {
        CloseHandle(h);
        return NULL;
    }
    f->h = h;
    return f;
}

static void file_in_close(void *ctx)
{
    struct file_ctx *f = ctx;
    CloseHandle(f->h);
    perch__free(f);
}

int perch_input_open_file(perch_input *in, const char *path)
{
    LARGE_INTEGER size;
    struct file_ctx *f;
    HANDLE h = INVALID_HANDLE_VALUE;
    int err = open_handle(path, GENERIC_READ, OPEN_EXISTING, &h);
    if (err < 0)
        return err;
    if (!GetFileSizeEx(h, &size)) {
        err = perch_win_last_error();
        CloseHandle(h);
        return err;
    }
    if ((f = wrap_handle(h)) == NULL)
        return PERCH_ENOMEM;
    in->read_at = file_read_at;
    in->close = file_in_close;
    in->size = (uint64_t)size.QuadPart;
    in->ctx = f;
    return 0;
}

static int file_write(void *ctx, const void *buf, size_t len)
{
    const struct file_ctx *f = ctx;
    const uint8_t *p = buf;
    while (len > 0) {
        DWORD n = 0, want = len > 0x40000000u ? 0x40000000u : (DWORD)len;
        if (!WriteFile(f->h, p, want, &n, NULL))
            return perch_win_last_error();
        if (n == 0)
            return PERCH_EIO;
        p += n;
        len -= n;
    }
    return 0;
}

static int file_sync(void *ctx)
{
    const struct file_ctx *f = ctx;
    return FlushFileBuffers(f->h) ? 0 : perch_win_last_error();
}

static int file_out_close(void *ctx)
{
    struct file_ctx *f = ctx;
    int err = CloseHandle(f->h) ? 0 : perch_win_last_error();
    perch__free(f);
    return err;
}

static int open_output(perch_output *out, const char *path, DWORD disposition)
{
    struct file_ctx *f = perch__alloc(sizeof *f); /* first: no file is made to fail after */
    if (f == NULL)
        return PERCH_ENOMEM;
    int err = open_handle(path, GENERIC_WRITE, disposition, &f->h);
    if (err < 0) {
        perch__free(f);
        return err;
    }
    out->write = file_write;
    out->sync = file_sync;
    out->close = file_out_close;
    out->ctx = f;
    return 0;
}

int perch_output_open_file(perch_output *out, const char *path)
{
    return open_output(out, path, CREATE_ALWAYS);
}

int perch_output_create_file(perch_output *out, const char *path)
{
    return open_output(out, path, CREATE_NEW);
}

/* A file opened by perch_output_open_file_deferred: opened without truncation, truncated at
 * its first write or its close (SetEndOfFile at offset 0, where nothing was written yet). */
struct late_file {
    struct file_ctx f; /* first: file_write and file_sync take it */
    bool truncate;     /* a disk file not truncated yet */
};

static int late_truncate(struct late_file *l)
{
    if (!l->truncate)
        return 0;
    l->truncate = false;
    return SetEndOfFile(l->f.h) ? 0 : perch_win_last_error();
}

static int late_write(void *ctx, const void *buf, size_t len)
{
    struct late_file *l = ctx;
    int err = late_truncate(l);
    return err ? err : file_write(&l->f, buf, len);
}

static int late_close(void *ctx)
{
    struct late_file *l = ctx;
    int err = late_truncate(l);
    int cerr = CloseHandle(l->f.h) ? 0 : perch_win_last_error();
    perch__free(l);
    return err ? err : cerr;
}

int perch_output_open_file_deferred(perch_output *out, const char *path)
{
    struct late_file *l;
    HANDLE h = INVALID_HANDLE_VALUE;
    int err = open_handle(path, GENERIC_WRITE, OPEN_ALWAYS, &h);
    if (err < 0)
        return err;
    if ((l = perch__alloc(sizeof *l)) == NULL) {
        CloseHandle(h);
        return PERCH_ENOMEM;
    }
    l->f.h = h;
    l->truncate = GetFileType(h) == FILE_TYPE_DISK; /* not a device or a pipe */
    out->write = late_write;
    out->sync = file_sync;
    out->close = late_close;
    out->ctx = l;
    return 0;
}

static int scratch_write_at(void *ctx, uint64_t off, const void *buf, size_t len)
{
    const struct file_ctx *f = ctx;
    const uint8_t *p = buf;
    while (len > 0) {
        OVERLAPPED ov;
        DWORD n = 0, want = len > 0x40000000u ? 0x40000000u : (DWORD)len;
        ZeroMemory(&ov, sizeof ov);
        ov.Offset = (DWORD)(off & 0xffffffffu);
        ov.OffsetHigh = (DWORD)(off >> 32);
        if (!WriteFile(f->h, p, want, &n, &ov))
            return perch_win_last_error();
        if (n == 0)
            return PERCH_EIO;
        p += n;
        off += n;
        len -= n;
    }
    return 0;
}

static int scratch_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
    perch_input in = {file_read_at, NULL, 0, ctx}; /* the file as an input: read exactly */
    return perch_input_read_exact(&in, off, buf, len);
}

/* A new empty temporary file in wdir (which ends with a backslash or not), delete-on-close. */
static int temp_handle(const wchar_t *wdir, HANDLE *out)
{
    wchar_t name[MAX_PATH + 1];
    HANDLE h;
    if (GetTempFileNameW(wdir, L"prc", 0, name) == 0)
        return perch_win_last_error();
    h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                    FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        int err = perch_win_last_error();
        DeleteFileW(name);
        return err;
    }
    *out = h;
    return 0;
}

int perch_scratch_open_file(perch_scratch *s, const char *dir)
{
    wchar_t tmp[MAX_PATH + 1], *wdir = dir ? perch__utf8_to_wide(dir) : NULL;
    struct file_ctx *f;
    HANDLE h = INVALID_HANDLE_VALUE;
    int err;
    if (dir != NULL && wdir == NULL)
        return PERCH_EINVAL;
    if (dir == NULL && GetTempPathW(MAX_PATH + 1, tmp) == 0)
        return perch_win_last_error();
    err = temp_handle(wdir ? wdir : tmp, &h);
    perch__free(wdir);
    if (err < 0)
        return err;
    if ((f = wrap_handle(h)) == NULL)
        return PERCH_ENOMEM;
    s->write_at = scratch_write_at;
    s->read_at = scratch_read_at;
    s->close = file_in_close;
    s->ctx = f;
    return 0;
}
