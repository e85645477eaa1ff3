/*
 * LBR (Last Branch Record) sample: Spare1 group, opcode 32, Windows 10 19H1+. A 20-byte header
 * {u64 TimeStamp; u32 ProcessId; u32 ThreadId; u32 Filters}, padded to 24 with 64-bit
 * pointers, then entries {ptr From; ptr To; ptr Reserved}. Not confirmed on a real trace; the
 * sources are listed in docs/events.md, "LBR".
 */
#include "decode/decode_internal.h"

#define LBR_HEADER_LEN 20u

int perch__decode_lbr(const perch_event *ev, unsigned version, perch_decoded *out,
                      perch_decode_diag *diag)
{
    uint32_t len = ev->payload_len;
    unsigned ps = ev->pointer_size;
    /* The entries are pointer-aligned: 20 with 4-byte pointers, 24 with 8-byte ones. */
    uint32_t hdr = ps == 8 ? 24u : LBR_HEADER_LEN;
    if (len < hdr)
        return perch__decode_fail(diag, PERCH_ESHORT, len, hdr - len, "LBR");
    const uint8_t *p = ev->payload;
    uint32_t stride = 3u * ps;
    perch_lbr *l = &out->lbr;
    l->timestamp = le64(p);
    l->process_id = le32(p + 8);
    l->thread_id = le32(p + 12);
    l->filters = le32(p + 16);
    l->entries = p + hdr;
    l->entry_count = (len - hdr) / stride;
    l->entry_stride = (uint8_t)stride;
    l->pointer_size = (uint8_t)ps;
    return (len - hdr) % stride ? (int)PERCH_DECODED_TRAILING : 0;
}
