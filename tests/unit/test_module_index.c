/*
 * The address index of modules (src/core/model/module_index.c), shared by the report, the
 * exports and the symbolizer. Random maps (overlapping ranges, equal bases, sizes and names,
 * empty and huge ranges, the kernel's process key 0 beside others) answer every address as a
 * brute-force M5 written out here does: the highest base, then the smallest size, then the
 * smallest name, then the module seen first. A map of 200,000 modules under one that spans
 * them all answers each small module's addresses with it and the gaps with the huge one. One
 * index rebuilt over maps larger and smaller than the last answers each as its own. Empty
 * ranges hold nothing, past 2^31 ranges nothing is built, a range that would wrap past 2^64 holds
 * nothing below its base, an empty index answers nothing, and a build that runs out of memory
 * leaves the old index whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "model/module_index.h"
#include "model/module_order.h"
#include "perch/error.h"

/* Sorts recs (the caller's copy) in M5 order, seen first last, and builds ix over them. */
static int build_m5(perch__module_index *ix, perch__module_sort *recs, size_t n)
{
    qsort(recs, n, sizeof *recs, perch__module_sort_cmp_first);
    return perch__module_index_build(ix, recs, n);
}

/* The M5 answer by brute force over the unsorted records (index = the order seen). */
static uint32_t oracle(const perch__module_sort *m, size_t n, uint64_t pk, uint64_t addr)
{
    const perch__module_sort *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const perch__module_sort *c = &m[i];
        if (c->process_key != pk || c->size == 0 || addr < c->base || addr - c->base >= c->size)
            continue;
        bool better = best == NULL || c->base > best->base ||
                      (c->base == best->base &&
                       (c->size < best->size ||
                        (c->size == best->size &&
                         (strcmp(c->name, best->name) < 0 ||
                          (strcmp(c->name, best->name) == 0 && c->index < best->index)))));
        if (better)
            best = c;
    }
    return best ? best->index : PERCH_MODULE_INDEX_NONE;
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random maps of up to 400 modules, built on ix (anew, or over what it held). */
static void check_seed_on(perch__module_index *ix, uint64_t seed)
{
    enum { NMOD = 400, NADDR = 4000 };
    static const char *names[] = {"a.dll", "b.dll", "c.dll", "d.dll"};
    static const uint64_t sizes[] = {0,      1,      0x800,   0x1000,
                                     0x1000, 0x3000, 0x10000, UINT64_C(1) << 40};
    perch__module_sort *m = calloc(NMOD, sizeof *m), *sorted = calloc(NMOD, sizeof *m);
    uint64_t x = seed;
    assert_non_null(m);
    assert_non_null(sorted);
    size_t n = (size_t)(next(&x) % NMOD);
    for (size_t i = 0; i < n; i++) {
        m[i].process_key = next(&x) % 3; /* 0: the kernel's */
        m[i].base = 0x10000 + (next(&x) % 64) * 0x800;
        m[i].size = sizes[next(&x) % 8];
        m[i].name = names[next(&x) % 4];
        m[i].index = (uint32_t)i;
    }
    memcpy(sorted, m, n * sizeof *m);
    assert_int_equal(build_m5(ix, sorted, n), 0);
    for (int i = 0; i < NADDR; i++) {
        uint64_t pk = next(&x) % 4, addr = 0xf000 + next(&x) % (70 * 0x800);
        uint32_t want = oracle(m, n, pk, addr), got = perch__module_index_find(ix, pk, addr);
        if (want != got)
            fail_msg("seed %llu, %zu modules: process %llu address 0x%llx: index %u, M5 %u",
                     (unsigned long long)seed, n, (unsigned long long)pk, (unsigned long long)addr,
                     got, want);
    }
    free(sorted);
    free(m);
}

static void check_seed(uint64_t seed)
{
    perch__module_index ix = {0};
    check_seed_on(&ix, seed);
    perch__module_index_free(&ix);
}

static void test_random_maps_answer_as_m5(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++)
        check_seed(seed * 0x9e3779b97f4a7c15u);
}

/* One index rebuilt over maps of every size, larger and smaller than the last (a rebuild that
 * fits uses the arrays again): each answers as its own map does. */
static void test_rebuilt_over_and_over(void **state)
{
    perch__module_index ix = {0};
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++)
        check_seed_on(&ix, seed * 0x2545f4914f6cdd1du);
    perch__module_index_free(&ix);
}

/* Past 2^31 ranges: no budget takes the bytes, and a build refuses before reading a record. */
static void test_too_many_ranges(void **state)
{
    perch__module_index ix = {0};
    (void)state;
    assert_true(perch__module_index_bytes((size_t)1 << 31) < UINT64_MAX);
    assert_int_equal(perch__module_index_bytes(((size_t)1 << 31) + 1), UINT64_MAX);
    assert_int_equal(perch__module_index_build(&ix, NULL, ((size_t)1 << 31) + 1), PERCH_ELIMIT);
    assert_null(ix.pk);
}

