/*
 * POSIX file backends of include/perch/io.h: positioned reads with pread, appends with
 * write, durability with fsync; and the scratch file of include/perch/scratch.h (mkstemp,
 * unlinked at once, pread/pwrite).
 */
#define _POSIX_C_SOURCE   200809L
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errno_map.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/scratch.h"
#include "util/mem.h"
#include "writeback.h"

struct file_ctx {
    int fd;
};

static int file_read_at(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    const struct file_ctx *f = ctx;
    ssize_t n;
    do {
        n = pread(f->fd, buf, len, (off_t)off);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return perch__posix_error(errno);
    *got = (size_t)n;
    return 0;
}

static void file_in_close(void *ctx)
{
    struct file_ctx *f = ctx;
    close(f->fd);
    perch__free(f);
}

/* Opens path with flags (mode 0644 when it creates) and fstats it into *st; the descriptor in
 * *fd, or an error with nothing left open. */
static int open_stat(const char *path, int flags, struct stat *st, int *fd)
{
    int err;
    *fd = open(path, flags, 0644);
    if (*fd < 0)
        return perch__posix_error(errno);
    if (fstat(*fd, st) == 0)
        return 0;
    err = perch__posix_error(errno);
    close(*fd);
    return err;
}

int perch_input_open_file(perch_input *in, const char *path)
{
    struct stat st;
    struct file_ctx *f;
    int fd, err = open_stat(path, O_RDONLY, &st, &fd);
    if (err)
        return err;
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return PERCH_EISDIR;
    }
    f = perch__alloc(sizeof *f);
    if (!f) {
        close(fd);
        return PERCH_ENOMEM;
    }
    f->fd = fd;
    in->read_at = file_read_at;
    in->close = file_in_close;
    in->size = (uint64_t)st.st_size;
    in->ctx = f;
    return 0;
}

static int file_write(void *ctx, const void *buf, size_t len)
{
    const struct file_ctx *f = ctx;
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(f->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? perch__posix_error(errno) : PERCH_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int file_sync(void *ctx)
{
    const struct file_ctx *f = ctx;
    return fsync(f->fd) == 0 ? 0 : perch__posix_error(errno);
}

static int file_out_close(void *ctx)
{
    struct file_ctx *f = ctx;
    int err = close(f->fd) == 0 ? 0 : perch__posix_error(errno);
    perch__free(f);
    return err;
}

static int open_output(perch_output *out, const char *path, int how)
{
    struct file_ctx *f = perch__alloc(sizeof *f); /* first: no file is made to fail after */
    if (!f)
        return PERCH_ENOMEM;
    int fd = open(path, O_WRONLY | O_CREAT | how, 0644);
    if (fd < 0) {
        int err = perch__posix_error(errno);
        perch__free(f);
        return err;
    }
    f->fd = fd;
    out->write = file_write;
    out->sync = file_sync;
    out->close = file_out_close;
    out->ctx = f;
    return 0;
}

int perch_output_open_file(perch_output *out, const char *path)
{
    return open_output(out, path, O_TRUNC);
}

int perch_output_create_file(perch_output *out, const char *path)
{
    return open_output(out, path, O_EXCL);
}

/* A file opened by perch_output_open_file_deferred: truncated at its first write or close, its
 * bytes handed to writeback every step (writeback.h), and the bytes handed more than
 * PERCH_POSIX_DROP_LAG steps before dropped from the page cache. */
#define WRITEBACK_STEP ((uint64_t)16 << 20)
struct late_file {
    struct file_ctx f; /* first: file_write and file_sync take it */
    bool truncate;     /* a regular file not truncated yet */
    bool regular;
    uint64_t step;                     /* bytes between hand-overs */
    uint64_t written, handed, dropped; /* bytes written, handed to writeback, dropped */
};

static int late_truncate(struct late_file *l)
{
    if (!l->truncate)
        return 0;
    l->truncate = false;
    return ftruncate(l->f.fd, 0) == 0 ? 0 : perch__posix_error(errno);
}

static int late_write(void *ctx, const void *buf, size_t len)
{
    struct late_file *l = ctx;
    int err = late_truncate(l);
    if (!err)
        err = file_write(&l->f, buf, len);
    if (err)
        return err;
    l->written += len;
    if (l->regular && l->written - l->handed >= l->step) {
        perch__posix_writeback(l->f.fd, l->handed, l->written - l->handed);
        l->handed = l->written;
        uint64_t lag = PERCH_POSIX_DROP_LAG * l->step;
        if (l->handed - l->dropped >= lag + l->step) {
            perch__posix_drop_cache(l->f.fd, l->dropped, l->handed - lag - l->dropped);
            l->dropped = l->handed - lag;
        }
    }
    return 0;
}

static int late_close(void *ctx)
{
    struct late_file *l = ctx;
    int err = late_truncate(l);
    int cerr = close(l->f.fd) == 0 ? 0 : perch__posix_error(errno);
    perch__free(l);
    return err ? err : cerr;
}

int perch_output_open_file_deferred(perch_output *out, const char *path)
{
    struct late_file *l;
    struct stat st;
    int fd, err = open_stat(path, O_WRONLY | O_CREAT, &st, &fd);
    if (err)
        return err;
    if ((l = perch__alloc(sizeof *l)) == NULL) {
        close(fd);
        return PERCH_ENOMEM;
    }
    l->f.fd = fd;
    l->regular = S_ISREG(st.st_mode);
    l->truncate = l->regular; /* O_TRUNC does nothing to a device or a pipe either */
    l->step = perch__posix_writeback_step ? perch__posix_writeback_step : WRITEBACK_STEP;
    l->written = l->handed = l->dropped = 0;
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
    while (len) {
        ssize_t n = pwrite(f->fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? perch__posix_error(errno) : PERCH_EIO;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

static int scratch_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
    perch_input in = {file_read_at, NULL, 0, ctx}; /* the file as an input: read exactly */
    return perch_input_read_exact(&in, off, buf, len);
}

int perch_scratch_open_file(perch_scratch *s, const char *dir)
{
    const char *d = dir ? dir : getenv("TMPDIR");
    size_t n = strlen(d && *d ? d : "/tmp");
    char *path = perch__alloc(n + sizeof "/perch-scratch-XXXXXX");
    struct file_ctx *f = perch__alloc(sizeof *f);
    int fd = -1, err = 0;
    if (path == NULL || f == NULL) {
        err = PERCH_ENOMEM;
        goto out_free;
    }
    memcpy(path, d && *d ? d : "/tmp", n);
    memcpy(path + n, "/perch-scratch-XXXXXX", sizeof "/perch-scratch-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0) {
        err = perch__posix_error(errno);
        goto out_free;
    }
    unlink(path); /* gone with the last descriptor, even if the process dies */
    f->fd = fd;
    s->write_at = scratch_write_at;
    s->read_at = scratch_read_at;
    s->close = file_in_close;
    s->ctx = f;
    f = NULL;
out_free:
    perch__free(f);
    perch__free(path);
    return err;
}
