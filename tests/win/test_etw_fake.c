/*
 * Tests of the fake advapi32 itself (tests/win/etw_fake), under Wine: each argument check it
 * makes because the documentation says the real call makes it (docs/etw-session.md, "What the
 * fake checks"), the ledger, foreign sessions, and the replayed EVENT_RECORDs' dress. A fake
 * that let a wrong argument through would let Perch's session code pass tests that Windows
 * fails, so each rule is exercised here once with a call that breaks only that rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "etw_fake.h"
#include "etw_sdk.h"
#include "perch/error.h"
#include "testdata.h"

#define NAME L"Fake Test Session"

typedef struct props {
    EVENT_TRACE_PROPERTIES p;
    WCHAR logger[1100];
    WCHAR file[300];
} props;

static const GUID session_guid = {0x11111111, 0x2222, 0x3333, {4, 4, 5, 5, 6, 6, 7, 7}};

static int setup(void **state)
{
    assert_int_equal(perch_fake_etw_reset(), 0);
    return 0;
}

/* Properties a real-time system-logger session starts with. */
static void good(props *b)
{
    memset(b, 0, sizeof *b);
    b->p.Wnode.BufferSize = sizeof *b;
    b->p.Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    b->p.Wnode.ClientContext = 1;
    b->p.Wnode.Guid = session_guid;
    b->p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_SYSTEM_LOGGER_MODE;
    b->p.LoggerNameOffset = offsetof(props, logger);
    b->p.BufferSize = 64;
}

static ULONG start(props *b, const WCHAR *name, TRACEHANDLE *h)
{
    return StartTraceW(h, name, &b->p);
}

static ULONG stop_by_name(const WCHAR *name)
{
    props b;
    good(&b);
    b.p.LogFileNameOffset = offsetof(props, file);
    return ControlTraceW(0, name, &b.p, EVENT_TRACE_CONTROL_STOP);
}

static void test_start_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0;
    WCHAR longname[1100];
    good(&b);
    assert_int_equal(StartTraceW(NULL, NAME, &b.p), ERROR_INVALID_PARAMETER);
    assert_int_equal(StartTraceW(&h, NULL, &b.p), ERROR_INVALID_PARAMETER);
    assert_int_equal(StartTraceW(&h, NAME, NULL), ERROR_INVALID_PARAMETER);
    good(&b), b.p.Wnode.BufferSize = sizeof b.p - 1;
    assert_int_equal(start(&b, NAME, &h), ERROR_BAD_LENGTH);
    good(&b), b.p.Wnode.BufferSize = offsetof(props, logger) + 4; /* no room for the name */
    assert_int_equal(start(&b, NAME, &h), ERROR_BAD_LENGTH);
    good(&b), b.p.LoggerNameOffset = 0;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LoggerNameOffset = 8; /* inside the structure */
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LoggerNameOffset = sizeof b + 2; /* past the buffer */
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LogFileNameOffset = 16;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.Wnode.Flags = 0;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.Wnode.ClientContext = 4;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.BufferSize = 2048;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.MinimumBuffers = 10, b.p.MaximumBuffers = 5;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    for (int i = 0; i < 1025; i++)
        longname[i] = L'a';
    longname[1025] = 0;
    good(&b);
    assert_int_equal(start(&b, longname, &h), ERROR_INVALID_PARAMETER);
    assert_int_equal(start(&b, L"", &h), ERROR_INVALID_PARAMETER);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_start_mode_and_guid_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0;
    good(&b), b.p.LogFileMode |= EVENT_TRACE_FILE_MODE_SEQUENTIAL | EVENT_TRACE_FILE_MODE_CIRCULAR;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LogFileMode |= EVENT_TRACE_FILE_MODE_NEWFILE | EVENT_TRACE_FILE_MODE_APPEND;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_PRIVATE_LOGGER_MODE;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LogFileMode = EVENT_TRACE_SYSTEM_LOGGER_MODE; /* events go nowhere */
    assert_int_equal(start(&b, NAME, &h), ERROR_BAD_PATHNAME);
    good(&b), b.p.LogFileMode |= 0x00000010u; /* not a documented mode bit */
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.Wnode.Guid = perch_etw_system_trace_control_guid;
    assert_int_equal(start(&b, NAME, &h), ERROR_INVALID_PARAMETER);
    good(&b), b.p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE; /* kernel logger, wrong GUID */
    assert_int_equal(start(&b, KERNEL_LOGGER_NAMEW, &h), ERROR_INVALID_PARAMETER);
    b.p.Wnode.Guid = perch_etw_system_trace_control_guid;
    b.p.LogFileMode |= EVENT_TRACE_SYSTEM_LOGGER_MODE;
    assert_int_equal(start(&b, KERNEL_LOGGER_NAMEW, &h), ERROR_INVALID_PARAMETER);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_start_success_and_conflicts(void **state)
{
    props b, other;
    TRACEHANDLE h = 0, h2 = 0;
    good(&b);
    assert_int_equal(start(&b, NAME, &h), 0);
    assert_true(h != 0);
    assert_true(b.p.Wnode.HistoricalContext == h);
    assert_true(wcscmp(b.logger, NAME) == 0); /* the name is copied to LoggerNameOffset */
    good(&other);
    assert_int_equal(start(&other, L"fake test session", &h2), ERROR_ALREADY_EXISTS); /* any case */
    assert_int_equal(start(&other, L"Another", &h2), ERROR_ALREADY_EXISTS); /* same GUID */
    other.p.Wnode.Guid.Data1++;
    assert_int_equal(start(&other, L"Another", &h2), 0);
    assert_int_equal(perch_fake_etw_count(""), 2);
    assert_int_equal(stop_by_name(L"Another"), 0);
    assert_int_equal(stop_by_name(NAME), 0);
    assert_int_equal(stop_by_name(NAME), ERROR_WMI_INSTANCE_NOT_FOUND);
}

