/*
 * The PDB reader on the fixtures lld made (tests/fixtures/sym) and on containers that are
 * not MSF 7.00: the PDB's GUID and age equal the image's RSDS record; its procedures cover
 * the image's .pdata functions; a PDB 2.00 ("JG") file is refused by name; a wrong page size
 * or directory size is refused; every prefix of a real PDB reads or fails with a reason; and
 * every allocation failure while loading an image and its PDB surfaces as PERCH_ENOMEM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym_fixture.h"
#include "util/mem.h"

static int read_pdb(const uint8_t *p, size_t len, const perch_pe_section *secs, uint32_t n,
                    perch_symtab *t, perch_pdb_info *info, const char **why)
{
    perch_input in;
    perch_input_memory(&in, p, len);
    *why = NULL;
    int err = perch_pdb_read(&in, secs, n, t, info, why);
    perch_input_close(&in);
    if (err)
        assert_non_null(*why);
    return err;
}

static perch_pe *read_pe(const uint8_t *p, size_t len)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why;
    perch_input_memory(&in, p, len);
    assert_int_equal(perch_pe_read(&in, &pe, &why), 0);
    perch_input_close(&in);
    return pe;
}

static void test_identity_and_procedures(void **state)
{
    size_t plen, ilen;
    uint8_t *pdb = sym_fixture("x86_64/app.pdb", &plen);
    uint8_t *img = sym_fixture("x86_64/app.exe", &ilen);
    perch_pe *pe = read_pe(img, ilen);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    perch_pdb_info info;
    perch_symtab *t = NULL;
    const char *why;
    (void)state;
    assert_int_equal(read_pdb(pdb, plen, NULL, 0, NULL, &info, &why), 0);
    assert_memory_equal(&info.guid, &pi->pdb_guid, sizeof info.guid);
    assert_int_equal(info.age, pi->pdb_age);
    assert_int_equal(info.block_size, 4096);
    assert_false(info.fastlink);
    assert_int_equal(info.machine, 0x8664);
    assert_int_equal(info.proc_count, 0); /* identity only */
    assert_int_equal(perch_symtab_create(&t), 0);
    assert_int_equal(read_pdb(pdb, plen, NULL, 0, t, &info, &why), 0);
    assert_true(info.has_section_headers);
    assert_true(info.proc_count >= 5);
    assert_true(info.public_count >= info.proc_count);
    assert_true(info.module_count >= 2);
    assert_int_equal(perch_symtab_seal(t), 0);
    /* every .pdata function start is a procedure start, or a public's (chained_main) */
    for (uint32_t i = 0; i < pi->function_count; i++) {
        perch_sym_func f;
        int64_t off;
        uint32_t rva = pi->functions[i].primary_begin;
        assert_true(perch_symtab_lookup(t, rva, &f, &off));
        assert_int_equal(off, 0);
        assert_true(f.source == PERCH_SYM_PROC || f.source == PERCH_SYM_PUBLIC);
    }
    perch_symtab_destroy(t);
    perch_pe_destroy(pe);
    free(pdb);
    free(img);
}

