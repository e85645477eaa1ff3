/*
 * Tests for the kernel session (src/win/etw_session.c, etw_features.c, etw_config.c) against
 * the fake advapi32, under Wine: the private system-logger session and what it enables, query
 * before start, the stale-session restart, the NT Kernel Logger fallback, a busy NT Kernel
 * Logger that is never stopped, every refusal path (each feature by name, the whole private
 * session, access denied, a TraceSetInformation that is not implemented), loss counters, an
 * outside stop, and that no Perch session is left after a normal stop or a failed start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "etw.h"
#include "etw_fake.h"
#include "etw_sdk.h"
#include "perch/error.h"

static char ledger[1 << 16];

struct props_with_names {
    EVENT_TRACE_PROPERTIES p;
    WCHAR names[2048];
};

static int setup(void **state)
{
    assert_int_equal(perch_fake_etw_reset(), 0);
    return 0;
}

static unsigned perch_sessions(void)
{
    return perch_fake_etw_count("Perch");
}

static bool ledger_has(const char *text)
{
    perch_fake_etw_ledger(ledger, sizeof ledger);
    return strstr(ledger, text) != NULL;
}

static void test_default_private_session(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info info;
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_int_equal(rep.kind, PERCH_ETW_SYSTEM_LOGGER);
    assert_string_equal(rep.name, PERCH_ETW_SESSION_NAME);
    assert_false(rep.fell_back);
    assert_false(rep.stale_restarted);
    assert_int_equal(rep.features[PERCH_ETW_F_GROUPS].state, PERCH_ETW_ON);
    assert_int_equal(rep.features[PERCH_ETW_F_STACKS].state, PERCH_ETW_ON);
    assert_int_equal(rep.features[PERCH_ETW_F_SAMPLE_INTERVAL].state, PERCH_ETW_ON);
    assert_int_equal(rep.features[PERCH_ETW_F_PMC_SOURCES].state, PERCH_ETW_OFF);
    assert_int_equal(rep.features[PERCH_ETW_F_LBR].state, PERCH_ETW_OFF);

    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &info));
    assert_true(info.log_file_mode & EVENT_TRACE_SYSTEM_LOGGER_MODE);
    assert_true(info.log_file_mode & EVENT_TRACE_REAL_TIME_MODE);
    assert_int_equal(info.group_mask[0],
                     EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD |
                         EVENT_TRACE_FLAG_IMAGE_LOAD | EVENT_TRACE_FLAG_CSWITCH |
                         EVENT_TRACE_FLAG_DISPATCHER | EVENT_TRACE_FLAG_PROFILE);
    assert_int_equal(info.group_mask[1], 0);
    assert_int_equal(info.stack_events, 3);
    assert_int_equal(perch_etw_session_kind(s), PERCH_ETW_SYSTEM_LOGGER);

    perch_etw_session_destroy(s);
    assert_int_equal(perch_sessions(), 0);
    assert_true(ledger_has("stop name=Perch Kernel Session"));
    assert_true(ledger_has("(owner)"));
}

static void test_stale_session_restarted(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info before, after;
    assert_int_equal(perch_fake_etw_plant(PERCH_ETW_SESSION_NAME, "perchd.exe", NULL, false), 0);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &before));
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_true(rep.stale_restarted);
    assert_non_null(strstr(rep.note, "stale Perch session"));
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &after));
    assert_int_not_equal(before.logger_id, after.logger_id); /* a new session */
    assert_int_equal(perch_sessions(), 1);
    perch_etw_session_destroy(s);
    assert_int_equal(perch_sessions(), 0);
}

static void test_fallback_to_kernel_logger(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info info;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace:SystemLogger=87\0"), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_int_equal(rep.kind, PERCH_ETW_KERNEL_LOGGER);
    assert_string_equal(rep.name, PERCH_ETW_KERNEL_LOGGER_NAME);
    assert_true(rep.fell_back);
    assert_non_null(strstr(rep.note, "error 87"));
    assert_true(perch_fake_etw_session(PERCH_ETW_KERNEL_LOGGER_NAME, &info));
    assert_false(info.log_file_mode & EVENT_TRACE_SYSTEM_LOGGER_MODE);
    assert_int_equal(info.enable_flags & EVENT_TRACE_FLAG_CSWITCH, EVENT_TRACE_FLAG_CSWITCH);
    assert_int_equal(info.stack_events, 3);
    assert_int_equal(rep.features[PERCH_ETW_F_GROUPS].state, PERCH_ETW_ON);
    assert_int_equal(perch_sessions(), 0);
    perch_etw_session_destroy(s);
    assert_false(perch_fake_etw_session(PERCH_ETW_KERNEL_LOGGER_NAME, NULL));
}

