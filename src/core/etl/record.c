/*
 * One trace record -> one normalized perch_event.
 *
 * The first dword of a record is the marker: 0xC0 in the top byte for typed headers, the
 * header type in bits 16..23. A table keyed by the header type gives the header kind, its
 * fixed size, the pointer size it implies and the function that fills the event. Kernel
 * headers (system, compact, perfinfo) carry a HookId instead of a GUID: the group selects the
 * MOF class GUID, with Image Load (HookId 0x030A, logged in the Process group) moved to the
 * Image group. Their version word may announce a PEBS index and PMC counters (u64 each)
 * between header and payload. Sources per field: docs/etl-format.md.
 */
#include <string.h>

#include "etl/le.h"
#include "etl/record.h"
#include "perch/error.h"
#include "perch/etl.h"

#define HOOK_IMAGE_LOAD 0x030Au
#define VERSION_PEBS 0x8000u
#define VERSION_PMC_MASK 0x0700u
#define EVENT_HEADER_FLAG_EXTENDED_INFO 0x0001u
#define EXT_ITEM_HEADER 8u

struct form;
typedef int (*fill_fn)(const uint8_t *p, size_t size, const struct form *f,
                       const perch_guid *const *groups, perch_event *ev);

struct form {
    uint8_t kind;       /* perch_header_kind */
    uint8_t fixed;      /* bytes of header before any extension and payload */
    uint8_t ptr;        /* pointer size the header type implies */
    uint8_t size_at;    /* offset of the u16 Size */
    uint8_t ts_at;      /* offset of the u64 timestamp */
    uint8_t has_tid;    /* tid at +8, pid at +12 */
    fill_fn fill;
};

static int fill_kernel(const uint8_t *p, size_t size, const struct form *f,
                       const perch_guid *const *groups, perch_event *ev);
static int fill_classic(const uint8_t *p, size_t size, const struct form *f,
                        const perch_guid *const *groups, perch_event *ev);
static int fill_event(const uint8_t *p, size_t size, const struct form *f,
                      const perch_guid *const *groups, perch_event *ev);

/* Indexed by header type (bits 16..23 of the marker); kind 0 means not a record we yield. */
static const struct form forms[0x16] = {
    [0x01] = {PERCH_HEADER_SYSTEM, 0x20, 4, 4, 0x10, 1, fill_kernel},
    [0x02] = {PERCH_HEADER_SYSTEM, 0x20, 8, 4, 0x10, 1, fill_kernel},
    [0x03] = {PERCH_HEADER_COMPACT, 0x18, 4, 4, 0x10, 1, fill_kernel},
    [0x04] = {PERCH_HEADER_COMPACT, 0x18, 8, 4, 0x10, 1, fill_kernel},
    [0x10] = {PERCH_HEADER_PERFINFO, 0x10, 4, 4, 0x08, 0, fill_kernel},
    [0x11] = {PERCH_HEADER_PERFINFO, 0x10, 8, 4, 0x08, 0, fill_kernel},
    [0x0A] = {PERCH_HEADER_FULL, 0x30, 4, 0, 0x10, 1, fill_classic},
    [0x14] = {PERCH_HEADER_FULL, 0x30, 8, 0, 0x10, 1, fill_classic},
    [0x0B] = {PERCH_HEADER_INSTANCE, 0x48, 4, 0, 0x10, 1, fill_classic},
    [0x15] = {PERCH_HEADER_INSTANCE, 0x48, 8, 0, 0x10, 1, fill_classic},
    [0x12] = {PERCH_HEADER_EVENT, 0x50, 4, 0, 0x10, 1, fill_event},
    [0x13] = {PERCH_HEADER_EVENT, 0x50, 8, 0, 0x10, 1, fill_event},
};

