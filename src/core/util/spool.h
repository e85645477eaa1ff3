/*
 * A spool: an append-only byte log read back at any offset. It stays in memory up to a byte
 * budget; past it the log moves to a scratch store (include/perch/scratch.h) and only a write
 * buffer and a read-ahead buffer stay in memory. The report appends every interned stack's
 * frames here and reads them back at the end (in order for the stack hash, a few for the top
 * stacks). Without a scratch opener it stays in memory however long it grows.
 */
#ifndef PERCH_UTIL_SPOOL_H
#define PERCH_UTIL_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/scratch.h"

typedef struct perch__spool {
    size_t memory; /* bytes kept in memory before moving to the scratch store */
    perch_scratch_open_fn open;
    void *open_ctx;
    uint8_t *mem; /* in memory: the whole log; on scratch: the write buffer */
    size_t mem_len, mem_cap;
    bool on_scratch;
    perch_scratch scratch;
    uint64_t flushed; /* bytes in the scratch store */
    uint8_t *rd;      /* read-ahead: bytes [rd_off, rd_off + rd_len) of the log */
    size_t rd_len, rd_cap;
    uint64_t rd_off;
    int error; /* sticky */
} perch__spool;

void perch__spool_init(perch__spool *s, size_t memory, perch_scratch_open_fn open, void *open_ctx);
/* The log's length. */
uint64_t perch__spool_size(const perch__spool *s);
/* Appends len bytes. 0 or a negative PERCH_E* (sticky). */
int perch__spool_append(perch__spool *s, const void *data, size_t len);
/* Copies len bytes at off into buf (reading ahead for the next call). PERCH_ETRUNC past the
 * end. */
int perch__spool_read(perch__spool *s, uint64_t off, void *buf, size_t len);
void perch__spool_free(perch__spool *s);

#endif
