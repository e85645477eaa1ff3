/*
 * POSIX implementation of include/perch/thread.h with pthreads: threads, mutexes, and
 * condition variables timed on CLOCK_MONOTONIC so that a change of the wall clock never
 * stretches or cuts a wait. Two busy threads are split over a process's two CPUs with the
 * GNU affinity calls (pthread_setaffinity_np, sched_getcpu).
 */
#define _GNU_SOURCE /* pthread_setname_np, the affinity calls */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "perch/error.h"
#include "perch/thread.h"
#include "util/mem.h"

struct perch_thread {
    pthread_t id;
    perch_thread_fn fn;
    void *arg;
    int result;
    char name[16];
};

struct perch_mutex {
    pthread_mutex_t m;
};

struct perch_cond {
    pthread_cond_t c;
};

static int from_pthread(int e)
{
    switch (e) {
    case 0:
        return 0;
    case ENOMEM:
        return PERCH_ENOMEM;
    case EAGAIN:
        return PERCH_ELIMIT;
    case EPERM:
        return PERCH_EACCES;
    case EINVAL:
        return PERCH_EINVAL;
    case ETIMEDOUT:
        return PERCH_ETIMEDOUT;
    default:
        return PERCH_ESYSTEM;
    }
}

static void *trampoline(void *p)
{
    struct perch_thread *t = p;
    if (t->name[0] != '\0')
        pthread_setname_np(pthread_self(), t->name); /* best effort: a debugging aid */
    t->result = t->fn(t->arg);
    return NULL;
}

int perch_thread_start(perch_thread_fn fn, void *arg, const char *name, perch_thread **out)
{
    struct perch_thread *t;
    int e;
    if (fn == NULL || out == NULL)
        return PERCH_EINVAL;
    t = perch__calloc(1, sizeof *t);
    if (t == NULL)
        return PERCH_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    if (name != NULL)
        strncpy(t->name, name, sizeof t->name - 1);
    e = pthread_create(&t->id, NULL, trampoline, t);
    if (e != 0) {
        perch__free(t);
        return from_pthread(e);
    }
    *out = t;
    return 0;
}

int perch_thread_join(perch_thread *t, int *result)
{
    int e;
    if (t == NULL)
        return PERCH_EINVAL;
    e = pthread_join(t->id, NULL);
    if (e != 0)
        return from_pthread(e);
    if (result != NULL)
        *result = t->result;
    perch__free(t);
    return 0;
}

struct perch_cpu_split {
    pthread_t caller;
    cpu_set_t before; /* the caller's CPUs, given back by perch_cpu_split_end */
};

static bool pin(pthread_t thread, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(thread, sizeof one, &one) == 0;
}

perch_cpu_split *perch_thread_split_cpus(perch_thread *t)
{
    struct perch_cpu_split *s;
    int here = sched_getcpu(), other = -1;
    if (t == NULL || here < 0 || here >= CPU_SETSIZE || (s = perch__alloc(sizeof *s)) == NULL)
        return NULL;
    s->caller = pthread_self();
    if (pthread_getaffinity_np(s->caller, sizeof s->before, &s->before) == 0 &&
        CPU_COUNT(&s->before) == 2 && CPU_ISSET(here, &s->before)) {
        for (int cpu = 0; cpu < CPU_SETSIZE && other < 0; cpu++) {
            if (cpu != here && CPU_ISSET(cpu, &s->before))
                other = cpu;
        }
    }
    if (other >= 0 && pin(t->id, other)) {
        if (pin(s->caller, here))
            return s;
        (void)pthread_setaffinity_np(t->id, sizeof s->before, &s->before); /* as it was */
    }
    perch__free(s);
    return NULL;
}

void perch_cpu_split_end(perch_cpu_split *s)
{
    if (s == NULL)
        return;
    (void)pthread_setaffinity_np(s->caller, sizeof s->before, &s->before);
    perch__free(s);
}

int perch_mutex_create(perch_mutex **out)
{
    struct perch_mutex *m;
    int e;
    if (out == NULL)
        return PERCH_EINVAL;
    m = perch__alloc(sizeof *m);
    if (m == NULL)
        return PERCH_ENOMEM;
    e = pthread_mutex_init(&m->m, NULL);
    if (e != 0) {
        perch__free(m);
        return from_pthread(e);
    }
    *out = m;
    return 0;
}

void perch_mutex_destroy(perch_mutex *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->m);
    perch__free(m);
}

void perch_mutex_lock(perch_mutex *m)
{
    pthread_mutex_lock(&m->m);
}

void perch_mutex_unlock(perch_mutex *m)
{
    pthread_mutex_unlock(&m->m);
}

int perch_cond_create(perch_cond **out)
{
    struct perch_cond *c;
    pthread_condattr_t attr;
    int e;
    if (out == NULL)
        return PERCH_EINVAL;
    c = perch__alloc(sizeof *c);
    if (c == NULL)
        return PERCH_ENOMEM;
    e = pthread_condattr_init(&attr);
    if (e == 0) {
        e = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (e == 0)
            e = pthread_cond_init(&c->c, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (e != 0) {
        perch__free(c);
        return from_pthread(e);
    }
    *out = c;
    return 0;
}

void perch_cond_destroy(perch_cond *c)
{
    if (c == NULL)
        return;
    pthread_cond_destroy(&c->c);
    perch__free(c);
}

int perch_cond_wait(perch_cond *c, perch_mutex *m, uint32_t timeout_ms)
{
    struct timespec ts;
    if (timeout_ms == UINT32_MAX) {
        pthread_cond_wait(&c->c, &m->m);
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(timeout_ms / 1000u);
    ts.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(&c->c, &m->m, &ts) == ETIMEDOUT ? PERCH_ETIMEDOUT : 0;
}

void perch_cond_signal(perch_cond *c)
{
    pthread_cond_signal(&c->c);
}

void perch_cond_broadcast(perch_cond *c)
{
    pthread_cond_broadcast(&c->c);
}

void perch_sleep_ms(uint32_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
