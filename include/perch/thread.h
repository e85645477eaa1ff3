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

/* Two busy threads, one CPU each (perch_thread_split_cpus). Opaque. */
typedef struct perch_cpu_split perch_cpu_split;

/* Puts the calling thread and t, two threads that will both be busy (the stages of a
 * pipeline), on different CPUs when the process may run on exactly two: the calling thread
 * stays on the CPU it is on, t gets the other one, each for good. With two CPUs that is the
 * best place for them whatever else runs, and some schedulers do not find it: the Linux VM
 * Perch is measured on often put the pipeline's two threads, which wake each other, on one CPU
 * while the other idled (docs/pipeline.md, "Two threads, two CPUs"). With more than two CPUs
 * nothing is done: a fixed choice could be a CPU that other work keeps busy while another
 * idles, which the scheduler sees and this call does not.
 *
 * Best effort, never an error: NULL when nothing changed (another number of CPUs, an OS
 * refusal, no memory, or Windows, where it is not done: no Windows machine has timed it).
 * Otherwise what perch_cpu_split_end needs to give the calling thread its CPUs back. */
perch_cpu_split *perch_thread_split_cpus(perch_thread *t);

/* Gives the thread that called perch_thread_split_cpus the CPUs it had before (t keeps its
 * one CPU until it ends; call this once t is done) and frees s. NULL is accepted. */
void perch_cpu_split_end(perch_cpu_split *s);

/* Sleeps the calling thread for about ms milliseconds. */
void perch_sleep_ms(uint32_t ms);

#ifdef __cplusplus
}
#endif

#endif
