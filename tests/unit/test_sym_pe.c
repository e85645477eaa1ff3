/*
 * The PE reader on images built here byte by byte from the PE format's layouts (the real
 * images made by lld and Wine's DLLs are checked against LLVM's readers in
 * tests/fixtures/sym): PE32+ and PE32 headers, a CodeView RSDS record, exports with a
 * forwarder and an ordinal-only entry, .pdata with a chained fragment far from its primary
 * entry, and damaged images (every prefix, an export ordinal out of range, an empty .pdata
 * entry, a chain that loops) that must fail with a reason and never read out of bounds.
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

#define IMG 0x3000

static const perch_guid guid = {0x11223344, 0x5566, 0x7788, {1, 2, 3, 4, 5, 6, 7, 8}};

static void put_str(uint8_t *img, uint32_t at, const char *s)
{
    memcpy(img + at, s, strlen(s) + 1);
}

/* An image whose file offsets equal its RVAs: headers, .text at 0x1000, .rdata at 0x2000
 * holding the export directory (0x2000, 0x200 bytes), .pdata (0x2200) and the debug
 * directory (0x2300). */
static uint8_t *build(bool pe32plus)
{
    uint8_t *img = calloc(1, IMG), *p;
    uint32_t opt = pe32plus ? 240 : 224, dirs = pe32plus ? 112 : 96;
    img[0] = 'M', img[1] = 'Z';
    perch_test_put_u32(img + 0x3c, 0x40);
    memcpy(img + 0x40, "PE\0\0", 4);
    p = img + 0x44;
    p = perch_test_put_u16(p, pe32plus ? 0x8664 : 0x14c);
    p = perch_test_put_u16(p, 2);
    p = perch_test_put_u32(p, 0x5f000000); /* TimeDateStamp */
    p = perch_test_put_u32(p, 0);
    p = perch_test_put_u32(p, 0);
    p = perch_test_put_u16(p, (uint16_t)opt);
    p = perch_test_put_u16(p, 0x2022); /* executable, large address aware, DLL */
    uint8_t *o = p;
    perch_test_put_u16(o, pe32plus ? 0x20b : 0x10b);
    if (pe32plus)
        perch_test_put_u64(o + 24, 0x180000000ull);
    else
        perch_test_put_u32(o + 28, 0x10000000u);
    perch_test_put_u32(o + 56, IMG);   /* SizeOfImage */
    perch_test_put_u32(o + 60, 0x200); /* SizeOfHeaders */
    perch_test_put_u32(o + 64, 0xabcd);
    perch_test_put_u32(o + dirs - 4, 16);
    perch_test_put_u32(o + dirs + 0, 0x2000), perch_test_put_u32(o + dirs + 4, 0x200);
    perch_test_put_u32(o + dirs + 24, 0x2200), perch_test_put_u32(o + dirs + 28, 36);
    perch_test_put_u32(o + dirs + 48, 0x2300), perch_test_put_u32(o + dirs + 52, 28);
    uint8_t *s = o + opt;
    memcpy(s, ".text", 5);
    perch_test_put_u32(s + 8, 0x1000), perch_test_put_u32(s + 12, 0x1000);
    perch_test_put_u32(s + 16, 0x1000), perch_test_put_u32(s + 20, 0x1000);
    perch_test_put_u32(s + 36, 0x60000020);
    memcpy(s + 40, ".rdata", 6);
    perch_test_put_u32(s + 48, 0x1000), perch_test_put_u32(s + 52, 0x2000);
    perch_test_put_u32(s + 56, 0x1000), perch_test_put_u32(s + 60, 0x2000);
    perch_test_put_u32(s + 76, 0x40000040);
    /* exports: base 1, four functions, three names */
    uint8_t *x = img + 0x2000;
    perch_test_put_u32(x + 12, 0x2100);
    perch_test_put_u32(x + 16, 1);
    perch_test_put_u32(x + 20, 4);
    perch_test_put_u32(x + 24, 3);
    perch_test_put_u32(x + 28, 0x2040);
    perch_test_put_u32(x + 32, 0x2060);
    perch_test_put_u32(x + 36, 0x2080);
    uint32_t eat[4] = {0x1000, 0x1100, 0x2180, 0x1200}, names[3] = {0x2110, 0x2120, 0x2130};
    for (int i = 0; i < 4; i++)
        perch_test_put_u32(img + 0x2040 + 4 * i, eat[i]);
    for (int i = 0; i < 3; i++) {
        perch_test_put_u32(img + 0x2060 + 4 * i, names[i]);
        perch_test_put_u16(img + 0x2080 + 2 * i, (uint16_t)i);
    }
    put_str(img, 0x2100, "test.dll");
    put_str(img, 0x2110, "alpha");
    put_str(img, 0x2120, "beta");
    put_str(img, 0x2130, "fwd");
    put_str(img, 0x2180, "other.function");
    /* .pdata: alpha, beta, and a fragment at 0x1800 chained to beta's entry */
    uint32_t rf[3][3] = {
        {0x1000, 0x1080, 0x2280}, {0x1100, 0x1180, 0x2290}, {0x1800, 0x1840, 0x22a0}};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            perch_test_put_u32(img + 0x2200 + 12 * i + 4 * k, rf[i][k]);
    img[0x2280] = 1, img[0x2290] = 1;
    img[0x22a0] = 1 | (4 << 3); /* version 1, UNW_FLAG_CHAININFO, no codes */
    perch_test_put_u32(img + 0x22a4, 0x1100), perch_test_put_u32(img + 0x22a8, 0x1180);
    perch_test_put_u32(img + 0x22ac, 0x2290);
    /* debug directory: one CodeView entry */
    perch_test_put_u32(img + 0x2300 + 12, 2);
    perch_test_put_u32(img + 0x2300 + 16, 24 + 9);
    perch_test_put_u32(img + 0x2300 + 20, 0x2320);
    perch_test_put_u32(img + 0x2300 + 24, 0x2320);
    memcpy(img + 0x2320, "RSDS", 4);
    p = perch_test_put_u32(img + 0x2324, guid.data1);
    p = perch_test_put_u16(p, guid.data2);
    p = perch_test_put_u16(p, guid.data3);
    memcpy(p, guid.data4, 8);
    perch_test_put_u32(img + 0x2334, 3);
    put_str(img, 0x2338, "test.pdb");
    return img;
}

