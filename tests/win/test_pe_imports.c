/*
 * Proves that every Windows executable Perch builds imports only DLLs that ship with Windows,
 * never a toolchain runtime (libgcc, libwinpthread, a cmocka DLL...). CMake writes the path of
 * every executable target of the mingw build into a list file named by PERCH_PE_LIST; this test
 * parses each file's PE import and delay-import directories with a small bounds-checked reader
 * and fails on any DLL outside the allowlist. The reader itself is tested on a synthetic image
 * (which must be flagged) and on every truncation of it (which must be rejected, not misread).
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "testdata.h"

enum { MAX_DLLS = 64, MAX_NAME = 256, MAX_DESCRIPTORS = 4096, MAX_FAILURES = 4096 };

/* DLLs in System32 of every supported Windows (plus the api-ms-win-* API sets). */
static const char *const allowed_dlls[] = {
    "kernel32.dll", "ntdll.dll",    "advapi32.dll", "tdh.dll",      "dbghelp.dll",
    "msvcrt.dll",   "ucrtbase.dll", "ws2_32.dll",   "user32.dll",   "ole32.dll",
    "oleaut32.dll", "shell32.dll",  "shlwapi.dll",  "psapi.dll",    "bcrypt.dll",
    "crypt32.dll",  "secur32.dll",  "sechost.dll",  "userenv.dll",  "version.dll",
    "iphlpapi.dll", "pdh.dll",      "powrprof.dll", "wtsapi32.dll", "rpcrt4.dll",
};

struct pe {
    const uint8_t *data;
    size_t size;
    size_t sections; /* file offset of the section table */
    unsigned nsections;
};

struct dll_list {
    char names[MAX_DLLS][MAX_NAME];
    size_t count;
};

static int rd16(const struct pe *pe, size_t off, uint32_t *out)
{
    if (off > pe->size || pe->size - off < 2)
        return -1;
    *out = (uint32_t)pe->data[off] | (uint32_t)pe->data[off + 1] << 8;
    return 0;
}

static int rd32(const struct pe *pe, size_t off, uint32_t *out)
{
    uint32_t lo, hi;
    if (rd16(pe, off, &lo) != 0 || rd16(pe, off + 2, &hi) != 0)
        return -1;
    *out = lo | hi << 16;
    return 0;
}

/* File offset of rva, inside the raw data of the section that holds it. */
static int rva_to_offset(const struct pe *pe, uint32_t rva, size_t *off)
{
    for (unsigned i = 0; i < pe->nsections; i++) {
        size_t s = pe->sections + (size_t)i * 40;
        uint32_t va, raw_size, raw_off;
        if (rd32(pe, s + 12, &va) || rd32(pe, s + 16, &raw_size) || rd32(pe, s + 20, &raw_off))
            return -1;
        if (rva >= va && rva - va < raw_size) {
            *off = (size_t)raw_off + (rva - va);
            return *off < pe->size ? 0 : -1;
        }
    }
    return -1;
}

static const char *read_name(const struct pe *pe, uint32_t rva, char *out)
{
    size_t off, n = 0;
    if (rva_to_offset(pe, rva, &off) != 0)
        return "DLL name outside the image";
    for (; off + n < pe->size && n < MAX_NAME; n++) {
        out[n] = (char)pe->data[off + n];
        if (out[n] == '\0')
            return n ? NULL : "empty DLL name";
    }
    return "DLL name not terminated";
}

/* Reads one import-style directory: descriptors of desc_size bytes, name RVA at name_at. */
static const char *read_directory(const struct pe *pe, size_t dir, size_t desc_size, size_t name_at,
                                  struct dll_list *dlls)
{
    uint32_t rva, size;
    size_t off;
    if (rd32(pe, dir, &rva) || rd32(pe, dir + 4, &size))
        return "data directory truncated";
    if (rva == 0)
        return NULL;
    if (rva_to_offset(pe, rva, &off) != 0)
        return "import directory outside the image";
    for (size_t i = 0; i < MAX_DESCRIPTORS; i++, off += desc_size) {
        uint32_t name_rva;
        if (rd32(pe, off + name_at, &name_rva))
            return "import descriptor truncated";
        if (name_rva == 0)
            return NULL;
        if (dlls->count == MAX_DLLS)
            return "too many imported DLLs";
        const char *err = read_name(pe, name_rva, dlls->names[dlls->count]);
        if (err)
            return err;
        dlls->count++;
    }
    return "import directory not terminated";
}