static void test_system_logger_slots(void **state)
{
    props b;
    TRACEHANDLE h;
    WCHAR name[32];
    unsigned started = 0;
    for (unsigned i = 0; i < 10; i++) {
        good(&b);
        b.p.Wnode.Guid.Data1 = 0x100 + i;
        swprintf(name, 32, L"Slot %u", i);
        ULONG rc = start(&b, name, &h);
        if (rc == ERROR_NO_SYSTEM_RESOURCES)
            break;
        assert_int_equal(rc, 0);
        started++;
    }
    assert_int_equal(started, 8);
    assert_int_equal(perch_fake_etw_count("Slot"), 8);
}

static void test_control_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0;
    good(&b);
    assert_int_equal(start(&b, NAME, &h), 0);
    assert_int_equal(ControlTraceW(h, NULL, NULL, EVENT_TRACE_CONTROL_QUERY),
                     ERROR_INVALID_PARAMETER);
    good(&b);
    assert_int_equal(ControlTraceW(0, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY),
                     ERROR_INVALID_PARAMETER);
    assert_int_equal(ControlTraceW(h, NULL, &b.p, 5), ERROR_INVALID_PARAMETER);
    b.p.Wnode.BufferSize = 16;
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY), ERROR_BAD_LENGTH);
    good(&b), b.p.LoggerNameOffset = 4;
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY),
                     ERROR_INVALID_PARAMETER);
    good(&b), b.p.LoggerNameOffset = 0; /* no room for the name: the numbers, and MORE_DATA */
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY), ERROR_MORE_DATA);
    assert_true(b.p.Wnode.HistoricalContext == h && b.p.BufferSize == 64);
    good(&b);
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY), 0);
    assert_true(wcscmp(b.logger, NAME) == 0);
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_FLUSH), 0);
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_INCREMENT_FILE),
                     ERROR_INVALID_PARAMETER);
    good(&b), b.p.LoggerNameOffset = 0;
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_STOP), ERROR_MORE_DATA);
    assert_int_equal(perch_fake_etw_count(""), 0); /* stopped all the same */
    good(&b);
    assert_int_equal(ControlTraceW(h, NULL, &b.p, EVENT_TRACE_CONTROL_QUERY),
                     ERROR_WMI_INSTANCE_NOT_FOUND);
}

