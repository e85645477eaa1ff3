/*
 * The fake TraceSetInformation, TraceQueryInformation and EnableTraceEx2. Each information
 * class Perch uses is checked for what the SDK's evntrace.h says it takes (the TraceId it
 * expects, the input format and so its size) and its effect is kept in the session's shared
 * state, so tests can see what was configured. The fake machine offers six PMC sources named
 * after the KPROFILE_SOURCE enumeration and, unless the scenario says otherwise, four
 * counters.
 */
#define _WMI_SOURCE_
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "etw_fake.h"
#include "fake_internal.h"

#define MAX_LBR_EVENTS 4u

static const struct {
    const WCHAR *name;
    ULONG id, min, max;
} sources[] = {
    {L"Timer", 0, 1221, 10000000},
    {L"TotalIssues", 2, 4096, 0x7FFFFFFF},
    {L"BranchInstructions", 6, 4096, 0x7FFFFFFF},
    {L"CacheMisses", 10, 4096, 0x7FFFFFFF},
    {L"BranchMispredictions", 11, 4096, 0x7FFFFFFF},
    {L"TotalCycles", 19, 4096, 0x7FFFFFFF},
};
#define SOURCE_COUNT (sizeof sources / sizeof sources[0])

static const char *const class_names[] = {
    [TraceGuidQueryList] = "TraceGuidQueryList",
    [TraceGuidQueryInfo] = "TraceGuidQueryInfo",
    [TraceGuidQueryProcess] = "TraceGuidQueryProcess",
    [TraceStackTracingInfo] = "TraceStackTracingInfo",
    [TraceSystemTraceEnableFlagsInfo] = "TraceSystemTraceEnableFlagsInfo",
    [TraceSampledProfileIntervalInfo] = "TraceSampledProfileIntervalInfo",
    [TraceProfileSourceConfigInfo] = "TraceProfileSourceConfigInfo",
    [TraceProfileSourceListInfo] = "TraceProfileSourceListInfo",
    [TracePmcEventListInfo] = "TracePmcEventListInfo",
    [TracePmcCounterListInfo] = "TracePmcCounterListInfo",
    [TraceVersionInfo] = "TraceVersionInfo",
    [20] = "TraceLbrConfigurationInfo",
    [21] = "TraceLbrEventListInfo",
    [22] = "TraceMaxPmcCounterQuery",
};
#define CLASS_LIMIT 29 /* MaxTraceSetInfoClass in the Windows SDK */

const char *fake_info_class_name(TRACE_INFO_CLASS c)
{
    unsigned i = (unsigned)c;
    return i < sizeof class_names / sizeof class_names[0] ? class_names[i] : NULL;
}

static int find_source(ULONG id)
{
    for (unsigned i = 0; i < SOURCE_COUNT; i++)
        if (sources[i].id == id)
            return (int)i;
    return -1;
}

static ULONG max_counters(void)
{
    return fake_scenario_dword("MaxPmcCounters", 4);
}

/* System-wide settings (sample intervals per source, PMC sources) under <root>\System. */
static void system_set(const char *what, uint32_t value)
{
    char name[48];
    snprintf(name, sizeof name, "System.%s", what);
    perch_fake_etw_set_dword(name, value);
}

static uint32_t system_get(const char *what, uint32_t fallback)
{
    char name[48];
    snprintf(name, sizeof name, "System.%s", what);
    return fake_scenario_dword(name, fallback);
}

/* --- per-class checks of TraceSetInformation ----------------------------------------------- */

static ULONG set_interval(TRACEHANDLE h, const void *p, ULONG len)
{
    TRACE_PROFILE_INTERVAL iv;
    char what[24];
    if (h != 0)
        return ERROR_INVALID_PARAMETER; /* "Expects 0 for the TraceId parameter" */
    if (len != sizeof iv || p == NULL)
        return ERROR_BAD_LENGTH;
    memcpy(&iv, p, sizeof iv);
    int i = find_source(iv.Source);
    if (i < 0 || iv.Interval < sources[i].min || iv.Interval > sources[i].max)
        return ERROR_INVALID_PARAMETER;
    snprintf(what, sizeof what, "Interval%lu", (unsigned long)iv.Source);
    system_set(what, iv.Interval);
    return ERROR_SUCCESS;
}

