/*
 * The dispatcher: one table keyed by (kernel group, opcode) for kernel events and a short list
 * keyed by (provider GUID, opcode) for the classic KernelTraceControl events, each entry with
 * the range of versions whose layout Perch knows. Newer versions decode with the newest known
 * layout and are marked; older ones are refused. Layout facts: docs/events.md.
 *
 * The kernel table is direct-mapped: an entry lives at slot SLOT(group, opcode), written with
 * a designated initializer, so lookup is one index and two compares. Two keys sharing a slot
 * would be a duplicate initializer, which -Wextra (-Woverride-init) turns into a build error.
 */
#include <string.h>

#include "decode/decode_internal.h"

struct decode_entry {
    perch__decode_fn fn;
    uint16_t group;
    uint8_t opcode;
    uint8_t vmin; /* oldest version with a known layout */
    uint8_t vmax; /* newest version with a known layout */
    uint8_t type; /* perch_decoded_type */
    uint8_t kind; /* perch_kind of (group, opcode); test_decode_dispatch checks it */
};

#define KERNEL_SLOTS        128
#define SLOT(group, opcode) ((((unsigned)(group)) * 46u + (unsigned)(opcode)) & (KERNEL_SLOTS - 1))
#define KERNEL(group, opcode, vmin, vmax, type, kind, fn)                                          \
    [SLOT(group, opcode)] = {fn, group, opcode, vmin, vmax, PERCH_DECODED_##type, PERCH_KIND_##kind}

static const struct decode_entry kernel_table[KERNEL_SLOTS] = {
    /* Header group: Extension / EndExtension. */
    KERNEL(PERCH_GROUP_HEADER, 5, 2, 2, HEADER_EXTENSION, OTHER_KERNEL,
           perch__decode_header_extension),
    KERNEL(PERCH_GROUP_HEADER, 32, 2, 2, HEADER_EXTENSION, OTHER_KERNEL,
           perch__decode_header_extension),
    /* Process: Start, End, DCStart, DCEnd, Defunct. */
    KERNEL(PERCH_GROUP_PROCESS, 1, 3, 5, PROCESS, ProcessStart, perch__decode_process),
    KERNEL(PERCH_GROUP_PROCESS, 2, 3, 5, PROCESS, ProcessEnd, perch__decode_process),
    KERNEL(PERCH_GROUP_PROCESS, 3, 3, 5, PROCESS, ProcessDCStart, perch__decode_process),
    KERNEL(PERCH_GROUP_PROCESS, 4, 3, 5, PROCESS, ProcessDCEnd, perch__decode_process),
    KERNEL(PERCH_GROUP_PROCESS, 39, 3, 5, PROCESS, ProcessDefunct, perch__decode_process),
    /* Thread: Start, End, DCStart, DCEnd, CSwitch, ReadyThread, SetName. */
    KERNEL(PERCH_GROUP_THREAD, 1, 2, 4, THREAD, ThreadStart, perch__decode_thread),
    KERNEL(PERCH_GROUP_THREAD, 2, 2, 4, THREAD, ThreadEnd, perch__decode_thread),
    KERNEL(PERCH_GROUP_THREAD, 3, 2, 4, THREAD, ThreadDCStart, perch__decode_thread),
    KERNEL(PERCH_GROUP_THREAD, 4, 2, 4, THREAD, ThreadDCEnd, perch__decode_thread),
    KERNEL(PERCH_GROUP_THREAD, 36, 2, 4, CSWITCH, CSwitch, perch__decode_cswitch),
    KERNEL(PERCH_GROUP_THREAD, 50, 2, 2, READY_THREAD, ReadyThread, perch__decode_ready_thread),
    KERNEL(PERCH_GROUP_THREAD, 72, 2, 2, THREAD_SET_NAME, OTHER_KERNEL,
           perch__decode_thread_set_name),
    /* Spare1: LBR sample. The version is not documented anywhere: accept 0..2. */
    KERNEL(PERCH_GROUP_SPARE1, 32, 0, 2, LBR, LastBranchRecord, perch__decode_lbr),
    /* PerfInfo: SampledProfile, PMC sample, PMC config, interval events. */
    KERNEL(PERCH_GROUP_PERFINFO, 46, 2, 2, SAMPLED_PROFILE, SampledProfile,
           perch__decode_sampled_profile),
    KERNEL(PERCH_GROUP_PERFINFO, 47, 2, 2, PMC_SAMPLE, PmcCounterProf, perch__decode_pmc_sample),
    KERNEL(PERCH_GROUP_PERFINFO, 48, 2, 2, PMC_CONFIG, PmcCounterConfig, perch__decode_pmc_config),
    KERNEL(PERCH_GROUP_PERFINFO, 0x48, 2, 3, PROFILE_INTERVAL, OTHER_KERNEL,
           perch__decode_profile_interval),
    KERNEL(PERCH_GROUP_PERFINFO, 0x49, 2, 3, PROFILE_INTERVAL, OTHER_KERNEL,
           perch__decode_profile_interval),
    KERNEL(PERCH_GROUP_PERFINFO, 0x4A, 2, 3, PROFILE_INTERVAL, OTHER_KERNEL,
           perch__decode_profile_interval),
    /* Image: Load (normalized from 0x030A), Unload, DCStart, DCEnd, KernelBase. */
    KERNEL(PERCH_GROUP_IMAGE, 10, 2, 3, IMAGE, ImageLoad, perch__decode_image),
    KERNEL(PERCH_GROUP_IMAGE, 2, 2, 3, IMAGE, ImageUnload, perch__decode_image),
    KERNEL(PERCH_GROUP_IMAGE, 3, 2, 3, IMAGE, ImageDCStart, perch__decode_image),
    KERNEL(PERCH_GROUP_IMAGE, 4, 2, 3, IMAGE, ImageDCEnd, perch__decode_image),
    KERNEL(PERCH_GROUP_IMAGE, 0x21, 2, 2, KERNEL_BASE, OTHER_KERNEL, perch__decode_kernel_base),
    /* StackWalk: stack, key definitions (create, delete, rundown), key references. */
    KERNEL(PERCH_GROUP_STACKWALK, 32, 2, 2, STACK_WALK, StackWalk, perch__decode_stack_walk),
    KERNEL(PERCH_GROUP_STACKWALK, 34, 2, 2, STACK_KEY_DEF, StackKeyCreate,
           perch__decode_stack_key_def),
    KERNEL(PERCH_GROUP_STACKWALK, 35, 2, 2, STACK_KEY_DEF, StackKeyDelete,
           perch__decode_stack_key_def),
    KERNEL(PERCH_GROUP_STACKWALK, 36, 2, 2, STACK_KEY_DEF, StackKeyRundown,
           perch__decode_stack_key_def),
    KERNEL(PERCH_GROUP_STACKWALK, 37, 2, 2, STACK_KEY_REF, StackKeyKernel,
           perch__decode_stack_key_ref),
    KERNEL(PERCH_GROUP_STACKWALK, 38, 2, 2, STACK_KEY_REF, StackKeyUser,
           perch__decode_stack_key_ref),
};

/* KernelTraceControl: b3e675d7-2554-4f18-830b-2762732560de. */
const perch_guid perch_kernel_trace_control_guid = {
    0xb3e675d7, 0x2554, 0x4f18, {0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde}};

struct provider_entry {
    const perch_guid *provider;
    struct decode_entry e;
};

/* No source versions these layouts: every version is accepted as is. */
static const struct provider_entry provider_table[] = {
    {&perch_kernel_trace_control_guid,
     {perch__decode_image_id, PERCH_GROUP_NONE, 0, 0, 255, PERCH_DECODED_IMAGE_ID,
      PERCH_KIND_NON_KERNEL}},
    {&perch_kernel_trace_control_guid,
     {perch__decode_dbg_id_rsds, PERCH_GROUP_NONE, 36, 0, 255, PERCH_DECODED_DBG_ID_RSDS,
      PERCH_KIND_NON_KERNEL}},
    {&perch_kernel_trace_control_guid,
     {perch__decode_dbg_id_rsds, PERCH_GROUP_NONE, 37, 0, 255, PERCH_DECODED_DBG_ID_RSDS,
      PERCH_KIND_NON_KERNEL}},
};

static const struct decode_entry *find_provider(const perch_event *ev)
{
    for (size_t i = 0; i < sizeof provider_table / sizeof provider_table[0]; i++) {
        const struct provider_entry *p = &provider_table[i];
        if (p->e.opcode == ev->opcode && perch_guid_equal(p->provider, &ev->provider))
            return &p->e;
    }
    return NULL;
}

static inline const struct decode_entry *find_entry(const perch_event *ev)
{
    if (ev->group == PERCH_GROUP_NONE)
        return find_provider(ev);
    const struct decode_entry *e = &kernel_table[SLOT(ev->group, ev->opcode)];
    if (e->fn && e->group == ev->group && e->opcode == ev->opcode)
        return e;
    return NULL;
}

int perch__decode_fail(perch_decode_diag *diag, int code, uint32_t offset, uint32_t need,
                       const char *what)
{
    if (diag) {
        diag->code = code;
        diag->offset = offset;
        diag->need = need;
        diag->what = what;
    }
    return code;
}

int perch__decode_short(perch_decode_diag *diag, const cursor *c, const char *what)
{
    return perch__decode_fail(diag, PERCH_ESHORT, c->bad_at, c->bad_need, what);
}

/* Copies the common fields after a family decoder succeeded with result rc (>= 0). */
static inline void finish(const perch_event *ev, const struct decode_entry *e, int rc,
                          perch_decoded *out)
{
    unsigned n = ev->pmc_count <= PERCH_EVENT_MAX_PMC ? ev->pmc_count : PERCH_EVENT_MAX_PMC;
    out->type = e->type;
    out->kind = e->kind;
    out->opcode = ev->opcode;
    out->version = ev->version;
    out->pointer_size = ev->pointer_size;
    out->flags = (uint16_t)rc;
    if (ev->version > e->vmax)
        out->flags |= PERCH_DECODED_NEWER_VERSION;
    out->pmc_count = (uint8_t)n;
    for (unsigned i = 0; i < n; i++)
        out->pmc[i] = ev->pmc[i];
}

int perch_decode(const perch_event *ev, perch_decoded *out, perch_decode_diag *diag)
{
    if (!ev || !out || (ev->pointer_size != 4 && ev->pointer_size != 8) ||
        (!ev->payload && ev->payload_len))
        return perch__decode_fail(diag, PERCH_EINVAL, 0, 0, "record");
    const struct decode_entry *e = find_entry(ev);
    if (!e)
        return perch__decode_fail(diag, PERCH_EUNKNOWN, 0, 0, "unknown event");
    if (ev->version < e->vmin)
        return perch__decode_fail(diag, PERCH_EVERSION, 0, 0, "version older than known");
    unsigned version = ev->version > e->vmax ? e->vmax : ev->version;
    int rc = e->fn(ev, version, out, diag);
    if (rc < 0) {
        /* A newer version too short for the newest known layout is a version problem. */
        if (rc == PERCH_ESHORT && ev->version > e->vmax) {
            rc = PERCH_EVERSION;
            if (diag)
                diag->code = rc;
        }
        return rc;
    }
    finish(ev, e, rc, out);
    return 0;
}

bool perch_decode_known(const perch_event *ev)
{
    return ev && find_entry(ev) != NULL;
}

void perch_decode_stats_add(perch_decode_stats *s, int rc, const perch_decoded *d)
{
    if (rc == 0) {
        s->decoded++;
        if (d && (d->flags & PERCH_DECODED_NEWER_VERSION))
            s->newer_version++;
        if (d && d->type < PERCH_DECODED_TYPE_COUNT)
            s->by_type[d->type]++;
    } else if (rc == PERCH_EUNKNOWN) {
        s->unknown++;
    } else {
        s->errors++;
    }
}

const char *perch_decoded_type_name(perch_decoded_type type)
{
    static const char *const names[PERCH_DECODED_TYPE_COUNT] = {
        "none",
#define PERCH_DECODED_TYPE_NAME(upper, lower) #lower,
        PERCH_DECODED_TYPE_MAP(PERCH_DECODED_TYPE_NAME)
#undef PERCH_DECODED_TYPE_NAME
    };
    if ((unsigned)type >= PERCH_DECODED_TYPE_COUNT)
        return NULL;
    return names[type];
}
