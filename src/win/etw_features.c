/*
 * Enabling the session's features one by one (src/win/etw.h), each outcome recorded by
 * feature name and reason so a refusal never takes the rest down:
 *
 *   sample_interval   TraceSetInformation(0, TraceSampledProfileIntervalInfo) (system-wide;
 *                     the previous interval is read first and put back at stop)
 *   pmc_sources       TraceQueryInformation(TraceMaxPmcCounterQuery, TraceProfileSourceListInfo)
 *                     to resolve names, TraceSetInformation(0, TraceProfileSourceConfigInfo)
 *   pmc_interval      TraceSampledProfileIntervalInfo per chosen source
 *   cswitch_counters  TracePmcCounterListInfo, then TracePmcEventListInfo [CSwitch]
 *   lbr               TraceLbrConfigurationInfo, then TraceLbrEventListInfo (HookIds)
 *   stacks            TraceStackTracingInfo (CLASSIC_EVENT_IDs)
 *   groups            TraceSystemTraceEnableFlagsInfo (PERFINFO_GROUPMASK), last, so every
 *                     event is configured before it starts flowing
 *
 * Before anything, one harmless call (a zero-length TraceSetInformation) tells whether this
 * ETW implements TraceSetInformation at all: Wine's stub answers ERROR_CALL_NOT_IMPLEMENTED,
 * and its TraceQueryInformation aborts the process when called, so then neither is called.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "etw_internal.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"

#define SOURCE_LIST_START (4u << 10)
#define SOURCE_LIST_MAX   (1u << 20)

static const struct {
    uint32_t mask; /* index in the top three bits, like ntwmi.h group ids */
} group_bits[] = {
#define GROUP_BIT(s, name, mask, bit) {((uint32_t)(mask) << 29) | (bit)},
    PERCH_ETW_GROUP_MAP(GROUP_BIT)
#undef GROUP_BIT
};

static const struct {
    const GUID *guid;
    uint8_t type;
    uint16_t hook;
} events[] = {
    {&perch_etw_perfinfo_guid, 46, PERCH_HOOK_SAMPLED_PROFILE},
    {&perch_etw_perfinfo_guid, 47, PERCH_HOOK_PMC_INTERRUPT},
    {&perch_etw_thread_guid, 36, PERCH_HOOK_CSWITCH},
    {&perch_etw_thread_guid, 50, PERCH_HOOK_READY_THREAD},
};

void perch__etw_group_mask(uint32_t groups, perch_perfinfo_groupmask *mask)
{
    memset(mask, 0, sizeof *mask);
    for (unsigned i = 0; i < PERCH_ETW_GROUP_COUNT; i++)
        if (groups & (1u << i))
            mask->Masks[PERCH_PERF_MASK_INDEX(group_bits[i].mask)] |=
                PERCH_PERF_MASK_GROUP(group_bits[i].mask);
}

static perch_etw_feature_status *feat(perch_etw_session *s, perch_etw_feature f)
{
    return &s->rep.features[f];
}

static void set_on(perch_etw_session *s, perch_etw_feature f)
{
    feat(s, f)->state = PERCH_ETW_ON;
}

