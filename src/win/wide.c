/*
 * UTF-8 <-> UTF-16 conversions for src/win (wide.h), through MultiByteToWideChar and
 * WideCharToMultiByte with invalid sequences refused.
 */
#include <windows.h>

#include "util/mem.h"
#include "wide.h"

wchar_t *perch__win_utf8_to_wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    wchar_t *w;
    if (n <= 0)
        return NULL;
    w = perch__alloc((size_t)n * sizeof *w);
    if (w != NULL && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        perch__free(w);
        w = NULL;
    }
    return w;
}

char *perch__win_wide_to_utf8(const wchar_t *w)
{
    int n = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, NULL, 0, NULL, NULL);
    char *s;
    if (n <= 0)
        return NULL;
    s = perch__alloc((size_t)n);
    if (s != NULL &&
        WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w, -1, s, n, NULL, NULL) != n) {
        perch__free(s);
        s = NULL;
    }
    return s;
}
