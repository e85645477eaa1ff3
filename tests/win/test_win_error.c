/*
 * Tests for src/win/error.c, run under Wine: the translation of Win32 errors, NTSTATUS and
 * HRESULT into PERCH_E* codes. Beyond spot checks of chosen mappings, it checks the tables
 * against the operating system itself: errors produced by real Win32 calls translate to the
 * expected Perch code, and every NTSTATUS we map agrees with the Win32 code that ntdll's own
 * RtlNtStatusToDosError gives for it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include <cmocka.h>

#define WIN32_NO_STATUS
#include <windows.h>
#undef WIN32_NO_STATUS
#include <ntstatus.h>
#include <winternl.h>

#include "perch/error.h"
#include "perch/win_error.h"

typedef ULONG(WINAPI *nt_to_dos_fn)(LONG status);

static int is_perch_code(int err)
{
    return err < 0 && strcmp(perch_err_name(err), "UNKNOWN") != 0;
}

static void test_win32_spot_checks(void **state)
{
    assert_int_equal(perch_win_error(ERROR_SUCCESS), 0);
    assert_int_equal(perch_win_error(ERROR_FILE_NOT_FOUND), PERCH_ENOENT);
    assert_int_equal(perch_win_error(ERROR_ACCESS_DENIED), PERCH_EACCES);
    assert_int_equal(perch_win_error(ERROR_NOT_ENOUGH_MEMORY), PERCH_ENOMEM);
    assert_int_equal(perch_win_error(ERROR_BROKEN_PIPE), PERCH_EPIPE);
    assert_int_equal(perch_win_error(ERROR_INSUFFICIENT_BUFFER), PERCH_ERANGE);
    assert_int_equal(perch_win_error(ERROR_WMI_INSTANCE_NOT_FOUND), PERCH_ENOENT);
    assert_int_equal(perch_win_error(ERROR_ALREADY_EXISTS), PERCH_EEXIST);
    assert_int_equal(perch_win_error(WAIT_TIMEOUT), PERCH_ETIMEDOUT);
    assert_int_equal(perch_win_error(ERROR_OPERATION_ABORTED), PERCH_ECANCELED);
    assert_int_equal(perch_win_error(ERROR_INVALID_OWNER), PERCH_ENOTADMIN);
    /* Unlisted codes are still failures, never success or garbage. */
    assert_int_equal(perch_win_error(ERROR_PIPE_CONNECTED), PERCH_ESYSTEM);
    assert_int_equal(perch_win_error(0xFFFFFFFFu), PERCH_ESYSTEM);
}

static void test_every_win32_code_is_a_failure(void **state)
{
    for (uint32_t code = 1; code < 20000; code++) {
        int err = perch_win_error(code);
        if (!is_perch_code(err))
            fail_msg("Win32 error %u maps to %d, not a PERCH_E* code", code, err);
    }
}

static void test_ntstatus_and_hresult(void **state)
{
    assert_int_equal(perch_nt_status((uint32_t)STATUS_SUCCESS), 0);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_ACCESS_DENIED), PERCH_EACCES);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_OBJECT_NAME_NOT_FOUND), PERCH_ENOENT);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_NO_MEMORY), PERCH_ENOMEM);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_TIMEOUT), PERCH_ETIMEDOUT);
    /* Deliberately not ntdll's ERROR_INVALID_PARAMETER (so left out of the agreement test):
     * an unknown information class means this Windows version lacks the query. */
    assert_int_equal(perch_nt_status((uint32_t)STATUS_INVALID_INFO_CLASS), PERCH_ENOTSUP);
    /* NTSTATUS of the Win32 facility goes through the Win32 table. */
    assert_int_equal(perch_nt_status(0xC0070000u | ERROR_BROKEN_PIPE), PERCH_EPIPE);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_UNSUCCESSFUL), PERCH_ESYSTEM);
    assert_int_equal(perch_nt_status((uint32_t)STATUS_PENDING), PERCH_ESYSTEM);

    assert_int_equal(perch_win_hresult((uint32_t)S_OK), 0);
    assert_int_equal(perch_win_hresult((uint32_t)HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND)),
                     PERCH_ENOENT);
    assert_int_equal(perch_win_hresult((uint32_t)E_NOTIMPL), PERCH_ENOTSUP);
    assert_int_equal(perch_win_hresult((uint32_t)E_FAIL), PERCH_ESYSTEM);
}

static void test_every_ntstatus_is_a_failure(void **state)
{
    static const uint32_t bases[] = {0xC0000000u, 0x80000000u, 0xC0070000u};
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
        for (uint32_t low = 1; low < 0x1000; low++) {
            int err = perch_nt_status(bases[b] | low);
            if (!is_perch_code(err))
                fail_msg("NTSTATUS 0x%08x maps to %d", (unsigned)(bases[b] | low), err);
        }
}

/* Every NTSTATUS we list must mean what ntdll says it means in Win32 terms, whenever ntdll
 * knows a Win32 equivalent that our Win32 table lists too. */