static void refuse(perch_etw_session *s, perch_etw_feature f, int err, uint32_t win32,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void refuse(perch_etw_session *s, perch_etw_feature f, int err, uint32_t win32,
                   const char *fmt, ...)
{
    perch_etw_feature_status *st = feat(s, f);
    va_list ap;
    st->state = PERCH_ETW_REFUSED;
    st->err = err;
    st->win32 = win32;
    va_start(ap, fmt);
    vsnprintf(st->reason, sizeof st->reason, fmt, ap);
    va_end(ap);
}

/* Records a failed ETW call as the refusal of f; true when rc is a failure. */
static bool refused_by(perch_etw_session *s, perch_etw_feature f, const char *call, ULONG rc)
{
    char text[sizeof feat(s, f)->reason];
    if (rc == ERROR_SUCCESS)
        return false;
    perch__etw_say_failed(text, sizeof text, call, rc);
    refuse(s, f, perch_win_error(rc), rc, "%s", text);
    return true;
}

static bool info_implemented(void)
{
    return TraceSetInformation(0, TraceSampledProfileIntervalInfo, NULL, 0) !=
           ERROR_CALL_NOT_IMPLEMENTED;
}

/* --- the sample interval --------------------------------------------------------------- */

static void enable_sample_interval(perch_etw_session *s)
{
    TRACE_PROFILE_INTERVAL old = {0, 0}, want = {0, s->cfg.sample_interval};
    ULONG ret = 0;
    if (!(s->cfg.groups & PERCH_ETW_GROUP_PROFILE) || s->cfg.sample_interval == 0)
        return;
    if (!s->restore_interval &&
        TraceQueryInformation(0, TraceSampledProfileIntervalInfo, &old, sizeof old, &ret) ==
            ERROR_SUCCESS &&
        ret == sizeof old) {
        s->saved_interval = old;
        s->restore_interval = true;
    }
    if (!refused_by(s, PERCH_ETW_F_SAMPLE_INTERVAL,
                    "TraceSetInformation(TraceSampledProfileIntervalInfo)",
                    TraceSetInformation(0, TraceSampledProfileIntervalInfo, &want, sizeof want)))
        set_on(s, PERCH_ETW_F_SAMPLE_INTERVAL);
}

void perch__etw_restore_interval(perch_etw_session *s)
{
    if (!s->restore_interval)
        return;
    TraceSetInformation(0, TraceSampledProfileIntervalInfo, &s->saved_interval,
                        sizeof s->saved_interval);
    s->restore_interval = false;
}

/* --- PMC sources -------------------------------------------------------------------------- */

/* The machine's PROFILE_SOURCE_INFO chain in a buffer the caller frees; *len its bytes. */
static ULONG query_sources(uint8_t **out, ULONG *len)
{
    ULONG cap = SOURCE_LIST_START, ret = 0, rc;
    for (int attempt = 0; attempt < 4; attempt++) {
        uint8_t *buf = perch__calloc(1, cap);
        if (buf == NULL)
            return ERROR_NOT_ENOUGH_MEMORY;
        ret = 0;
        rc = TraceQueryInformation(0, TraceProfileSourceListInfo, buf, cap, &ret);
        if (rc == ERROR_SUCCESS) {
            *out = buf;
            *len = ret <= cap ? ret : cap;
            return rc;
        }
        perch__free(buf);
        if ((rc != ERROR_BAD_LENGTH && rc != ERROR_MORE_DATA && rc != ERROR_INSUFFICIENT_BUFFER) ||
            ret <= cap || ret > SOURCE_LIST_MAX)
            return rc;
        cap = ret;
    }
    return ERROR_MORE_DATA;
}

/* Walks the chain with every offset and name checked against len. */
void perch__etw_walk_sources(const uint8_t *buf, ULONG len, perch__etw_source_visit visit,
                             void *ctx)
{
    size_t at = 0, head = offsetof(PROFILE_SOURCE_INFO, Description);
    while (at + head <= len) {
        PROFILE_SOURCE_INFO info;
        WCHAR wname[PERCH_ETW_NAME_MAX];
        char name[PERCH_ETW_NAME_MAX];
        memcpy(&info, buf + at, head);
        size_t next = info.NextEntryOffset;
        bool more = next != 0 && next >= head && next <= len - at;
        size_t chars = ((more ? at + next : len) - at - head) / sizeof(WCHAR);
        if (chars >= PERCH_ETW_NAME_MAX)
            chars = PERCH_ETW_NAME_MAX - 1;
        memcpy(wname, buf + at + head, chars * sizeof(WCHAR));
        wname[chars] = 0;
        perch__etw_to_utf8(wname, name, sizeof name);
        if (!visit(ctx, name, &info) || !more)
            return;
        at += next;
    }
}

struct resolve {
    const char *want;
    uint32_t id;
    bool found;
    char known[160]; /* the names seen, for the refusal sentence */
};

static bool resolve_visit(void *ctx, const char *name, const PROFILE_SOURCE_INFO *info)
{
    struct resolve *r = ctx;
    size_t len = strlen(r->known);
    if (len + strlen(name) + 3 < sizeof r->known)
        snprintf(r->known + len, sizeof r->known - len, "%s%s", len ? ", " : "", name);
    if (!r->found && _stricmp(name, r->want) == 0) {
        r->found = true;
        r->id = info->Source;
    }
    return true;
}

/* Resolves n names to source ids; on an unknown name refuses f and returns false. */
static bool resolve_names(perch_etw_session *s, perch_etw_feature f, const uint8_t *list, ULONG len,
                          const char (*names)[PERCH_ETW_NAME_MAX], uint32_t n, ULONG *ids)
{
    for (uint32_t i = 0; i < n; i++) {
        struct resolve r;
        memset(&r, 0, sizeof r);
        r.want = names[i];
        perch__etw_walk_sources(list, len, resolve_visit, &r);
        if (!r.found) {
            refuse(s, f, PERCH_ENOENT, 0, "this machine has no profile source \"%s\" (it has: %s)",
                   names[i], r.known[0] ? r.known : "none");
            return false;
        }
        ids[i] = r.id;
    }
    return true;
}

static bool within_max(perch_etw_session *s, perch_etw_feature f, uint32_t n)
{
    uint32_t max = s->rep.max_pmc_counters;
    if (max == 0 || n <= max)
        return true;
    refuse(s, f, PERCH_ELIMIT, 0, "%u sources were asked for; this machine counts at most %u",
           (unsigned)n, (unsigned)max);
    return false;
}

static void enable_pmc_sources(perch_etw_session *s, const uint8_t *list, ULONG len)
{
    ULONG ids[PERCH_ETW_MAX_PMC_NAMES];
    uint32_t n = s->cfg.pmc_source_count;
    if (n == 0)
        return;
    if (!(s->cfg.groups & PERCH_ETW_GROUP_PMC_PROFILE)) {
        refuse(s, PERCH_ETW_F_PMC_SOURCES, PERCH_EINVAL, 0,
               "PMC sampling needs the pmc_profile group");
        return;
    }
    if (!resolve_names(s, PERCH_ETW_F_PMC_SOURCES, list, len, s->cfg.pmc_sources, n, ids) ||
        !within_max(s, PERCH_ETW_F_PMC_SOURCES, n) ||
        refused_by(s, PERCH_ETW_F_PMC_SOURCES, "TraceSetInformation(TraceProfileSourceConfigInfo)",
                   TraceSetInformation(0, TraceProfileSourceConfigInfo, ids, n * sizeof ids[0])))
        return;
    set_on(s, PERCH_ETW_F_PMC_SOURCES);
    if (s->cfg.pmc_interval == 0)
        return;
    for (uint32_t i = 0; i < n; i++) {
        TRACE_PROFILE_INTERVAL iv = {ids[i], s->cfg.pmc_interval};
        if (refused_by(s, PERCH_ETW_F_PMC_INTERVAL,
                       "TraceSetInformation(TraceSampledProfileIntervalInfo, PMC source)",
                       TraceSetInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv)))
            return;
    }
    set_on(s, PERCH_ETW_F_PMC_INTERVAL);
}

