/*
 * Thread group decoders: CSwitch (36) v2-v4, ReadyThread (50) v2, Thread Start/End/DCStart/
 * DCEnd (1-4) v2-v4 and SetName (72) v2. Layouts and sources: docs/events.md, "Thread group".
 */
#include "decode/decode_internal.h"

#define CSWITCH_LEN      24u
#define READY_THREAD_LEN 8u

int perch__decode_cswitch(const perch_event *ev, unsigned version, perch_decoded *out,
                          perch_decode_diag *diag)
{
    if (ev->payload_len < CSWITCH_LEN)
        return perch__decode_fail(diag, PERCH_ESHORT, ev->payload_len,
                                  CSWITCH_LEN - ev->payload_len, "CSwitch");
    const uint8_t *p = ev->payload;
    perch_cswitch *s = &out->cswitch;
    s->new_thread_id = le32(p);
    s->old_thread_id = le32(p + 4);
    s->new_thread_priority = (int8_t)p[8];
    s->old_thread_priority = (int8_t)p[9];
    s->previous_cstate = p[10];
    s->spare_byte = (int8_t)p[11];
    s->old_thread_wait_reason = (int8_t)p[12];
    /* Byte 13: OldThreadWaitMode in v2, ThreadFlags from v3 on. */
    s->old_thread_wait_mode = version == 2 ? (int8_t)p[13] : 0;
    s->thread_flags = version == 2 ? 0 : p[13];
    s->old_thread_state = (int8_t)p[14];
    s->old_thread_wait_ideal_processor = (int8_t)p[15];
    s->new_thread_wait_time = le32(p + 16);
    s->reserved = le32(p + 20);
    return ev->payload_len > CSWITCH_LEN ? (int)PERCH_DECODED_TRAILING : 0;
}

int perch__decode_ready_thread(const perch_event *ev, unsigned version, perch_decoded *out,
                               perch_decode_diag *diag)
{
    if (ev->payload_len < READY_THREAD_LEN)
        return perch__decode_fail(diag, PERCH_ESHORT, ev->payload_len,
                                  READY_THREAD_LEN - ev->payload_len, "ReadyThread");
    const uint8_t *p = ev->payload;
    perch_ready_thread *r = &out->ready_thread;
    r->thread_id = le32(p);
    r->adjust_reason = (int8_t)p[4];
    r->adjust_increment = (int8_t)p[5];
    r->flag = p[6];
    r->reserved = p[7];
    return ev->payload_len > READY_THREAD_LEN ? (int)PERCH_DECODED_TRAILING : 0;
}

/* Reads the fixed part shared by all versions (through SubProcessTag). */
static void thread_fixed(cursor *c, unsigned version, perch_thread *t)
{
    t->process_id = cur_u32(c);
    t->thread_id = cur_u32(c);
    t->stack_base = cur_ptr(c);
    t->stack_limit = cur_ptr(c);
    t->user_stack_base = cur_ptr(c);
    t->user_stack_limit = cur_ptr(c);
    uint64_t v = cur_ptr(c);
    t->start_addr = version == 2 ? v : 0;
    t->affinity = version == 2 ? 0 : v;
    t->win32_start_addr = cur_ptr(c);
    t->teb_base = cur_ptr(c);
    t->sub_process_tag = cur_u32(c);
}

int perch__decode_thread(const perch_event *ev, unsigned version, perch_decoded *out,
                         perch_decode_diag *diag)
{
    cursor c;
    perch_thread t = {0};
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    thread_fixed(&c, version, &t);
    if (version >= 3) {
        t.base_priority = cur_u8(&c);
        t.page_priority = cur_u8(&c);
        t.io_priority = cur_u8(&c);
        t.thread_flags = cur_u8(&c);
    }
    if (version >= 4)
        t.thread_name = cur_wstr(&c);
    else if (version == 3)
        t.thread_name = cur_wstr_optional(&c); /* Win10 1903 appends a name to v3 */
    if (c.bad)
        return perch__decode_short(diag, &c, "Thread");
    out->thread = t;
    return perch__decode_rest(&c);
}

int perch__decode_thread_set_name(const perch_event *ev, unsigned version, perch_decoded *out,
                                  perch_decode_diag *diag)
{
    cursor c;
    perch_thread_set_name s;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    s.process_id = cur_u32(&c);
    s.thread_id = cur_u32(&c);
    s.thread_name = cur_wstr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "Thread.SetName");
    out->thread_set_name = s;
    return perch__decode_rest(&c);
}
