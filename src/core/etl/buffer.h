/*
 * WMI_BUFFER_HEADER: the 0x48 bytes at the start of every .etl buffer (same layout for 32-
 * and 64-bit traces), and the buffer index the reader builds from them in its first pass.
 */
#ifndef PERCH_ETL_BUFFER_H
#define PERCH_ETL_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#define PERCH__ETL_BUFFER_HEADER 0x48u

#define PERCH__ETL_BUF_FLUSH_MARKER 0x0001u
#define PERCH__ETL_BUF_EVENTS_LOST 0x0002u
#define PERCH__ETL_BUF_BUFFER_LOST 0x0004u
#define PERCH__ETL_BUF_PROC_INDEX 0x0020u
#define PERCH__ETL_BUF_COMPRESSED 0x0040u
#define PERCH__ETL_BUFTYPE_HEADER 4u
#define PERCH__ETL_PROC_INDEX_MASK 0x07FFu

/* One buffer as the index knows it. */
struct perch__etl_buffer {
    uint64_t file_off; /* where the buffer starts in the file */
    uint64_t seq;      /* SequenceNumber */
    uint32_t size;     /* BufferSize: bytes on disk, header included */
    uint32_t used;     /* Offset: end of records, header included (decoded size if compressed) */
    uint32_t order;    /* position in file order */
    uint16_t cpu;      /* processor index */
    uint16_t flags;    /* BufferFlag */
    uint16_t type;     /* BufferType */
    uint16_t avail;    /* 0 normally; 1 when the file ends inside this buffer */
};

/* Fills *b from the 0x48 header bytes at h of the buffer at file offset off. Never fails; the
 * index checks the sizes. */
void perch__etl_buffer_parse(const uint8_t *h, uint64_t off, struct perch__etl_buffer *b);

#endif
