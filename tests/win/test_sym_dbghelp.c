/*
 * DbgHelp (src/win/sym_dbghelp.c) against Perch's own PE and PDB readers, under Wine, whose
 * dbghelp is an independent implementation that reads PDBs: for the fixtures lld made
 * (tests/fixtures/sym: the x86_64 exe and dll, each with its PDB beside it), DbgHelp
 * must find the PDB and name every procedure Perch's reader lists, at its start and in its
 * middle, with the same start; a module whose image does not exist is not found.
 */
#include <windows.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym_dbghelp.h"
#include "sym_fixture.h"

/* The fixture's path as Windows sees it: a Unix path under Wine is on drive Z:. */
static const char *win_path(const char *path)
{
    static char out[4200];
    if (path[0] != '/') {
        snprintf(out, sizeof out, "%s", path);
        return out;
    }
    snprintf(out, sizeof out, "Z:%s", path);
    for (char *p = out; *p; p++)
        if (*p == '/')
            *p = '\\';
    return out;
}

static void check_image(const char *rel)
{
    const char *path = win_path(sym_fixture_path(rel));
    perch_resolver *r = NULL;
    const perch_symtab *tab = NULL;
    const perch_sym_report *rep = NULL;
    const char *why = NULL;
    perch_input in;
    perch_pe *pe = NULL;
    perch_dbghelp *d = NULL;
    perch_dbghelp_module mi;
    char name[4096];
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_pe_read(&in, &pe, &why), 0);
    perch_input_close(&in);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_resolver_file(r, path, &tab, &rep, &why), 0);
    assert_int_equal(rep->pdb_status, PERCH_SYMST_FOUND);
    assert_int_equal(perch_dbghelp_create(NULL, &d), 0);
    assert_int_equal(perch_dbghelp_load(d, path, pi->image_base, pi->size_of_image, &mi), 0);
    if (mi.status != PERCH_SYMST_FOUND)
        fail_msg("%s: DbgHelp found no PDB (SYM_TYPE %d)", rel, mi.sym_type);
    assert_non_null(strstr(mi.pdb_file, ".pdb"));
    size_t procs = 0;
    for (size_t i = 0; i < perch_symtab_count(tab); i++) {
        perch_sym_func want, got;
        int64_t off = -1;
        perch_symtab_get(tab, i, &want);
        if (want.source != PERCH_SYM_PROC)
            continue;
        snprintf(name, sizeof name, "%s", want.name);
        for (uint32_t at = 0; at < want.size; at += want.size / 2 + 1) {
            if (!perch_dbghelp_lookup(d, pi->image_base, pi->image_base + want.rva + at, &got,
                                      &off))
                fail_msg("%s: DbgHelp names nothing at %s+0x%x", rel, name, (unsigned)at);
            if (strcmp(got.name, name) != 0 || got.rva != want.rva || off != at)
                fail_msg("%s: at %s+0x%x DbgHelp says %s+0x%llx (start 0x%x)", rel, name,
                         (unsigned)at, got.name, (long long)off, (unsigned)got.rva);
            assert_int_equal(got.source, PERCH_SYM_DBGHELP);
        }
        procs++;
    }
    assert_true(procs >= 5);
    perch_dbghelp_destroy(d);
    perch_resolver_destroy(r);
    perch_pe_destroy(pe);
}

static void test_fixtures(void **state)
{
    (void)state;
    /* x86_64 only: Wine's 64-bit dbghelp loads the i686 fixtures with SYM_TYPE SymNone (no
     * PDB), so 32-bit modules in a 64-bit perchd are untested here (docs/symbols.md). */
    check_image("x86_64/app.exe");
    check_image("x86_64/lib.dll");
}

static void test_missing_module(void **state)
{
    perch_dbghelp *d = NULL;
    perch_dbghelp_module mi;
    perch_sym_func f;
    int64_t off;
    (void)state;
    assert_int_equal(perch_dbghelp_create("Z:\\nonexistent-perch-symbols", &d), 0);
    int err = perch_dbghelp_load(d, "Z:\\nonexistent-perch-dir\\gone.dll", 0x7ff700000000ull,
                                 0x10000, &mi);
    assert_true(err == PERCH_ENOENT || mi.status == PERCH_SYMST_NOT_FOUND);
    assert_false(perch_dbghelp_lookup(d, 0x7ff700000000ull, 0x7ff700001000ull, &f, &off));
    perch_dbghelp_destroy(d);
    perch_dbghelp_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_missing_module),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
