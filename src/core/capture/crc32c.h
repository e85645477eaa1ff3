/*
 * CRC-32C (Castagnoli), the checksum of every capture chunk and of the file header. Chosen
 * over CRC-32 (zlib) for its better error detection on short messages and because modern
 * CPUs compute it in hardware: perch__crc32c uses the CPU's instruction when the processor
 * has one (checked once at run time) and the portable slicing-by-8 code otherwise. Which
 * hardware file is built is chosen by CMake from the target processor (cpu/crc32c_*.c).
 */
#ifndef PERCH_CAPTURE_CRC32C_H
#define PERCH_CAPTURE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Continues a CRC-32C: start with crc = 0; perch__crc32c(perch__crc32c(0, a), b) equals the
 * CRC of a followed by b. The CRC of "123456789" is 0xe3069283. */
uint32_t perch__crc32c(uint32_t crc, const void *data, size_t len);

/* The same function computed by portable C only (slicing-by-8, crc32c.c). */
uint32_t perch__crc32c_portable(uint32_t crc, const void *data, size_t len);

/* True when this processor can run perch__crc32c_hw (cpu/crc32c_*.c; the first call asks
 * the CPU, later calls return the remembered answer; safe from any thread). */
bool perch__crc32c_hw_ok(void);

/* The same function computed with the CPU's CRC-32C instruction. Call only when
 * perch__crc32c_hw_ok() is true (where the build has no hardware path it is the portable
 * code). */
uint32_t perch__crc32c_hw(uint32_t crc, const void *data, size_t len);

#endif
