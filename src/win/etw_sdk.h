/*
 * The Windows SDK facts about ETW that mingw-w64's headers (evntrace.h, evntcons.h) lack, in
 * one place, for Perch's session code and for the fake advapi32 under tests/win/etw_fake.
 *
 * Everything else (EVENT_TRACE_PROPERTIES, EVENT_TRACE_LOGFILEW, EVENT_RECORD, CLASSIC_EVENT_ID,
 * TRACE_PROFILE_INTERVAL, PROFILE_SOURCE_INFO, the LogFileMode and PROCESS_TRACE_MODE flags) is
 * taken from mingw's headers as they are, so the layouts are the SDK's. The source of every
 * value below is cited in docs/etw-session.md, section "SDK facts mingw lacks".
 */
#ifndef PERCH_WIN_ETW_SDK_H
#define PERCH_WIN_ETW_SDK_H

#include <windows.h>
#include <evntrace.h>
#include <evntcons.h>

#include <stdint.h>

/* TRACE_QUERY_INFO_CLASS values newer than mingw's enumeration (Windows SDK evntrace.h, and
 * learn.microsoft.com "TRACE_QUERY_INFO_CLASS enumeration"). mingw names value 15
 * TraceCompressionInfo; the SDK calls it TraceInfoReserved15. */
#define PERCH_TRACE_LBR_CONFIGURATION_INFO ((TRACE_INFO_CLASS)20)
#define PERCH_TRACE_LBR_EVENT_LIST_INFO    ((TRACE_INFO_CLASS)21)
#define PERCH_TRACE_MAX_PMC_COUNTER_QUERY  ((TRACE_INFO_CLASS)22)

/* PERFINFO_GROUPMASK, the input of TraceSetInformation(TraceSystemTraceEnableFlagsInfo):
 * eight ULONG masks. Masks[0] holds the classic EVENT_TRACE_FLAG_* bits; a group id's top
 * three bits select the mask, the other 29 are the bit (ntwmi.h PERF_GET_MASK_INDEX). */
#define PERCH_PERF_NUM_MASKS 8
typedef struct perch_perfinfo_groupmask {
    ULONG Masks[PERCH_PERF_NUM_MASKS];
} perch_perfinfo_groupmask;

#define PERCH_PERF_MASK_INDEX(gm) (((gm)&0xE0000000u) >> 29)
#define PERCH_PERF_MASK_GROUP(gm) ((gm)&0x1FFFFFFFu)
#define PERCH_PERF_PMC_PROFILE    0x20000400u /* PMC overflow samples (PmcCounterProf) */

/* TRACE_LBR_CONFIGURATION bits (TraceConfigureLastBranchRecord; win32metadata). */
#define PERCH_LBR_FILTER_KERNEL        0x001u
#define PERCH_LBR_FILTER_USER          0x002u
#define PERCH_LBR_FILTER_JCC           0x004u
#define PERCH_LBR_FILTER_NEAR_REL_CALL 0x008u
#define PERCH_LBR_FILTER_NEAR_IND_CALL 0x010u
#define PERCH_LBR_FILTER_NEAR_RET      0x020u
#define PERCH_LBR_FILTER_NEAR_IND_JMP  0x040u
#define PERCH_LBR_FILTER_NEAR_REL_JMP  0x080u
#define PERCH_LBR_FILTER_FAR_BRANCH    0x100u
#define PERCH_LBR_CALLSTACK_ENABLE     0x200u
#define PERCH_LBR_SAMPLED              0x400u
#define PERCH_LBR_VALID_MASK           0x7FFu

/* Limits the documentation states. */
#define PERCH_ETW_MAX_SESSION_NAME  1024u /* characters (StartTraceW) */
#define PERCH_ETW_MAX_STACK_EVENTS  256u  /* CLASSIC_EVENT_IDs (TraceStackTracingInfo) */
#define PERCH_ETW_MAX_BUFFER_KB     1024u /* EVENT_TRACE_PROPERTIES.BufferSize */
#define PERCH_ETW_MAX_TRACE_HANDLES 64u   /* ProcessTrace HandleCount */

/* The MOF class GUIDs of the kernel events Perch asks stacks, PMC counters or LBR for
 * (docs/events.md "Provider GUIDs"; the same values as src/core/util/guid.c). */
static const GUID perch_etw_thread_guid = {
    0x3d6fa8d1, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID perch_etw_perfinfo_guid = {
    0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
/* SystemTraceControlGuid: the NT Kernel Logger's session GUID (evntrace.h DEFINE_GUID, which
 * mingw only instantiates under INITGUID). */
static const GUID perch_etw_system_trace_control_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

/* Kernel HookIds ((group << 8) | type) of the events Perch configures. */
#define PERCH_HOOK_CSWITCH         0x0524u
#define PERCH_HOOK_READY_THREAD    0x0532u
#define PERCH_HOOK_SAMPLED_PROFILE 0x0F2Eu
#define PERCH_HOOK_PMC_INTERRUPT   0x0F2Fu

#endif