static void enable_cswitch_counters(perch_etw_session *s, const uint8_t *list, ULONG len)
{
    ULONG ids[PERCH_ETW_MAX_PMC_NAMES];
    CLASSIC_EVENT_ID cswitch;
    uint32_t n = s->cfg.cswitch_counter_count;
    if (n == 0)
        return;
    if (!(s->cfg.groups & PERCH_ETW_GROUP_CSWITCH)) {
        refuse(s, PERCH_ETW_F_CSWITCH_COUNTERS, PERCH_EINVAL, 0,
               "counters on CSwitch need the cswitch group");
        return;
    }
    memset(&cswitch, 0, sizeof cswitch);
    cswitch.EventGuid = perch_etw_thread_guid;
    cswitch.Type = 36;
    if (!resolve_names(s, PERCH_ETW_F_CSWITCH_COUNTERS, list, len, s->cfg.cswitch_counters, n,
                       ids) ||
        !within_max(s, PERCH_ETW_F_CSWITCH_COUNTERS, n) ||
        refused_by(
            s, PERCH_ETW_F_CSWITCH_COUNTERS, "TraceSetInformation(TracePmcCounterListInfo)",
            TraceSetInformation(s->handle, TracePmcCounterListInfo, ids, n * sizeof ids[0])) ||
        refused_by(s, PERCH_ETW_F_CSWITCH_COUNTERS, "TraceSetInformation(TracePmcEventListInfo)",
                   TraceSetInformation(s->handle, TracePmcEventListInfo, &cswitch, sizeof cswitch)))
        return;
    set_on(s, PERCH_ETW_F_CSWITCH_COUNTERS);
}

