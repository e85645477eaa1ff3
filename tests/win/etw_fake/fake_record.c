/*
 * A record of the replayed .etl (a perch_event from Perch's .etl reader) as the EVENT_RECORD
 * the OS hands a real-time consumer:
 *   - ProviderId: the MOF class GUID for kernel events (the reader maps the HookId's group,
 *     Image Load included), the provider's own GUID otherwise;
 *   - EventDescriptor: Id for manifest events, Version, Opcode; Level/Task/Keyword 0;
 *   - Flags: CLASSIC_HEADER for MOF events, 32_BIT_HEADER or 64_BIT_HEADER from the trace's
 *     pointer size, PROCESSOR_INDEX (BufferContext.ProcessorIndex holds the CPU), and
 *     EXTENDED_INFO when items follow;
 *   - ThreadId/ProcessId: as logged, all-ones for kernel events whose header has none;
 *   - PMC counters and the PEBS index of a kernel header become EVENT_HEADER_EXT_TYPE_PMC_COUNTERS
 *     and _PEBS_INDEX items; the extended items of EVENT_HEADER records keep their type and data.
 */
#define _WMI_SOURCE_
#include <string.h>

#include "fake_internal.h"

static void put_guid(const perch_guid *g, GUID *out)
{
    out->Data1 = g->data1;
    out->Data2 = g->data2;
    out->Data3 = g->data3;
    memcpy(out->Data4, g->data4, 8);
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* The raw .etl items of an EVENT_HEADER record: {u16, u16 type, u16 linkage, u16 size, data}. */
static unsigned raw_items(const perch_event *ev, EVENT_HEADER_EXTENDED_DATA_ITEM *items, unsigned n,
                          unsigned cap)
{
    size_t at = 0;
    while (n < cap && ev->ext != NULL && at + 8 <= ev->ext_len) {
        const uint8_t *q = ev->ext + at;
        uint16_t size = le16(q + 6);
        if (at + 8 + size > ev->ext_len)
            break;
        memset(&items[n], 0, sizeof items[n]);
        items[n].ExtType = le16(q + 2);
        items[n].DataSize = size;
        items[n].DataPtr = (ULONGLONG)(uintptr_t)(q + 8);
        n++;
        at += (8u + size + 7u) & ~(size_t)7u;
    }
    return n;
}

static unsigned header_items(const perch_event *ev, EVENT_HEADER_EXTENDED_DATA_ITEM *items,
                             unsigned cap)
{
    unsigned n = 0;
    if ((ev->flags & PERCH_EVENT_HAS_PEBS) && n < cap) {
        memset(&items[n], 0, sizeof items[n]);
        items[n].ExtType = EVENT_HEADER_EXT_TYPE_PEBS_INDEX;
        items[n].DataSize = 8;
        items[n].DataPtr = (ULONGLONG)(uintptr_t)&ev->pebs_index;
        n++;
    }
    if (ev->pmc_count > 0 && n < cap) {
        memset(&items[n], 0, sizeof items[n]);
        items[n].ExtType = EVENT_HEADER_EXT_TYPE_PMC_COUNTERS;
        items[n].DataSize = (USHORT)(8u * ev->pmc_count);
        items[n].DataPtr = (ULONGLONG)(uintptr_t)ev->pmc;
        n++;
    }
    return n;
}

void fake_build_record(const perch_event *ev, uint16_t logger_id, void *user_context,
                       const perch_etl_header *filetime_header,
                       EVENT_HEADER_EXTENDED_DATA_ITEM *items, unsigned cap, EVENT_RECORD *r)
{
    EVENT_HEADER *h = &r->EventHeader;
    unsigned n = raw_items(ev, items, header_items(ev, items, cap), cap);
    memset(r, 0, sizeof *r);
    h->Size = (USHORT)(sizeof *h + (ev->payload_len < 0xFFFF - sizeof *h ? ev->payload_len : 0));
    h->Flags = (USHORT)(EVENT_HEADER_FLAG_PROCESSOR_INDEX |
                        (ev->pointer_size == 4 ? EVENT_HEADER_FLAG_32_BIT_HEADER
                                               : EVENT_HEADER_FLAG_64_BIT_HEADER) |
                        ((ev->flags & PERCH_EVENT_CLASSIC) ? EVENT_HEADER_FLAG_CLASSIC_HEADER : 0) |
                        (n > 0 ? EVENT_HEADER_FLAG_EXTENDED_INFO : 0));
    h->ThreadId = ev->tid;
    h->ProcessId = ev->pid;
    h->TimeStamp.QuadPart =
        (LONGLONG)(filetime_header != NULL ? perch_etl_filetime(filetime_header, ev->timestamp)
                                           : ev->timestamp);
    put_guid(&ev->provider, &h->ProviderId);
    h->EventDescriptor.Id = ev->event_id;
    h->EventDescriptor.Version = ev->version;
    h->EventDescriptor.Opcode = ev->opcode;
    r->BufferContext.ProcessorIndex = ev->cpu;
    r->BufferContext.LoggerId = logger_id;
    r->ExtendedDataCount = (USHORT)n;
    r->ExtendedData = n > 0 ? items : NULL;
    r->UserDataLength = (USHORT)(ev->payload_len <= 0xFFFF ? ev->payload_len : 0xFFFF);
    r->UserData = (PVOID)ev->payload;
    r->UserContext = user_context;
}
