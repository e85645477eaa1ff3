/*
 * EVENT_RECORD -> perch_event (the rules are in etw_convert.h). Kept free of state and system
 * calls so the EventRecordCallback pays only for copies and one GUID lookup per event.
 */
#include <string.h>

#include "etw_convert.h"
#include "perch/error.h"

#define HOOK_IMAGE_LOAD   0x030Au
#define OPCODE_IMAGE_LOAD 10u
#define EXT_ITEM_HEADER   8u

static void copy_guid(const GUID *g, perch_guid *out)
{
    out->data1 = (uint32_t)g->Data1;
    out->data2 = g->Data2;
    out->data3 = g->Data3;
    memcpy(out->data4, g->Data4, sizeof out->data4);
}

static int pointer_size_of(USHORT flags, unsigned fallback)
{
    USHORT both = EVENT_HEADER_FLAG_32_BIT_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER;
    if ((flags & both) == both)
        return PERCH_EFORMAT;
    if (flags & EVENT_HEADER_FLAG_32_BIT_HEADER)
        return 4;
    if (flags & EVENT_HEADER_FLAG_64_BIT_HEADER)
        return 8;
    return fallback == 4 ? 4 : 8;
}

static int take_pmc(const EVENT_HEADER_EXTENDED_DATA_ITEM *it, perch_event *ev)
{
    const uint8_t *p = (const uint8_t *)(uintptr_t)it->DataPtr;
    unsigned n = it->DataSize / 8u;
    if (p == NULL || it->DataSize % 8u != 0 || n == 0 || n > PERCH_EVENT_MAX_PMC)
        return PERCH_ETW_CONVERT_PMC_MALFORMED;
    for (unsigned i = 0; i < n; i++)
        memcpy(&ev->pmc[i], p + 8u * i, 8);
    ev->pmc_count = (uint8_t)n;
    return 0;
}

static int take_pebs(const EVENT_HEADER_EXTENDED_DATA_ITEM *it, perch_event *ev)
{
    const void *p = (const void *)(uintptr_t)it->DataPtr;
    if (p == NULL || it->DataSize != 8u)
        return PERCH_ETW_CONVERT_PEBS_MALFORMED;
    memcpy(&ev->pebs_index, p, 8);
    ev->flags |= PERCH_EVENT_HAS_PEBS;
    return 0;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Appends one item in the .etl layout at buf[*used]; the linkage bit is set afterwards. */
static int copy_item(const EVENT_HEADER_EXTENDED_DATA_ITEM *it, uint8_t *buf, size_t cap,
                     size_t *used, size_t *last)
{
    size_t need = (EXT_ITEM_HEADER + it->DataSize + 7u) & ~(size_t)7u;
    const void *data = (const void *)(uintptr_t)it->DataPtr;
    if (buf == NULL || cap - *used < need || (data == NULL && it->DataSize != 0))
        return PERCH_ETW_CONVERT_EXT_TRUNCATED;
    uint8_t *q = buf + *used;
    memset(q, 0, need);
    put16(q + 2, it->ExtType);
    put16(q + 6, it->DataSize);
    if (it->DataSize != 0)
        memcpy(q + EXT_ITEM_HEADER, data, it->DataSize);
    if (*used != 0)
        buf[*last + 4] |= 1u; /* the previous item's linkage: another follows */
    *last = *used;
    *used += need;
    return 0;
}

static int take_ext(const EVENT_RECORD *r, uint8_t *buf, size_t cap, perch_event *ev)
{
    size_t used = 0, last = 0;
    int flags = 0;
    if (r->ExtendedData == NULL)
        return 0;
    for (USHORT i = 0; i < r->ExtendedDataCount; i++) {
        const EVENT_HEADER_EXTENDED_DATA_ITEM *it = &r->ExtendedData[i];
        if (it->ExtType == EVENT_HEADER_EXT_TYPE_PMC_COUNTERS)
            flags |= take_pmc(it, ev);
        else if (it->ExtType == EVENT_HEADER_EXT_TYPE_PEBS_INDEX)
            flags |= take_pebs(it, ev);
        else
            flags |= copy_item(it, buf, cap, &used, &last);
    }
    if (used != 0) {
        ev->ext = buf;
        ev->ext_len = (uint32_t)used;
    }
    return flags;
}

static void fill_ids(const EVENT_HEADER *h, perch_event *ev)
{
    ev->tid = (uint32_t)h->ThreadId;
    ev->pid = (uint32_t)h->ProcessId;
    if (ev->tid != UINT32_MAX || ev->pid != UINT32_MAX)
        ev->flags |= PERCH_EVENT_HAS_TID;
}

static void fill_kind(const EVENT_HEADER *h, perch_event *ev)
{
    copy_guid(&h->ProviderId, &ev->provider);
    ev->group = perch_kernel_group_of(&ev->provider);
    ev->opcode = h->EventDescriptor.Opcode;
    ev->version = h->EventDescriptor.Version;
    if (ev->group != PERCH_GROUP_NONE) {
        ev->hook = ev->group == PERCH_GROUP_IMAGE && ev->opcode == OPCODE_IMAGE_LOAD
                       ? (uint16_t)HOOK_IMAGE_LOAD
                       : (uint16_t)(ev->group << 8 | ev->opcode);
    }
    if (h->Flags & EVENT_HEADER_FLAG_CLASSIC_HEADER)
        ev->flags |= PERCH_EVENT_CLASSIC;
    else
        ev->event_id = h->EventDescriptor.Id;
}

int perch_etw_convert(const EVENT_RECORD *r, unsigned default_pointer_size, uint8_t *ext_buf,
                      size_t ext_cap, perch_event *ev)
{
    int ptr;
    if (r == NULL || ev == NULL || (r->UserData == NULL && r->UserDataLength != 0))
        return PERCH_EINVAL;
    const EVENT_HEADER *h = &r->EventHeader;
    ptr = pointer_size_of(h->Flags, default_pointer_size);
    if (ptr < 0)
        return ptr;
    /* Nothing below can fail: *ev is written in place. */
    memset(ev, 0, sizeof *ev);
    ev->header_kind = PERCH_HEADER_LIVE;
    ev->pointer_size = (uint8_t)ptr;
    ev->timestamp = (uint64_t)h->TimeStamp.QuadPart;
    ev->cpu = (h->Flags & EVENT_HEADER_FLAG_PROCESSOR_INDEX) ? r->BufferContext.ProcessorIndex
                                                             : r->BufferContext.ProcessorNumber;
    fill_ids(h, ev);
    fill_kind(h, ev);
    ev->payload = (const uint8_t *)r->UserData;
    ev->payload_len = r->UserDataLength;
    return take_ext(r, ext_buf, ext_cap, ev);
}
