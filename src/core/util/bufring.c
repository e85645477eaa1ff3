/*
 * The ring of buffers between a producer and a thread that consumes them (bufring.h).
 * Buffers are used in ring order: the thread consumes from `head`, `full` of them wait (the
 * one being consumed included), and the producer fills the one after them. Every hand-over
 * goes through the mutex, which orders the two threads' accesses to the buffers.
 */
#include <stdatomic.h>
#include <string.h>

#include "perch/error.h"
#include "perch/thread.h"
#include "util/bufring.h"
#include "util/mem.h"

struct perch__bufring {
    perch_mutex *mu;
    perch_cond *ready; /* the thread waits for a full buffer or the stop */
    perch_cond *room;  /* the producer waits for a free buffer or an empty ring */
    perch_thread *thread;
    perch__bufring_consume consume;
    void *ctx;
    unsigned count, wake;
    unsigned head, full; /* under mu */
    bool stop;           /* under mu */
    _Atomic int error;
    size_t *len; /* bytes of each handed-over buffer */
    uint8_t **buf;
};

static void keep_error(perch__bufring *r, int err)
{
    int none = 0;
    if (err)
        atomic_compare_exchange_strong(&r->error, &none, err);
}

static int ring_main(void *arg)
{
    perch__bufring *r = arg;
    keep_error(r, r->consume(r->ctx, r->buf[0], 0));
    perch_mutex_lock(r->mu);
    for (;;) {
        while (r->full == 0 && !r->stop)
            perch_cond_wait(r->ready, r->mu, UINT32_MAX);
        if (r->full == 0)
            break; /* stopped, and every buffer is consumed */
        unsigned i = r->head;
        perch_mutex_unlock(r->mu);
        if (!atomic_load(&r->error))
            keep_error(r, r->consume(r->ctx, r->buf[i], r->len[i]));
        perch_mutex_lock(r->mu);
        r->head = (r->head + 1) % r->count;
        r->full--;
        perch_cond_signal(r->room);
    }
    perch_mutex_unlock(r->mu);
    return 0;
}

int perch__bufring_hand_over(perch__bufring *r, perch__bufring_fill *f, bool drain)
{
    perch_mutex_lock(r->mu);
    if (f->used) {
        r->len[(r->head + r->full) % r->count] = f->used;
        r->full++;
    }
    if (r->full >= r->wake || (drain && r->full))
        perch_cond_signal(r->ready);
    while (drain ? r->full > 0 : r->full == r->count)
        perch_cond_wait(r->room, r->mu, UINT32_MAX);
    f->fill = r->buf[(r->head + r->full) % r->count];
    f->used = 0;
    perch_mutex_unlock(r->mu);
    return atomic_load(&r->error);
}

int perch__bufring_error(perch__bufring *r)
{
    /* acquire: what consume wrote before its error (an output guard's flag, say) is seen
     * with it (the error itself was stored by a sequentially consistent exchange) */
    return atomic_load_explicit(&r->error, memory_order_acquire);
}

/* Stops and joins the thread (when started); it consumes every buffer handed over first. */
static void ring_join(perch__bufring *r)
{
    if (!r->thread)
        return;
    perch_mutex_lock(r->mu);
    r->stop = true;
    perch_cond_signal(r->ready);
    perch_mutex_unlock(r->mu);
    perch_thread_join(r->thread, NULL);
    r->thread = NULL;
}

static void ring_free(perch__bufring *r)
{
    ring_join(r);
    perch_cond_destroy(r->room);
    perch_cond_destroy(r->ready);
    perch_mutex_destroy(r->mu);
    for (unsigned i = 0; r->buf && i < r->count; i++)
        perch__free(r->buf[i]);
    perch__free(r->buf);
    perch__free(r->len);
    perch__free(r);
}

int perch__bufring_stop(perch__bufring *r)
{
    if (!r)
        return 0;
    ring_join(r);
    int err = atomic_load(&r->error);
    ring_free(r);
    return err;
}

int perch__bufring_start(unsigned count, size_t cap, unsigned wake, perch__bufring_consume consume,
                         void *ctx, const char *name, perch__bufring **out,
                         perch__bufring_fill *f)
{
    perch__bufring *r = perch__calloc(1, sizeof *r);
    int err = r ? 0 : PERCH_ENOMEM;
    if (err)
        return err;
    r->consume = consume;
    r->ctx = ctx;
    r->count = count;
    r->wake = wake;
    atomic_init(&r->error, 0);
    r->buf = perch__calloc(count, sizeof *r->buf);
    r->len = perch__calloc(count, sizeof *r->len);
    err = r->buf && r->len ? 0 : PERCH_ENOMEM;
    for (unsigned i = 0; i < count && !err; i++)
        err = (r->buf[i] = perch__alloc(cap)) ? 0 : PERCH_ENOMEM;
    err = err ? err : perch_mutex_create(&r->mu);
    err = err ? err : perch_cond_create(&r->ready);
    err = err ? err : perch_cond_create(&r->room);
    err = err ? err : perch_thread_start(ring_main, r, name, &r->thread);
    if (err) {
        ring_free(r);
        return err;
    }
    *f = (perch__bufring_fill){r->buf[0], 0, cap};
    *out = r;
    return 0;
}
