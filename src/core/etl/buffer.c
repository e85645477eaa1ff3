/*
 * WMI_BUFFER_HEADER field extraction (docs/etl-format.md, "Buffers"). The CPU of every event
 * in a buffer is ClientContext.ProcessorIndex at 0x28: the full u16 masked to 11 bits when
 * the PROC_INDEX flag (0x20) is set, otherwise the ProcessorNumber byte alone.
 */
#include "etl/buffer.h"
#include "etl/le.h"

void perch__etl_buffer_parse(const uint8_t *h, uint64_t off, struct perch__etl_buffer *b)
{
    b->file_off = off;
    b->size = perch__le32(h + 0x00);
    b->seq = perch__le64(h + 0x18);
    b->used = perch__le32(h + 0x30);
    b->flags = perch__le16(h + 0x34);
    b->type = perch__le16(h + 0x36);
    if (b->flags & PERCH__ETL_BUF_PROC_INDEX)
        b->cpu = (uint16_t)(perch__le16(h + 0x28) & PERCH__ETL_PROC_INDEX_MASK);
    else
        b->cpu = h[0x28];
    b->avail = 0;
    b->order = 0;
}
