/*
 * The symbol table's rules (docs/symbols.md "Precedence"): procedures over publics over
 * exports over .pdata; a public's extent ends at the next public or the end of its section
 * contribution; an export's at the next export, the end of its .pdata function or the next
 * .pdata function; nested ranges resolve to the innermost; aliases to the smallest name; a
 * chained .pdata fragment is named after whatever names its primary function. Each case is a
 * table of names added and of lookups with the answer expected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/sym.h"

#define CODE (PERCH_SCN_CNT_CODE | PERCH_SCN_MEM_EXECUTE)

struct add {
    char kind; /* 's' section, 'c' contribution, 'n' name, 'f' fragment */
    int source;
    uint32_t rva, size, func_rva, func_size;
    const char *name;
};

struct want {
    uint32_t rva;
    const char *name; /* NULL: nothing covers rva */
    int source;
    int64_t offset;
    uint32_t start, size;
};

static perch_symtab *build(const struct add *a, size_t n)
{
    perch_symtab *t = NULL;
    assert_int_equal(perch_symtab_create(&t), 0);
    for (size_t i = 0; i < n; i++) {
        int err = 0;
        if (a[i].kind == 's')
            err = perch_symtab_add_section(t, a[i].rva, a[i].size, a[i].func_rva);
        else if (a[i].kind == 'c')
            err = perch_symtab_add_contribution(t, a[i].rva, a[i].size);
        else if (a[i].kind == 'n')
            err =
                perch_symtab_add(t, a[i].source, a[i].rva, a[i].size, a[i].name, strlen(a[i].name));
        else
            err = perch_symtab_add_fragment(t, a[i].source, a[i].rva, a[i].size, a[i].func_rva,
                                            a[i].func_size, a[i].name, strlen(a[i].name));
        assert_int_equal(err, 0);
    }
    assert_int_equal(perch_symtab_seal(t), 0);
    return t;
}

static void check(const struct add *a, size_t na, const struct want *w, size_t nw)
{
    perch_symtab *t = build(a, na);
    for (size_t i = 0; i < nw; i++) {
        perch_sym_func f;
        int64_t off = -12345;
        memset(&f, 0xff, sizeof f);
        bool hit = perch_symtab_lookup(t, w[i].rva, &f, &off);
        if (w[i].name == NULL) {
            if (hit)
                fail_msg("0x%x: want nothing, got %s", (unsigned)w[i].rva, f.name);
            continue;
        }
        if (!hit)
            fail_msg("0x%x: want %s, got nothing", (unsigned)w[i].rva, w[i].name);
        if (strcmp(f.name, w[i].name) != 0 || f.source != w[i].source || off != w[i].offset ||
            f.rva != w[i].start || f.size != w[i].size)
            fail_msg("0x%x: want %s+%lld (%s, 0x%x+0x%x), got %s+%lld (%s, 0x%x+0x%x)",
                     (unsigned)w[i].rva, w[i].name, (long long)w[i].offset,
                     perch_sym_source_name(w[i].source), (unsigned)w[i].start, (unsigned)w[i].size,
                     f.name, (long long)off, perch_sym_source_name(f.source), (unsigned)f.rva,
                     (unsigned)f.size);
    }
    perch_symtab_destroy(t);
}

#define CHECK(adds, wants)                                                                         \
    check(adds, sizeof adds / sizeof adds[0], wants, sizeof wants / sizeof wants[0])

/* One address range named by all four sources: each wins where the better ones stop. */
static void test_precedence(void **state)
{
    (void)state;
    static const struct add a[] = {
        {'s', 0, 0x1000, 0x1000, CODE, 0, ""},
        {'c', 0, 0x1000, 0x18, 0, 0, ""},
        {'n', PERCH_SYM_PDATA, 0x1000, 0x20, 0, 0, "fun_1000"},
        {'n', PERCH_SYM_EXPORT, 0x1000, 0, 0, 0, "exp"},
        {'n', PERCH_SYM_PUBLIC, 0x1000, 0, 0, 0, "pub"},
        {'n', PERCH_SYM_PROC, 0x1000, 0x10, 0, 0, "proc"},
    };
    static const struct want w[] = {
        {0x0fff, NULL, 0, 0, 0, 0},
        {0x1000, "proc", PERCH_SYM_PROC, 0, 0x1000, 0x10},
        {0x100f, "proc", PERCH_SYM_PROC, 0xf, 0x1000, 0x10},
        {0x1010, "pub", PERCH_SYM_PUBLIC, 0x10, 0x1000, 0x18},
        {0x1017, "pub", PERCH_SYM_PUBLIC, 0x17, 0x1000, 0x18},
        {0x1018, "exp", PERCH_SYM_EXPORT, 0x18, 0x1000, 0x20},
        {0x101f, "exp", PERCH_SYM_EXPORT, 0x1f, 0x1000, 0x20},
        {0x1020, NULL, 0, 0, 0, 0},
    };
    CHECK(a, w);
}

