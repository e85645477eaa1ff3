/*
 * PerfInfo group decoders: SampledProfile (46) v2, PmcCounterProf (47) v2, PmcCounterConfig
 * (48) v2, and the profile-interval events SetInterval (0x48), CollectionStart (0x49) and
 * CollectionEnd (0x4A). Layouts and sources: docs/events.md, "PerfInfo group".
 */
#include "decode/decode_internal.h"

/* SampledProfile and PmcCounterProf share their shape: ptr IP; u32 tid; u16; u8/u16 ... */
static inline int sample_short(const perch_event *ev, perch_decode_diag *diag, const char *what)
{
    uint32_t need = ev->pointer_size + 8u;
    return perch__decode_fail(diag, PERCH_ESHORT, ev->payload_len, need - ev->payload_len, what);
}

static inline uint64_t read_ptr(const uint8_t *p, unsigned psize)
{
    return psize == 8 ? le64(p) : le32(p);
}

int perch__decode_sampled_profile(const perch_event *ev, unsigned version, perch_decoded *out,
                                  perch_decode_diag *diag)
{
    unsigned ps = ev->pointer_size;
    if (ev->payload_len < ps + 8u)
        return sample_short(ev, diag, "SampledProfile");
    const uint8_t *p = ev->payload;
    perch_sampled_profile *s = &out->sampled_profile;
    s->instruction_pointer = read_ptr(p, ps);
    s->thread_id = le32(p + ps);
    s->count = le16(p + ps + 4);
    s->flags = p[ps + 6];
    s->rank = p[ps + 7];
    return ev->payload_len > ps + 8u ? (int)PERCH_DECODED_TRAILING : 0;
}

int perch__decode_pmc_sample(const perch_event *ev, unsigned version, perch_decoded *out,
                             perch_decode_diag *diag)
{
    unsigned ps = ev->pointer_size;
    if (ev->payload_len < ps + 8u)
        return sample_short(ev, diag, "PmcCounterProf");
    const uint8_t *p = ev->payload;
    perch_pmc_sample *s = &out->pmc_sample;
    s->instruction_pointer = read_ptr(p, ps);
    s->thread_id = le32(p + ps);
    s->profile_source = le16(p + ps + 4);
    s->reserved = le16(p + ps + 6);
    return ev->payload_len > ps + 8u ? (int)PERCH_DECODED_TRAILING : 0;
}

int perch__decode_pmc_config(const perch_event *ev, unsigned version, perch_decoded *out,
                             perch_decode_diag *diag)
{
    cursor c;
    perch_pmc_config cfg;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    cfg.counter_count = cur_u32(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "PmcCounterConfig");
    /* Each name takes at least its 2-byte terminator: fail fast on a huge count. */
    if (cfg.counter_count > cur_left(&c) / 2)
        return perch__decode_fail(diag, PERCH_ESHORT, c.pos,
                                  (uint32_t)((uint64_t)cfg.counter_count * 2 > UINT32_MAX
                                                 ? UINT32_MAX
                                                 : cfg.counter_count * 2ull),
                                  "PmcCounterConfig.CounterName");
    uint32_t start = c.pos;
    for (uint32_t i = 0; i < cfg.counter_count && !c.bad; i++)
        (void)cur_wstr(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "PmcCounterConfig.CounterName");
    cfg.counter_names.data = ev->payload + start;
    cfg.counter_names.len = c.pos - start;
    cfg.counter_names.count = cfg.counter_count;
    out->pmc_config = cfg;
    return perch__decode_rest(&c);
}

int perch__decode_profile_interval(const perch_event *ev, unsigned version, perch_decoded *out,
                                   perch_decode_diag *diag)
{
    cursor c;
    perch_profile_interval iv;
    cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
    iv.source = cur_u32(&c);
    iv.new_interval = cur_u32(&c);
    iv.old_interval = cur_u32(&c);
    /* CollectionStart/End v3 carry the source name; elsewhere it is optional. */
    if (version >= 3 && ev->opcode != 0x48)
        iv.source_name = cur_wstr(&c);
    else
        iv.source_name = cur_wstr_optional(&c);
    if (c.bad)
        return perch__decode_short(diag, &c, "ProfileInterval");
    out->profile_interval = iv;
    return perch__decode_rest(&c);
}

bool perch_wstr_list_next(const perch_wstr_list *l, uint32_t *pos, perch_wstr *out)
{
    cursor c;
    if (*pos >= l->len)
        return false;
    cur_init(&c, l->data, l->len, 8);
    c.pos = *pos;
    perch_wstr s = cur_wstr(&c);
    if (c.bad)
        return false;
    *out = s;
    *pos = c.pos;
    return true;
}
