/*
 * UTF-16LE to UTF-8 conversion for the strings kernel events carry (file names, command
 * lines, thread names). Bounded on both sides, never allocates: unpaired surrogates and a
 * lone trailing byte become U+FFFD, and a full output buffer stops the conversion at a
 * character boundary, so the output is always valid UTF-8. Also the one UTF-8 validity check
 * used where 8-bit payload strings are written out as JSON.
 */
#ifndef PERCH_UTF16_H
#define PERCH_UTF16_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Converts src_len bytes of UTF-16LE at src into UTF-8 at dst (capacity cap bytes; no NUL is
 * written). Conversion stops at src_len or before the first character that does not fit.
 * Returns the number of bytes written. src may be NULL when src_len is 0. */
size_t perch_utf16le_to_utf8(const uint8_t *src, size_t src_len, char *dst, size_t cap);

/* The number of UTF-8 bytes perch_utf16le_to_utf8 would write with unlimited capacity. */
size_t perch_utf16le_utf8_len(const uint8_t *src, size_t src_len);

/* The length (2 to 4) of the valid multi-byte UTF-8 sequence at p, which has n >= 1 bytes, or
 * 0 when the bytes there are not one (ASCII, a stray continuation byte, overlong forms,
 * surrogates, code points above U+10FFFF, or a sequence cut short by n). */
size_t perch_utf8_seq_len(const uint8_t *p, size_t n);

/* Makes the NUL-terminated s valid UTF-8 in place: a sequence cut short at its end (what a
 * truncating snprintf leaves) is removed, and every other byte that starts no valid sequence
 * becomes '?'. Returns s. */
char *perch_utf8_make_valid(char *s);

#ifdef __cplusplus
}
#endif

#endif