static void test_busy_kernel_logger_is_never_stopped(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info before, after;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace:SystemLogger=1450\0"), 0);
    assert_int_equal(perch_fake_etw_plant(PERCH_ETW_KERNEL_LOGGER_NAME, "xperf.exe",
                                          "C:\\xperf\\kernel.etl", true),
                     0);
    assert_true(perch_fake_etw_session(PERCH_ETW_KERNEL_LOGGER_NAME, &before));
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), PERCH_EBUSY);
    assert_null(s);
    assert_int_equal(rep.kind, PERCH_ETW_NONE);
    assert_non_null(strstr(rep.why, "NT Kernel Logger is already running"));
    assert_non_null(strstr(rep.why, "C:\\xperf\\kernel.etl"));
    assert_non_null(strstr(rep.note, "error 1450"));
    assert_true(perch_fake_etw_session(PERCH_ETW_KERNEL_LOGGER_NAME, &after));
    assert_int_equal(before.logger_id, after.logger_id);
    assert_int_equal(perch_sessions(), 0);
    assert_false(ledger_has("stop name=NT Kernel Logger"));
}

static void test_no_fallback_when_disabled(void **state)
{
    perch_etw_config cfg;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_etw_config_defaults(&cfg);
    cfg.no_kernel_logger = true;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace:SystemLogger=50\0"), 0);
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), PERCH_ENOTSUP);
    assert_non_null(strstr(rep.why, "fallback is off"));
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_access_denied(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace=5\0"), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), PERCH_EACCES);
    assert_non_null(strstr(rep.why, "access denied"));
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void full_config(perch_etw_config *cfg)
{
    perch_etw_config_defaults(cfg);
    cfg->groups |= PERCH_ETW_GROUP_PMC_PROFILE;
    cfg->stacks |= PERCH_ETW_EVENT_PMC_INTERRUPT;
    snprintf(cfg->pmc_sources[0], PERCH_ETW_NAME_MAX, "BranchMispredictions");
    cfg->pmc_source_count = 1;
    cfg->pmc_interval = 65536;
    snprintf(cfg->cswitch_counters[0], PERCH_ETW_NAME_MAX, "TotalCycles");
    snprintf(cfg->cswitch_counters[1], PERCH_ETW_NAME_MAX, "cachemisses"); /* any case */
    cfg->cswitch_counter_count = 2;
    cfg->lbr = true;
    cfg->lbr_filter = PERCH_LBR_FILTER_KERNEL;
    cfg->lbr_events = PERCH_ETW_EVENT_SAMPLED_PROFILE | PERCH_ETW_EVENT_CSWITCH;
}

static void test_every_feature_on(void **state)
{
    perch_etw_config cfg;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info info;
    char text[2048];
    full_config(&cfg);
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), 0);
    for (unsigned f = 0; f < PERCH_ETW_F_COUNT; f++)
        assert_int_equal(rep.features[f].state, PERCH_ETW_ON);
    assert_int_equal(rep.max_pmc_counters, 4);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &info));
    assert_int_equal(info.group_mask[1], 0x400); /* PERF_PMC_PROFILE */
    assert_int_equal(info.stack_events, 4);
    assert_int_equal(info.pmc_counters, 2);
    assert_int_equal(info.pmc_events, 1);
    assert_int_equal(info.lbr_filter, PERCH_LBR_FILTER_KERNEL);
    assert_int_equal(info.lbr_events, 2);
    perch_etw_report_text(&rep, text, sizeof text);
    assert_non_null(strstr(text, "lbr: on\n"));
    assert_non_null(strstr(text, "cswitch_counters: on\n"));
    perch_etw_session_destroy(s);
    assert_int_equal(perch_sessions(), 0);
}

