/*
 * Threads, mutexes and condition variables for the portable core: the pipelined import (a
 * reader thread ahead of the model thread), the live engine's model thread and anything else
 * that must run beside it. One implementation per platform, chosen by CMake:
 * src/posix/thread.c (pthreads) and src/win/thread.c (CreateThread, SRWLOCK,
 * CONDITION_VARIABLE; never libwinpthread, which win.test_pe_imports forbids).
 *
 * Atomics come from C11 <stdatomic.h>, which every compiler Perch builds with provides; this
 * header only covers what the standard library does not.
 *
 * All objects are opaque and heap allocated (through perch__alloc, so allocation-failure tests
 * reach them). Destroy functions accept NULL.
 */
#ifndef PERCH_THREAD_H
#define PERCH_THREAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_thread perch_thread;
typedef struct perch_mutex perch_mutex;
typedef struct perch_cond perch_cond;

/* The body of a thread: returns 0 or a negative PERCH_E*, handed to perch_thread_join. */
typedef int (*perch_thread_fn)(void *arg);

/* Starts fn(arg) on a new thread. name (may be NULL, at most 15 bytes are used) is given to
 * the OS for debuggers where it can be. Returns 0, PERCH_ENOMEM or the OS error translated;
 * *out is untouched on error. */
int perch_thread_start(perch_thread_fn fn, void *arg, const char *name, perch_thread **out);

/* Waits for the thread to end, stores its return value in *result (may be NULL) and frees t.
 * Returns 0 or the OS error. Each thread is joined exactly once. */
int perch_thread_join(perch_thread *t, int *result);

int perch_mutex_create(perch_mutex **out);
void perch_mutex_destroy(perch_mutex *m);
void perch_mutex_lock(perch_mutex *m);
void perch_mutex_unlock(perch_mutex *m);

int perch_cond_create(perch_cond **out);
void perch_cond_destroy(perch_cond *c);
/* Atomically releases m and waits for a signal or timeout_ms (UINT32_MAX: no timeout), then
 * takes m again. Returns 0 when woken (spurious wake-ups included) or PERCH_ETIMEDOUT. */
int perch_cond_wait(perch_cond *c, perch_mutex *m, uint32_t timeout_ms);
void perch_cond_signal(perch_cond *c);
void perch_cond_broadcast(perch_cond *c);

/* Sleeps the calling thread for about ms milliseconds. */
void perch_sleep_ms(uint32_t ms);

#ifdef __cplusplus
}
#endif

#endif
