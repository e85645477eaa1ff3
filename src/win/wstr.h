/*
 * UTF-8 <-> UTF-16 conversion for the Windows shell: Perch keeps every string in UTF-8 and
 * converts at the Win32 boundary (paths, registry values, event log messages, SCM names).
 * Results are allocated through src/core/util/mem.h and released with perch__free.
 */
#ifndef PERCH_WIN_WSTR_H
#define PERCH_WIN_WSTR_H

#include <stddef.h>
#include <wchar.h>

/* A NUL-terminated UTF-16 copy of the UTF-8 string s, or NULL when s is NULL, not valid
 * UTF-8, or memory runs out. */
wchar_t *perch__utf8_to_wide(const char *s);

/* Converts the UTF-16 string w (NUL-terminated) into buf as UTF-8 (at most len bytes with
 * the NUL). Returns 0, or PERCH_ERANGE when it does not fit (buf then holds ""),
 * PERCH_EFORMAT for invalid UTF-16. */
int perch__wide_to_utf8(const wchar_t *w, char *buf, size_t len);

#endif
