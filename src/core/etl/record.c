/*
 * One trace record -> one normalized perch_event, in two steps: check (every size and
 * marker test, the step to the next record, the timestamp the merge needs) and fill (the
 * event's fields, which cannot fail once the check passed). The reader checks a stream's
 * next record when the stream moves on and fills it only when the merge hands it out,
 * straight into the caller's event.
 *
 * The first dword of a record is the marker: 0xC0 in the top byte for typed headers, the
 * header type in bits 16..23. A table keyed by the header type gives the header kind, its
 * fixed size, the pointer size it implies and how the rest is read. Kernel
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

#define HOOK_IMAGE_LOAD                 0x030Au
#define VERSION_PEBS                    0x8000u
#define VERSION_PMC_MASK                0x0700u
#define EVENT_HEADER_FLAG_EXTENDED_INFO 0x0001u
#define EXT_ITEM_HEADER                 8u

/* How the rest of a header is read once its kind is known. */
enum shape { SHAPE_KERNEL = 1, SHAPE_CLASSIC, SHAPE_EVENT };

struct form {
    uint8_t kind;    /* perch_header_kind */
    uint8_t fixed;   /* bytes of header before any extension and payload */
    uint8_t ptr;     /* pointer size the header type implies */
    uint8_t size_at; /* offset of the u16 Size */
    uint8_t ts_at;   /* offset of the u64 timestamp */
    uint8_t has_tid; /* tid at +8, pid at +12 */
    uint8_t shape;   /* enum shape */
};

/* Indexed by header type (bits 16..23 of the marker); kind 0 means not a record we yield. */
static const struct form forms[0x16] = {
    [0x01] = {PERCH_HEADER_SYSTEM, 0x20, 4, 4, 0x10, 1, SHAPE_KERNEL},
    [0x02] = {PERCH_HEADER_SYSTEM, 0x20, 8, 4, 0x10, 1, SHAPE_KERNEL},
    [0x03] = {PERCH_HEADER_COMPACT, 0x18, 4, 4, 0x10, 1, SHAPE_KERNEL},
    [0x04] = {PERCH_HEADER_COMPACT, 0x18, 8, 4, 0x10, 1, SHAPE_KERNEL},
    [0x10] = {PERCH_HEADER_PERFINFO, 0x10, 4, 4, 0x08, 0, SHAPE_KERNEL},
    [0x11] = {PERCH_HEADER_PERFINFO, 0x10, 8, 4, 0x08, 0, SHAPE_KERNEL},
    [0x0A] = {PERCH_HEADER_FULL, 0x30, 4, 0, 0x10, 1, SHAPE_CLASSIC},
    [0x14] = {PERCH_HEADER_FULL, 0x30, 8, 0, 0x10, 1, SHAPE_CLASSIC},
    [0x0B] = {PERCH_HEADER_INSTANCE, 0x48, 4, 0, 0x10, 1, SHAPE_CLASSIC},
    [0x15] = {PERCH_HEADER_INSTANCE, 0x48, 8, 0, 0x10, 1, SHAPE_CLASSIC},
    [0x12] = {PERCH_HEADER_EVENT, 0x50, 4, 0, 0x10, 1, SHAPE_EVENT},
    [0x13] = {PERCH_HEADER_EVENT, 0x50, 8, 0, 0x10, 1, SHAPE_EVENT},
};

#define TYPE_ERROR     0x0Du
#define TYPE_MESSAGE   0x0Fu
#define MARKER_TYPED   0xC0000000u
#define MARKER_MESSAGE 0x90000000u /* TRACE_HEADER_FLAG | TRACE_MESSAGE (WPP) */

/* The fields every header kind sets the same way; pmc[] is zeroed here and filled by the
 * kernel extension. */
static inline void fill_common(const uint8_t *p, const struct form *f, perch_event *ev)
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

/* Bytes of PEBS index and PMC counters a kernel header's version word announces. */
static inline size_t kernel_ext_len(uint16_t version)
{
    return ((version & VERSION_PEBS) ? 8u : 0u) + 8u * ((version & VERSION_PMC_MASK) >> 8);
}

/* PEBS index then the PMC counters between header and payload. */
static void kernel_extension(const uint8_t *q, uint16_t version, perch_event *ev)
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
}

static inline void fill_kernel(const uint8_t *p, size_t size, const struct form *f,
                               const perch_guid *const *groups, perch_event *ev)
{
    uint16_t version = perch__le16(p), hook = perch__le16(p + 6);
    size_t ext = kernel_ext_len(version);
    uint16_t group = hook == HOOK_IMAGE_LOAD ? PERCH_GROUP_IMAGE : (uint16_t)(hook >> 8);
    const perch_guid *guid;
    fill_common(p, f, ev);
    ev->flags |= PERCH_EVENT_CLASSIC;
    ev->hook = hook;
    ev->version = (uint8_t)(version & 0xFFu);
    ev->opcode = (uint8_t)(hook & 0xFFu);
    ev->group = group;
    guid = groups != NULL ? groups[group & 0xFFu] : perch_kernel_group_guid(group);
    if (guid != NULL)
        ev->provider = *guid;
    else
        memset(&ev->provider, 0, sizeof ev->provider);
    if (ext != 0)
        kernel_extension(p + f->fixed, version, ev);
    ev->payload = p + f->fixed + ext;
    ev->payload_len = (uint32_t)(size - f->fixed - ext);
}

