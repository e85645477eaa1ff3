/*
 * The threaded output of perch export (out_async.h). The exporter's writes are copied into
 * the buffer it fills; a full buffer is handed to the writer thread, which passes it to the
 * original output while the next ones fill (a ring of RING buffers). Buffers are used in ring
 * order: the thread writes from `head`, `full` of them wait (the one being written included),
 * and the exporter fills the one after them. Every hand-over goes through the mutex, which
 * orders the two threads' accesses to the buffers; the first error of the original output is
 * kept and returned by every later call (the thread then only empties the ring).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "out_async.h"
#include "perch/error.h"
#include "perch/thread.h"
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
    perch_mutex *mu;
    perch_cond *ready; /* the thread waits for a full buffer or the stop */
    perch_cond *room;  /* the exporter waits for a free buffer or an empty ring */
    perch_thread *thread;
    char *buf[RING];
    size_t len[RING]; /* bytes of each handed-over buffer */
    size_t cap;
    unsigned head, full; /* under mu */
    bool stop;           /* under mu */
    char *fill;          /* the buffer the exporter fills (buf[(head + full) % RING]) */
    size_t used;
    _Atomic int error;
};

static int writer_main(void *arg)
{
    struct out_async *a = arg;
    /* An empty write first: an output with work before its first bytes (a file truncated
     * late, perch_output_open_file_deferred) does it now, beside the exporter's first pass. */
    int first = a->inner.write(a->inner.ctx, "", 0), unset = 0;
    if (first)
        atomic_compare_exchange_strong(&a->error, &unset, first);
    perch_mutex_lock(a->mu);
    for (;;) {
        while (a->full == 0 && !a->stop)
            perch_cond_wait(a->ready, a->mu, UINT32_MAX);
        if (a->full == 0)
            break; /* stopped, and every buffer is written */
        unsigned i = a->head;
        perch_mutex_unlock(a->mu);
        int err = atomic_load(&a->error) ? 0 : a->inner.write(a->inner.ctx, a->buf[i], a->len[i]);
        int none = 0;
        if (err)
            atomic_compare_exchange_strong(&a->error, &none, err);
        perch_mutex_lock(a->mu);
        a->head = (a->head + 1) % RING;
        a->full--;
        perch_cond_signal(a->room);
    }
    perch_mutex_unlock(a->mu);
    return 0;
}

/* Hands the buffer being filled (when it holds anything) to the thread and takes the next
 * free one; with drain, also waits until the thread wrote every buffer. */
static int hand_over(struct out_async *a, bool drain)
{
    perch_mutex_lock(a->mu);
    if (a->used) {
        a->len[(a->head + a->full) % RING] = a->used;
        a->full++;
    }
    if (a->full >= WAKE || (drain && a->full))
        perch_cond_signal(a->ready);
    while (drain ? a->full > 0 : a->full == RING)
        perch_cond_wait(a->room, a->mu, UINT32_MAX);
    a->fill = a->buf[(a->head + a->full) % RING];
    a->used = 0;
    perch_mutex_unlock(a->mu);
    return atomic_load(&a->error);
}

static int async_write(void *ctx, const void *data, size_t len)
{
    struct out_async *a = ctx;
    const char *p = data;
    int err = atomic_load(&a->error);
    while (!err && len) {
        size_t n = a->cap - a->used < len ? a->cap - a->used : len;
        memcpy(a->fill + a->used, p, n);
        a->used += n;
        p += n;
        len -= n;
        if (a->used == a->cap)
            err = hand_over(a, false);
    }
    return err;
}

static int async_sync(void *ctx)
{
    struct out_async *a = ctx;
    int err = hand_over(a, true);
    return err ? err : a->inner.sync(a->inner.ctx);
}

/* Stops and joins the thread (when started) and frees a; the original output stays open. */
static void async_free(struct out_async *a)
{
    if (a->thread) {
        perch_mutex_lock(a->mu);
        a->stop = true;
        perch_cond_signal(a->ready);
        perch_mutex_unlock(a->mu);
        perch_thread_join(a->thread, NULL);
    }
    perch_cond_destroy(a->room);
    perch_cond_destroy(a->ready);
    perch_mutex_destroy(a->mu);
    for (unsigned i = 0; i < RING; i++)
        perch__free(a->buf[i]);
    perch__free(a);
}

static int async_close(void *ctx)
{
    struct out_async *a = ctx;
    perch_output inner = a->inner;
    int err = hand_over(a, true);
    async_free(a);
    int cerr = inner.close ? inner.close(inner.ctx) : 0;
    return err ? err : cerr;
}

int perch_cli_out_async(perch_output *out, size_t buffer_bytes)
{
    struct out_async *a = perch__calloc(1, sizeof *a);
    int err = a ? 0 : PERCH_ENOMEM;
    if (err)
        return err;
    a->inner = *out;
    a->cap = buffer_bytes ? buffer_bytes : DEFAULT_BUFFER;
    atomic_init(&a->error, 0);
    for (unsigned i = 0; i < RING && !err; i++)
        err = (a->buf[i] = perch__alloc(a->cap)) ? 0 : PERCH_ENOMEM;
    err = err ? err : perch_mutex_create(&a->mu);
    err = err ? err : perch_cond_create(&a->ready);
    err = err ? err : perch_cond_create(&a->room);
    err = err ? err : perch_thread_start(writer_main, a, "perch-out", &a->thread);
    if (err) {
        async_free(a);
        return err;
    }
    a->fill = a->buf[0];
    out->write = async_write;
    out->sync = out->sync ? async_sync : NULL;
    out->close = async_close;
    out->ctx = a;
    return 0;
}
