/*
 * The bounded-memory building blocks: the scratch stores (memory and temporary file), the
 * external sort (against qsort of the same records, with runs enough to need the cascade), the
 * paged array (against a plain array, with two resident pages) and the spool (random reads
 * while it moves to scratch). Errors of the scratch store reach the caller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/scratch.h"
#include "util/extsort.h"
#include "util/paged.h"
#include "util/spool.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void check_store(perch_scratch *s)
{
    uint8_t buf[64], big[10000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    assert_int_equal(s->write_at(s->ctx, 100, "abc", 3), 0);
    assert_int_equal(s->read_at(s->ctx, 100, buf, 3), 0);
    assert_memory_equal(buf, "abc", 3);
    assert_int_equal(s->read_at(s->ctx, 0, buf, 4), 0); /* the hole reads as zeroes */
    assert_memory_equal(buf, "\0\0\0\0", 4);
    assert_int_equal(s->read_at(s->ctx, 101, buf, 3), PERCH_ETRUNC);
    assert_int_equal(s->write_at(s->ctx, 50, big, sizeof big), 0);
    memset(big, 0, sizeof big);
    assert_int_equal(s->read_at(s->ctx, 50, big, sizeof big), 0);
    for (size_t i = 0; i < sizeof big; i++)
        assert_int_equal(big[i], (uint8_t)(i * 7));
    perch_scratch_close(s);
    assert_null(s->ctx);
}

static void test_scratch_stores(void **state)
{
    perch_scratch s;
    size_t cap = 64;
    (void)state;
    assert_int_equal(perch_scratch_open_memory(NULL, &s), 0);
    check_store(&s);
    assert_int_equal(perch_scratch_open_temp(NULL, &s), 0);
    check_store(&s);
    assert_int_equal(perch_scratch_open_memory(&cap, &s), 0);
    assert_int_equal(s.write_at(s.ctx, 60, "abcde", 5), PERCH_ELIMIT);
    perch_scratch_close(&s);
    assert_true(perch_scratch_open_file(&s, "/nonexistent/perch-dir") < 0);
}

/* ---- external sort ---------------------------------------------------------------------- */

struct rec {
    char key[24];
    size_t len;
    uint64_t value;
};

static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void sum(void *acc, const void *v)
{
    uint64_t a, b;
    memcpy(&a, acc, 8);
    memcpy(&b, v, 8);
    a += b;
    memcpy(acc, &a, 8);
}

struct expect {
    const struct rec *want;
    size_t n, at;
};

static int visit(void *ctx, const uint8_t *key, size_t klen, const void *value)
{
    struct expect *e = ctx;
    uint64_t v;
    assert_true(e->at < e->n);
    assert_int_equal(klen, e->want[e->at].len);
    assert_memory_equal(key, e->want[e->at].key, klen);
    memcpy(&v, value, 8);
    assert_int_equal(v, e->want[e->at].value);
    e->at++;
    return 0;
}

/* n records over a key space of `space`, sorted with memory bytes; checked against qsort. */
static void check_sort(size_t n, uint32_t space, size_t memory, perch_scratch_open_fn open,
                       bool expect_spill)
{
    struct rec *all = calloc(n, sizeof *all);
    perch__extsort_opts o = {8, memory, sum, open, NULL};
    perch__extsort s;
    size_t distinct = 0;
    perch__extsort_init(&s, &o);
    for (size_t i = 0; i < n; i++) {
        uint32_t k = next() % space;
        /* keys of different lengths sharing prefixes: "k12" < "k12x" < "k13" */
        all[i].len = (size_t)snprintf(all[i].key, sizeof all[i].key, "k%u%s", k % 1000,
                                      k >= 1000 ? "x" : "");
        all[i].value = k + 1;
        assert_int_equal(perch__extsort_add(&s, all[i].key, all[i].len, &all[i].value), 0);
    }
    qsort(all, n, sizeof *all, cmp_rec);
    for (size_t i = 0; i < n; i++) {
        if (distinct > 0 && cmp_rec(&all[distinct - 1], &all[i]) == 0)
            all[distinct - 1].value += all[i].value;
        else
            all[distinct++] = all[i];
    }
    struct expect e = {all, distinct, 0};
    assert_int_equal(perch__extsort_finish(&s, visit, &e), 0);
    assert_int_equal(e.at, distinct);
    assert_true(expect_spill ? s.spilled > 0 : s.spilled == 0);
    perch__extsort_free(&s);
    free(all);
}