static void test_refusals(void **state)
{
    static const char jg[] = "Microsoft C/C++ program database 2.00\r\n\x1a"
                             "JG\0\0";
    uint8_t *buf = calloc(1, 8192);
    perch_pdb_info info;
    const char *why;
    (void)state;
    memcpy(buf, jg, sizeof jg);
    assert_int_equal(read_pdb(buf, 8192, NULL, 0, NULL, &info, &why), PERCH_EVERSION);
    assert_non_null(strstr(why, "PDB 2.00 (JG)"));
    memset(buf, 0, 8192);
    assert_int_equal(read_pdb(buf, 8192, NULL, 0, NULL, &info, &why), PERCH_EFORMAT);
    assert_string_equal(why, "not a PDB (no MSF 7.00 signature)");
    memcpy(buf,
           "Microsoft C/C++ MSF 7.00\r\n\x1a"
           "DS\0\0\0",
           32);
    perch_test_put_u32(buf + 32, 768);
    assert_int_equal(read_pdb(buf, 8192, NULL, 0, NULL, &info, &why), PERCH_EFORMAT);
    assert_string_equal(why, "the page size is not a power of two from 512 to 65536");
    perch_test_put_u32(buf + 32, 1024);
    perch_test_put_u32(buf + 40, 8);
    perch_test_put_u32(buf + 44, 6);
    assert_int_equal(read_pdb(buf, 8192, NULL, 0, NULL, &info, &why), PERCH_EFORMAT);
    assert_string_equal(why, "the stream directory size is invalid");
    perch_test_put_u32(buf + 44, 8);
    perch_test_put_u32(buf + 52, 99); /* the page map's page is past the page count */
    assert_int_equal(read_pdb(buf, 8192, NULL, 0, NULL, &info, &why), PERCH_EFORMAT);
    assert_string_equal(why, "a stream page is past the page count");
    free(buf);
}

/* Every prefix of a real PDB reads or fails cleanly, with a reason. */
static void test_prefixes(void **state)
{
    size_t len;
    uint8_t *pdb = sym_fixture("i686/lib.pdb", &len);
    int failed = 0;
    (void)state;
    for (size_t n = 0; n < len; n += n < 8192 ? 61 : 509) {
        uint8_t *cut = malloc(n + 1);
        perch_symtab *t = NULL;
        perch_pdb_info info;
        const char *why;
        memcpy(cut, pdb, n);
        assert_int_equal(perch_symtab_create(&t), 0);
        failed += read_pdb(cut, n, NULL, 0, t, &info, &why) != 0;
        perch_symtab_destroy(t);
        free(cut);
    }
    assert_true(failed > 10);
    free(pdb);
}

static int fail_after;
static void *failing_realloc(void *p, size_t n)
{
    if (n == 0) {
        free(p);
        return NULL;
    }
    if (fail_after-- <= 0)
        return NULL;
    return realloc(p, n);
}

static int load_all(const uint8_t *img, size_t ilen, const uint8_t *pdb, size_t plen)
{
    perch_input in;
    perch_pe *pe = NULL;
    perch_symtab *t = NULL;
    perch_pdb_info info;
    const char *why;
    perch_input_memory(&in, img, ilen);
    int err = in.ctx ? perch_pe_read(&in, &pe, &why) : PERCH_ENOMEM;
    perch_input_close(&in);
    err = err ? err : perch_symtab_create(&t);
    if (!err) {
        const perch_pe_info *pi = perch_pe_get_info(pe);
        perch_input_memory(&in, pdb, plen);
        err = in.ctx ? perch_pdb_read(&in, pi->sections, pi->section_count, t, &info, &why)
                     : PERCH_ENOMEM;
        perch_input_close(&in);
    }
    err = err ? err : perch_pe_add_names(pe, t);
    err = err ? err : perch_symtab_seal(t);
    perch_symtab_destroy(t);
    perch_pe_destroy(pe);
    return err;
}

static void test_allocation_failures(void **state)
{
    size_t plen, ilen;
    uint8_t *pdb = sym_fixture("x86_64/lib.pdb", &plen);
    uint8_t *img = sym_fixture("x86_64/lib.dll", &ilen);
    perch__realloc_fn saved = perch__realloc_hook;
    int failures = 0, err = PERCH_ENOMEM;
    (void)state;
    for (int limit = 0; limit < 2000 && err != 0; limit++) {
        fail_after = limit;
        perch__realloc_hook = failing_realloc;
        err = load_all(img, ilen, pdb, plen);
        perch__realloc_hook = saved;
        assert_true(err == 0 || err == PERCH_ENOMEM);
        failures += err != 0;
    }
    assert_int_equal(err, 0);
    assert_true(failures > 10);
    free(pdb);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_and_procedures),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