/* Lists the DLLs data (a PE32 or PE32+ file) imports; NULL on success or the reason. */
static const char *pe_imports(const uint8_t *data, size_t size, struct dll_list *dlls)
{
    struct pe pe = {data, size, 0, 0};
    uint32_t lfanew, nsec, opt_size, magic, ndirs;
    dlls->count = 0;
    if (size < 2 || data[0] != 'M' || data[1] != 'Z' || rd32(&pe, 0x3c, &lfanew))
        return "not an MZ executable";
    if (lfanew > size || size - lfanew < 24 || memcmp(data + lfanew, "PE\0\0", 4) != 0)
        return "no PE signature";
    if (rd16(&pe, lfanew + 6, &nsec) || rd16(&pe, lfanew + 20, &opt_size))
        return "COFF header truncated";
    size_t opt = (size_t)lfanew + 24;
    if (rd16(&pe, opt, &magic) || (magic != 0x10b && magic != 0x20b))
        return "unknown optional header magic";
    size_t dirs = opt + (magic == 0x20b ? 112 : 96);
    if (rd32(&pe, dirs - 4, &ndirs) || (dirs - opt) + (size_t)ndirs * 8 > opt_size)
        return "data directories truncated";
    pe.sections = opt + opt_size;
    pe.nsections = nsec;
    const char *err = ndirs > 1 ? read_directory(&pe, dirs + 8, 20, 12, dlls) : NULL;
    if (!err && ndirs > 13)
        err = read_directory(&pe, dirs + 13 * 8, 32, 4, dlls);
    return err;
}

static int same_ignoring_case(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
        if (a[i] == '\0')
            return 1;
    }
    return 1;
}

static int dll_allowed(const char *name)
{
    if (same_ignoring_case(name, "api-ms-win-", 11))
        return 1;
    for (size_t i = 0; i < sizeof allowed_dlls / sizeof allowed_dlls[0]; i++)
        if (same_ignoring_case(name, allowed_dlls[i], MAX_NAME))
            return 1;
    return 0;
}

static int imports_dll(const struct dll_list *dlls, const char *name)
{
    for (size_t i = 0; i < dlls->count; i++)
        if (same_ignoring_case(dlls->names[i], name, MAX_NAME))
            return 1;
    return 0;
}

/* A PE32+ image with one section holding two imports and one delay import, names last. */
static size_t build_image(uint8_t *img, size_t cap)
{
    assert_true(cap >= 0x400);
    memset(img, 0, cap);
    img[0] = 'M';
    img[1] = 'Z';
    perch_test_put_u32(img + 0x3c, 0x40);
    memcpy(img + 0x40, "PE\0\0", 4);
    uint8_t *p = perch_test_put_u16(img + 0x44, 0x8664);
    p = perch_test_put_u16(p, 1);                       /* one section */
    perch_test_put_u16(img + 0x44 + 16, 112 + 16 * 8);  /* SizeOfOptionalHeader */
    perch_test_put_u16(img + 0x58, 0x20b);              /* PE32+ */
    perch_test_put_u32(img + 0x58 + 108, 16);           /* NumberOfRvaAndSizes */
    perch_test_put_u32(img + 0x58 + 112 + 8, 0x1000);   /* imports */
    perch_test_put_u32(img + 0x58 + 112 + 104, 0x1040); /* delay imports */
    size_t sec = 0x58 + 112 + 16 * 8;
    memcpy(img + sec, ".idata\0\0", 8);
    perch_test_put_u32(img + sec + 12, 0x1000); /* VirtualAddress */
    perch_test_put_u32(img + sec + 16, 0x153);  /* SizeOfRawData */
    perch_test_put_u32(img + sec + 20, 0x200);  /* PointerToRawData */
    perch_test_put_u32(img + 0x200 + 12, 0x1100);
    perch_test_put_u32(img + 0x200 + 20 + 12, 0x1120);
    perch_test_put_u32(img + 0x240 + 4, 0x1140);
    strcpy((char *)img + 0x300, "KERNEL32.dll");
    strcpy((char *)img + 0x320, "libwinpthread-1.dll");
    strcpy((char *)img + 0x340, "libgcc_s_seh-1.dll");
    return 0x353;
}

