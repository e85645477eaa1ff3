/*
 * Internal state of the .etl reader, shared by its parts: index.c (first pass: logfile
 * header and buffer index), stream.c (one per-CPU stream: load a buffer, peek its next
 * record), merge.c (the heap that orders stream heads) and reader.c (the public API).
 */
#ifndef PERCH_ETL_READER_H
#define PERCH_ETL_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etl/buffer.h"
#include "perch/etl.h"
#include "perch/io.h"

#define PERCH__ETL_DEFAULT_MAX_BUFFER (16u << 20)
#define PERCH__ETL_DEFAULT_MAX_MEMORY ((uint64_t)1 << 30)
#define PERCH__ETL_MAX_BUFFERS (1u << 24) /* index entries: 16 Mi buffers, 1 TiB at 64 KiB */

struct perch__etl_stream {
    uint32_t next_buf, end; /* the stream's buffers are index[next_buf, end) */
    uint16_t cpu;
    bool has_ev;
    uint8_t *data; /* the current buffer's records, from buffer offset 0x48 */
    size_t cap, len, pos;
    uint64_t base_off; /* file offset of the current buffer */
    uint64_t last_ts;
    bool compressed; /* the current buffer was compressed */
    perch_etl_position ev_pos; /* where ev sits */
    perch_event ev;  /* the stream's next record, valid when has_ev */
};

struct perch__etl_heap_item {
    uint64_t ts;
    uint32_t cpu;
    uint32_t stream;
};

struct perch_etl_reader {
    perch_input io;  /* borrowed or owned (owns_io) */
    
    bool owns_io;
    perch_etl_header header;
    perch_etl_stats stats;
    uint64_t max_buffer, max_memory, memory;
    struct perch__etl_buffer *index;
    uint32_t count, index_cap;
    struct perch__etl_stream *streams;
    uint32_t nstreams;
    struct perch__etl_heap_item *heap;
    uint32_t heap_len;
    int64_t pending; /* stream whose record was returned last, advanced on the next call */
    uint8_t *scratch; /* compressed bytes of the buffer being decoded */
    size_t scratch_cap;
    perch_etl_position last_pos;
    const perch_guid *group_guids[256]; /* perch_kernel_group_guid(g) for every g */
    uint8_t kind_cache[65536]; /* perch_kind by (group << 8 | opcode); 0xFF: not computed yet */
};

/* Counts one error of reason at file offset (and record offset inside the buffer, or 0). */
void perch__etl_error(struct perch_etl_reader *r, perch_etl_reason reason, uint64_t offset,
                      uint32_t record);

/* First pass: the logfile header from the first buffer, then the buffer index sorted by
 * (cpu, sequence, file order). Returns 0 or the open error (filling *diag). */
int perch__etl_build_index(struct perch_etl_reader *r, perch_etl_open_error *diag);

/* Sets up one stream per CPU run of the sorted index. Returns 0 or PERCH_ENOMEM. */
int perch__etl_make_streams(struct perch_etl_reader *r);

/* Moves stream s to its next record, loading buffers as needed. Returns 1 when s->ev holds a
 * record, 0 when the stream is exhausted, or PERCH_ENOMEM. Damage is counted and skipped. */
int perch__etl_stream_advance(struct perch_etl_reader *r, struct perch__etl_stream *s);

/* Releases a stream's buffer. */
void perch__etl_stream_free(struct perch_etl_reader *r, struct perch__etl_stream *s);

/* The min-heap of stream heads, ordered by (ts, cpu). */
void perch__etl_heap_push(struct perch__etl_heap_item *h, uint32_t *n,
                          struct perch__etl_heap_item item);
void perch__etl_heap_replace_top(struct perch__etl_heap_item *h, uint32_t n,
                                 struct perch__etl_heap_item item);
void perch__etl_heap_pop(struct perch__etl_heap_item *h, uint32_t *n);

#endif
