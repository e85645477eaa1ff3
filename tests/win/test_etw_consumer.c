/*
 * Tests for the real-time consumer and the supervisor (src/win/etw_consumer.c, etw_live.c)
 * against the fake advapi32, under Wine: a replayed .etl arrives in the queue record for
 * record as the .etl reader yields it (real traces and a `perch synth` trace with CSwitch, PMC
 * and LBR records), a full queue drops and counts instead of blocking ETW, a consumer whose
 * ProcessTrace fails or whose OpenTrace is refused, an outside stop mid-run restarted with its
 * gap reported, losses summed across restarts, and a slow consumer losing real-time buffers.
 * After each, no Perch session is left.
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
#include "etw_internal.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/pipeline.h"
#include "perch/platform.h"
#include "testdata.h"

#define SYNTH_FILE "test_etw_consumer_synth.etl"

static char ledger[1 << 16];
static char synth_path[MAX_PATH * 3];

/* The fake's ledger as it is now (in the shared buffer). */
static const char *ledger_now(void)
{
    perch_fake_etw_ledger(ledger, sizeof ledger);
    return ledger;
}

static int setup(void **state)
{
    assert_int_equal(perch_fake_etw_reset(), 0);
    perch__etw_consumer_stop_timeout(0); /* the default, whatever a failed test left */
    return 0;
}

static const char *synth(void)
{
    if (synth_path[0] == '\0') {
        char full[MAX_PATH];
        assert_int_equal(perch_fake_etw_write_synth(SYNTH_FILE, 7, 1u << 20), 0);
        assert_true(GetFullPathNameA(SYNTH_FILE, sizeof full, full, NULL) > 0);
        snprintf(synth_path, sizeof synth_path, "%s", full);
    }
    return synth_path;
}

static void same_event(const perch_event *want, const perch_event *got)
{
    assert_true(perch_guid_equal(&want->provider, &got->provider));
    assert_int_equal(got->header_kind, PERCH_HEADER_LIVE);
    assert_int_equal(want->group, got->group);
    assert_int_equal(want->hook, got->hook);
    assert_int_equal(want->opcode, got->opcode);
    assert_int_equal(want->version, got->version);
    assert_int_equal(want->event_id, got->event_id);
    assert_int_equal(want->pointer_size, got->pointer_size);
    assert_int_equal(want->cpu, got->cpu);
    assert_true(want->timestamp == got->timestamp);
    assert_int_equal(want->tid, got->tid);
    assert_int_equal(want->pid, got->pid);
    assert_int_equal(want->flags & PERCH_EVENT_CLASSIC, got->flags & PERCH_EVENT_CLASSIC);
    assert_int_equal(want->pmc_count, got->pmc_count);
    assert_memory_equal(want->pmc, got->pmc, sizeof want->pmc[0] * want->pmc_count);
    assert_int_equal(want->payload_len, got->payload_len);
    if (want->payload_len != 0)
        assert_memory_equal(want->payload, got->payload, want->payload_len);
    assert_int_equal(want->ext_len, got->ext_len);
}

/* Replays path through session → consumer → queue and checks every record against the .etl
 * reader's; returns the number of records. */
static uint64_t replay_and_compare(const char *path)
{
    perch_event_queue *q = NULL;
    perch_etw_session *s = NULL;
    perch_etw_consumer *c = NULL;
    perch_etl_reader *r = NULL;
    perch_etw_consumer_stats st;
    perch_trace_info live, offline;
    perch_event want, got;
    uint64_t n = 0;
    int status = -1;
    assert_int_equal(perch_fake_etw_set_string("Replay", path), 0);
    assert_int_equal(perch_event_queue_create(64u << 20, &q), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, NULL), 0);
    assert_int_equal(perch_etw_consumer_start(s, q, &c, NULL, 0), 0);
    assert_int_equal(perch_etl_open_file(path, NULL, &r, NULL), 0);
    while (perch_etl_next(r, &want) == 0) {
        assert_int_equal(perch_event_queue_pop(q, &got, 10000), 0);
        same_event(&want, &got);
        n++;
    }
    assert_int_equal(perch_event_queue_pop(q, &got, 200), PERCH_ETIMEDOUT);
    assert_true(perch_fake_etw_wait_replay(PERCH_ETW_SESSION_NAME, 10000));
    perch_etw_consumer_get_stats(c, &st);
    assert_true(st.events == n && st.pushed == n);
    assert_true(st.queue_full == 0 && st.bad_records == 0 && st.pmc_malformed == 0);

    perch_etw_consumer_trace_info(c, &live);
    perch_pipeline_trace_info(perch_etl_header_of(r), "x", &offline);
    assert_string_equal(live.source, "live:" PERCH_ETW_SESSION_NAME);
    live.source = offline.source;
    assert_true(offline.end_filetime != 0);
    assert_int_equal(live.end_filetime, 0); /* a real-time session has no end */
    offline.end_filetime = 0;
    assert_memory_equal(&live, &offline, sizeof live);

    assert_int_equal(perch_etw_consumer_wait(c, 0, &status), PERCH_ETIMEDOUT); /* idle, waiting */
    assert_int_equal(perch_etw_consumer_stop(c), 0);
    assert_int_equal(perch_etw_consumer_wait(c, 0, &status), 0);
    assert_int_equal(status, 0);
    perch_etw_consumer_destroy(c);
    perch_etw_session_destroy(s);
    perch_etl_destroy(r);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
    return n;
}

