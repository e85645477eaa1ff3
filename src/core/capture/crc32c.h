/*
 * CRC-32C (Castagnoli), the checksum of every capture chunk and of the file header. Chosen
 * over CRC-32 (zlib) for its better error detection on short messages and because modern
 * CPUs compute it in hardware, should a faster path ever be needed.
 */
#ifndef PERCH_CAPTURE_CRC32C_H
#define PERCH_CAPTURE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC-32C: start with crc = 0; perch__crc32c(perch__crc32c(0, a), b) equals the
 * CRC of a followed by b. The CRC of "123456789" is 0xe3069283. */
uint32_t perch__crc32c(uint32_t crc, const void *data, size_t len);

#endif