/* Each information class refused in turn: only its feature is refused, by name and reason. */
static void test_each_refusal_alone(void **state)
{
    static const struct {
        const char *refuse;
        perch_etw_feature feature, also; /* also: a second feature the refusal takes down */
        const char *call;
    } cases[] = {
        {"TraceStackTracingInfo=50\0", PERCH_ETW_F_STACKS, PERCH_ETW_F_STACKS,
         "TraceStackTracingInfo"},
        {"TraceProfileSourceConfigInfo=50\0", PERCH_ETW_F_PMC_SOURCES, PERCH_ETW_F_PMC_INTERVAL,
         "TraceProfileSourceConfigInfo"},
        {"TracePmcCounterListInfo=5\0", PERCH_ETW_F_CSWITCH_COUNTERS, PERCH_ETW_F_CSWITCH_COUNTERS,
         "TracePmcCounterListInfo"},
        {"TracePmcEventListInfo=87\0", PERCH_ETW_F_CSWITCH_COUNTERS, PERCH_ETW_F_CSWITCH_COUNTERS,
         "TracePmcEventListInfo"},
        {"TraceLbrConfigurationInfo=50\0", PERCH_ETW_F_LBR, PERCH_ETW_F_LBR,
         "TraceLbrConfigurationInfo"},
        {"TraceLbrEventListInfo=87\0", PERCH_ETW_F_LBR, PERCH_ETW_F_LBR, "TraceLbrEventListInfo"},
        {"TraceProfileSourceListInfo=50\0", PERCH_ETW_F_PMC_SOURCES, PERCH_ETW_F_CSWITCH_COUNTERS,
         "TraceProfileSourceListInfo"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        perch_etw_config cfg;
        perch_etw_session *s = NULL;
        perch_etw_start_report rep;
        assert_int_equal(perch_fake_etw_reset(), 0);
        full_config(&cfg);
        assert_int_equal(perch_fake_etw_set_multi("Refuse", cases[i].refuse), 0);
        assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), 0);
        assert_int_equal(rep.kind, PERCH_ETW_SYSTEM_LOGGER);
        const perch_etw_feature_status *st = &rep.features[cases[i].feature];
        assert_int_equal(st->state, PERCH_ETW_REFUSED);
        assert_non_null(strstr(st->reason, cases[i].call));
        assert_non_null(strstr(st->reason, "failed: error"));
        assert_int_not_equal(st->win32, 0);
        for (unsigned f = 0; f < PERCH_ETW_F_COUNT; f++) /* the rest keeps working */
            if (f != cases[i].feature && f != cases[i].also &&
                !(f == PERCH_ETW_F_PMC_INTERVAL && cases[i].feature == PERCH_ETW_F_PMC_SOURCES))
                assert_int_equal(rep.features[f].state, PERCH_ETW_ON);
        perch_etw_session_destroy(s);
        assert_int_equal(perch_sessions(), 0);
    }
}

static void test_sample_interval_refused(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "TraceSampledProfileIntervalInfo=5\0"), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_int_equal(rep.features[PERCH_ETW_F_SAMPLE_INTERVAL].state, PERCH_ETW_REFUSED);
    assert_int_equal(rep.features[PERCH_ETW_F_SAMPLE_INTERVAL].err, PERCH_EACCES);
    assert_int_equal(rep.features[PERCH_ETW_F_STACKS].state, PERCH_ETW_ON);
    perch_etw_session_destroy(s);
}

static void test_pmc_names_and_limits(void **state)
{
    perch_etw_config cfg;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    full_config(&cfg);
    snprintf(cfg.pmc_sources[0], PERCH_ETW_NAME_MAX, "NoSuchCounter");
    for (unsigned i = 0; i < 5; i++)
        snprintf(cfg.cswitch_counters[i], PERCH_ETW_NAME_MAX, "TotalCycles");
    cfg.cswitch_counter_count = 5;
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), 0);
    const char *why = rep.features[PERCH_ETW_F_PMC_SOURCES].reason;
    assert_non_null(strstr(why, "no profile source \"NoSuchCounter\""));
    assert_non_null(strstr(why, "BranchMispredictions"));
    assert_non_null(strstr(rep.features[PERCH_ETW_F_CSWITCH_COUNTERS].reason, "at most 4"));
    assert_int_equal(rep.features[PERCH_ETW_F_PMC_INTERVAL].state, PERCH_ETW_OFF);
    assert_int_equal(rep.features[PERCH_ETW_F_LBR].state, PERCH_ETW_ON);
    perch_etw_session_destroy(s);

    full_config(&cfg);
    cfg.groups &= ~PERCH_ETW_GROUP_PMC_PROFILE;
    cfg.groups &= ~PERCH_ETW_GROUP_CSWITCH;
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), 0);
    assert_non_null(strstr(rep.features[PERCH_ETW_F_PMC_SOURCES].reason, "pmc_profile group"));
    assert_non_null(strstr(rep.features[PERCH_ETW_F_CSWITCH_COUNTERS].reason, "cswitch group"));
    perch_etw_session_destroy(s);
    assert_int_equal(perch_sessions(), 0);
}

