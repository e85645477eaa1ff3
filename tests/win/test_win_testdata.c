/*
 * The Wine run reads the same real traces as the native run: PERCH_DATA_DIR is a Unix path
 * that Wine resolves through its Z: drive. This test proves that both ways Windows code opens
 * files work on it, the C runtime (fopen, used by tests) and Win32 (CreateFileA, used by the
 * service), and that they see the same bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "testdata.h"

static void test_trace_opens_through_crt_and_win32(void **state)
{
    const char *path = perch_test_require_data("etl/perfview_smallEtlFile.etl");
    size_t len = 0;
    uint8_t *crt = perch_test_read_file(path, &len);
    assert_true(len > 0);

    HANDLE h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                           FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE)
        fail_msg("CreateFileA(%s) failed with Win32 error %lu", path, GetLastError());
    LARGE_INTEGER size;
    assert_true(GetFileSizeEx(h, &size));
    assert_int_equal((uint64_t)size.QuadPart, len);

    uint8_t *win = malloc(len);
    DWORD got = 0;
    assert_non_null(win);
    assert_true(ReadFile(h, win, (DWORD)len, &got, NULL));
    CloseHandle(h);
    assert_int_equal(got, len);
    assert_memory_equal(crt, win, len);
    free(win);
    free(crt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_opens_through_crt_and_win32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
