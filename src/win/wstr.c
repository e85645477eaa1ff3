/*
 * UTF-8 <-> UTF-16 conversion at the Win32 boundary (src/win/wstr.h), through
 * MultiByteToWideChar / WideCharToMultiByte with strict flags so invalid input is refused
 * rather than replaced.
 */
#include <windows.h>

#include "perch/error.h"
#include "util/mem.h"
#include "wstr.h"

wchar_t *perch__utf8_to_wide(const char *s)
{
    int n;
    wchar_t *w;
    if (s == NULL)
        return NULL;
    n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0)
        return NULL;
    w = perch__alloc((size_t)n * sizeof *w);
    if (w != NULL && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        perch__free(w);
        w = NULL;
    }
    return w;
}

int perch__wide_to_utf8(const wchar_t *w, char *buf, size_t len)
{
    int n;
    if (len == 0)
        return PERCH_ERANGE;
    buf[0] = '\0';
    n = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, NULL, 0, NULL, NULL);
    if (n <= 0)
        return PERCH_EFORMAT;
    if ((size_t)n > len)
        return PERCH_ERANGE;
    WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, buf, n, NULL, NULL);
    return 0;
}
