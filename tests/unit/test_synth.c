/*
 * Tests of perch_synth_write's contract: determinism (same options, same bytes; another seed,
 * other bytes), size control, option checking, output errors leaving the stats untouched, and
 * the progress callback. The file's structure is checked in test_synth_walk.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/synth.h"

#define BUF 65536u

static perch_synth_options small_options(uint64_t seed)
{
    perch_synth_options opt;
    perch_synth_options_init(&opt);
    opt.seed = seed;
    opt.cpus = 4;
    opt.target_bytes = 1u << 20;
    return opt;
}

/* Runs the generator into memory; returns the error and the bytes in *data (NULL on error). */
static int run(const perch_synth_options *opt, size_t limit, uint8_t **data, size_t *len,
               perch_synth_stats *st)
{
    perch_output out;
    perch_memory_out mem;
    perch_output_memory(&out, &mem, limit);
    int err = perch_synth_write(opt, &out, st);
    *data = perch_output_memory_take(&mem, len);
    if (err) {
        free(*data);
        *data = NULL;
    }
    return err;
}

static void test_same_seed_same_bytes(void **state)
{
    perch_synth_options opt = small_options(42);
    perch_synth_stats a, b;
    uint8_t *x, *y;
    size_t xl, yl;
    (void)state;
    memset(&a, 0xff, sizeof a);
    memset(&b, 0x00, sizeof b);
    assert_int_equal(run(&opt, 64u << 20, &x, &xl, &a), 0);
    assert_int_equal(run(&opt, 64u << 20, &y, &yl, &b), 0);
    assert_int_equal(xl, yl);
    assert_memory_equal(x, y, xl);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(a.bytes, xl);
    free(x);
    free(y);
}

static void test_other_seed_other_bytes(void **state)
{
    perch_synth_options o1 = small_options(1), o2 = small_options(2);
    perch_synth_stats a, b;
    uint8_t *x, *y;
    size_t xl, yl;
    (void)state;
    assert_int_equal(run(&o1, 64u << 20, &x, &xl, &a), 0);
    assert_int_equal(run(&o2, 64u << 20, &y, &yl, &b), 0);
    assert_int_equal(xl, yl); /* same size budget */
    /* past the header buffer (whose times also depend on the seed) the data differs */
    assert_true(memcmp(x + BUF, y + BUF, xl - BUF) != 0);
    assert_true(a.start_time != b.start_time || a.first_timestamp != b.first_timestamp);
    assert_true(a.samples != b.samples || a.cswitches != b.cswitches ||
                a.frames_total != b.frames_total);
    free(x);
    free(y);
}

static void test_size_control(void **state)
{
    perch_synth_options opt = small_options(9);
    perch_synth_stats st;
    uint8_t *x;
    size_t len;
    (void)state;
    opt.target_bytes = (3u << 20) + 12345;
    assert_int_equal(run(&opt, 64u << 20, &x, &len, &st), 0);
    assert_true(len <= opt.target_bytes);
    assert_true(len > opt.target_bytes - (opt.cpus + 2) * (uint64_t)BUF);
    assert_int_equal(len % BUF, 0);
    assert_int_equal(st.buffers, len / BUF);
    free(x);
}

static void expect_einval(perch_synth_options opt)
{
    perch_synth_stats st;
    uint8_t *x;
    size_t len;
    memset(&st, 0xab, sizeof st);
    assert_int_equal(run(&opt, 64u << 20, &x, &len, &st), PERCH_EINVAL);
    assert_null(x);
    assert_int_equal(st.bytes, 0xababababababababull); /* untouched */
}

static void test_bad_options(void **state)
{
    perch_synth_options opt = small_options(1);
    perch_output out;
    perch_memory_out mem;
    (void)state;
    opt.cpus = 0;
    expect_einval(opt);
    opt.cpus = PERCH_SYNTH_MAX_CPUS + 1;
    expect_einval(opt);
    opt = small_options(1);
    opt.target_bytes = perch_synth_min_bytes(opt.cpus) - 1;
    expect_einval(opt);
    opt.target_bytes = 0; /* and no duration */
    expect_einval(opt);
    opt = small_options(1);
    opt.struct_size = 8;
    expect_einval(opt);
    opt = small_options(1);
    perch_output_memory(&out, &mem, 1024);
    out.write = NULL;
    assert_int_equal(perch_synth_write(&opt, &out, NULL), PERCH_EINVAL);
    assert_int_equal(perch_synth_write(NULL, &out, NULL), PERCH_EINVAL);
}

static void test_output_error_is_reported(void **state)
{
    perch_synth_options opt = small_options(5);
    perch_synth_stats st;
    uint8_t *x;
    size_t len;
    (void)state;
    memset(&st, 0xab, sizeof st);
    /* the output refuses anything past 200 KiB: the error comes back, stats untouched */
    assert_int_equal(run(&opt, 200u << 10, &x, &len, &st), PERCH_ELIMIT);
    assert_null(x);
    assert_int_equal(st.samples, 0xababababababababull);
}

struct progress_log {
    unsigned calls[3];
    uint64_t last_done[3];
    bool monotonic;
};

static void on_progress(void *ctx, int pass, uint64_t done, uint64_t total)
{
    struct progress_log *p = ctx;
    assert_in_range(pass, 1, 2);
    assert_int_equal(total, 1u << 20);
    if (done < p->last_done[pass])
        p->monotonic = false;
    p->last_done[pass] = done;
    p->calls[pass]++;
}

static void test_progress(void **state)
{
    perch_synth_options opt = small_options(3);
    struct progress_log log = {{0}, {0}, true};
    perch_synth_stats st;
    uint8_t *x;
    size_t len;
    (void)state;
    opt.progress = on_progress;
    opt.progress_ctx = &log;
    assert_int_equal(run(&opt, 64u << 20, &x, &len, &st), 0);
    assert_int_equal(log.calls[1], st.buffers); /* one call per buffer in each pass */
    assert_int_equal(log.calls[2], st.buffers);
    assert_int_equal(log.last_done[2], len);
    assert_true(log.monotonic);
    free(x);
}

static void test_header_pointer_and_clock(void **state)
{
    perch_synth_options opt = small_options(17);
    perch_synth_stats st;
    uint8_t *x;
    size_t len;
    (void)state;
    opt.cpus = 3;
    assert_int_equal(run(&opt, 64u << 20, &x, &len, &st), 0);
    /* TRACE_LOGFILE_HEADER after the 0x48 buffer header and the 0x20 system header */
    const uint8_t *h = x + 0x48 + 0x20;
    assert_int_equal(h[12], 3);                /* NumberOfProcessors */
    assert_int_equal(h[44], 8);                /* PointerSize */
    assert_int_equal(h[8] | h[9] << 8, 19045); /* ProviderVersion */
    assert_int_equal(st.cpus, 3);
    assert_int_equal(st.perf_freq, 10000000);
    assert_true(st.end_time > st.start_time);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_other_seed_other_bytes),
        cmocka_unit_test(test_size_control),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_output_error_is_reported),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_header_pointer_and_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
