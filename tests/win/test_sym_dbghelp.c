/*
 * DbgHelp (src/win/sym_dbghelp.c) against Perch's own PE and PDB readers, under Wine, whose
 * dbghelp is an independent implementation that reads PDBs: for the fixtures lld made
 * (tests/fixtures/sym: the x86_64 exe and dll, each with its PDB beside it), DbgHelp
 * must find the PDB and name every procedure Perch's reader lists, at its start and in its
 * middle, with the same start; a module whose image does not exist is not found. Then the
 * symbol worker with the DbgHelp backend, a tap in front of a capture writer: the capture it
 * writes names the frames as Perch's reader does. And kernel-logged paths (\??\,
 * \SystemRoot\, \Device\...) become drive paths.
 */
#include <windows.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/capture.h"
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

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    return perch_symnames_symbol(ctx, rec);
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    return perch_symnames_module(ctx, rec);
}

/* The capture the worker's tap wrote for three addresses of the image, read into names. */
static perch_symnames *worker_capture(const char *path, const perch_pe_info *pi,
                                      const uint32_t rva[3])
{
    perch_symbackend be;
    perch_symworker *w = NULL;
    perch_symworker_options o = {.size = sizeof o};
    perch_memory_out mem;
    perch_output out;
    perch_capture_writer_opts wo;
    perch_capture_writer *cw = NULL;
    perch_sink writer, tapped, ws, rs;
    perch_symworker_tap *tap = NULL;
    perch_symworker_stats st;
    assert_int_equal(perch_dbghelp_backend_create(NULL, &be), 0);
    o.backend = be;
    assert_int_equal(perch_symworker_create(&o, &w), 0);
    perch_output_memory(&out, &mem, 1u << 24);
    perch_capture_writer_opts_default(&wo);
    assert_int_equal(perch_capture_writer_create(&out, &wo, &cw), 0);
    perch_capture_writer_sink(cw, &writer);
    assert_int_equal(perch_symworker_tap_create(w, &writer, &tap), 0);
    perch_symworker_tap_sink(tap, &tapped);
    perch_symworker_sink(w, &ws);
    sym_fixture_feed(&ws, &tapped, path, pi, rva);
    assert_int_equal(tapped.finish(tapped.ctx), 0); /* pumps, waits, writes the names */
    perch_symworker_get_stats(w, &st);
    assert_int_equal(st.modules_loaded, 1);
    assert_int_equal(st.named, 3);
    perch_capture_writer_destroy(cw);
    assert_int_equal(out.close(out.ctx), 0);
    size_t len;
    uint8_t *bytes = perch_output_memory_take(&mem, &len);
    perch_symnames *n = NULL;
    perch_input in;
    perch_capture_status cs;
    assert_int_equal(perch_symnames_create(&n), 0);
    memset(&rs, 0, sizeof rs);
    rs.ctx = n, rs.module = on_module, rs.symbol = on_symbol;
    perch_input_memory(&in, bytes, len);
    assert_int_equal(perch_capture_replay(&in, &rs, &cs), 0);
    perch_input_close(&in);
    perch_free(bytes);
    perch_symworker_tap_destroy(tap);
    perch_symworker_destroy(w);
    perch_dbghelp_backend_destroy(&be);
    return n;
}

static void test_worker(void **state)
{
    (void)state;
    const char *path = win_path(sym_fixture_path("x86_64/app.exe"));
    perch_input in;
    perch_pe *pe = NULL;
    perch_resolver *r = NULL;
    const perch_symtab *tab;
    const perch_sym_report *rep;
    const char *why;
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_pe_read(&in, &pe, &why), 0);
    perch_input_close(&in);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    uint32_t rva[3] = {pi->functions[0].begin + 2, pi->functions[1].begin + 3,
                       pi->functions[2].begin};
    perch_symnames *n = worker_capture(path, pi, rva);
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_resolver_file(r, path, &tab, &rep, &why), 0);
    for (int i = 0; i < 3; i++) {
        perch_sym_func got, want;
        int64_t o1, o2;
        assert_true(perch_symtab_lookup(tab, rva[i], &want, &o2));
        if (!perch_symnames_lookup(n, 20, rva[i], &got, &o1))
            fail_msg("the capture names nothing at 0x%x (%s)", (unsigned)rva[i], want.name);
        assert_string_equal(got.name, want.name);
        assert_int_equal(got.source, PERCH_SYM_DBGHELP);
        assert_int_equal(o1, o2);
    }
    perch_symnames_destroy(n);
    perch_resolver_destroy(r);
    perch_pe_destroy(pe);
}

static void expect_path(const char *nt, const wchar_t *want)
{
    wchar_t got[1024];
    assert_int_equal(perch_dbghelp_dos_path(nt, got, 1024), 0);
    if (wcscmp(got, want) != 0)
        fail_msg("%s -> %ls, want %ls", nt, got, want);
}

static void test_dos_paths(void **state)
{
    wchar_t windir[MAX_PATH], target[512], want[1024];
    char nt[1200];
    (void)state;
    expect_path("\\??\\C:\\perch\\x.dll", L"C:\\perch\\x.dll");
    assert_true(GetWindowsDirectoryW(windir, MAX_PATH) > 0);
    swprintf(want, 1024, L"%ls\\system32\\ntdll.dll", windir);
    expect_path("\\SystemRoot\\system32\\ntdll.dll", want);
    expect_path("C:\\plain\\path.dll", L"C:\\plain\\path.dll");
    if (QueryDosDeviceW(L"C:", target, 512) == 0)
        skip();
    snprintf(nt, sizeof nt, "%ls\\Windows\\x.dll", target);
    expect_path(nt, L"C:\\Windows\\x.dll");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_missing_module),
        cmocka_unit_test(test_worker),
        cmocka_unit_test(test_dos_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
