/*
 * The live path end to end, under Wine: every real trace in ../shared/data/etl and two
 * `perch synth` traces are replayed by the fake ETW through the session, the consumer's
 * callback (EVENT_RECORD → perch_event), the event queue and the model; the report that model
 * produces must equal, byte for byte as JSON, the report of the offline pipeline (what
 * `perch report --json` and `perch import` build) on the same .etl. Two header fields differ
 * by design: the trace's source name ("live:..." / "etl:..."), so the live model is given the
 * offline one, and the end time, which a real-time session does not have (the live path
 * reports 0), so the offline report's is set to 0 before the comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "etw.h"
#include "etw_fake.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/model.h"
#include "perch/pipeline.h"
#include "perch/report.h"
#include "report_end_time.h"
#include "testdata.h"

#define QUEUE_BYTES (256u << 20)

static char *report_json(perch_report *rep)
{
    perch_test_text text = {NULL, 0, 0};
    perch_json w;
    perch_json_init(&w, perch_test_text_sink, &text);
    assert_int_equal(perch_report_write_json(rep, &w), 0);
    assert_int_equal(perch_json_flush(&w), 0);
    return text.data;
}

static char *offline(const char *path, const char *source)
{
    perch_report *rep = NULL;
    perch_sink sink;
    perch_input in;
    assert_int_equal(perch_report_create(NULL, &rep), 0);
    perch_report_sink(rep, &sink);
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_pipeline_etl(&in, source, &sink, NULL, NULL), 0);
    char *json = report_json(rep);
    perch_report_destroy(rep);
    return json;
}

/* Pops until the replay is done and the queue is empty, feeding m (created at the first
 * record, once the consumer's trace info is final). Returns the records fed. */
static uint64_t drain(perch_event_queue *q, perch_etw_live *l, const char *source,
                      const perch_sink *sink, perch_model **m)
{
    perch_event ev;
    uint64_t n = 0;
    for (;;) {
        int rc = perch_event_queue_pop(q, &ev, 50);
        if (rc == PERCH_ETIMEDOUT) {
            perch_fake_etw_session_info info;
            assert_true(perch_fake_etw_session(PERCH_ETW_SESSION_NAME, &info));
            if (info.replay_done && perch_event_queue_pop(q, &ev, 0) == PERCH_ETIMEDOUT)
                return n;
            continue;
        }
        assert_int_equal(rc, 0);
        if (*m == NULL) {
            perch_trace_info info;
            perch_etw_consumer_trace_info(perch_etw_live_consumer(l), &info);
            info.source = source;
            assert_int_equal(perch_model_create(sink, &info, NULL, m), 0);
        }
        assert_int_equal(perch_model_feed(*m, &ev), 0);
        n++;
    }
}

static char *live(const char *path, const char *source, uint64_t *records)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_report *rep = NULL;
    perch_model *m = NULL;
    perch_etw_poll p;
    perch_sink sink;
    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", path), 0);
    assert_int_equal(perch_report_create(NULL, &rep), 0);
    perch_report_sink(rep, &sink);
    assert_int_equal(perch_event_queue_create(QUEUE_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    *records = drain(q, l, source, &sink, &m);
    assert_int_equal(perch_etw_live_poll(l, 0, &p), 0);
    assert_int_equal(p.state, PERCH_ETW_LIVE_RUNNING);
    assert_true(p.consumer.events == *records && p.consumer.queue_full == 0);
    assert_true(p.consumer.bad_records == 0 && p.consumer.pmc_malformed == 0);
    perch_etw_live_destroy(l);
    assert_int_equal(perch_fake_etw_count(""), 0);
    assert_non_null(m);
    assert_int_equal(perch_model_finish(m), 0);
    perch_model_destroy(m);
    perch_event_queue_destroy(q);
    char *json = report_json(rep);
    perch_report_destroy(rep);
    return json;
}

static void same_report(const char *path, const char *name)
{
    char source[300];
    uint64_t records = 0;
    snprintf(source, sizeof source, "etl:%s", name);
    char *want = offline(path, source);
    char *got = live(path, source, &records);
    assert_true(perch_test_zero_end_time(want));
    if (strcmp(want, got) != 0)
        fail_msg("%s: the live report differs\noffline: %s\nlive:    %s", name, want, got);
    print_message("%s: %llu records, reports equal (%zu bytes of JSON)\n", name,
                  (unsigned long long)records, strlen(want));
    free(want);
    free(got);
}

static void test_real_traces(void **state)
{
    static const char *const names[] = {
        "airbus_AMSITrace.etl",       "airbus_ShutdownPerfDiagLogger.etl",
        "airbus_lxcore_kernel.etl",   "perfview_SelfDescribingSingleEvent.etl",
        "perfview_net.4.5.2.x64.etl", "perfview_primitive-types.etl",
        "perfview_smallEtlFile.etl",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "etl/%s", names[i]);
        same_report(perch_test_require_data(rel), names[i]);
    }
}

static void test_synth_traces(void **state)
{
    static const uint64_t seeds[] = {1, 2};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char name[64], full[MAX_PATH];
        snprintf(name, sizeof name, "test_etw_replay_synth%llu.etl", (unsigned long long)seeds[i]);
        assert_int_equal(perch_fake_etw_write_synth(name, seeds[i], 4u << 20), 0);
        assert_true(GetFullPathNameA(name, sizeof full, full, NULL) > 0);
        same_report(full, name);
        DeleteFileA(name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_synth_traces),
    };
    SetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", L"Software\\Perch\\EtwFakeTests\\replay");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
