/*
 * The normalized event record: the one shape in which every source of kernel events (the live
 * ETW consumer, the .etl file reader, the test synthesizer) hands an event to the decoders.
 *
 * A record says who logged it (provider GUID and, for kernel events, the normalized group),
 * what it is (opcode and version), when (raw clock ticks, never converted), where (cpu, pid,
 * tid) and carries its payload bytes plus any PMC counter values that rode along in the header.
 * It never says where it came from. Payload and extended-data pointers borrow the source's
 * buffer and stay valid only until the source yields the next record.
 */
#ifndef PERCH_EVENT_H
#define PERCH_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_guid {
    uint32_t data1;
    uint16_t data2;
    uint16_t data3;
    uint8_t data4[8];
} perch_guid;

/* Header kinds as the .etl container (or the live consumer) saw them. */
typedef enum perch_header_kind {
    PERCH_HEADER_SYSTEM = 1,   /* full SYSTEM_TRACE_HEADER (tid/pid of the logging thread) */
    PERCH_HEADER_COMPACT = 2,  /* compact SYSTEM_TRACE_HEADER */
    PERCH_HEADER_PERFINFO = 3, /* PERFINFO_TRACE_HEADER: no tid/pid */
    PERCH_HEADER_FULL = 4,     /* classic EVENT_TRACE_HEADER with a GUID */
    PERCH_HEADER_INSTANCE = 5, /* EVENT_INSTANCE_GUID_HEADER */
    PERCH_HEADER_EVENT = 6,    /* EVENT_HEADER (manifest / TraceLogging) */
    PERCH_HEADER_LIVE = 7,     /* delivered by the real-time consumer (EVENT_RECORD) */
} perch_header_kind;

/* Kernel groups (the high byte of a kernel HookId), after normalization: Image Load, logged
 * with HookId 0x030A in the Process group, is reported as group IMAGE, opcode 10. */
enum {
    PERCH_GROUP_HEADER = 0x00,
    PERCH_GROUP_PROCESS = 0x03,
    PERCH_GROUP_THREAD = 0x05,
    PERCH_GROUP_SPARE1 = 0x0C, /* LBR */
    PERCH_GROUP_PERFINFO = 0x0F,
    PERCH_GROUP_IMAGE = 0x14,
    PERCH_GROUP_STACKWALK = 0x18,
    PERCH_GROUP_NONE = 0xFFFF, /* not a kernel (MOF group) event */
};

/* At most 7 PMC counter values ride in a kernel header (TRACE_HEADER_PMC_COUNTERS_MASK). */
#define PERCH_EVENT_MAX_PMC 8

/* perch_event.flags */
#define PERCH_EVENT_HAS_TID 0x0001u  /* tid/pid came from the header */
#define PERCH_EVENT_HAS_PEBS 0x0002u /* pebs_index is valid */
#define PERCH_EVENT_CLASSIC 0x0004u  /* MOF record (kernel or classic provider), not manifest */

typedef struct perch_event {
    perch_guid provider;     /* kernel events: the group's MOF class GUID */
    uint64_t timestamp;      /* raw clock ticks (QPC on modern traces), as logged */
    uint32_t pid;            /* UINT32_MAX when the header carries none */
    uint32_t tid;            /* UINT32_MAX when the header carries none */
    uint16_t cpu;            /* processor index of the buffer / real-time context */
    uint16_t group;          /* PERCH_GROUP_*: normalized kernel group, or PERCH_GROUP_NONE */
    uint16_t hook;           /* raw HookId ((group << 8) | type) for kernel records, else 0 */
    uint16_t event_id;       /* EVENT_HEADER descriptor id; 0 for MOF records */
    uint16_t flags;          /* PERCH_EVENT_* */
    uint8_t opcode;          /* kernel: the type byte of the hook; others: descriptor opcode */
    uint8_t version;         /* event version with the extension bits masked off */
    uint8_t pointer_size;    /* 4 or 8: of the trace, never of the reader */
    uint8_t header_kind;     /* perch_header_kind */
    uint8_t pmc_count;       /* number of valid values in pmc[] */
    uint8_t reserved;        /* zero */
    uint64_t pebs_index;     /* valid when flags & PERCH_EVENT_HAS_PEBS */
    uint64_t pmc[PERCH_EVENT_MAX_PMC];
    const uint8_t *payload;  /* borrowed */
    uint32_t payload_len;
    uint32_t ext_len;        /* EVENT_HEADER extended items, raw, borrowed */
    const uint8_t *ext;
} perch_event;

/* True when addr is a kernel-mode address for a trace of the given pointer size (4 or 8): at or
 * above 0x80000000 with 32-bit pointers, at or above 0xFFFF800000000000 with 64-bit ones. The
 * one rule the model, the report and the exporters split stacks and pick module maps by. */
static inline bool perch_is_kernel_address(uint64_t addr, unsigned pointer_size)
{
    return pointer_size == 4 ? addr >= 0x80000000ull : addr >= 0xFFFF800000000000ull;
}

/* Lower-case canonical text form "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into out[37]. */
void perch_guid_format(const perch_guid *g, char out[37]);

/* Parse the canonical text form; returns 0 or PERCH_EINVAL and leaves *g untouched on error. */
int perch_guid_parse(const char *text, perch_guid *g);

static inline bool perch_guid_equal(const perch_guid *a, const perch_guid *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* The MOF class GUID of a kernel group, or NULL for a group Perch does not name. */
const perch_guid *perch_kernel_group_guid(uint16_t group);

/* The kernel group whose MOF class GUID is g, or PERCH_GROUP_NONE. */
uint16_t perch_kernel_group_of(const perch_guid *g);

#ifdef __cplusplus
}
#endif

#endif