#define TYPE_ERROR 0x0Du
#define TYPE_MESSAGE 0x0Fu
#define MARKER_TYPED 0xC0000000u
#define MARKER_MESSAGE 0x90000000u /* TRACE_HEADER_FLAG | TRACE_MESSAGE (WPP) */

static void fill_common(const uint8_t *p, const struct form *f, perch_event *ev)
{
    ev->timestamp = perch__le64(p + f->ts_at);
    if (f->has_tid) {
        ev->tid = perch__le32(p + 8);
        ev->pid = perch__le32(p + 12);
        ev->flags = PERCH_EVENT_HAS_TID;
    } else {
        ev->tid = UINT32_MAX;
        ev->pid = UINT32_MAX;
        ev->flags = 0;
    }
    ev->header_kind = f->kind;
    ev->pointer_size = f->ptr;
    ev->hook = 0;
    ev->event_id = 0;
    ev->pmc_count = 0;
    ev->reserved = 0;
    ev->pebs_index = 0;
    memset(ev->pmc, 0, sizeof ev->pmc);
    ev->ext = NULL;
    ev->ext_len = 0;
}

/* PEBS index then PMC counters between header and payload; returns the bytes they take. */
static size_t kernel_extension(const uint8_t *q, uint16_t version, perch_event *ev)
{
    size_t used = 0;
    unsigned n = (version & VERSION_PMC_MASK) >> 8;
    if (version & VERSION_PEBS) {
        ev->pebs_index = perch__le64(q);
        ev->flags |= PERCH_EVENT_HAS_PEBS;
        used = 8;
    }
    for (unsigned i = 0; i < n; i++)
        ev->pmc[i] = perch__le64(q + used + 8u * i);
    ev->pmc_count = (uint8_t)n;
    return used + 8u * n;
}

static int fill_kernel(const uint8_t *p, size_t size, const struct form *f,
                       const perch_guid *const *groups, perch_event *ev)
{
    uint16_t version = perch__le16(p), hook = perch__le16(p + 6);
    size_t ext = ((version & VERSION_PEBS) ? 8u : 0u) + 8u * ((version & VERSION_PMC_MASK) >> 8);
    const perch_guid *guid;
    if (f->fixed + ext > size)
        return PERCH_ERANGE;
    fill_common(p, f, ev);
    ev->flags |= PERCH_EVENT_CLASSIC;
    ev->hook = hook;
    ev->version = (uint8_t)(version & 0xFFu);
    ev->opcode = (uint8_t)(hook & 0xFFu);
    ev->group = hook == HOOK_IMAGE_LOAD ? PERCH_GROUP_IMAGE : (uint16_t)(hook >> 8);
    guid = groups != NULL ? groups[ev->group & 0xFFu] : perch_kernel_group_guid(ev->group);
    if (guid != NULL)
        ev->provider = *guid;
    else
        memset(&ev->provider, 0, sizeof ev->provider);
    kernel_extension(p + f->fixed, version, ev);
    ev->payload = p + f->fixed + ext;
    ev->payload_len = (uint32_t)(size - f->fixed - ext);
    return 0;
}

static int fill_classic(const uint8_t *p, size_t size, const struct form *f,
                        const perch_guid *const *groups, perch_event *ev)
{
    (void)groups;
    fill_common(p, f, ev);
    ev->flags |= PERCH_EVENT_CLASSIC;
    ev->group = PERCH_GROUP_NONE;
    ev->opcode = p[4];
    ev->version = p[6];
    perch__le_guid(p + 0x18, &ev->provider);
    ev->payload = p + f->fixed;
    ev->payload_len = (uint32_t)(size - f->fixed);
    return 0;
}

/* Extended data items: {u16 reserved, u16 type, u16 linkage (bit 0: another follows),
 * u16 data size, data}, each starting 8-aligned. Returns their total length or -1. */