static int read_image(const uint8_t *img, size_t len, perch_pe **pe, const char **why)
{
    perch_input in;
    perch_input_memory(&in, img, len);
    *why = NULL;
    int err = perch_pe_read(&in, pe, why);
    perch_input_close(&in);
    if (err)
        assert_non_null(*why);
    return err;
}

static const char *name_at(const perch_symtab *t, uint32_t rva, int64_t *off, int *source)
{
    perch_sym_func f;
    if (!perch_symtab_lookup(t, rva, &f, off))
        return NULL;
    *source = f.source;
    return f.name;
}

static void test_pe32plus(void **state)
{
    uint8_t *img = build(true);
    perch_pe *pe = NULL;
    perch_symtab *t = NULL;
    const char *why;
    int64_t off = 0;
    int src = 0;
    (void)state;
    assert_int_equal(read_image(img, IMG, &pe, &why), 0);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    assert_true(pi->pe32plus && pi->is_dll);
    assert_int_equal(pi->machine, 0x8664);
    assert_int_equal(pi->image_base, 0x180000000ull);
    assert_int_equal(pi->size_of_image, IMG);
    assert_int_equal(pi->time_date_stamp, 0x5f000000);
    assert_int_equal(pi->checksum, 0xabcd);
    assert_int_equal(pi->section_count, 2);
    assert_string_equal(pi->sections[1].name, ".rdata");
    assert_true(pi->has_codeview);
    assert_memory_equal(&pi->pdb_guid, &guid, sizeof guid);
    assert_int_equal(pi->pdb_age, 3);
    assert_string_equal(pi->pdb_path, "test.pdb");
    assert_string_equal(pi->dll_name, "test.dll");
    assert_int_equal(pi->export_count, 3);
    assert_int_equal(pi->forwarders_skipped, 1);
    assert_string_equal(pi->exports[0].name, "alpha");
    assert_string_equal(pi->exports[1].name, "beta");
    assert_null(pi->exports[2].name); /* ordinal 4, no name */
    assert_int_equal(pi->exports[2].ordinal, 4);
    assert_int_equal(pi->function_count, 3);
    assert_int_equal(pi->chained_count, 1);
    assert_int_equal(pi->functions[2].primary_begin, 0x1100);
    assert_int_equal(pi->functions[2].primary_end, 0x1180);
    assert_int_equal(perch_symtab_create(&t), 0);
    assert_int_equal(perch_pe_add_names(pe, t), 0);
    assert_int_equal(perch_symtab_seal(t), 0);
    assert_string_equal(name_at(t, 0x1010, &off, &src), "alpha");
    assert_int_equal(off, 0x10);
    assert_int_equal(src, PERCH_SYM_EXPORT);
    assert_string_equal(name_at(t, 0x1804, &off, &src), "beta"); /* the fragment */
    assert_int_equal(off, 0x704);
    assert_string_equal(name_at(t, 0x1200, &off, &src), "ordinal_4");
    assert_null(name_at(t, 0x2180, &off, &src)); /* the forwarder's RVA names nothing */
    perch_symtab_destroy(t);
    perch_pe_destroy(pe);
    free(img);
}