static ULONG check_ids(const void *p, ULONG len, ULONG max)
{
    ULONG ids[64];
    if (len == 0 || len % sizeof(ULONG) != 0 || p == NULL)
        return ERROR_BAD_LENGTH;
    if (len / sizeof(ULONG) > max || len / sizeof(ULONG) > 64)
        return ERROR_INVALID_PARAMETER;
    memcpy(ids, p, len);
    for (ULONG i = 0; i < len / sizeof(ULONG); i++)
        if (find_source(ids[i]) < 0)
            return ERROR_INVALID_PARAMETER;
    return ERROR_SUCCESS;
}

static ULONG set_sources(TRACEHANDLE h, const void *p, ULONG len)
{
    ULONG rc;
    if (h != 0)
        return ERROR_INVALID_PARAMETER;
    if ((rc = check_ids(p, len, max_counters())) == 0)
        system_set("PmcSources", len / sizeof(ULONG));
    return rc;
}

static ULONG check_event_ids(const void *p, ULONG len, ULONG max)
{
    if (len % sizeof(CLASSIC_EVENT_ID) != 0 || (len != 0 && p == NULL))
        return ERROR_BAD_LENGTH;
    return len / sizeof(CLASSIC_EVENT_ID) > max ? ERROR_INVALID_PARAMETER : ERROR_SUCCESS;
}

static bool kernel_capable(const fake_session *s)
{
    return (s->log_file_mode & EVENT_TRACE_SYSTEM_LOGGER_MODE) ||
           IsEqualGUID(&s->guid, &perch_etw_system_trace_control_guid);
}

/* The per-session classes: each checks its input and applies it to *s (stored by the caller
 * on success). */
typedef ULONG (*session_setter)(fake_session *s, const void *p, ULONG len);

static ULONG set_stacks(fake_session *s, const void *p, ULONG len)
{
    ULONG rc = check_event_ids(p, len, PERCH_ETW_MAX_STACK_EVENTS);
    if (rc == 0)
        s->stack_events = len / sizeof(CLASSIC_EVENT_ID);
    return rc;
}

static ULONG set_group_mask(fake_session *s, const void *p, ULONG len)
{
    if (len != sizeof s->group_mask || p == NULL)
        return ERROR_BAD_LENGTH;
    if (!kernel_capable(s))
        return ERROR_INVALID_PARAMETER;
    memcpy(s->group_mask, p, sizeof s->group_mask);
    s->enable_flags = s->group_mask[0];
    return ERROR_SUCCESS;
}

static ULONG set_pmc_events(fake_session *s, const void *p, ULONG len)
{
    ULONG rc;
    if (s->pmc_set & 2u)
        return ERROR_ALREADY_EXISTS; /* "can only be set once per logger" */
    if (len == 0)
        return ERROR_BAD_LENGTH;
    if ((rc = check_event_ids(p, len, 4)) != 0)
        return rc;
    s->pmc_events = len / sizeof(CLASSIC_EVENT_ID);
    s->pmc_set |= 2u;
    return ERROR_SUCCESS;
}

static ULONG set_pmc_counters(fake_session *s, const void *p, ULONG len)
{
    ULONG rc;
    if (s->pmc_set & 1u)
        return ERROR_ALREADY_EXISTS;
    if ((rc = check_ids(p, len, max_counters())) != 0)
        return rc;
    s->pmc_counters = len / sizeof(ULONG);
    s->pmc_set |= 1u;
    return ERROR_SUCCESS;
}

static ULONG set_lbr_config(fake_session *s, const void *p, ULONG len)
{
    ULONG filter;
    if (len != sizeof filter || p == NULL)
        return ERROR_BAD_LENGTH;
    memcpy(&filter, p, sizeof filter);
    if (filter & ~(ULONG)PERCH_LBR_VALID_MASK)
        return ERROR_INVALID_PARAMETER;
    s->lbr_filter = filter;
    return ERROR_SUCCESS;
}

static ULONG set_lbr_events(fake_session *s, const void *p, ULONG len)
{
    if (len == 0 || len % sizeof(ULONG) != 0 || p == NULL)
        return ERROR_BAD_LENGTH;
    if (len / sizeof(ULONG) > MAX_LBR_EVENTS)
        return ERROR_INVALID_PARAMETER;
    s->lbr_events = len / sizeof(ULONG);
    return ERROR_SUCCESS;
}

static const struct {
    int info_class;
    session_setter set;
} session_setters[] = {
    {TraceStackTracingInfo, set_stacks},
    {TraceSystemTraceEnableFlagsInfo, set_group_mask},
    {TracePmcEventListInfo, set_pmc_events},
    {TracePmcCounterListInfo, set_pmc_counters},
    {20, set_lbr_config}, /* TraceLbrConfigurationInfo */
    {21, set_lbr_events}, /* TraceLbrEventListInfo */
};

