/*
 * StackWalk group decoders: StackWalk_Event (32), stack-key definitions KeyCreate (34),
 * KeyDelete (35), KeyRundown (36), and key references StackKeyKernel (37) / StackKeyUser (38),
 * all v2. Frames stay in the payload (innermost first) and are read with perch_ptr_at().
 * Layouts and sources: docs/events.md, "StackWalk group".
 */
#include "decode/decode_internal.h"

#define STACK_HEADER_LEN 16u

int perch__decode_stack_walk(const perch_event *ev, unsigned version, perch_decoded *out,
                             perch_decode_diag *diag)
{
    uint32_t len = ev->payload_len;
    if (len < STACK_HEADER_LEN)
        return perch__decode_fail(diag, PERCH_ESHORT, len, STACK_HEADER_LEN - len, "StackWalk");
    const uint8_t *p = ev->payload;
    unsigned ps = ev->pointer_size;
    uint32_t frames = (len - STACK_HEADER_LEN) / ps;
    perch_stack_walk *s = &out->stack_walk;
    s->event_timestamp = le64(p);
    s->process_id = le32(p + 8);
    s->thread_id = le32(p + 12);
    s->frames.data = p + STACK_HEADER_LEN;
    s->frames.count = frames;
    s->frames.pointer_size = (uint8_t)ps;
    return (len - STACK_HEADER_LEN) % ps ? (int)PERCH_DECODED_TRAILING : 0;
}

int perch__decode_stack_key_ref(const perch_event *ev, unsigned version, perch_decoded *out,
                                perch_decode_diag *diag)
{
    uint32_t len = ev->payload_len;
    unsigned ps = ev->pointer_size;
    if (len < STACK_HEADER_LEN + ps)
        return perch__decode_fail(diag, PERCH_ESHORT, len, STACK_HEADER_LEN + ps - len, "StackKey");
    const uint8_t *p = ev->payload;
    perch_stack_key_ref *r = &out->stack_key_ref;
    r->event_timestamp = le64(p);
    r->process_id = le32(p + 8);
    r->thread_id = le32(p + 12);
    r->stack_key = ps == 8 ? le64(p + 16) : le32(p + 16);
    return len > STACK_HEADER_LEN + ps ? (int)PERCH_DECODED_TRAILING : 0;
}

int perch__decode_stack_key_def(const perch_event *ev, unsigned version, perch_decoded *out,
                                perch_decode_diag *diag)
{
    uint32_t len = ev->payload_len;
    unsigned ps = ev->pointer_size;
    if (len < ps)
        return perch__decode_fail(diag, PERCH_ESHORT, len, ps - len, "StackKeyDefinition");
    const uint8_t *p = ev->payload;
    perch_stack_key_def *d = &out->stack_key_def;
    d->stack_key = ps == 8 ? le64(p) : le32(p);
    d->frames.data = p + ps;
    d->frames.count = (len - ps) / ps;
    d->frames.pointer_size = (uint8_t)ps;
    return len % ps ? (int)PERCH_DECODED_TRAILING : 0;
}
