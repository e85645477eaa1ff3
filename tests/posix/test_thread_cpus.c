/*
 * Tests for perch_thread_split_cpus and perch_cpu_split_end (include/perch/thread.h) in
 * src/posix/thread.c, read back with the Linux affinity calls: with exactly two CPUs allowed the
 * calling thread is pinned to the one it is on and the other thread to the other one, and the
 * caller's two CPUs come back at the end; with one CPU, or three, nothing changes. The test
 * narrows its own CPUs first, so it checks the same cases on any machine with at least two
 * (three for the three-CPU case; skipped below that). The worker never calls cmocka asserts: it
 * records what it saw and the main thread checks it.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/thread.h"

struct worker {
    perch_mutex *m;
    perch_cond *c;
    bool go;
    cpu_set_t seen; /* the worker's CPUs once told to look */
    int seen_ok;
};

static int look_when_told(void *arg)
{
    struct worker *w = arg;
    perch_mutex_lock(w->m);
    while (!w->go)
        perch_cond_wait(w->c, w->m, UINT32_MAX);
    perch_mutex_unlock(w->m);
    w->seen_ok = sched_getaffinity(0, sizeof w->seen, &w->seen) == 0;
    return 0;
}

static void start_worker(struct worker *w, perch_thread **t)
{
    memset(w, 0, sizeof *w);
    assert_int_equal(perch_mutex_create(&w->m), 0);
    assert_int_equal(perch_cond_create(&w->c), 0);
    assert_int_equal(perch_thread_start(look_when_told, w, "perch-test", t), 0);
}

static void stop_worker(struct worker *w, perch_thread *t)
{
    perch_mutex_lock(w->m);
    w->go = true;
    perch_cond_signal(w->c);
    perch_mutex_unlock(w->m);
    assert_int_equal(perch_thread_join(t, NULL), 0);
    assert_true(w->seen_ok);
    perch_cond_destroy(w->c);
    perch_mutex_destroy(w->m);
}

/* The first n CPUs of the process's own set, or false when it has fewer. */
static bool first_cpus(int n, cpu_set_t *out)
{
    cpu_set_t all;
    int have = 0;
    CPU_ZERO(out);
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return false;
    for (int cpu = 0; cpu < CPU_SETSIZE && have < n; cpu++) {
        if (CPU_ISSET(cpu, &all)) {
            CPU_SET(cpu, out);
            have++;
        }
    }
    return have == n;
}

static void own_cpus(cpu_set_t *out)
{
    assert_int_equal(sched_getaffinity(0, sizeof *out, out), 0);
}

static cpu_set_t everything; /* the process's CPUs when the test began, given back after each */

static int save_cpus(void **state)
{
    (void)state;
    return sched_getaffinity(0, sizeof everything, &everything);
}

static int give_cpus_back(void **state)
{
    (void)state;
    return sched_setaffinity(0, sizeof everything, &everything);
}

static void test_two_cpus_split_and_come_back(void **state)
{
    cpu_set_t two, now;
    struct worker w;
    perch_thread *t;
    (void)state;
    if (!first_cpus(2, &two))
        skip();
    assert_int_equal(sched_setaffinity(0, sizeof two, &two), 0);
    start_worker(&w, &t);

    perch_cpu_split *s = perch_thread_split_cpus(t);
    assert_non_null(s);
    own_cpus(&now);
    assert_int_equal(CPU_COUNT(&now), 1); /* the CPU this thread is on, one of the two */
    int here = sched_getcpu();
    assert_true(CPU_ISSET(here, &now));
    assert_true(CPU_ISSET(here, &two));

    stop_worker(&w, t); /* it looked while pinned: the other CPU of the two */
    assert_int_equal(CPU_COUNT(&w.seen), 1);
    assert_false(CPU_ISSET(here, &w.seen));
    CPU_AND(&now, &w.seen, &two);
    assert_int_equal(CPU_COUNT(&now), 1);

    perch_cpu_split_end(s);
    own_cpus(&now);
    assert_true(CPU_EQUAL(&now, &two));
}

/* One CPU, or more than two: the scheduler's choice stands, and so does every thread's set. */
static void no_split_with(int n)
{
    cpu_set_t set, now;
    struct worker w;
    perch_thread *t;
    if (!first_cpus(n, &set))
        skip();
    assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);
    start_worker(&w, &t);
    assert_null(perch_thread_split_cpus(t));
    own_cpus(&now);
    assert_true(CPU_EQUAL(&now, &set));
    stop_worker(&w, t);
    assert_true(CPU_EQUAL(&w.seen, &set)); /* inherited, untouched */
}

static void test_one_cpu_no_split(void **state)
{
    (void)state;
    no_split_with(1);
}

static void test_three_cpus_no_split(void **state)
{
    (void)state;
    no_split_with(3);
}

static void test_null(void **state)
{
    (void)state;
    assert_null(perch_thread_split_cpus(NULL));
    perch_cpu_split_end(NULL); /* accepted */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_cpus_split_and_come_back, save_cpus,
                                        give_cpus_back),
        cmocka_unit_test_setup_teardown(test_one_cpu_no_split, save_cpus, give_cpus_back),
        cmocka_unit_test_setup_teardown(test_three_cpus_no_split, save_cpus, give_cpus_back),
        cmocka_unit_test(test_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