static void test_extsort(void **state)
{
    (void)state;
    check_sort(0, 10, 0, perch_scratch_open_memory, false);
    check_sort(5000, 2000, 0, perch_scratch_open_memory, false);    /* in memory */
    check_sort(5000, 2000, 0, NULL, false);                         /* never spills */
    check_sort(20000, 2000, 4096, perch_scratch_open_memory, true); /* > 32 runs: cascade */
    check_sort(20000, 100000, 1 << 14, perch_scratch_open_temp, true);
}

static int fail_open(void *ctx, perch_scratch *s)
{
    (void)ctx;
    (void)s;
    return PERCH_EACCES;
}

static void test_extsort_scratch_error(void **state)
{
    perch__extsort_opts o = {0, 256, NULL, fail_open, NULL};
    perch__extsort s;
    int err = 0;
    (void)state;
    perch__extsort_init(&s, &o);
    for (int i = 0; i < 100 && err == 0; i++)
        err = perch__extsort_add(&s, "some key text", 13, NULL);
    assert_int_equal(err, PERCH_EACCES);
    assert_int_equal(perch__extsort_finish(&s, visit, NULL), PERCH_EACCES);
    perch__extsort_free(&s);
}

/* ---- paged array and spool ----------------------------------------------------------------- */

static void test_paged(void **state)
{
    enum { N = 20000 };
    uint64_t *plain = calloc(N, sizeof *plain);
    perch__paged p;
    (void)state;
    perch__paged_init(&p, sizeof(uint64_t) * 3, 1024, 2048, perch_scratch_open_memory, NULL);
    for (int round = 0; round < 40000; round++) {
        uint32_t i = next() % N;
        uint64_t *e = perch__paged_at(&p, i, true);
        assert_non_null(e);
        assert_int_equal(e[0], plain[i]);
        e[0] = plain[i] = next();
        e[2] = i;
    }
    for (uint32_t i = 0; i < N; i++) {
        const uint64_t *e = perch__paged_at(&p, i, false);
        assert_non_null(e);
        assert_int_equal(e[0], plain[i]);
    }
    assert_true(p.resident <= 2);
    assert_true(p.page_outs > 0 && p.page_ins > 0);
    perch__paged_free(&p);
    free(plain);
}

static void test_spool(void **state)
{
    enum { N = 300000 };
    uint8_t *plain = malloc(N), buf[5000];
    perch__spool s;
    size_t len = 0;
    (void)state;
    for (size_t i = 0; i < N; i++)
        plain[i] = (uint8_t)next();
    perch__spool_init(&s, 10000, perch_scratch_open_memory, NULL);
    while (len < N) {
        size_t n = next() % 3000;
        n = n > N - len ? N - len : n;
        assert_int_equal(perch__spool_append(&s, plain + len, n), 0);
        len += n;
        size_t off = next() % len, m = next() % sizeof buf;
        m = m > len - off ? len - off : m;
        assert_int_equal(perch__spool_read(&s, off, buf, m), 0);
        assert_memory_equal(buf, plain + off, m);
    }
    assert_true(s.on_scratch);
    assert_int_equal(perch__spool_size(&s), N);
    for (size_t off = 0; off < N; off += 700) { /* a sequential scan through the read-ahead */
        size_t m = N - off < 700 ? N - off : 700;
        assert_int_equal(perch__spool_read(&s, off, buf, m), 0);
        assert_memory_equal(buf, plain + off, m);
    }
    assert_int_equal(perch__spool_read(&s, N - 1, buf, 2), PERCH_ETRUNC);
    perch__spool_free(&s);
    free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch_stores),
        cmocka_unit_test(test_extsort),
        cmocka_unit_test(test_extsort_scratch_error),
        cmocka_unit_test(test_paged),
        cmocka_unit_test(test_spool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