static void test_groups_refused_falls_back(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "TraceSystemTraceEnableFlagsInfo=50\0"), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_int_equal(rep.kind, PERCH_ETW_KERNEL_LOGGER);
    assert_true(rep.fell_back);
    assert_non_null(strstr(rep.note, "kernel groups could not be enabled"));
    assert_int_equal(perch_sessions(), 0); /* the private session was stopped */
    assert_int_equal(rep.features[PERCH_ETW_F_GROUPS].state, PERCH_ETW_ON);
    perch_etw_session_destroy(s);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

/* Wine's stub: TraceSetInformation answers 120. Nothing else is asked of it (Wine's
 * TraceQueryInformation would abort the process), the NT Kernel Logger runs on EnableFlags. */
static void test_trace_set_information_not_implemented(void **state)
{
    perch_etw_config cfg;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    full_config(&cfg);
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "TraceSetInformation=120\0"
                                                        "TraceQueryInformation=120\0"),
                     0);
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), 0);
    assert_int_equal(rep.kind, PERCH_ETW_KERNEL_LOGGER);
    assert_int_equal(rep.features[PERCH_ETW_F_GROUPS].state, PERCH_ETW_ON);
    for (unsigned f = PERCH_ETW_F_STACKS; f < PERCH_ETW_F_COUNT; f++) {
        assert_int_equal(rep.features[f].state, PERCH_ETW_REFUSED);
        assert_non_null(strstr(rep.features[f].reason, "not implemented"));
    }
    assert_false(ledger_has("set TraceProfileSourceListInfo"));
    perch_etw_session_destroy(s);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_losses_and_outside_stop(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_losses l;
    perch_etw_start_report rep;
    assert_int_equal(perch_fake_etw_set_dword("EventsLost", 5), 0);
    assert_int_equal(perch_fake_etw_set_dword("RealTimeBuffersLost", 2), 0);
    assert_int_equal(perch_fake_etw_set_dword("LogBuffersLost", 1), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_int_equal(perch_etw_session_query(s, &l), 0);
    assert_true(l.events_lost == 5 && l.realtime_buffers_lost == 2 && l.log_buffers_lost == 1);
    assert_true(l.buffers >= 16);

    /* Someone stops it by name (logman stop -ets), then starts their own of that name. */
    struct props_with_names b;
    memset(&b, 0, sizeof b);
    b.p.Wnode.BufferSize = sizeof b;
    b.p.LoggerNameOffset = offsetof(struct props_with_names, names);
    assert_int_equal(ControlTraceW(0, L"Perch Kernel Session", &b.p, EVENT_TRACE_CONTROL_STOP), 0);
    assert_int_equal(perch_etw_session_query(s, &l), PERCH_ENOENT);
    assert_int_equal(perch_fake_etw_plant(PERCH_ETW_SESSION_NAME, "other.exe", NULL, false), 0);
    assert_int_equal(perch_etw_session_stop(s), PERCH_ENOENT);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, NULL)); /* not stopped by us */
    perch_etw_session_destroy(s);
}

static void test_restart(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_fake_etw_session_info a, b;
    assert_int_equal(perch_etw_session_start(NULL, &s, &rep), 0);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &a));
    assert_int_equal(perch_etw_session_restart(s), 0);
    assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &b));
    assert_int_not_equal(a.logger_id, b.logger_id);
    assert_false(perch_etw_session_report(s)->stale_restarted);
    assert_int_equal(perch_sessions(), 1);
    perch_etw_session_destroy(s);
    assert_int_equal(perch_sessions(), 0);
}