static void test_set_information_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0;
    CLASSIC_EVENT_ID ids[257];
    ULONG mask[8] = {EVENT_TRACE_FLAG_PROCESS}, one = 0, sources[5] = {0, 2, 6, 10, 11};
    TRACE_PROFILE_INTERVAL iv = {0, 10000};
    memset(ids, 0, sizeof ids);
    good(&b);
    assert_int_equal(start(&b, NAME, &h), 0);
    assert_int_equal(TraceSetInformation(h, TraceStackTracingInfo, ids, 23), ERROR_BAD_LENGTH);
    assert_int_equal(TraceSetInformation(h, TraceStackTracingInfo, ids, sizeof ids),
                     ERROR_INVALID_PARAMETER); /* 257 > 256 */
    assert_int_equal(TraceSetInformation(h, TraceStackTracingInfo, ids, 2 * sizeof ids[0]), 0);
    assert_int_equal(TraceSetInformation(0, TraceStackTracingInfo, ids, sizeof ids[0]),
                     ERROR_INVALID_HANDLE);
    assert_int_equal(TraceSetInformation(h, TraceSystemTraceEnableFlagsInfo, mask, 4),
                     ERROR_BAD_LENGTH);
    assert_int_equal(TraceSetInformation(h, TraceSystemTraceEnableFlagsInfo, mask, sizeof mask), 0);
    assert_int_equal(TraceSetInformation(h, TraceSampledProfileIntervalInfo, &iv, sizeof iv),
                     ERROR_INVALID_PARAMETER); /* expects TraceId 0 */
    assert_int_equal(TraceSetInformation(0, TraceSampledProfileIntervalInfo, &iv, 4),
                     ERROR_BAD_LENGTH);
    iv.Interval = 100; /* below the timer's minimum */
    assert_int_equal(TraceSetInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv),
                     ERROR_INVALID_PARAMETER);
    iv.Source = 99, iv.Interval = 10000; /* no such source */
    assert_int_equal(TraceSetInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv),
                     ERROR_INVALID_PARAMETER);
    assert_int_equal(TraceSetInformation(0, TraceProfileSourceConfigInfo, sources, sizeof sources),
                     ERROR_INVALID_PARAMETER); /* 5 > 4 counters */
    assert_int_equal(TraceSetInformation(0, TraceProfileSourceConfigInfo, sources, 6),
                     ERROR_BAD_LENGTH);
    assert_int_equal(TraceSetInformation(0, TraceProfileSourceConfigInfo, sources + 1, 8), 0);
    assert_int_equal(TraceSetInformation(h, TracePmcCounterListInfo, sources + 1, 8), 0);
    assert_int_equal(TraceSetInformation(h, TracePmcCounterListInfo, sources + 1, 8),
                     ERROR_ALREADY_EXISTS); /* once per logger */
    one = 0x800;
    assert_int_equal(TraceSetInformation(h, PERCH_TRACE_LBR_CONFIGURATION_INFO, &one, sizeof one),
                     ERROR_INVALID_PARAMETER);
    assert_int_equal(TraceSetInformation(h, PERCH_TRACE_LBR_CONFIGURATION_INFO, &one, 2),
                     ERROR_BAD_LENGTH);
    assert_int_equal(TraceSetInformation(h, (TRACE_INFO_CLASS)40, &one, 4),
                     ERROR_INVALID_PARAMETER);
    assert_int_equal(TraceSetInformation(h, TraceSetDisallowList, &one, 4), ERROR_NOT_SUPPORTED);
    stop_by_name(NAME);
}