static ULONG set_session_class(fake_session *s, TRACE_INFO_CLASS c, const void *p, ULONG len)
{
    for (size_t i = 0; i < sizeof session_setters / sizeof session_setters[0]; i++)
        if (session_setters[i].info_class == (int)c)
            return session_setters[i].set(s, p, len);
    return ERROR_NOT_SUPPORTED;
}

static ULONG set_on_session(TRACEHANDLE h, TRACE_INFO_CLASS c, const void *p, ULONG len)
{
    WCHAR name[FAKE_NAME_CHARS];
    fake_session s;
    ULONG rc;
    fake_lock();
    if (!fake_find(NULL, (uint32_t)h, &s, name)) {
        fake_unlock();
        return ERROR_INVALID_HANDLE;
    }
    rc = set_session_class(&s, c, p, len);
    if (rc == ERROR_SUCCESS)
        fake_store(name, &s);
    fake_unlock();
    return rc;
}

static ULONG set_info(TRACEHANDLE h, TRACE_INFO_CLASS c, const void *p, ULONG len)
{
    if ((unsigned)c >= CLASS_LIMIT)
        return ERROR_INVALID_PARAMETER;
    if (c == TraceSampledProfileIntervalInfo)
        return set_interval(h, p, len);
    if (c == TraceProfileSourceConfigInfo)
        return set_sources(h, p, len);
    if (h == 0)
        return ERROR_INVALID_HANDLE;
    return set_on_session(h, c, p, len);
}

static ULONG refused(const char *call, TRACE_INFO_CLASS c)
{
    const char *name = fake_info_class_name(c);
    ULONG rc = fake_refusal(call);
    if (rc == 0 && name != NULL)
        rc = fake_refusal(name);
    return rc;
}

ULONG WMIAPI TraceSetInformation(TRACEHANDLE SessionHandle, TRACE_INFO_CLASS InformationClass,
                                 PVOID TraceInformation, ULONG InformationLength)
{
    const char *name = fake_info_class_name(InformationClass);
    ULONG rc = refused("TraceSetInformation", InformationClass);
    if (rc == 0)
        rc = set_info(SessionHandle, InformationClass, TraceInformation, InformationLength);
    if (InformationLength != 0 || rc != ERROR_BAD_LENGTH) /* the zero-length probe is quiet */
        fake_ledger("set %s handle=%llu len=%lu result=%lu", name ? name : "?",
                    (unsigned long long)SessionHandle, (unsigned long)InformationLength,
                    (unsigned long)rc);
    return rc;
}

/* --- TraceQueryInformation ---------------------------------------------------------------- */

static ULONG query_sources(void *out, ULONG len, ULONG *ret)
{
    size_t head = offsetof(PROFILE_SOURCE_INFO, Description), need = 0;
    for (unsigned i = 0; i < SOURCE_COUNT; i++)
        need += (head + (wcslen(sources[i].name) + 1) * sizeof(WCHAR) + 7u) & ~(size_t)7u;
    *ret = (ULONG)need;
    if (len < need || out == NULL)
        return ERROR_BAD_LENGTH;
    memset(out, 0, need);
    size_t at = 0;
    for (unsigned i = 0; i < SOURCE_COUNT; i++) {
        PROFILE_SOURCE_INFO info;
        size_t chars = wcslen(sources[i].name) + 1;
        size_t size = (head + chars * sizeof(WCHAR) + 7u) & ~(size_t)7u;
        memset(&info, 0, sizeof info);
        info.NextEntryOffset = i + 1 < SOURCE_COUNT ? (ULONG)size : 0;
        info.Source = sources[i].id;
        info.MinInterval = sources[i].min;
        info.MaxInterval = sources[i].max;
        memcpy((BYTE *)out + at, &info, head);
        memcpy((BYTE *)out + at + head, sources[i].name, chars * sizeof(WCHAR));
        at += size;
    }
    return ERROR_SUCCESS;
}