static void test_real_traces_arrive_as_read(void **state)
{
    static const char *const files[] = {
        "etl/airbus_ShutdownPerfDiagLogger.etl", "etl/perfview_smallEtlFile.etl",
        "etl/perfview_SelfDescribingSingleEvent.etl", "etl/airbus_AMSITrace.etl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        assert_int_equal(perch_fake_etw_reset(), 0);
        assert_true(replay_and_compare(perch_test_require_data(files[i])) > 0);
    }
}

static void test_synth_trace_arrives_as_read(void **state)
{
    assert_true(replay_and_compare(synth()) > 1000);
}

static void test_full_queue_drops_never_blocks(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_session *s = NULL;
    perch_etw_consumer *c = NULL;
    perch_etw_consumer_stats st;
    perch_event_queue_stats qs;
    perch_event ev;
    uint64_t popped = 0;
    assert_int_equal(perch_fake_etw_set_string("Replay", synth()), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, NULL), 0);
    assert_int_equal(perch_etw_consumer_start(s, q, &c, NULL, 0), 0);
    /* Nobody pops: the replay still runs to its end. */
    assert_true(perch_fake_etw_wait_replay(PERCH_ETW_SESSION_NAME, 20000));
    perch_etw_consumer_get_stats(c, &st);
    perch_event_queue_get_stats(q, &qs);
    assert_true(st.queue_full > 0);
    assert_true(st.pushed + st.queue_full + st.oversized + st.closed == st.events);
    assert_true(qs.dropped == st.queue_full);
    while (perch_event_queue_pop(q, &ev, 0) == 0)
        popped++;
    assert_true(popped == st.pushed);
    perch_etw_consumer_destroy(c);
    perch_etw_session_destroy(s);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_process_trace_fails(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_session *s = NULL;
    perch_etw_consumer *c = NULL;
    int status = 0;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "ProcessTrace=5\0"), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, NULL), 0);
    assert_int_equal(perch_etw_consumer_start(s, q, &c, NULL, 0), 0);
    assert_int_equal(perch_etw_consumer_wait(c, 5000, &status), 0);
    assert_int_equal(status, PERCH_EACCES);
    assert_int_equal(perch_etw_consumer_stop(c), PERCH_EACCES);
    perch_etw_consumer_destroy(c);
    perch_etw_session_destroy(s);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_open_trace_refused(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_start_report rep;
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "OpenTrace=5\0"), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, &rep), PERCH_EACCES);
    assert_null(l);
    assert_non_null(strstr(rep.why, "started but the real-time consumer could not open it"));
    assert_non_null(strstr(rep.why, "OpenTraceW(\"Perch Kernel Session\") failed: error 5"));
    assert_int_equal(rep.kind, PERCH_ETW_NONE);
    assert_int_equal(perch_fake_etw_count(""), 0);
    perch_event_queue_destroy(q);
}

/* Polls (with a fake clock 2 s apart) until cond holds or tries run out. */
static bool poll_until(perch_etw_live *l, uint64_t *now, perch_etw_poll *p, bool down_then_up)
{
    for (int i = 0; i < 200; i++) {
        *now += 2000000000ull;
        assert_int_equal(perch_etw_live_poll(l, *now, p), 0);
        if (down_then_up ? p->restarted : p->state == PERCH_ETW_LIVE_RUNNING)
            return true;
        Sleep(20);
    }
    return false;
}