static void test_pe32(void **state)
{
    uint8_t *img = build(false);
    perch_pe *pe = NULL;
    const char *why;
    (void)state;
    assert_int_equal(read_image(img, IMG, &pe, &why), 0);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    assert_false(pi->pe32plus);
    assert_int_equal(pi->machine, 0x14c);
    assert_int_equal(pi->image_base, 0x10000000u);
    assert_int_equal(pi->export_count, 3);
    assert_int_equal(pi->function_count, 0); /* .pdata is read for x64 only */
    assert_true(pi->has_codeview);
    perch_pe_destroy(pe);
    free(img);
}

/* Every prefix of the image reads or fails cleanly (ASan sees any read past the end). */
static void test_prefixes(void **state)
{
    uint8_t *img = build(true);
    const char *why;
    int ok = 0;
    (void)state;
    for (size_t len = 0; len <= IMG; len += len < 0x400 ? 1 : 7) {
        uint8_t *cut = malloc(len + 1);
        perch_pe *pe = NULL;
        memcpy(cut, img, len);
        ok += read_image(cut, len, &pe, &why) == 0;
        perch_pe_destroy(pe);
        free(cut);
    }
    assert_true(ok > 0);
    free(img);
}

static void expect_error(uint8_t *img, int err, const char *reason)
{
    perch_pe *pe = NULL;
    const char *why;
    assert_int_equal(read_image(img, IMG, &pe, &why), err);
    assert_string_equal(why, reason);
    assert_null(pe);
    free(img);
}

static void test_damaged(void **state)
{
    uint8_t *img;
    (void)state;
    img = build(true);
    img[0] = 'X';
    expect_error(img, PERCH_EFORMAT, "not a PE image (no MZ header)");
    img = build(true);
    perch_test_put_u32(img + 0x3c, 0x7fffffff);
    expect_error(img, PERCH_EFORMAT, "no PE signature at e_lfanew");
    img = build(true);
    perch_test_put_u16(img + 0x58, 0x30b);
    expect_error(img, PERCH_EFORMAT, "the optional header is neither PE32 nor PE32+");
    img = build(true);
    perch_test_put_u16(img + 0x2080, 9);
    expect_error(img, PERCH_EFORMAT, "an export ordinal is out of range");
    img = build(true);
    perch_test_put_u32(img + 0x2204, 0x1000);
    expect_error(img, PERCH_EFORMAT, "a .pdata entry is empty");
    img = build(true);
    perch_test_put_u32(img + 0x22ac, 0x22a0); /* the chain points back at itself */
    expect_error(img, PERCH_EFORMAT, "chained unwind entries loop");
    img = build(true);
    perch_test_put_u32(img + 0x2000 + 28, 0x7000); /* export table outside every section */
    expect_error(img, PERCH_EFORMAT, "a table lies outside every section");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pe32plus),
        cmocka_unit_test(test_pe32),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