static void test_synthetic_image_is_read_and_flagged(void **state)
{
    static uint8_t img[0x400];
    static struct dll_list dlls;
    size_t size = build_image(img, sizeof img);
    const char *err = pe_imports(img, size, &dlls);
    if (err)
        fail_msg("synthetic image rejected: %s", err);
    assert_int_equal(dlls.count, 3);
    assert_string_equal(dlls.names[0], "KERNEL32.dll");
    assert_string_equal(dlls.names[1], "libwinpthread-1.dll");
    assert_string_equal(dlls.names[2], "libgcc_s_seh-1.dll");
    assert_true(dll_allowed(dlls.names[0]));
    assert_false(dll_allowed(dlls.names[1]));
    assert_false(dll_allowed(dlls.names[2]));
    assert_true(dll_allowed("API-MS-WIN-CRT-RUNTIME-L1-1-0.DLL"));
    assert_false(dll_allowed("kernel32.dll.evil"));
}

static void test_truncated_images_are_rejected(void **state)
{
    static uint8_t img[0x400];
    static struct dll_list dlls;
    size_t size = build_image(img, sizeof img);
    for (size_t cut = 0; cut < size; cut++)
        if (pe_imports(img, cut, &dlls) == NULL)
            fail_msg("image cut to %zu of %zu bytes was accepted", cut, size);
}

/* Checks one built file; appends any problem to report. Returns 1 for perch.exe. */
static int check_executable(const char *path, char *report, size_t cap)
{
    static struct dll_list dlls;
    size_t len, used = strlen(report);
    uint8_t *data = perch_test_read_file(path, &len);
    const char *err = pe_imports(data, len, &dlls);
    free(data);
    if (err)
        snprintf(report + used, cap - used, "%s: %s\n", path, err);
    else if (!imports_dll(&dlls, "kernel32.dll"))
        snprintf(report + used, cap - used, "%s: no kernel32.dll import (misread?)\n", path);
    for (size_t i = 0; !err && i < dlls.count; i++) {
        used = strlen(report);
        if (!dll_allowed(dlls.names[i]))
            snprintf(report + used, cap - used, "%s imports %s\n", path, dlls.names[i]);
    }
    const char *base = strrchr(path, '/');
    return same_ignoring_case(base ? base + 1 : path, "perch.exe", MAX_NAME);
}

static void test_every_built_executable(void **state)
{
    static char report[MAX_FAILURES];
    char line[4096];
    const char *list = getenv("PERCH_PE_LIST");
    if (!list || !*list)
        fail_msg("PERCH_PE_LIST is not set (ctest sets it)");
    FILE *f = fopen(list, "r");
    if (!f)
        fail_msg("cannot open the executable list %s", list);
    int files = 0, saw_perch = 0;
    report[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        saw_perch |= check_executable(line, report, sizeof report);
        files++;
    }
    fclose(f);
    print_message("checked the imports of %d executables\n", files);
    if (report[0])
        fail_msg("executables import DLLs that do not ship with Windows:\n%s", report);
    assert_true(saw_perch);
    assert_true(files >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_image_is_read_and_flagged),
        cmocka_unit_test(test_truncated_images_are_rejected),
        cmocka_unit_test(test_every_built_executable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