static long ext_items_len(const uint8_t *q, size_t avail)
{
    size_t pos = 0;
    for (;;) {
        size_t item;
        if (avail - pos < EXT_ITEM_HEADER)
            return -1;
        item = (EXT_ITEM_HEADER + perch__le16(q + pos + 6) + 7u) & ~(size_t)7u;
        if (item > avail - pos)
            return -1;
        pos += item;
        if ((perch__le16(q + pos - item + 4) & 1u) == 0)
            return (long)pos;
    }
}

static int fill_event(const uint8_t *p, size_t size, const struct form *f,
                      const perch_guid *const *groups, perch_event *ev)
{
    long ext = 0;
    (void)groups;
    if (perch__le16(p + 4) & EVENT_HEADER_FLAG_EXTENDED_INFO) {
        ext = ext_items_len(p + f->fixed, size - f->fixed);
        if (ext < 0)
            return PERCH_ERANGE;
    }
    fill_common(p, f, ev);
    ev->group = PERCH_GROUP_NONE;
    perch__le_guid(p + 0x18, &ev->provider);
    ev->event_id = perch__le16(p + 0x28);
    ev->version = p[0x2A];
    ev->opcode = p[0x2D];
    ev->ext = ext > 0 ? p + f->fixed : NULL;
    ev->ext_len = (uint32_t)ext;
    ev->payload = p + f->fixed + ext;
    ev->payload_len = (uint32_t)(size - f->fixed - (size_t)ext);
    return 0;
}

/* Records without a normalized form (WPP messages, ERROR records): the step past them. */
static int skip_untyped(uint32_t marker, size_t len, size_t *step)
{
    size_t size = marker & 0xFFFFu;
    if (size < 8)
        return PERCH_EFORMAT;
    if (size > len)
        return PERCH_ETRUNC;
    *step = (size + PERCH__ETL_ALIGN - 1) & ~(size_t)(PERCH__ETL_ALIGN - 1);
    return PERCH_EUNKNOWN;
}

int perch__etl_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                      const perch_guid *const *groups, perch_event *ev, size_t *step)
{
    uint32_t marker, type;
    const struct form *f;
    size_t size;
    int err;
    (void)pointer_size;
    if (len < 4)
        return len == 0 ? PERCH_EOF : PERCH_ETRUNC;
    marker = perch__le32(p);
    if (marker == 0 || marker == 0xFFFFFFFFu)
        return PERCH_EOF;
    type = (marker >> 16) & 0xFFu;
    if ((marker & MARKER_TYPED) != MARKER_TYPED)
        return (marker & 0xF0000000u) == MARKER_MESSAGE ? skip_untyped(marker, len, step)
                                                          : PERCH_EFORMAT;
    if (type == TYPE_ERROR || type == TYPE_MESSAGE)
        return skip_untyped(marker, len, step);
    if (type >= sizeof forms / sizeof forms[0] || forms[type].kind == 0)
        return PERCH_EFORMAT;
    f = &forms[type];
    if (len < f->fixed)
        return PERCH_ETRUNC;
    size = perch__le16(p + f->size_at);
    if (size < f->fixed)
        return PERCH_ESHORT;
    if (size > len)
        return PERCH_ETRUNC;
    *step = (size + PERCH__ETL_ALIGN - 1) & ~(size_t)(PERCH__ETL_ALIGN - 1);
    err = f->fill(p, size, f, groups, ev);
    if (err < 0)
        return err;
    ev->cpu = cpu;
    return 0;
}

int perch_etl_parse_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                           perch_event *ev, size_t *step)
{
    perch_event tmp;
    size_t s = 0;
    int err;
    if (p == NULL || ev == NULL || step == NULL)
        return PERCH_EINVAL;
    memset(&tmp, 0, sizeof tmp);
    err = perch__etl_record(p, len, pointer_size, cpu, NULL, &tmp, &s);
    if (err == PERCH_EUNKNOWN)
        *step = s;
    if (err < 0)
        return err;
    *ev = tmp;
    *step = s;
    return 0;
}
