/*
 * perch_symnames_seal_all (src/core/sym/names.c): after it every module's table is sealed, as
 * its first lookup would have sealed it, so lookups change nothing (chrome's pass 2 names
 * frames on two threads at once). A symbol record that comes afterwards for a module whose
 * table was sealed is not added and is counted as late; the names added before are found; a
 * module without a table yet is left alone and still takes its first names. The same stream
 * without the call shows that the late record would otherwise have been taken.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/sym.h"

#define KEY_A 11u /* a module with names before the seal */
#define KEY_B 12u /* a module with no names until after it */

static void add_module(perch_symnames *n, uint64_t key, const char *path)
{
    perch_module_rec m;
    memset(&m, 0, sizeof m);
    m.key = key;
    m.base = 0x140000000ull + key * 0x100000;
    m.size = 0x10000;
    m.path = path;
    m.pdb_name = "";
    assert_int_equal(perch_symnames_module(n, &m), 0);
}

static void add_symbol(perch_symnames *n, uint64_t key, uint32_t rva, const char *name)
{
    perch_symbol_rec s = {key, rva, 0x100, rva, 0x100, 1, name};
    assert_int_equal(perch_symnames_symbol(n, &s), 0);
}

static bool named(perch_symnames *n, uint64_t key, uint32_t rva, const char *want)
{
    perch_sym_func f;
    int64_t off;
    return perch_symnames_lookup(n, key, rva, &f, &off) && strcmp(f.name, want) == 0 && off == 0x10;
}

/* Module A gets "first", maybe the seal, then "second" (late when sealed); B gets "only"
 * after it. */
static void feed(perch_symnames *n, bool seal, perch_symnames_stats *st)
{
    add_module(n, KEY_A, "C:\\a\\first.dll");
    add_module(n, KEY_B, "C:\\b\\second.dll");
    add_symbol(n, KEY_A, 0x1000, "first");
    if (seal)
        perch_symnames_seal_all(n);
    add_symbol(n, KEY_A, 0x2000, "second");
    add_symbol(n, KEY_B, 0x3000, "only");
    perch_symnames_get_stats(n, st);
}

static void test_seal_all(void **state)
{
    perch_symnames *n;
    perch_symnames_stats st;
    (void)state;
    assert_int_equal(perch_symnames_create(&n), 0);
    feed(n, true, &st);
    assert_int_equal(st.late, 1);
    assert_int_equal(st.names, 2);
    assert_true(named(n, KEY_A, 0x1010, "first"));
    assert_false(named(n, KEY_A, 0x2010, "second"));
    assert_true(named(n, KEY_B, 0x3010, "only"));
    perch_symnames_destroy(n);
}

static void test_without_seal(void **state)
{
    perch_symnames *n;
    perch_symnames_stats st;
    (void)state;
    assert_int_equal(perch_symnames_create(&n), 0);
    feed(n, false, &st);
    assert_int_equal(st.late, 0);
    assert_int_equal(st.names, 3);
    assert_true(named(n, KEY_A, 0x2010, "second"));
    perch_symnames_destroy(n);
}

/* Sealing an empty set, and sealing twice, change nothing. */
static void test_seal_empty_and_twice(void **state)
{
    perch_symnames *n;
    perch_symnames_stats st;
    (void)state;
    assert_int_equal(perch_symnames_create(&n), 0);
    perch_symnames_seal_all(n);
    add_module(n, KEY_A, "C:\\a\\first.dll");
    add_symbol(n, KEY_A, 0x1000, "first");
    perch_symnames_seal_all(n);
    perch_symnames_seal_all(n);
    perch_symnames_get_stats(n, &st);
    assert_int_equal(st.late, 0);
    assert_true(named(n, KEY_A, 0x1010, "first"));
    perch_symnames_destroy(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_all),
        cmocka_unit_test(test_without_seal),
        cmocka_unit_test(test_seal_empty_and_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