static void fill_classic(const uint8_t *p, size_t size, const struct form *f, perch_event *ev)
{
    fill_common(p, f, ev);
    ev->flags |= PERCH_EVENT_CLASSIC;
    ev->group = PERCH_GROUP_NONE;
    ev->opcode = p[4];
    ev->version = p[6];
    perch__le_guid(p + 0x18, &ev->provider);
    ev->payload = p + f->fixed;
    ev->payload_len = (uint32_t)(size - f->fixed);
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

/* The extended items' length of an EVENT_HEADER record (0 without), or -1 when they do not
 * fit in its size. */
static long event_ext_len(const uint8_t *p, size_t size, const struct form *f)
{
    if ((perch__le16(p + 4) & EVENT_HEADER_FLAG_EXTENDED_INFO) == 0)
        return 0;
    return ext_items_len(p + f->fixed, size - f->fixed);
}

static void fill_event(const uint8_t *p, size_t size, const struct form *f, perch_event *ev)
{
    long ext = event_ext_len(p, size, f);
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

/* Markers that are not a typed header we yield: end markers, WPP/ERROR records, garbage. */
static int other_record(uint32_t marker, size_t len, size_t *step)
{
    uint32_t type = (marker >> 16) & 0xFFu;
    if (marker == 0 || marker == 0xFFFFFFFFu)
        return PERCH_EOF;
    if ((marker & MARKER_TYPED) != MARKER_TYPED)
        return (marker & 0xF0000000u) == MARKER_MESSAGE ? skip_untyped(marker, len, step)
                                                        : PERCH_EFORMAT;
    if (type == TYPE_ERROR || type == TYPE_MESSAGE)
        return skip_untyped(marker, len, step);
    return PERCH_EFORMAT;
}

/* The checks of a typed header: f's fields are constants where this is inlined for one
 * header type (the kernel headers, nearly every record of a kernel trace). The step is set
 * as soon as the size is known, so a record whose extension data is bad can be stepped over. */
__attribute__((always_inline)) static inline int check_typed(const uint8_t *p, size_t len,
                                                             const struct form *f, uint8_t type,
                                                             struct perch__etl_rec *rec,
                                                             size_t *step)
{
    size_t size;
    if (len < f->fixed)
        return PERCH_ETRUNC;
    size = perch__le16(p + f->size_at);
    if (size < f->fixed)
        return PERCH_ESHORT;
    if (size > len)
        return PERCH_ETRUNC;
    *step = (size + PERCH__ETL_ALIGN - 1) & ~(size_t)(PERCH__ETL_ALIGN - 1);
    if (f->shape == SHAPE_KERNEL && f->fixed + kernel_ext_len(perch__le16(p)) > size)
        return PERCH_ERANGE;
    if (f->shape == SHAPE_EVENT && event_ext_len(p, size, f) < 0)
        return PERCH_ERANGE;
    rec->ts = perch__le64(p + f->ts_at);
    rec->size = (uint16_t)size;
    rec->type = type;
    return 0;
}

#define CHECK_CASE(t)                                                                              \
    case t:                                                                                        \
        return check_typed(p, len, &forms[t], t, rec, step)

int perch__etl_record_check(const uint8_t *p, size_t len, struct perch__etl_rec *rec, size_t *step)
{
    uint32_t marker, type;
    if (len < 4)
        return len == 0 ? PERCH_EOF : PERCH_ETRUNC;
    marker = perch__le32(p);
    type = (marker >> 16) & 0xFFu;
    if ((marker & MARKER_TYPED) != MARKER_TYPED || type >= sizeof forms / sizeof forms[0] ||
        forms[type].kind == 0)
        return other_record(marker, len, step);
    switch (type) {
        CHECK_CASE(0x01);
        CHECK_CASE(0x02);
        CHECK_CASE(0x03);
        CHECK_CASE(0x04);
        CHECK_CASE(0x10);
        CHECK_CASE(0x11);
    default:
        return check_typed(p, len, &forms[type], (uint8_t)type, rec, step);
    }
}

#define FILL_CASE(t)                                                                               \
    case t:                                                                                        \
        fill_kernel(p, rec->size, &forms[t], groups, ev);                                          \
        break

void perch__etl_record_fill(const uint8_t *p, const struct perch__etl_rec *rec, uint16_t cpu,
                            const perch_guid *const *groups, perch_event *ev)
{
    const struct form *f = &forms[rec->type];
    switch (rec->type) {
        FILL_CASE(0x01);
        FILL_CASE(0x02);
        FILL_CASE(0x03);
        FILL_CASE(0x04);
        FILL_CASE(0x10);
        FILL_CASE(0x11);
    default:
        if (f->shape == SHAPE_CLASSIC)
            fill_classic(p, rec->size, f, ev);
        else
            fill_event(p, rec->size, f, ev);
    }
    ev->cpu = cpu;
}

int perch__etl_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                      const perch_guid *const *groups, perch_event *ev, size_t *step)
{
    struct perch__etl_rec rec;
    int err = perch__etl_record_check(p, len, &rec, step);
    (void)pointer_size;
    if (err == 0)
        perch__etl_record_fill(p, &rec, cpu, groups, ev);
    return err;
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