static void test_one_module_spanning_many(void **state)
{
    enum { NMOD = 200000 };
    perch__module_sort *m = calloc(NMOD + 1, sizeof *m);
    perch__module_index ix = {0};
    (void)state;
    assert_non_null(m);
    for (uint32_t i = 0; i < NMOD; i++)
        m[i] = (perch__module_sort){2, 0x10000000 + (uint64_t)i * 0x2000, 0x1000, "m.dll", i};
    m[NMOD] = (perch__module_sort){2, 0x1000, UINT64_C(1) << 62, "huge.dll", NMOD};
    assert_int_equal(build_m5(&ix, m, NMOD + 1), 0);
    for (uint32_t i = 0; i < NMOD; i += 7) {
        uint64_t base = 0x10000000 + (uint64_t)i * 0x2000;
        assert_int_equal(perch__module_index_find(&ix, 2, base + 0xfff), i);
        assert_int_equal(perch__module_index_find(&ix, 2, base + 0x1000), NMOD); /* the gap */
    }
    assert_int_equal(perch__module_index_find(&ix, 2, 0x1000), NMOD);
    assert_int_equal(perch__module_index_find(&ix, 2, 0xfff), PERCH_MODULE_INDEX_NONE);
    assert_int_equal(perch__module_index_find(&ix, 1, 0x10000000), PERCH_MODULE_INDEX_NONE);
    assert_int_equal(perch__module_index_find(&ix, 3, 0x10000000), PERCH_MODULE_INDEX_NONE);
    perch__module_index_free(&ix);
    free(m);
}

static void test_empty_and_wrapping_ranges(void **state)
{
    const uint64_t top = UINT64_MAX - 0xf;
    perch__module_sort m[] = {
        {2, 0x5000, 0, "empty.dll", 0},    /* holds nothing, even its base */
        {2, top, 0x100, "wrap.dll", 1},    /* would wrap: holds top..2^64-1 only */
        {2, 0x4000, 0x2000, "low.dll", 2}, /* under the empty one */
    };
    perch__module_index ix = {0};
    (void)state;
    assert_int_equal(perch__module_index_find(&ix, 2, 0x5000), PERCH_MODULE_INDEX_NONE);
    assert_int_equal(build_m5(&ix, m, 3), 0);
    assert_int_equal(perch__module_index_find(&ix, 2, 0x5000), 2);
    assert_int_equal(perch__module_index_find(&ix, 2, UINT64_MAX), 1);
    assert_int_equal(perch__module_index_find(&ix, 2, top), 1);
    assert_int_equal(perch__module_index_find(&ix, 2, 0x5), PERCH_MODULE_INDEX_NONE);
    assert_int_equal(perch__module_index_find(&ix, 2, 0x6000), PERCH_MODULE_INDEX_NONE);
    assert_int_equal(build_m5(&ix, m, 0), 0); /* rebuilt empty: answers nothing */
    assert_int_equal(perch__module_index_find(&ix, 2, 0x5000), PERCH_MODULE_INDEX_NONE);
    perch__module_index_free(&ix);
}

static void test_failed_build_keeps_the_index(void **state)
{
    perch__module_sort m[] = {{2, 0x1000, 0x1000, "a.dll", 7}, {2, 0x8000, 0x1000, "b.dll", 9}};
    perch__module_index ix = {0};
    uint64_t failures = 0;
    (void)state;
    assert_int_equal(build_m5(&ix, m, 1), 0);
    for (uint64_t n = 1;; n++) {
        perch_failalloc_begin(n, false);
        int err = build_m5(&ix, m, 2);
        perch_failalloc_counts c = perch_failalloc_end();
        if (c.failed == 0) {
            assert_int_equal(err, 0);
            break;
        }
        failures++;
        assert_int_equal(err, -2); /* PERCH_ENOMEM */
        assert_int_equal(perch__module_index_find(&ix, 2, 0x1800), 7);
        assert_int_equal(perch__module_index_find(&ix, 2, 0x8800), PERCH_MODULE_INDEX_NONE);
    }
    assert_true(failures >= 4);
    assert_int_equal(perch__module_index_find(&ix, 2, 0x8800), 9);
    perch__module_index_free(&ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_maps_answer_as_m5),
        cmocka_unit_test(test_rebuilt_over_and_over),
        cmocka_unit_test(test_too_many_ranges),
        cmocka_unit_test(test_one_module_spanning_many),
        cmocka_unit_test(test_empty_and_wrapping_ranges),
        cmocka_unit_test(test_failed_build_keeps_the_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