static void test_consumer_failure_restarts(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_poll p;
    uint64_t now = perch_monotonic_ns();
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "ProcessTrace=31\0"), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    /* the refused ProcessTrace returns on the consumer's thread: polled until seen, as the
     * start waits only 1 s for it (a thread not scheduled by then would fail one poll) */
    for (int i = 0; i < 500; i++, Sleep(20)) {
        assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
        if (p.went_down)
            break;
    }
    assert_true(p.went_down);
    assert_non_null(strstr(p.message, "ProcessTrace returned"));
    assert_int_equal(perch_fake_etw_set_multi("Refuse", NULL), 0);
    Sleep(50);
    assert_true(poll_until(l, &now, &p, false));
    assert_int_equal(perch_fake_etw_count("Perch"), 1);
    perch_etw_live_destroy(l);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_outside_stop_mid_run(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_poll p;
    perch_event ev;
    uint64_t now = perch_monotonic_ns();
    assert_int_equal(perch_fake_etw_set_string("Replay", synth()), 0);
    assert_int_equal(perch_fake_etw_set_dword("StopAfterEvents", 1000), 0);
    assert_int_equal(perch_event_queue_create(64u << 20, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    for (int i = 0; i < 500 && perch_fake_etw_count("Perch") != 0; i++)
        Sleep(10);
    assert_int_equal(perch_fake_etw_count("Perch"), 0);
    assert_int_equal(perch_fake_etw_set_dword("StopAfterEvents", 0), 0);
    now += 1000000000ull;
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_true(p.went_down);
    assert_true(p.restarted); /* at once, on the poll that noticed */
    assert_int_equal(p.restarts, 1);
    assert_true(p.gap_ns > 0);
    assert_true(p.gap_end_raw >= p.gap_start_raw);
    assert_true(p.consumer.events >= 1000);
    perch_fake_etw_ledger(ledger, sizeof ledger);
    assert_non_null(strstr(ledger, "(external: StopAfterEvents after 1000 events)"));
    uint64_t n = 0;
    while (perch_event_queue_pop(q, &ev, 0) == 0)
        n++;
    assert_true(n >= 1000);
    perch_etw_live_destroy(l);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

struct props_with_names {
    EVENT_TRACE_PROPERTIES p;
    WCHAR names[2048];
};

/* Stops Perch's session as another program would (ControlTraceW STOP by name). */
static void stop_from_outside(void)
{
    struct props_with_names b;
    memset(&b, 0, sizeof b);
    b.p.Wnode.BufferSize = sizeof b;
    b.p.LoggerNameOffset = offsetof(struct props_with_names, names);
    assert_int_equal(ControlTraceW(0, L"Perch Kernel Session", &b.p, EVENT_TRACE_CONTROL_STOP), 0);
}

/* A consumer whose ProcessTrace does not return after CloseTrace is left running, on
 * purpose, and never replaced: a second consumer would push into the same single-producer
 * queue. The supervisor stays down and says why, starts no session, and its destroy tells
 * the owner to keep the queue. */
static void test_hung_consumer_is_not_replaced(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_poll p;
    uint64_t now = perch_monotonic_ns();
    assert_int_equal(perch_fake_etw_set_dword("HangAfterEndMs", 5000), 0);
    perch__etw_consumer_stop_timeout(100);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    stop_from_outside();
    now += 2000000000ull;
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_true(p.went_down);
    assert_false(p.restarted);
    assert_true(p.no_restart);
    assert_non_null(strstr(p.message, "did not return from ProcessTrace"));
    for (int i = 0; i < 5; i++) { /* long past every backoff: still no new session */
        now += 120000000000ull;
        assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
        assert_int_equal(p.state, PERCH_ETW_LIVE_DOWN);
        assert_int_equal(p.restarts, 0);
        assert_int_equal(perch_fake_etw_count("Perch"), 0);
    }
    assert_true(perch_etw_live_destroy(l));
    for (int i = 0; i < 200 && strstr(ledger_now(), "end name=") == NULL; i++)
        Sleep(50); /* the hung ProcessTrace returns (its ledger line) and its thread ends */
    assert_non_null(strstr(ledger_now(), "end name="));
    Sleep(100); /* past the ledger line: the thread's last steps, then q may go */
    perch__etw_consumer_stop_timeout(0);
    assert_int_equal(perch_fake_etw_set_dword("HangAfterEndMs", 0), 0);
    perch_event_queue_destroy(q);
}

static void test_losses_sum_across_restarts(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_poll p;
    uint64_t now = perch_monotonic_ns();
    assert_int_equal(perch_fake_etw_set_dword("EventsLost", 7), 0);
    assert_int_equal(perch_fake_etw_set_dword("RealTimeBuffersLost", 3), 0);
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_int_equal(p.state, PERCH_ETW_LIVE_RUNNING);
    assert_true(p.losses.events_lost == 7 && p.losses.realtime_buffers_lost == 3);

    stop_from_outside();
    assert_true(poll_until(l, &now, &p, true));
    assert_non_null(strstr(p.message, "restarted after a gap"));
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_true(p.losses.events_lost == 14 && p.losses.realtime_buffers_lost == 6);
    perch_etw_live_destroy(l);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

static void test_restart_backoff(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_poll p;
    uint64_t now = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    assert_int_equal(perch_etw_live_start(NULL, q, &l, NULL), 0);
    assert_int_equal(perch_fake_etw_set_multi("Refuse", "StartTrace=1450\0"), 0);
    stop_from_outside();
    uint32_t want[] = {1000, 2000, 4000, 8000};
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_true(p.went_down);
    assert_int_equal(p.state, PERCH_ETW_LIVE_DOWN);
    assert_int_equal(p.next_retry_ms, want[0]);
    assert_non_null(strstr(p.message, "restarting failed"));
    for (int i = 1; i < 4; i++) {
        now += (uint64_t)want[i - 1] * 1000000u - 1;
        assert_int_equal(perch_etw_live_poll(l, now, &p), 0); /* too early: no attempt */
        assert_int_equal(p.message[0], '\0');
        now += 1;
        assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
        assert_int_equal(p.next_retry_ms, want[i]);
    }
    assert_int_equal(perch_fake_etw_set_multi("Refuse", NULL), 0);
    now += 8000000000ull;
    assert_int_equal(perch_etw_live_poll(l, now, &p), 0);
    assert_true(p.restarted);
    assert_true(p.gap_ns >= 15000000000ull);
    perch_etw_live_destroy(l);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

/* A paced replay whose consumer is too slow loses real-time buffers, as the OS would. */
static void test_slow_consumer_loses_buffers(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_session *s = NULL;
    perch_etw_consumer *c = NULL;
    perch_etw_losses l;
    perch_etw_consumer_stats st;
    assert_int_equal(perch_fake_etw_set_string("Replay", synth()), 0);
    assert_int_equal(perch_fake_etw_set_dword("Pace", 1), 0);
    assert_int_equal(perch_fake_etw_set_dword("SlowCallbackMicros", 3000), 0);
    assert_int_equal(perch_fake_etw_set_dword("RealTimeLagMs", 100), 0);
    assert_int_equal(perch_event_queue_create(64u << 20, &q), 0);
    assert_int_equal(perch_etw_session_start(NULL, &s, NULL), 0);
    assert_int_equal(perch_etw_consumer_start(s, q, &c, NULL, 0), 0);
    assert_true(perch_fake_etw_wait_replay(PERCH_ETW_SESSION_NAME, 120000));
    assert_int_equal(perch_etw_session_query(s, &l), 0);
    perch_etw_consumer_get_stats(c, &st);
    assert_true(l.events_lost > 0);
    assert_true(l.realtime_buffers_lost > 0);
    assert_true(st.events > 0);
    perch_etw_consumer_destroy(c);
    perch_etw_session_destroy(s);
    perch_event_queue_destroy(q);
    assert_int_equal(perch_fake_etw_count(""), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_real_traces_arrive_as_read, setup),
        cmocka_unit_test_setup(test_synth_trace_arrives_as_read, setup),
        cmocka_unit_test_setup(test_full_queue_drops_never_blocks, setup),
        cmocka_unit_test_setup(test_process_trace_fails, setup),
        cmocka_unit_test_setup(test_open_trace_refused, setup),
        cmocka_unit_test_setup(test_consumer_failure_restarts, setup),
        cmocka_unit_test_setup(test_outside_stop_mid_run, setup),
        cmocka_unit_test_setup(test_hung_consumer_is_not_replaced, setup),
        cmocka_unit_test_setup(test_losses_sum_across_restarts, setup),
        cmocka_unit_test_setup(test_restart_backoff, setup),
        cmocka_unit_test_setup(test_slow_consumer_loses_buffers, setup),
    };
    SetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", L"Software\\Perch\\EtwFakeTests\\consumer");
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    DeleteFileA(SYNTH_FILE);
    return rc;
}