static void test_sample_interval_restored(void **state)
{
    perch_etw_session *s = NULL;
    TRACE_PROFILE_INTERVAL iv = {0, 20000};
    ULONG ret = 0;
    assert_int_equal(TraceSetInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, NULL), 0);
    iv.Interval = 0;
    assert_int_equal(
        TraceQueryInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv, &ret), 0);
    assert_int_equal(iv.Interval, 10000);
    perch_etw_session_destroy(s);
    assert_int_equal(
        TraceQueryInformation(0, TraceSampledProfileIntervalInfo, &iv, sizeof iv, &ret), 0);
    assert_int_equal(iv.Interval, 20000);
}

static void test_config_checks(void **state)
{
    perch_etw_config cfg;
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    char why[256];
    uint32_t bits = 0;
    perch_etw_config_defaults(&cfg);
    assert_int_equal(perch_etw_config_check(&cfg, why, sizeof why), 0);
    cfg.sample_interval = 100;
    assert_int_equal(perch_etw_session_start(&cfg, &s, &rep), PERCH_EINVAL);
    assert_non_null(strstr(rep.why, "sample_interval 100 is outside 1221..10000000"));
    perch_etw_config_defaults(&cfg);
    cfg.buffer_kb = 4096;
    assert_int_equal(perch_etw_config_check(&cfg, why, sizeof why), PERCH_EINVAL);
    assert_non_null(strstr(why, "buffer_kb 4096"));
    assert_int_equal(perch_etw_parse_groups("process, thread,cswitch", &bits, why, sizeof why), 0);
    assert_int_equal(bits,
                     PERCH_ETW_GROUP_PROCESS | PERCH_ETW_GROUP_THREAD | PERCH_ETW_GROUP_CSWITCH);
    assert_int_equal(perch_etw_parse_events("cswitch,bogus", &bits, why, sizeof why), PERCH_EINVAL);
    assert_non_null(strstr(why, "\"bogus\" is not a known event name"));
    assert_int_equal(perch_etw_parse_lbr_filter("kernel,near_ret", &bits, why, sizeof why), 0);
    assert_int_equal(bits, PERCH_LBR_FILTER_KERNEL | PERCH_LBR_FILTER_NEAR_RET);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void collect(void *ctx, const char *name, uint32_t id, uint32_t min, uint32_t max)
{
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 512 - len, "%s=%u;", name, (unsigned)id);
    (void)min, (void)max;
}

static void test_list_sources(void **state)
{
    char out[512] = "";
    assert_int_equal(perch_etw_list_profile_sources(collect, out), 0);
    assert_non_null(strstr(out, "Timer=0;"));
    assert_non_null(strstr(out, "BranchMispredictions=11;"));
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "TraceSetInformation=120\0"), 0);
    out[0] = '\0';
    assert_int_equal(perch_etw_list_profile_sources(collect, out), PERCH_ENOTSUP);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_default_private_session, setup),
        cmocka_unit_test_setup(test_stale_session_restarted, setup),
        cmocka_unit_test_setup(test_fallback_to_kernel_logger, setup),
        cmocka_unit_test_setup(test_busy_kernel_logger_is_never_stopped, setup),
        cmocka_unit_test_setup(test_no_fallback_when_disabled, setup),
        cmocka_unit_test_setup(test_access_denied, setup),
        cmocka_unit_test_setup(test_every_feature_on, setup),
        cmocka_unit_test_setup(test_each_refusal_alone, setup),
        cmocka_unit_test_setup(test_sample_interval_refused, setup),
        cmocka_unit_test_setup(test_pmc_names_and_limits, setup),
        cmocka_unit_test_setup(test_groups_refused_falls_back, setup),
        cmocka_unit_test_setup(test_trace_set_information_not_implemented, setup),
        cmocka_unit_test_setup(test_losses_and_outside_stop, setup),
        cmocka_unit_test_setup(test_restart, setup),
        cmocka_unit_test_setup(test_sample_interval_restored, setup),
        cmocka_unit_test_setup(test_config_checks, setup),
        cmocka_unit_test_setup(test_list_sources, setup),
    };
    SetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", L"Software\\Perch\\EtwFakeTests\\session");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
