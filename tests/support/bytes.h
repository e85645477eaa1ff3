/*
 * Small helpers for byte-table tests: build little-endian records and parse hex strings.
 */
#ifndef PERCH_TEST_BYTES_H
#define PERCH_TEST_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* Decodes a hex string ("0a1b...") into out (capacity cap); returns the byte count or -1. */
long perch_test_hex(const char *hex, uint8_t *out, size_t cap);

/* Little-endian writers: each writes at p and returns p + size. */
uint8_t *perch_test_put_u8(uint8_t *p, uint8_t v);
uint8_t *perch_test_put_u16(uint8_t *p, uint16_t v);
uint8_t *perch_test_put_u32(uint8_t *p, uint32_t v);
uint8_t *perch_test_put_u64(uint8_t *p, uint64_t v);
/* Writes a pointer-sized value (4 or 8 bytes). */
uint8_t *perch_test_put_ptr(uint8_t *p, unsigned pointer_size, uint64_t v);
/* Writes an ASCII string as NUL-terminated UTF-16LE. */
uint8_t *perch_test_put_utf16(uint8_t *p, const char *s);

#endif
