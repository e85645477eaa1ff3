/*
 * Header group decoders: the Extension (5) and EndExtension (32) events at the start and end
 * of a kernel trace, which carry the enabled PERFINFO group masks and the kernel event
 * version. Layout and sources: docs/events.md, "Header extension".
 */
#include "decode/decode_internal.h"

int perch__decode_header_extension(const perch_event *ev, unsigned version, perch_decoded *out,
                                   perch_decode_diag *diag)
{
    cursor c;
    perch_header_extension h;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    for (int i = 0; i < 8; i++)
        h.group_mask[i] = cur_u32(&c);
    h.kernel_event_version = cur_u32(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "HeaderExtension");
    out->header_extension = h;
    return perch__decode_rest(&c);
}