static void test_query_information(void **state)
{
    uint8_t buf[1024];
    ULONG ret = 0, max = 0;
    assert_int_equal(TraceQueryInformation(0, TraceProfileSourceListInfo, buf, 16, &ret),
                     ERROR_BAD_LENGTH);
    assert_true(ret > 16 && ret <= sizeof buf);
    assert_int_equal(TraceQueryInformation(0, TraceProfileSourceListInfo, buf, ret, &ret), 0);
    PROFILE_SOURCE_INFO first;
    memcpy(&first, buf, sizeof first);
    assert_int_equal(first.Source, 0);
    assert_true(first.NextEntryOffset > 0 && first.NextEntryOffset < ret);
    assert_int_equal(TraceQueryInformation(0, PERCH_TRACE_MAX_PMC_COUNTER_QUERY, &max, 4, &ret), 0);
    assert_int_equal(max, 4);
    assert_int_equal(perch_fake_etw_set_dword("MaxPmcCounters", 6), 0);
    assert_int_equal(TraceQueryInformation(0, PERCH_TRACE_MAX_PMC_COUNTER_QUERY, &max, 4, &ret), 0);
    assert_int_equal(max, 6);
    assert_int_equal(TraceQueryInformation(0, TraceGroupQueryInfo, buf, 4, &ret),
                     ERROR_NOT_SUPPORTED);
}

static void test_enable_trace_ex2_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0, k = 0;
    ENABLE_TRACE_PARAMETERS params;
    GUID provider = {0xabcdef01, 1, 2, {3, 4, 5, 6, 7, 8, 9, 10}};
    memset(&params, 0, sizeof params);
    good(&b);
    assert_int_equal(start(&b, NAME, &h), 0);
    assert_int_equal(EnableTraceEx2(h, NULL, 1, 4, 0, 0, 0, NULL), ERROR_INVALID_PARAMETER);
    assert_int_equal(EnableTraceEx2(h, &provider, 3, 4, 0, 0, 0, NULL), ERROR_INVALID_PARAMETER);
    params.Version = 3;
    assert_int_equal(EnableTraceEx2(h, &provider, 1, 4, 0, 0, 0, &params), ERROR_INVALID_PARAMETER);
    params.Version = ENABLE_TRACE_PARAMETERS_VERSION_2;
    assert_int_equal(EnableTraceEx2(h, &provider, 1, 4, 0, 0, 0, &params), 0);
    assert_int_equal(EnableTraceEx2(12345, &provider, 1, 4, 0, 0, 0, NULL), ERROR_INVALID_HANDLE);
    good(&b);
    b.p.Wnode.Guid = perch_etw_system_trace_control_guid;
    b.p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE;
    b.p.EnableFlags = EVENT_TRACE_FLAG_PROCESS;
    assert_int_equal(start(&b, KERNEL_LOGGER_NAMEW, &k), 0);
    assert_int_equal(EnableTraceEx2(k, &provider, 1, 4, 0, 0, 0, NULL), ERROR_INVALID_PARAMETER);
    stop_by_name(NAME);
    stop_by_name(KERNEL_LOGGER_NAMEW);
}

static int events_seen;
static EVENT_RECORD first_record;

static void WINAPI count_event(PEVENT_RECORD r)
{
    if (events_seen++ == 0)
        first_record = *r;
}

