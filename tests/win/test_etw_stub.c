/*
 * The ETW code against Wine's own advapi32, not the fake (this file is linked without it):
 * Wine's ETW is a stub (StartTraceW and ControlTraceW succeed doing nothing, TraceSetInformation
 * answers ERROR_CALL_NOT_IMPLEMENTED, TraceQueryInformation aborts the process if called,
 * OpenTraceW fails with access denied, ProcessTrace answers ERROR_CALL_NOT_IMPLEMENTED). Perch
 * must neither hang nor crash there and must say what happened in a sentence. The test
 * prints those sentences, so the log shows what a user of perchd under Wine would read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "etw.h"
#include "perch/error.h"
#include "perch/platform.h"

#define BOUND_NS 20000000000ull /* nothing may take longer than 20 s */

static void test_session_starts_on_stub(void **state)
{
    perch_etw_session *s = NULL;
    perch_etw_start_report rep;
    perch_etw_losses l;
    char text[2048];
    uint64_t t0 = perch_monotonic_ns();
    int err = perch_etw_session_start(NULL, &s, &rep);
    assert_true(perch_monotonic_ns() - t0 < BOUND_NS);
    perch_etw_report_text(&rep, text, sizeof text);
    print_message("start: %s; kind %d; note: %s\n%s", perch_strerror(err), (int)rep.kind, rep.note,
                  text);
    /* The private session cannot enable its groups without TraceSetInformation: the NT Kernel
     * Logger "starts" (the stub says yes), every other feature is refused by name. */
    assert_int_equal(err, 0);
    assert_int_equal(rep.kind, PERCH_ETW_KERNEL_LOGGER);
    assert_true(rep.fell_back);
    assert_non_null(strstr(rep.note, "not implemented"));
    assert_int_equal(rep.features[PERCH_ETW_F_STACKS].state, PERCH_ETW_REFUSED);
    assert_non_null(strstr(rep.features[PERCH_ETW_F_STACKS].reason, "error 120"));
    /* The stub's query "succeeds" describing nothing: no such session, not a crash. */
    assert_int_equal(perch_etw_session_query(s, &l), PERCH_ENOENT);
    perch_etw_session_destroy(s);
}

static void test_live_start_says_why(void **state)
{
    perch_event_queue *q = NULL;
    perch_etw_live *l = NULL;
    perch_etw_start_report rep;
    uint64_t t0 = perch_monotonic_ns();
    assert_int_equal(perch_event_queue_create(PERCH_EVENT_QUEUE_MIN_BYTES, &q), 0);
    int err = perch_etw_live_start(NULL, q, &l, &rep);
    assert_true(perch_monotonic_ns() - t0 < BOUND_NS);
    print_message("live start: %s: %s\n", perch_strerror(err), rep.why);
    assert_int_equal(err, PERCH_EACCES);
    assert_null(l);
    assert_non_null(strstr(rep.why, "started but the real-time consumer could not open it"));
    assert_non_null(strstr(rep.why, "OpenTraceW(\"NT Kernel Logger\") failed: error 5"));
    perch_event_queue_destroy(q);
}

static void no_source(void *ctx, const char *name, uint32_t id, uint32_t min, uint32_t max)
{
    fail_msg("a stub ETW listed a profile source \"%s\"", name);
}

static void test_profile_sources_not_queried(void **state)
{
    /* Wine 8's TraceQueryInformation is an unimplemented export: calling it would abort. */
    assert_int_equal(perch_etw_list_profile_sources(NULL, NULL), PERCH_EINVAL);
    assert_int_equal(perch_etw_list_profile_sources(no_source, NULL), PERCH_ENOTSUP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_starts_on_stub),
        cmocka_unit_test(test_live_start_says_why),
        cmocka_unit_test(test_profile_sources_not_queried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
