/*
 * UTF-8 <-> UTF-16 conversions for the Win32 wide-character calls of src/win (paths, names).
 * Strings are allocated through src/core/util/mem.h; NULL on invalid input or no memory.
 */
#ifndef PERCH_WIN_WIDE_H
#define PERCH_WIN_WIDE_H

#include <wchar.h>

wchar_t *perch__win_utf8_to_wide(const char *s);
char *perch__win_wide_to_utf8(const wchar_t *w);

#endif
