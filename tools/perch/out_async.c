/*
 * The threaded output of perch export (out_async.h). The exporter's writes are copied into
 * the buffer it fills; a full buffer is handed to the writer thread, which passes it to the
 * original output while the next ones fill (a ring of RING buffers, util/bufring.h). The
 * first error of the original output is kept and returned by every later call (the thread
 * then only empties the ring).
 */
#include <string.h>

#include "out_async.h"
#include "perch/error.h"
#include "util/bufring.h"
#include "util/mem.h"

#define RING           4u
#define DEFAULT_BUFFER (256u << 10)
/* Full buffers that wake a waiting writer (a drain or a stop wakes it at once): the writer
 * is faster than the formatting, so it had emptied the ring and slept at every hand-over,
 * and waking it (a futex call and, on a VM, an interrupt to the other vCPU) cost the
 * exporter's thread ~2 % of chrome's time at 512 MB. It now writes two buffers a wake. */
#define WAKE 2u

struct out_async {
    perch_output inner;
    perch__bufring *ring;
    perch__bufring_fill f;
};

/* The ring's consumer: the original output's write (first an empty one, when the thread
 * starts: an output with work before its first bytes, a file truncated late, does it now,
 * beside the exporter's first pass). */
static int write_inner(void *ctx, const uint8_t *data, size_t len)
{
    struct out_async *a = ctx;
    return a->inner.write(a->inner.ctx, len ? data : (const uint8_t *)"", len);
}

static int async_write(void *ctx, const void *data, size_t len)
{
    struct out_async *a = ctx;
    const char *p = data;
    int err = perch__bufring_error(a->ring);
    while (!err && len) {
        size_t n = a->f.cap - a->f.used < len ? a->f.cap - a->f.used : len;
        memcpy(a->f.fill + a->f.used, p, n);
        a->f.used += n;
        p += n;
        len -= n;
        if (a->f.used == a->f.cap)
            err = perch__bufring_hand_over(a->ring, &a->f, false);
    }
    return err;
}

static int async_sync(void *ctx)
{
    struct out_async *a = ctx;
    int err = perch__bufring_hand_over(a->ring, &a->f, true);
    return err ? err : a->inner.sync(a->inner.ctx);
}

static int async_close(void *ctx)
{
    struct out_async *a = ctx;
    perch_output inner = a->inner;
    int err = perch__bufring_hand_over(a->ring, &a->f, true);
    int rerr = perch__bufring_stop(a->ring);
    perch__free(a);
    int cerr = inner.close ? inner.close(inner.ctx) : 0;
    return err ? err : rerr ? rerr : cerr;
}

int perch_cli_out_async(perch_output *out, size_t buffer_bytes)
{
    struct out_async *a = perch__calloc(1, sizeof *a);
    if (!a)
        return PERCH_ENOMEM;
    a->inner = *out;
    int err = perch__bufring_start(RING, buffer_bytes ? buffer_bytes : DEFAULT_BUFFER, WAKE,
                                   write_inner, a, "perch-out", &a->ring, &a->f);
    if (err) {
        perch__free(a);
        return err;
    }
    out->write = async_write;
    out->sync = out->sync ? async_sync : NULL;
    out->close = async_close;
    out->ctx = a;
    return 0;
}