static void test_open_process_close_checks(void **state)
{
    props b;
    TRACEHANDLE h = 0, t, bad = 0x1234;
    EVENT_TRACE_LOGFILEW lf;
    memset(&lf, 0, sizeof lf);
    assert_true(OpenTraceW(NULL) == INVALID_PROCESSTRACE_HANDLE);
    assert_int_equal(GetLastError(), ERROR_INVALID_PARAMETER);
    lf.LoggerName = (LPWSTR)NAME;
    lf.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD;
    lf.EventRecordCallback = count_event;
    assert_true(OpenTraceW(&lf) == INVALID_PROCESSTRACE_HANDLE); /* not running */
    assert_int_equal(GetLastError(), ERROR_WMI_INSTANCE_NOT_FOUND);
    good(&b);
    assert_int_equal(start(&b, NAME, &h), 0);
    lf.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME;
    assert_true(OpenTraceW(&lf) == INVALID_PROCESSTRACE_HANDLE);
    assert_int_equal(GetLastError(), ERROR_NOT_SUPPORTED);
    lf.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD;
    lf.EventRecordCallback = NULL;
    assert_true(OpenTraceW(&lf) == INVALID_PROCESSTRACE_HANDLE);
    lf.EventRecordCallback = count_event;
    assert_int_equal(ProcessTrace(NULL, 1, NULL, NULL), ERROR_INVALID_PARAMETER);
    assert_int_equal(ProcessTrace(&bad, 1, NULL, NULL), ERROR_INVALID_HANDLE);
    assert_int_equal(CloseTrace(bad), ERROR_INVALID_HANDLE);

    /* A replay, with the session stopped from this "other tool" to end it. */
    assert_int_equal(perch_fake_etw_set_string(
                         "Replay", perch_test_require_data("etl/airbus_lxcore_kernel.etl")),
                     0);
    assert_int_equal(perch_fake_etw_set_dword("StopAfterEvents", 4), 0);
    lf.ProcessTraceMode |= PROCESS_TRACE_MODE_RAW_TIMESTAMP;
    t = OpenTraceW(&lf);
    assert_true(t != INVALID_PROCESSTRACE_HANDLE);
    assert_int_equal(lf.LogfileHeader.PointerSize, 8);
    assert_true(lf.LogfileHeader.PerfFreq.QuadPart > 0);
    TRACEHANDLE two[2] = {t, t};
    assert_int_equal(ProcessTrace(two, 2, NULL, NULL), ERROR_INVALID_PARAMETER);
    events_seen = 0;
    assert_int_equal(ProcessTrace(&t, 1, NULL, NULL), 0);
    assert_int_equal(events_seen, 4);
    assert_true(first_record.EventHeader.Flags & EVENT_HEADER_FLAG_PROCESSOR_INDEX);
    assert_int_equal(CloseTrace(t), 0);
    assert_int_equal(CloseTrace(t), ERROR_INVALID_HANDLE);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_ledger_and_plant(void **state)
{
    static char text[1 << 14];
    perch_fake_etw_session_info info;
    assert_int_equal(perch_fake_etw_plant("Someone's", "xperf.exe", "C:\\k.etl", false), 0);
    assert_true(perch_fake_etw_session("someone's", &info)); /* names are case-insensitive */
    assert_string_equal(info.owner, "xperf.exe");
    assert_int_equal(info.owner_pid, 4242);
    assert_int_equal(stop_by_name(L"Someone's"), 0);
    assert_int_equal(perch_fake_etw_ledger(text, sizeof text), 2);
    assert_non_null(strstr(text, "plant name=Someone's"));
    assert_non_null(strstr(text, "stop name=Someone's"));
    assert_non_null(strstr(text, "(another process)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_start_checks, setup),
        cmocka_unit_test_setup(test_start_mode_and_guid_checks, setup),
        cmocka_unit_test_setup(test_start_success_and_conflicts, setup),
        cmocka_unit_test_setup(test_system_logger_slots, setup),
        cmocka_unit_test_setup(test_control_checks, setup),
        cmocka_unit_test_setup(test_set_information_checks, setup),
        cmocka_unit_test_setup(test_query_information, setup),
        cmocka_unit_test_setup(test_enable_trace_ex2_checks, setup),
        cmocka_unit_test_setup(test_open_process_close_checks, setup),
        cmocka_unit_test_setup(test_ledger_and_plant, setup),
    };
    SetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", L"Software\\Perch\\EtwFakeTests\\fake");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