static void test_ntstatus_agrees_with_ntdll(void **state)
{
    static const uint32_t listed[] = {
        (uint32_t)STATUS_ACCESS_DENIED,
        (uint32_t)STATUS_OBJECT_NAME_NOT_FOUND,
        (uint32_t)STATUS_OBJECT_PATH_NOT_FOUND,
        (uint32_t)STATUS_NO_SUCH_FILE,
        (uint32_t)STATUS_INVALID_PARAMETER,
        (uint32_t)STATUS_INVALID_HANDLE,
        (uint32_t)STATUS_NO_MEMORY,
        (uint32_t)STATUS_BUFFER_TOO_SMALL,
        (uint32_t)STATUS_BUFFER_OVERFLOW,
        (uint32_t)STATUS_END_OF_FILE,
        (uint32_t)STATUS_NO_MORE_ENTRIES,
        (uint32_t)STATUS_NOT_IMPLEMENTED,
        (uint32_t)STATUS_NOT_SUPPORTED,
        (uint32_t)STATUS_SHARING_VIOLATION,
        (uint32_t)STATUS_OBJECT_NAME_COLLISION,
        (uint32_t)STATUS_PIPE_BROKEN,
        (uint32_t)STATUS_CANCELLED,
        (uint32_t)STATUS_PRIVILEGE_NOT_HELD,
        (uint32_t)STATUS_INSUFFICIENT_RESOURCES,
        (uint32_t)STATUS_INFO_LENGTH_MISMATCH,
        (uint32_t)STATUS_CRC_ERROR,
        (uint32_t)STATUS_DISK_FULL,
        (uint32_t)STATUS_INVALID_IMAGE_FORMAT,
        (uint32_t)STATUS_NOT_FOUND,
        (uint32_t)STATUS_IO_TIMEOUT,
        (uint32_t)STATUS_DIRECTORY_NOT_EMPTY,
        (uint32_t)STATUS_TOO_MANY_OPENED_FILES,
    };
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    assert_non_null(ntdll);
    nt_to_dos_fn to_dos =
        (nt_to_dos_fn)(void (*)(void))GetProcAddress(ntdll, "RtlNtStatusToDosError");
    assert_non_null(to_dos);
    int compared = 0, disagreements = 0;
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++) {
        uint32_t win32 = to_dos((LONG)listed[i]);
        int via_win32 = perch_win_error(win32);
        if (via_win32 == PERCH_ESYSTEM || win32 == ERROR_MR_MID_NOT_FOUND)
            continue;
        compared++;
        if (perch_nt_status(listed[i]) != via_win32) {
            print_message("NTSTATUS 0x%08x -> %s, but ntdll's Win32 code %u -> %s\n",
                          (unsigned)listed[i], perch_err_name(perch_nt_status(listed[i])),
                          (unsigned)win32, perch_err_name(via_win32));
            disagreements++;
        }
    }
    assert_int_equal(disagreements, 0);
    /* A stub ntdll answering nothing useful must not make this test vacuous. */
    assert_true(compared >= 20);
}

/* Errors produced by real calls, as the service will meet them. */
static void test_errors_from_real_calls(void **state)
{
    wchar_t dir[MAX_PATH], path[MAX_PATH + 64];
    DWORD n = GetTempPathW(MAX_PATH, dir);
    assert_true(n > 0 && n < MAX_PATH);

    swprintf(path, MAX_PATH + 64, L"%lsperch-no-such-dir-%lu\\x.etl", dir, GetCurrentProcessId());
    HANDLE h = CreateFileW(path, GENERIC_READ, 0, NULL, OPEN_EXISTING, 0, NULL);
    assert_true(h == INVALID_HANDLE_VALUE);
    assert_int_equal(perch_win_last_error(), PERCH_ENOENT);

    swprintf(path, MAX_PATH + 64, L"%lsperch-test-dir-%lu", dir, GetCurrentProcessId());
    assert_true(CreateDirectoryW(path, NULL));
    assert_false(CreateDirectoryW(path, NULL));
    assert_int_equal(perch_win_last_error(), PERCH_EEXIST);
    assert_true(RemoveDirectoryW(path));

    assert_null(OpenEventW(SYNCHRONIZE, FALSE, L"perch-test-event-that-does-not-exist"));
    assert_int_equal(perch_win_last_error(), PERCH_ENOENT);

    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    assert_non_null(ev);
    assert_int_equal(perch_win_error(WaitForSingleObject(ev, 1)), PERCH_ETIMEDOUT);
    CloseHandle(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_win32_spot_checks),
        cmocka_unit_test(test_every_win32_code_is_a_failure),
        cmocka_unit_test(test_ntstatus_and_hresult),
        cmocka_unit_test(test_every_ntstatus_is_a_failure),
        cmocka_unit_test(test_ntstatus_agrees_with_ntdll),
        cmocka_unit_test(test_errors_from_real_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
