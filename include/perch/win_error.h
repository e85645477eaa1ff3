/*
 * Translation of Windows error codes into Perch's one error space (include/perch/error.h).
 *
 * Windows reports failures in three overlapping vocabularies: Win32 error codes (GetLastError,
 * the ETW and service-control APIs), NTSTATUS values (ntdll and kernel interfaces) and
 * HRESULTs. src/win/error.c is the only place that maps them to PERCH_E* codes, each through a
 * table. This header uses no Windows types so that it can be included anywhere, but the
 * functions exist only in Windows builds (src/win).
 */
#ifndef PERCH_WIN_ERROR_H
#define PERCH_WIN_ERROR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Maps a Win32 error code (ERROR_*, WAIT_TIMEOUT) to 0 for ERROR_SUCCESS or a negative
 * PERCH_E* code; codes with no sensible equivalent give PERCH_ESYSTEM. Never fails. */
int perch_win_error(uint32_t win32_error);

/* Maps an NTSTATUS (passed as its 32-bit pattern) to 0 for STATUS_SUCCESS or a negative
 * PERCH_E* code. Codes of the Win32 facility (0xC007xxxx) are translated through their Win32
 * code. Meant for failures: success and informational codes other than STATUS_SUCCESS and
 * STATUS_TIMEOUT are not listed and give PERCH_ESYSTEM. Never fails. */
int perch_nt_status(uint32_t status);

/* Maps an HRESULT: 0 for S_OK, Win32-facility failures (0x8007xxxx) through their Win32 code,
 * a few generic COM failures by table, anything else PERCH_ESYSTEM. Never fails. */
int perch_win_hresult(uint32_t hresult);

/* perch_win_error(GetLastError()): call it right after the failing API. */
int perch_win_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
