/*
 * The counting, failing allocator and the allocation-failure sweep driver of failalloc.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "failalloc.h"
#include "perch/error.h"
#include "util/mem.h"

static perch__realloc_fn saved_hook;
static atomic_uint_fast64_t calls;
static atomic_uint_fast64_t failures;
static atomic_int_fast64_t live;
static atomic_uint_fast64_t peak;
static atomic_uint_fast64_t fail_at;
static atomic_bool fail_persistent;

static bool should_fail(uint64_t n)
{
    uint64_t at = atomic_load(&fail_at);
    if (at == 0)
        return false;
    return n == at || (n > at && atomic_load(&fail_persistent));
}

static void note_live(int64_t delta)
{
    int64_t now = atomic_fetch_add(&live, delta) + delta;
    uint64_t p = atomic_load(&peak);
    while (now > 0 && (uint64_t)now > p && !atomic_compare_exchange_weak(&peak, &p, (uint64_t)now))
        ;
}

static void *counting_realloc(void *p, size_t size)
{
    if (size == 0) {
        if (p != NULL)
            note_live(-1);
        return saved_hook(p, 0);
    }
    uint64_t n = atomic_fetch_add(&calls, 1) + 1;
    if (should_fail(n)) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    void *q = saved_hook(p, size);
    if (q != NULL && p == NULL)
        note_live(1);
    return q;
}

void perch_failalloc_begin(uint64_t at, bool persistent)
{
    atomic_store(&calls, 0);
    atomic_store(&failures, 0);
    atomic_store(&live, 0);
    atomic_store(&peak, 0);
    atomic_store(&fail_at, at);
    atomic_store(&fail_persistent, persistent);
    if (perch__realloc_hook != counting_realloc) {
        saved_hook = perch__realloc_hook;
        perch__realloc_hook = counting_realloc;
    }
}

void perch_failalloc_disarm(void)
{
    atomic_store(&fail_at, 0);
}

perch_failalloc_counts perch_failalloc_counts_now(void)
{
    perch_failalloc_counts c;
    c.allocs = atomic_load(&calls);
    c.failed = atomic_load(&failures);
    c.live = atomic_load(&live);
    c.peak_live = atomic_load(&peak);
    return c;
}

perch_failalloc_counts perch_failalloc_end(void)
{
    perch_failalloc_counts c = perch_failalloc_counts_now();
    if (perch__realloc_hook == counting_realloc)
        perch__realloc_hook = saved_hook;
    atomic_store(&fail_at, 0);
    return c;
}

/* One run with allocation n failing (0: none). Returns the run's error, *out the outcome. */
static int run_once(const perch_sweep *s, uint64_t n, bool persistent, perch_sweep_outcome *out,
                    perch_failalloc_counts *counts)
{
    perch_failalloc_begin(n, persistent);
    int err = s->run(s->ctx);
    perch_failalloc_disarm();
    perch_failalloc_counts at_return = perch_failalloc_counts_now();
    *out = PERCH_SWEEP_ENOMEM;
    if (s->verify != NULL) {
        perch_sweep_outcome o = s->verify(s->ctx, err, n);
        if (err == 0)
            *out = o;
    } else if (err == 0) {
        *out = PERCH_SWEEP_BENIGN;
    }
    *counts = perch_failalloc_end();
    counts->allocs = at_return.allocs;
    counts->failed = at_return.failed;
    return err;
}

static void check_run(const perch_sweep *s, uint64_t n, bool persistent, perch_sweep_result *r)
{
    perch_sweep_outcome o;
    perch_failalloc_counts c;
    int err = run_once(s, n, persistent, &o, &c);
    const char *mode = persistent ? "persistent" : "transient";
    if (err != 0 && err != PERCH_ENOMEM)
        fail_msg("%s: allocation %llu failing (%s) gave %s (%d), not ENOMEM", s->name,
                 (unsigned long long)n, mode, perch_err_name(err), err);
    if (c.live != 0)
        fail_msg("%s: allocation %llu failing (%s): %lld block(s) left live (leak)", s->name,
                 (unsigned long long)n, mode, (long long)c.live);
    if (err == 0 && o != PERCH_SWEEP_BENIGN && o != PERCH_SWEEP_DEGRADED)
        fail_msg("%s: allocation %llu failing (%s): the run succeeded with a wrong output", s->name,
                 (unsigned long long)n, mode);
    if (err == 0 && o == PERCH_SWEEP_DEGRADED && r->first_degraded == 0)
        r->first_degraded = n;
    r->outcome[err == 0 ? o : PERCH_SWEEP_ENOMEM]++;
    r->runs++;
}

perch_sweep_result perch_sweep_alloc(const perch_sweep *s)
{
    perch_sweep_result r = {0, 0, {0, 0, 0}, 0};
    perch_sweep_outcome o;
    perch_failalloc_counts c;
    int err = run_once(s, 0, false, &o, &c);
    if (err != 0)
        fail_msg("%s: the counting run failed: %s", s->name, perch_err_name(err));
    if (c.live != 0)
        fail_msg("%s: the counting run left %lld block(s) live", s->name, (long long)c.live);
    if (o != PERCH_SWEEP_BENIGN)
        fail_msg("%s: the counting run's output is not the reference", s->name);
    r.total = c.allocs;
    uint64_t stride = s->stride > 1 ? s->stride : 1;
    const char *env = getenv("PERCH_SWEEP_STRIDE"); /* slow platforms (Wine): every k-th N */
    if (stride == 1 && env != NULL && strtoull(env, NULL, 10) > 1)
        stride = strtoull(env, NULL, 10);
    for (int pass = 0; pass < (s->persistent ? 2 : 1); pass++)
        for (uint64_t n = 1; n <= r.total; n++)
            if ((n - 1) % stride == 0 || n == r.total)
                check_run(s, n, pass == 1, &r);
    printf("sweep %s: %llu allocations, %llu runs (every %llu): %llu ENOMEM, %llu absorbed with "
           "the reference "
           "output, %llu degraded\n",
           s->name, (unsigned long long)r.total, (unsigned long long)r.runs,
           (unsigned long long)stride, (unsigned long long)r.outcome[PERCH_SWEEP_ENOMEM],
           (unsigned long long)r.outcome[PERCH_SWEEP_BENIGN],
           (unsigned long long)r.outcome[PERCH_SWEEP_DEGRADED]);
    fflush(stdout);
    return r;
}