/* A public ends at the next public, or at its contribution's end: an address past that is
 * never credited to it, however far the next public is. */
static void test_public_extent(void **state)
{
    (void)state;
    static const struct add a[] = {
        {'s', 0, 0x1000, 0x2000, CODE, 0, ""},
        {'c', 0, 0x1000, 0x200, 0, 0, ""},
        {'c', 0, 0x1200, 0x40, 0, 0, ""},
        {'n', PERCH_SYM_PUBLIC, 0x1100, 0, 0, 0, "b"},
        {'n', PERCH_SYM_PUBLIC, 0x1000, 0, 0, 0, "a"},
        {'n', PERCH_SYM_PUBLIC, 0x1200, 0, 0, 0, "c"},
        {'n', PERCH_SYM_PUBLIC, 0x2f00, 0, 0, 0, "tail"},    /* no contribution: section end */
        {'n', PERCH_SYM_PUBLIC, 0x4000, 0, 0, 0, "nowhere"}, /* outside every section */
    };
    static const struct want w[] = {
        {0x10ff, "a", PERCH_SYM_PUBLIC, 0xff, 0x1000, 0x100},
        {0x1100, "b", PERCH_SYM_PUBLIC, 0, 0x1100, 0x100},
        {0x1200, "c", PERCH_SYM_PUBLIC, 0, 0x1200, 0x40},
        {0x123f, "c", PERCH_SYM_PUBLIC, 0x3f, 0x1200, 0x40},
        {0x1240, NULL, 0, 0, 0, 0},
        {0x2eff, NULL, 0, 0, 0, 0},
        {0x2fff, "tail", PERCH_SYM_PUBLIC, 0xff, 0x2f00, 0x100},
        {0x3000, NULL, 0, 0, 0, 0},
        {0x4000, NULL, 0, 0, 0, 0},
    };
    CHECK(a, w);
}

/* An export in a leaf function (no .pdata) stops at the next .pdata function; one inside a
 * .pdata function stops at its end; aliases resolve to the smallest name. */
static void test_export_extent(void **state)
{
    (void)state;
    static const struct add a[] = {
        {'s', 0, 0x1000, 0x1000, CODE, 0, ""},
        {'n', PERCH_SYM_EXPORT, 0x1000, 0, 0, 0, "leaf"},
        {'n', PERCH_SYM_PDATA, 0x1100, 0x80, 0, 0, "fun_1100"},
        {'n', PERCH_SYM_PDATA, 0x1200, 0x40, 0, 0, "fun_1200"},
        {'n', PERCH_SYM_EXPORT, 0x1200, 0, 0, 0, "ZwClose"},
        {'n', PERCH_SYM_EXPORT, 0x1200, 0, 0, 0, "NtClose"},
        {'n', PERCH_SYM_EXPORT, 0x1800, 0, 0, 0, "last"},
    };
    static const struct want w[] = {
        {0x10ff, "leaf", PERCH_SYM_EXPORT, 0xff, 0x1000, 0x100},
        {0x1100, "fun_1100", PERCH_SYM_PDATA, 0, 0x1100, 0x80},
        {0x1180, NULL, 0, 0, 0, 0},
        {0x1200, "NtClose", PERCH_SYM_EXPORT, 0, 0x1200, 0x40},
        {0x1240, NULL, 0, 0, 0, 0},
        {0x1fff, "last", PERCH_SYM_EXPORT, 0x7ff, 0x1800, 0x800},
    };
    CHECK(a, w);
}

/* Nested and overlapping sized ranges of one rank: the innermost (then the later start) wins,
 * and the outer one resumes after it. */
