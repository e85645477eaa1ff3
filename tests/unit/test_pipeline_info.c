/*
 * perch_pipeline_trace_info: perch_trace_info.perf_freq is the tick rate of the raw timestamps
 * (records.h), which follows the logfile's clock type: QPC ticks at PerfFreq (1), 100 ns
 * system time (2), CPU cycles at CpuSpeedInMHz (3). The logfile's PerfFreq field is the QPC
 * frequency whatever the clock, so copying it would scale system-time or cycle traces wrongly.
 * The expected rates match perch_etl_filetime, which converts the same timestamps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/pipeline.h"

static perch_trace_info info_for(uint32_t clock_type)
{
    perch_etl_header h;
    perch_trace_info info;
    memset(&h, 0, sizeof h);
    h.clock_type = clock_type;
    h.perf_freq = 3117777;
    h.cpu_speed_mhz = 2400;
    h.pointer_size = 8;
    h.start_time = 1000;
    memset(&info, 0xff, sizeof info);
    perch_pipeline_trace_info(&h, "x", &info);
    return info;
}

/* One second of raw ticks at info.perf_freq is one second of FILETIME per perch_etl_filetime. */
static void assert_consistent(uint32_t clock_type)
{
    perch_etl_header h;
    memset(&h, 0, sizeof h);
    h.clock_type = clock_type;
    h.perf_freq = 3117777;
    h.cpu_speed_mhz = 2400;
    h.start_time = 1000;
    perch_trace_info info = info_for(clock_type);
    assert_int_equal(perch_etl_filetime(&h, info.perf_freq), 1000 + 10000000u);
}

static void test_rate_follows_clock_type(void **state)
{
    (void)state;
    assert_int_equal(info_for(1).perf_freq, 3117777);
    assert_int_equal(info_for(2).perf_freq, 10000000);
    assert_int_equal(info_for(3).perf_freq, 2400000000u);
    assert_int_equal(info_for(2).clock_type, 2);
    for (uint32_t c = 1; c <= 3; c++)
        assert_consistent(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_follows_clock_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