static void enable_pmc(perch_etw_session *s)
{
    uint8_t *list = NULL;
    ULONG len = 0, max = 0, ret = 0, rc;
    if (s->cfg.pmc_source_count == 0 && s->cfg.cswitch_counter_count == 0)
        return;
    if (TraceQueryInformation(0, PERCH_TRACE_MAX_PMC_COUNTER_QUERY, &max, sizeof max, &ret) ==
        ERROR_SUCCESS)
        s->rep.max_pmc_counters = max;
    rc = query_sources(&list, &len);
    if (rc != ERROR_SUCCESS) {
        perch_etw_feature f[2] = {PERCH_ETW_F_PMC_SOURCES, PERCH_ETW_F_CSWITCH_COUNTERS};
        uint32_t n[2] = {s->cfg.pmc_source_count, s->cfg.cswitch_counter_count};
        for (int i = 0; i < 2; i++)
            if (n[i] != 0)
                refused_by(s, f[i], "TraceQueryInformation(TraceProfileSourceListInfo)", rc);
        return;
    }
    enable_pmc_sources(s, list, len);
    enable_cswitch_counters(s, list, len);
    perch__free(list);
}

/* --- LBR, stacks, groups ------------------------------------------------------------------ */

static void enable_lbr(perch_etw_session *s)
{
    ULONG filter = s->cfg.lbr_filter, hooks[PERCH_ETW_EVENT_COUNT];
    uint32_t n = 0;
    if (!s->cfg.lbr)
        return;
    for (unsigned i = 0; i < PERCH_ETW_EVENT_COUNT; i++)
        if (s->cfg.lbr_events & (1u << i))
            hooks[n++] = events[i].hook;
    if (n == 0) {
        refuse(s, PERCH_ETW_F_LBR, PERCH_EINVAL, 0, "LBR is on but no event is chosen to carry it");
        return;
    }
    if (refused_by(s, PERCH_ETW_F_LBR, "TraceSetInformation(TraceLbrConfigurationInfo)",
                   TraceSetInformation(s->handle, PERCH_TRACE_LBR_CONFIGURATION_INFO, &filter,
                                       sizeof filter)) ||
        refused_by(s, PERCH_ETW_F_LBR, "TraceSetInformation(TraceLbrEventListInfo)",
                   TraceSetInformation(s->handle, PERCH_TRACE_LBR_EVENT_LIST_INFO, hooks,
                                       n * sizeof hooks[0])))
        return;
    set_on(s, PERCH_ETW_F_LBR);
}

static void enable_stacks(perch_etw_session *s)
{
    CLASSIC_EVENT_ID ids[PERCH_ETW_EVENT_COUNT];
    uint32_t n = 0;
    for (unsigned i = 0; i < PERCH_ETW_EVENT_COUNT; i++) {
        if (!(s->cfg.stacks & (1u << i)))
            continue;
        memset(&ids[n], 0, sizeof ids[n]);
        ids[n].EventGuid = *events[i].guid;
        ids[n].Type = events[i].type;
        n++;
    }
    if (n == 0)
        return;
    if (!refused_by(s, PERCH_ETW_F_STACKS, "TraceSetInformation(TraceStackTracingInfo)",
                    TraceSetInformation(s->handle, TraceStackTracingInfo, ids, n * sizeof ids[0])))
        set_on(s, PERCH_ETW_F_STACKS);
}

static bool has_extended(const perch_perfinfo_groupmask *m)
{
    for (unsigned i = 1; i < PERCH_PERF_NUM_MASKS; i++)
        if (m->Masks[i] != 0)
            return true;
    return false;
}

