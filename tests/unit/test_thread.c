/*
 * Tests for the thread API (include/perch/thread.h) on whichever platform file CMake chose
 * (src/posix/thread.c natively, src/win/thread.c under Wine): results handed to join, mutual
 * exclusion under contention, condition variables that wake and that time out, and allocation
 * failures. Worker threads never call cmocka asserts (they are not thread safe): they record
 * what they saw and the main thread checks it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/platform.h"
#include "perch/thread.h"
#include "util/mem.h"

static int return_arg(void *arg)
{
    return (int)(intptr_t)arg;
}

static void test_start_join_result(void **state)
{
    perch_thread *t[4];
    (void)state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            perch_thread_start(return_arg, (void *)(intptr_t)(-i * 3), "perch-test", &t[i]), 0);
    for (int i = 0; i < 4; i++) {
        int result = 1;
        assert_int_equal(perch_thread_join(t[i], &result), 0);
        assert_int_equal(result, -i * 3);
    }
    /* A NULL result pointer and a name longer than the OS limit are both fine. */
    assert_int_equal(perch_thread_start(return_arg, NULL, "a-name-much-longer-than-fifteen", &t[0]),
                     0);
    assert_int_equal(perch_thread_join(t[0], NULL), 0);
    assert_int_equal(perch_thread_start(NULL, NULL, NULL, &t[0]), PERCH_EINVAL);
}

struct counter {
    perch_mutex *m;
    uint64_t value;
    int rounds;
};

static int add_many(void *arg)
{
    struct counter *c = arg;
    for (int i = 0; i < c->rounds; i++) {
        perch_mutex_lock(c->m);
        uint64_t v = c->value; /* a read-modify-write that loses updates without the lock */
        c->value = v + 1;
        perch_mutex_unlock(c->m);
    }
    return 0;
}

static void test_mutex_excludes(void **state)
{
    struct counter c = {NULL, 0, 100000};
    perch_thread *t[3];
    (void)state;
    assert_int_equal(perch_mutex_create(&c.m), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(perch_thread_start(add_many, &c, "adder", &t[i]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(perch_thread_join(t[i], NULL), 0);
    assert_int_equal(c.value, 3u * 100000u);
    perch_mutex_destroy(c.m);
    perch_mutex_destroy(NULL);
}

/* A ping-pong: each side waits for its turn, so every hand-off needs a wake-up. */
struct pingpong {
    perch_mutex *m;
    perch_cond *c;
    int turn; /* 0: main, 1: worker */
    int rounds, seen;
};

static int pong(void *arg)
{
    struct pingpong *p = arg;
    for (int i = 0; i < p->rounds; i++) {
        perch_mutex_lock(p->m);
        while (p->turn != 1)
            perch_cond_wait(p->c, p->m, UINT32_MAX);
        p->seen++;
        p->turn = 0;
        perch_cond_broadcast(p->c);
        perch_mutex_unlock(p->m);
    }
    return p->seen;
}

static void test_cond_ping_pong(void **state)
{
    struct pingpong p = {NULL, NULL, 0, 2000, 0};
    perch_thread *t;
    int result = 0;
    (void)state;
    assert_int_equal(perch_mutex_create(&p.m), 0);
    assert_int_equal(perch_cond_create(&p.c), 0);
    assert_int_equal(perch_thread_start(pong, &p, "pong", &t), 0);
    for (int i = 0; i < p.rounds; i++) {
        perch_mutex_lock(p.m);
        while (p.turn != 0)
            perch_cond_wait(p.c, p.m, 1000); /* timed waits wake on signals too */
        p.turn = 1;
        perch_cond_signal(p.c);
        perch_mutex_unlock(p.m);
    }
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, p.rounds);
    perch_cond_destroy(p.c);
    perch_cond_destroy(NULL);
    perch_mutex_destroy(p.m);
}

static void test_cond_timeout(void **state)
{
    perch_mutex *m;
    perch_cond *c;
    uint64_t t0, ns;
    (void)state;
    assert_int_equal(perch_mutex_create(&m), 0);
    assert_int_equal(perch_cond_create(&c), 0);
    perch_mutex_lock(m);
    t0 = perch_monotonic_ns();
    int err;
    do { /* spurious wake-ups return 0: wait again */
        err = perch_cond_wait(c, m, 60);
    } while (err == 0 && perch_monotonic_ns() - t0 < 60000000u);
    ns = perch_monotonic_ns() - t0;
    perch_mutex_unlock(m);
    assert_int_equal(err, PERCH_ETIMEDOUT);
    assert_true(ns >= 50000000u); /* a little slack for coarse timers */
    assert_true(ns < 5000000000u);
    t0 = perch_monotonic_ns();
    perch_sleep_ms(30);
    assert_true(perch_monotonic_ns() - t0 >= 25000000u);
    perch_cond_destroy(c);
    perch_mutex_destroy(m);
}

static int fail_after;
static void *failing_realloc(void *p, size_t n)
{
    if (n == 0 || p != NULL)
        return perch__default_realloc(p, n);
    if (fail_after-- <= 0)
        return NULL;
    return perch__default_realloc(p, n);
}

static void test_allocation_failure(void **state)
{
    perch__realloc_fn saved = perch__realloc_hook;
    perch_thread *t = (perch_thread *)&t;
    perch_mutex *m = (perch_mutex *)&m;
    perch_cond *c = (perch_cond *)&c;
    (void)state;
    fail_after = 0;
    perch__realloc_hook = failing_realloc;
    int e1 = perch_thread_start(return_arg, NULL, NULL, &t);
    int e2 = perch_mutex_create(&m);
    int e3 = perch_cond_create(&c);
    perch__realloc_hook = saved;
    assert_int_equal(e1, PERCH_ENOMEM);
    assert_int_equal(e2, PERCH_ENOMEM);
    assert_int_equal(e3, PERCH_ENOMEM);
    /* Outputs are untouched on error. */
    assert_ptr_equal(t, (perch_thread *)&t);
    assert_ptr_equal(m, (perch_mutex *)&m);
    assert_ptr_equal(c, (perch_cond *)&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_join_result),  cmocka_unit_test(test_mutex_excludes),
        cmocka_unit_test(test_cond_ping_pong),     cmocka_unit_test(test_cond_timeout),
        cmocka_unit_test(test_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
