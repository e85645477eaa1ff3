/*
 * Fuzz target for the event decoders. The first four bytes choose the record: [0] picks a
 * (group or provider, opcode) from the list below (values past the list give a raw group from
 * the low bits and the opcode from byte [1]), [2] is the version, [3] bit 0 the pointer size
 * (4 or 8) and bits 1..3 the number of PMC values. The rest is the payload, copied into a
 * buffer of exactly its size so any read past it is caught. A decoded event is then walked
 * completely (frames, strings, SID, LBR entries) and rendered to JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "perch/decode.h"
#include "perch/json.h"
#include "perch/utf16.h"

struct key {
    uint16_t group;
    uint8_t opcode;
};

static const struct key keys[] = {
    {0x00, 5},  {0x00, 32}, {0x03, 1},  {0x03, 2},  {0x03, 3},   {0x03, 4},    {0x03, 39},
    {0x05, 1},  {0x05, 2},  {0x05, 3},  {0x05, 4},  {0x05, 36},  {0x05, 50},   {0x05, 72},
    {0x0C, 32}, {0x0F, 46}, {0x0F, 47}, {0x0F, 48}, {0x0F, 72},  {0x0F, 73},   {0x0F, 74},
    {0x14, 10}, {0x14, 2},  {0x14, 3},  {0x14, 4},  {0x14, 33},  {0x18, 32},   {0x18, 34},
    {0x18, 35}, {0x18, 36}, {0x18, 37}, {0x18, 38}, {0xFFFF, 0}, {0xFFFF, 36}, {0xFFFF, 37},
};

static int null_sink(void *ctx, const char *data, size_t n)
{
    size_t *total = ctx;
    *total += n;
    return data ? 0 : -1;
}

static uint64_t walk(const perch_decoded *d)
{
    uint64_t acc = 0;
    char text[PERCH_SID_TEXT_MAX];
    uint32_t pos = 0;
    perch_wstr s;
    if (d->type == PERCH_DECODED_STACK_WALK)
        for (uint32_t i = 0; i < d->stack_walk.frames.count; i++)
            acc += perch_ptr_at(&d->stack_walk.frames, i);
    if (d->type == PERCH_DECODED_STACK_KEY_DEF)
        for (uint32_t i = 0; i < d->stack_key_def.frames.count; i++)
            acc += perch_ptr_at(&d->stack_key_def.frames, i);
    if (d->type == PERCH_DECODED_LBR)
        for (uint32_t i = 0; i < d->lbr.entry_count; i++)
            acc += perch_lbr_from(&d->lbr, i) ^ perch_lbr_to(&d->lbr, i);
    if (d->type == PERCH_DECODED_PMC_CONFIG)
        while (perch_wstr_list_next(&d->pmc_config.counter_names, &pos, &s))
            acc += perch_utf16le_utf8_len(s.data, s.len);
    if (d->type == PERCH_DECODED_PROCESS && d->process.user_sid.len)
        acc += (uint64_t)perch_sid_format(&d->process.user_sid, text, sizeof text);
    return acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static perch_json w;
    perch_event ev;
    perch_decoded d;
    perch_decode_diag diag;
    size_t total = 0;
    if (size < 4)
        return 0;
    memset(&ev, 0, sizeof ev);
    size_t nkeys = sizeof keys / sizeof keys[0];
    if (data[0] < nkeys) {
        ev.group = keys[data[0]].group;
        ev.opcode = keys[data[0]].opcode;
    } else {
        ev.group = data[0] & 0x1f;
        ev.opcode = data[1];
    }
    if (ev.group == 0xFFFF)
        ev.provider = perch_kernel_trace_control_guid;
    ev.version = data[2];
    ev.pointer_size = (data[3] & 1) ? 8 : 4;
    ev.pmc_count = (uint8_t)((data[3] >> 1) & 7);
    for (unsigned i = 0; i < ev.pmc_count; i++)
        ev.pmc[i] = i * 1000u;
    uint8_t *payload = malloc(size - 4 ? size - 4 : 1);
    if (!payload)
        return 0;
    memcpy(payload, data + 4, size - 4);
    ev.payload = payload;
    ev.payload_len = (uint32_t)(size - 4);
    if (perch_decode(&ev, &d, &diag) == 0) {
        (void)walk(&d);
        perch_json_init(&w, null_sink, &total);
        perch_json_begin_object(&w);
        perch_decoded_write_json(&w, &d);
        perch_json_end_object(&w);
        perch_json_flush(&w);
    } else if (diag.offset > ev.payload_len) {
        abort(); /* an error must point inside the payload */
    }
    free(payload);
    return 0;
}