static int enable_groups(perch_etw_session *s, bool groups_in_flags)
{
    perch_perfinfo_groupmask m;
    perch__etw_group_mask(s->cfg.groups, &m);
    if (groups_in_flags && !has_extended(&m)) {
        set_on(s, PERCH_ETW_F_GROUPS);
        return 0;
    }
    ULONG rc = TraceSetInformation(s->handle, TraceSystemTraceEnableFlagsInfo, &m, sizeof m);
    if (rc == ERROR_SUCCESS) {
        set_on(s, PERCH_ETW_F_GROUPS);
        return 0;
    }
    if (!groups_in_flags) {
        refused_by(s, PERCH_ETW_F_GROUPS, "TraceSetInformation(TraceSystemTraceEnableFlagsInfo)",
                   rc);
        return PERCH_ENOTSUP;
    }
    /* NT Kernel Logger: the classic groups run; only the extended ones (PMC sampling) failed. */
    set_on(s, PERCH_ETW_F_GROUPS);
    perch__etw_say_failed(feat(s, PERCH_ETW_F_GROUPS)->reason,
                          sizeof feat(s, PERCH_ETW_F_GROUPS)->reason,
                          "pmc_profile: TraceSetInformation(TraceSystemTraceEnableFlagsInfo)", rc);
    if (feat(s, PERCH_ETW_F_PMC_SOURCES)->state == PERCH_ETW_ON)
        refused_by(s, PERCH_ETW_F_PMC_SOURCES, "enabling the pmc_profile group", rc);
    return 0;
}

/* Every asked-for feature refused at once: this ETW has no TraceSetInformation. */
static int refuse_all(perch_etw_session *s, bool groups_in_flags)
{
    static const char text[] = "TraceSetInformation is not implemented by this system's ETW "
                               "(error 120, as in Wine's stub)";
    const perch_etw_config *c = &s->cfg;
    bool asked[PERCH_ETW_F_COUNT] = {
        [PERCH_ETW_F_GROUPS] = !groups_in_flags,
        [PERCH_ETW_F_STACKS] = c->stacks != 0,
        [PERCH_ETW_F_SAMPLE_INTERVAL] =
            c->sample_interval != 0 && (c->groups & PERCH_ETW_GROUP_PROFILE),
        [PERCH_ETW_F_PMC_SOURCES] = c->pmc_source_count != 0,
        [PERCH_ETW_F_PMC_INTERVAL] = c->pmc_source_count != 0 && c->pmc_interval != 0,
        [PERCH_ETW_F_CSWITCH_COUNTERS] = c->cswitch_counter_count != 0,
        [PERCH_ETW_F_LBR] = c->lbr,
    };
    for (unsigned f = 0; f < PERCH_ETW_F_COUNT; f++)
        if (asked[f])
            refuse(s, (perch_etw_feature)f, PERCH_ENOTSUP, ERROR_CALL_NOT_IMPLEMENTED, "%s", text);
    if (groups_in_flags)
        set_on(s, PERCH_ETW_F_GROUPS);
    return groups_in_flags ? 0 : PERCH_ENOTSUP;
}

int perch__etw_enable_features(perch_etw_session *s, bool groups_in_flags)
{
    if (!info_implemented())
        return refuse_all(s, groups_in_flags);
    enable_sample_interval(s);
    enable_pmc(s);
    enable_lbr(s);
    enable_stacks(s);
    return enable_groups(s, groups_in_flags);
}

struct list_ctx {
    perch_etw_source_fn fn;
    void *ctx;
};

static bool list_visit(void *ctx, const char *name, const PROFILE_SOURCE_INFO *info)
{
    struct list_ctx *l = ctx;
    l->fn(l->ctx, name, info->Source, info->MinInterval, info->MaxInterval);
    return true;
}

int perch_etw_list_profile_sources(perch_etw_source_fn fn, void *ctx)
{
    struct list_ctx l = {fn, ctx};
    uint8_t *list = NULL;
    ULONG len = 0, rc;
    if (fn == NULL)
        return PERCH_EINVAL;
    if (!info_implemented())
        return PERCH_ENOTSUP;
    rc = query_sources(&list, &len);
    if (rc != ERROR_SUCCESS)
        return perch_win_error(rc);
    perch__etw_walk_sources(list, len, list_visit, &l);
    perch__free(list);
    return 0;
}
