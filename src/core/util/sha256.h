/*
 * SHA-256 (FIPS 180-4), small and dependency-free: the report's stack_hash (S7 in the report
 * reference) hashes the sorted list of distinct stacks with it. Incremental: init, update any
 * number of times, final.
 */
#ifndef PERCH_UTIL_SHA256_H
#define PERCH_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct perch__sha256 {
    uint32_t h[8];
    uint64_t total_len; /* bytes hashed so far */
    uint8_t block[64];
    uint32_t block_len;
} perch__sha256;

void perch__sha256_init(perch__sha256 *s);
void perch__sha256_update(perch__sha256 *s, const void *data, size_t len);
/* Writes the 32-byte digest; s must be re-initialized before reuse. */
void perch__sha256_final(perch__sha256 *s, uint8_t digest[32]);
/* Lower-case hex of the digest of data, into out[65]. */
void perch__sha256_hex(const void *data, size_t len, char out[65]);

#endif
