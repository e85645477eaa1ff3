/*
 * Image decoders: Load (10, normalized from HookId 0x030A), Unload (2), DCStart (3), DCEnd (4)
 * v2/v3 and KernelBase (0x21); plus the KernelTraceControl ImageID (0) and DbgID_RSDS (36/37)
 * events that merged traces add for each image. Layouts and sources: docs/events.md, "Image".
 */
#include "decode/decode_internal.h"

int perch__decode_image(const perch_event *ev, unsigned version, perch_decoded *out,
                        perch_decode_diag *diag)
{
    cursor c;
    perch_image im;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    im.image_base = cur_ptr(&c);
    im.image_size = cur_ptr(&c);
    im.process_id = cur_u32(&c);
    im.image_checksum = cur_u32(&c);
    im.time_date_stamp = cur_u32(&c);
    if (version >= 3) {
        im.signature_level = cur_u8(&c);
        im.signature_type = cur_u8(&c);
        im.reserved0 = cur_u16(&c);
    } else {
        im.signature_level = 0;
        im.signature_type = 0;
        im.reserved0 = cur_u32(&c);
    }
    im.default_base = cur_ptr(&c);
    im.reserved1 = cur_u32(&c);
    im.reserved2 = cur_u32(&c);
    im.reserved3 = cur_u32(&c);
    im.reserved4 = cur_u32(&c);
    im.file_name = cur_wstr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "Image");
    out->image = im;
    return perch__decode_rest(&c);
}

int perch__decode_kernel_base(const perch_event *ev, unsigned version, perch_decoded *out,
                              perch_decode_diag *diag)
{
    cursor c;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    uint64_t base = cur_ptr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "KernelBase");
    out->kernel_base.image_base = base;
    return perch__decode_rest(&c);
}

int perch__decode_image_id(const perch_event *ev, unsigned version, perch_decoded *out,
                           perch_decode_diag *diag)
{
    cursor c;
    perch_image_id id;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    id.image_base = cur_ptr(&c);
    id.image_size = cur_ptr(&c);
    id.process_id = cur_u32(&c);
    id.time_date_stamp = cur_u32(&c);
    id.original_file_name = cur_wstr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "ImageID");
    out->image_id = id;
    return perch__decode_rest(&c);
}

int perch__decode_dbg_id_rsds(const perch_event *ev, unsigned version, perch_decoded *out,
                              perch_decode_diag *diag)
{
    cursor c;
    perch_dbg_id_rsds d;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    d.image_base = cur_ptr(&c);
    d.process_id = cur_u32(&c);
    cur_guid(&c, &d.guid);
    d.age = cur_u32(&c);
    d.pdb_file_name = cur_astr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "DbgID_RSDS");
    out->dbg_id_rsds = d;
    return perch__decode_rest(&c);
}
