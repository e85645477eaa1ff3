/*
 * The symbol path parser and the resolver's cache: entries become local directories (srv*
 * and cache* ones as stores only), URLs are skipped with a note; a module is searched once
 * however often it is asked for, a miss included (negative cache), and its identity decides:
 * the same image with another PDB GUID is a different module, whose PDB is then mismatched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym_fixture.h"

static void test_sympath(void **state)
{
    perch_sympath *sp = NULL;
    (void)state;
    assert_int_equal(perch_sympath_parse(NULL, &sp), 0);
    assert_int_equal(perch_sympath_dir_count(sp), 0);
    assert_string_equal(perch_sympath_notes(sp), "");
    perch_sympath_destroy(sp);
    assert_int_equal(
        perch_sympath_parse(" C:\\sym ;;srv*D:\\cache*E:\\down*https://msdl.microsoft.com/"
                            "download/symbols;cache*/tmp/c;SRV*https://x.invalid;"
                            "symsrv*symsrv.dll*/s*http://y.invalid;http://z.invalid",
                            &sp),
        0);
    assert_int_equal(perch_sympath_dir_count(sp), 5); /* C:\sym D:\cache E:\down /tmp/c /s */
    const char *notes = perch_sympath_notes(sp);
    assert_non_null(strstr(notes, "https://msdl.microsoft.com/download/symbols skipped"));
    assert_non_null(strstr(notes, "'SRV*https://x.invalid': https://x.invalid skipped"));
    assert_non_null(strstr(notes, "'SRV*https://x.invalid':  names no local store"));
    assert_non_null(strstr(notes, "http://y.invalid skipped"));
    assert_non_null(strstr(notes, "'http://z.invalid':  skipped"));
    perch_sympath_destroy(sp);
    perch_sympath_destroy(NULL);
}

static perch_sym_module image_module(const char *path)
{
    perch_input in;
    perch_pe *pe = NULL;
    static char pdb_name[4096];
    perch_sym_module m;
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_pe_read(&in, &pe, NULL), 0);
    perch_input_close(&in);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    snprintf(pdb_name, sizeof pdb_name, "%s", pi->pdb_path);
    m = (perch_sym_module){path,        pi->size_of_image, pi->time_date_stamp, true, pi->pdb_guid,
                           pi->pdb_age, pdb_name};
    perch_pe_destroy(pe);
    return m;
}

static void test_cache(void **state)
{
    perch_sympath *sp = NULL;
    perch_resolver *r = NULL;
    const perch_symtab *tab = NULL, *tab2 = NULL;
    const perch_sym_report *rep = NULL;
    perch_resolver_stats st;
    (void)state;
    perch_sym_module m = image_module(sym_fixture_path("x86_64/app.exe"));
    assert_int_equal(perch_sympath_parse("/nonexistent-perch-dir", &sp), 0);
    assert_int_equal(perch_resolver_create(sp, true, &r), 0);
    assert_int_equal(perch_resolver_module(r, &m, &tab, &rep), 0);
    assert_non_null(tab);
    assert_int_equal(rep->pdb_status, PERCH_SYMST_FOUND);
    assert_int_equal(rep->image_status, PERCH_SYMST_FOUND);
    assert_true(rep->names > 5);
    perch_resolver_get_stats(r, &st);
    assert_int_equal(st.modules, 1);
    assert_int_equal(st.files_opened, 2); /* the image and its PDB beside it */
    assert_int_equal(perch_resolver_module(r, &m, &tab2, &rep), 0);
    assert_ptr_equal(tab, tab2);
    perch_resolver_get_stats(r, &st);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.files_opened, 2);

    /* another PDB identity: the PDB beside the image is mismatched, the image still names */
    m.pdb_guid.data1 ^= 1;
    assert_int_equal(perch_resolver_module(r, &m, &tab, &rep), 0);
    assert_int_equal(rep->pdb_status, PERCH_SYMST_MISMATCH);
    assert_non_null(strstr(rep->pdb_why, "its GUID/age is"));
    assert_non_null(tab); /* .pdata names */
    perch_resolver_get_stats(r, &st);
    uint64_t opened = st.files_opened;
    assert_int_equal(perch_resolver_module(r, &m, &tab, &rep), 0);
    perch_resolver_get_stats(r, &st);
    assert_int_equal(st.files_opened, opened);

    /* a module no file describes: a miss, remembered */
    perch_sym_module gone = {
        "C:\\nowhere\\gone.dll", 0x5000, 0x1234, true, m.pdb_guid, 1, "gone.pdb"};
    assert_int_equal(perch_resolver_module(r, &gone, &tab, &rep), 0);
    assert_null(tab);
    assert_int_equal(rep->pdb_status, PERCH_SYMST_NOT_FOUND);
    assert_int_equal(rep->image_status, PERCH_SYMST_NOT_FOUND);
    assert_non_null(strstr(rep->searched, "/nonexistent-perch-dir/gone.pdb\n"));
    perch_resolver_get_stats(r, &st);
    uint64_t hits = st.cache_hits;
    assert_int_equal(perch_resolver_module(r, &gone, &tab, &rep), 0);
    perch_resolver_get_stats(r, &st);
    assert_int_equal(st.cache_hits, hits + 1);
    assert_int_equal(st.modules, 3);
    perch_resolver_destroy(r);
    perch_sympath_destroy(sp);
}

static void test_file(void **state)
{
    perch_resolver *r = NULL;
    const perch_symtab *tab = NULL;
    const perch_sym_report *rep = NULL;
    const char *why = NULL;
    (void)state;
    const char *path = sym_fixture_path("i686/lib.pdb");
    assert_int_equal(perch_resolver_create(NULL, false, &r), 0);
    assert_int_equal(perch_resolver_file(r, path, &tab, &rep, &why), 0);
    assert_non_null(tab);
    assert_int_equal(rep->pdb_status, PERCH_SYMST_FOUND);
    assert_int_equal(rep->image_status, PERCH_SYMST_UNKNOWN);
    assert_int_equal(perch_resolver_file(r, "/nonexistent-perch-dir/x.pdb", &tab, &rep, &why),
                     PERCH_ENOENT);
    assert_non_null(why);
    perch_resolver_destroy(r);
    assert_string_equal(perch_sym_status_name(PERCH_SYMST_MISMATCH), "mismatched");
    assert_string_equal(perch_sym_status_name(77), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sympath),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
