/*
 * A ring of buffers handed from one thread to another (bufring.c). The producer fills the
 * buffer `fill` (cap bytes, `used` of them so far) and hands it over; the ring's thread
 * passes each handed-over buffer, in order, to consume(ctx, data, len) while the producer
 * fills the next ones. Bounded: `count` buffers, and the producer waits only when all of them
 * are full. The thread is woken when `wake` buffers are full (or at a drain or the stop), not
 * at every hand-over: a consumer faster than its producer empties the ring and sleeps, and
 * each wake costs the producer a futex call. The first error of consume is kept and returned
 * by every later hand-over; the buffers after it are not consumed (the thread only empties
 * the ring). Used by perch export's output thread (tools/perch/out_async.c) and the chrome
 * export's second formatter (export/chrome_async.c).
 */
#ifndef PERCH_UTIL_BUFRING_H
#define PERCH_UTIL_BUFRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct perch__bufring perch__bufring;

/* The producer's side: the buffer being filled. */
typedef struct perch__bufring_fill {
    uint8_t *fill;
    size_t used, cap;
} perch__bufring_fill;

/* Receives a handed-over buffer on the ring's thread; returns 0 or a negative PERCH_E*. It is
 * called once with len 0 when the thread starts (an output with work before its first bytes,
 * perch_output_open_file_deferred, does it then, beside the producer's first work). */
typedef int (*perch__bufring_consume)(void *ctx, const uint8_t *data, size_t len);

/* Starts the ring's thread (named name) with count buffers of cap bytes each (count >= 2,
 * wake 1..count). *f receives the first buffer to fill. Returns 0, PERCH_ENOMEM or the thread
 * error; *out untouched on error. */
int perch__bufring_start(unsigned count, size_t cap, unsigned wake, perch__bufring_consume consume,
                         void *ctx, const char *name, perch__bufring **out,
                         perch__bufring_fill *f);

/* Hands f's buffer (when it holds anything) to the thread and puts the next free one in *f;
 * with drain, also waits until the thread consumed every buffer. Returns consume's first
 * error (0: none). */
int perch__bufring_hand_over(perch__bufring *r, perch__bufring_fill *f, bool drain);

/* consume's first error so far (0: none), without waiting; what the thread did before the
 * error is visible once it is seen. */
int perch__bufring_error(perch__bufring *r);

/* Stops the thread once it consumed every buffer handed over, joins it and frees r; what is
 * left in the producer's buffer is dropped (hand it over with drain first). Returns consume's
 * first error. Accepts NULL (0). */
int perch__bufring_stop(perch__bufring *r);

#endif