static void test_nesting(void **state)
{
    (void)state;
    static const struct add a[] = {
        {'n', PERCH_SYM_PROC, 0x1000, 0x100, 0, 0, "outer"},
        {'n', PERCH_SYM_PROC, 0x1040, 0x20, 0, 0, "inner"},
        {'n', PERCH_SYM_THUNK, 0x1040, 0x20, 0, 0, "a_thunk"}, /* same range: smaller name */
        {'n', PERCH_SYM_PROC, 0x10f0, 0x40, 0, 0, "straddle"},
    };
    static const struct want w[] = {
        {0x103f, "outer", PERCH_SYM_PROC, 0x3f, 0x1000, 0x100},
        {0x1050, "a_thunk", PERCH_SYM_THUNK, 0x10, 0x1040, 0x20},
        {0x1060, "outer", PERCH_SYM_PROC, 0x60, 0x1000, 0x100},
        {0x10f0, "straddle", PERCH_SYM_PROC, 0, 0x10f0, 0x40},
        {0x112f, "straddle", PERCH_SYM_PROC, 0x3f, 0x10f0, 0x40},
        {0x1130, NULL, 0, 0, 0, 0},
    };
    CHECK(a, w);
}

/* A chained fragment far from its primary entry is credited to the primary function, by the
 * best name at the primary's start, else as fun_<primary>. */
static void test_fragments(void **state)
{
    (void)state;
    static const struct add named[] = {
        {'s', 0, 0x1000, 0x5000, CODE, 0, ""},
        {'c', 0, 0x1000, 0x10, 0, 0, ""},
        {'n', PERCH_SYM_PDATA, 0x1000, 0x10, 0, 0, "fun_1000"},
        {'f', PERCH_SYM_PDATA, 0x5000, 0x10, 0x1000, 0x10, "fun_1000"},
        {'n', PERCH_SYM_PUBLIC, 0x1000, 0, 0, 0, "hot"},
    };
    static const struct want w1[] = {
        {0x1004, "hot", PERCH_SYM_PUBLIC, 4, 0x1000, 0x10},
        {0x5004, "hot", PERCH_SYM_PUBLIC, 0x4004, 0x1000, 0x10},
        {0x5010, NULL, 0, 0, 0, 0},
    };
    static const struct add bare[] = {
        {'n', PERCH_SYM_PDATA, 0x1000, 0x10, 0, 0, "fun_1000"},
        {'f', PERCH_SYM_PDATA, 0x0800, 0x10, 0x1000, 0x10, "fun_1000"},
    };
    static const struct want w2[] = {
        {0x0804, "fun_1000", PERCH_SYM_PDATA, 0x804 - 0x1000, 0x1000, 0x10},
    };
    CHECK(named, w1);
    CHECK(bare, w2);
}

static void test_contract(void **state)
{
    perch_symtab *t = NULL;
    perch_sym_func f;
    int64_t off;
    char longname[5000];
    (void)state;
    memset(longname, 'x', sizeof longname);
    assert_int_equal(perch_symtab_create(&t), 0);
    assert_false(perch_symtab_lookup(t, 0, &f, &off)); /* not sealed: nothing */
    assert_int_equal(perch_symtab_add(t, 0, 1, 1, "x", 1), PERCH_EINVAL);
    assert_int_equal(perch_symtab_add(t, 99, 1, 1, "x", 1), PERCH_EINVAL);
    assert_int_equal(perch_symtab_add_fragment(t, PERCH_SYM_PDATA, 0, 0, 0, 4, "x", 1),
                     PERCH_EINVAL);
    assert_int_equal(
        perch_symtab_add(t, PERCH_SYM_PROC, 0xfffffff0u, 0x100, longname, sizeof longname), 0);
    assert_int_equal(perch_symtab_seal(t), 0);
    assert_int_equal(perch_symtab_seal(t), 0);
    assert_int_equal(perch_symtab_add(t, PERCH_SYM_PROC, 1, 1, "x", 1), PERCH_EINVAL);
    assert_true(perch_symtab_lookup(t, 0xfffffffeu, &f, &off));
    assert_int_equal(strlen(f.name), 4096);
    assert_int_equal(perch_symtab_count(t), 1);
    assert_true(perch_symtab_memory(t) > 4096);
    perch_symtab_destroy(t);
    perch_symtab_destroy(NULL);
    assert_string_equal(perch_sym_source_name(PERCH_SYM_PDATA), "pdata");
    assert_string_equal(perch_sym_source_name(42), "none");
    assert_true(perch_sym_source_rank(PERCH_SYM_PROC) < perch_sym_source_rank(PERCH_SYM_PUBLIC));
    assert_true(perch_sym_source_rank(PERCH_SYM_EXPORT) < perch_sym_source_rank(PERCH_SYM_PDATA));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),    cmocka_unit_test(test_public_extent),
        cmocka_unit_test(test_export_extent), cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_fragments),     cmocka_unit_test(test_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