static ULONG query_interval(TRACEHANDLE h, void *out, ULONG len, ULONG *ret)
{
    TRACE_PROFILE_INTERVAL iv;
    char what[24];
    *ret = sizeof iv;
    if (h != 0)
        return ERROR_INVALID_PARAMETER;
    if (len != sizeof iv || out == NULL)
        return ERROR_BAD_LENGTH;
    memcpy(&iv, out, sizeof iv);
    if (find_source(iv.Source) < 0)
        return ERROR_INVALID_PARAMETER;
    snprintf(what, sizeof what, "Interval%lu", (unsigned long)iv.Source);
    iv.Interval = system_get(what, iv.Source == 0 ? 10000 : 65536);
    memcpy(out, &iv, sizeof iv);
    return ERROR_SUCCESS;
}

static ULONG query_ulong(ULONG value, void *out, ULONG len, ULONG *ret)
{
    *ret = sizeof value;
    if (len < sizeof value || out == NULL)
        return ERROR_BAD_LENGTH;
    memcpy(out, &value, sizeof value);
    return ERROR_SUCCESS;
}

static ULONG query_mask(TRACEHANDLE h, void *out, ULONG len, ULONG *ret)
{
    fake_session s;
    *ret = sizeof s.group_mask;
    if (!fake_find(NULL, (uint32_t)h, &s, NULL))
        return ERROR_INVALID_HANDLE;
    if (len < sizeof s.group_mask || out == NULL)
        return ERROR_BAD_LENGTH;
    memcpy(out, s.group_mask, sizeof s.group_mask);
    return ERROR_SUCCESS;
}

static ULONG query_info(TRACEHANDLE h, TRACE_INFO_CLASS c, void *out, ULONG len, ULONG *ret)
{
    switch ((int)c) {
    case TraceProfileSourceListInfo:
        return query_sources(out, len, ret);
    case TraceSampledProfileIntervalInfo:
        return query_interval(h, out, len, ret);
    case TraceSystemTraceEnableFlagsInfo:
        return query_mask(h, out, len, ret);
    case 22: /* TraceMaxPmcCounterQuery */
        return query_ulong(max_counters(), out, len, ret);
    case TraceVersionInfo: {
        TRACE_VERSION_INFO v = {2, 0};
        *ret = sizeof v;
        if (len < sizeof v || out == NULL)
            return ERROR_BAD_LENGTH;
        memcpy(out, &v, sizeof v);
        return ERROR_SUCCESS;
    }
    default:
        return (unsigned)c < CLASS_LIMIT ? ERROR_NOT_SUPPORTED : ERROR_INVALID_PARAMETER;
    }
}

ULONG WMIAPI TraceQueryInformation(TRACEHANDLE SessionHandle, TRACE_INFO_CLASS InformationClass,
                                   PVOID TraceInformation, ULONG InformationLength,
                                   PULONG ReturnLength)
{
    ULONG ret = 0, rc = refused("TraceQueryInformation", InformationClass);
    if (rc == 0)
        rc = query_info(SessionHandle, InformationClass, TraceInformation, InformationLength, &ret);
    if (ReturnLength != NULL)
        *ReturnLength = ret;
    return rc;
}

/* --- EnableTraceEx2 ---------------------------------------------------------------------- */

ULONG WMIAPI EnableTraceEx2(TRACEHANDLE TraceHandle, LPCGUID ProviderId, ULONG ControlCode,
                            UCHAR Level, ULONGLONG MatchAnyKeyword, ULONGLONG MatchAllKeyword,
                            ULONG Timeout, PENABLE_TRACE_PARAMETERS EnableParameters)
{
    fake_session s;
    ULONG rc = fake_refusal("EnableTraceEx2");
    (void)Level, (void)MatchAnyKeyword, (void)MatchAllKeyword, (void)Timeout;
    if (rc != 0)
        return rc;
    if (ProviderId == NULL || ControlCode > EVENT_CONTROL_CODE_CAPTURE_STATE)
        return ERROR_INVALID_PARAMETER;
    if (EnableParameters != NULL && EnableParameters->Version != ENABLE_TRACE_PARAMETERS_VERSION &&
        EnableParameters->Version != ENABLE_TRACE_PARAMETERS_VERSION_2)
        return ERROR_INVALID_PARAMETER;
    if (!fake_find(NULL, (uint32_t)TraceHandle, &s, NULL))
        return ERROR_INVALID_HANDLE;
    if (IsEqualGUID(&s.guid, &perch_etw_system_trace_control_guid))
        return ERROR_INVALID_PARAMETER; /* the NT Kernel Logger takes EnableFlags, not providers */
    fake_ledger("enable provider=%08lx control=%lu id=%u", (unsigned long)ProviderId->Data1,
                (unsigned long)ControlCode, (unsigned)s.logger_id);
    return ERROR_SUCCESS;
}
