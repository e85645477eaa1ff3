/*
 * The chrome export's second formatter (chrome_async.c): with it (threads 0) the export is
 * byte for byte the one-thread export (threads 1) of a stream where slices, PMC samples,
 * timer samples (whose profile chunks the exporter's thread writes between them) and stacks
 * interleave, with the smallest batches (thousands of hand-overs, text split across
 * batches) and the default ones, with and without the per-CPU tracks, with a PMC
 * counter name too long for the fast path, and PMC samples with thousands of names (the
 * name cache evicts) and names too long to be cached. A splice out of order, a lost or doubled
 * entry or a wrong comma changes the bytes. With symbol records, the formatter thread names PMC
 * samples from the same symbol tables the exporter's thread names the profiles' nodes from, at once
 * (run by the tsan preset too: a table sealed by a lookup in pass 2 would be a race). Errors:
 * a full output and a memory limit are returned, the same as with one thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "export/chrome_events.h"
#include "export_fixture.h"

#define RECORDS 30000u
#define LONG_BASE 0x150000000ull /* a module whose name is longer than a name cache entry */
#define LONG_KEY  600

static bool long_counter; /* the second counter's name does not fit the key cache */
static bool with_symbols; /* symbol records name app.exe's and ntoskrnl.exe's functions */

static int mixed_sample(const perch_sink *s, uint32_t i)
{
    static const uint64_t keys[] = {FX_KEY_T1, FX_KEY_T2, FX_KEY_T3, FX_KEY_IDLE0};
    static const uint32_t tids[] = {1001, 1002, 2001, 0};
    perch_sample_rec r;
    memset(&r, 0, sizeof r);
    r.thread_key = keys[i % 4];
    r.tid = tids[i % 4];
    r.cpu = (uint16_t)(i % 4 == 3 ? 0 : i & 1);
    r.kind = i % 3 == 0 ? PERCH_SAMPLE_PMC : PERCH_SAMPLE_TIMER;
    r.profile_source = r.kind == PERCH_SAMPLE_PMC ? 2 : 0;
    r.ts = FX_US(100 + (uint64_t)i * 7 - i % 5); /* a little out of order */
    r.stack_id = i % 6; /* 0: the ip alone, thousands of names (the name caches evict) */
    r.ip = r.stack_id ? FX_NTOS + 0x1000 : FX_APP + 0x400 + (i % 3001) * 4;
    r.module_key = r.stack_id ? FX_KEY_M_NTOS : FX_KEY_M_APP;
    if (r.stack_id == 0 && i % 5 == 0) {
        r.ip = LONG_BASE + (i % 7) * 16;
        r.module_key = LONG_KEY;
    }
    r.count = 1 + i % 3;
    return s->sample(s->ctx, &r);
}

static int mixed_slice(const perch_sink *s, uint32_t i)
{
    perch_slice_rec r;
    memset(&r, 0, sizeof r);
    r.thread_key = i % 5 == 0 ? FX_KEY_IDLE1 : FX_KEY_T1 + i % 2;
    r.tid = i % 5 == 0 ? 0 : 1001 + i % 2;
    r.cpu = (uint16_t)(i % 5 == 0 ? 1 : i % 2);
    r.start_ts = FX_US(100 + (uint64_t)i * 7);
    r.end_ts = r.start_ts + 30 + i % 11;
    r.ready_ts = i % 4 ? r.start_ts - 5 : 0;
    r.flags = (uint16_t)((i % 4 ? PERCH_SLICE_HAS_READY : 0) | (i % 13 == 0 ? PERCH_SLICE_OPEN_END : 0));
    r.priority = (int8_t)(8 + i % 7);
    r.wait_reason = (int8_t)(i % 9 - 1);
    r.wait_mode = -1;
    r.state = -1;
    r.pmc_count = (uint8_t)(i % 3);
    r.pmc_delta[0] = 1000 + i;
    r.pmc_delta[1] = 77 * i;
    return s->slice(s->ctx, &r);
}

/* Functions of 0x100 bytes over app.exe's sampled ips (from 0x400) and ntoskrnl.exe's. */
static int mixed_symbols(const perch_sink *s)
{
    char name[32];
    int err = 0;
    for (uint32_t f = 0; !err && f < 48; f++) {
        perch_symbol_rec sym = {FX_KEY_M_APP, 0x400 + f * 0x100, 0x100, 0x400 + f * 0x100, 0x100, 1,
                                name};
        snprintf(name, sizeof name, "app_func_%u", (unsigned)f);
        err = s->symbol ? s->symbol(s->ctx, &sym) : 0;
    }
    perch_symbol_rec kernel = {FX_KEY_M_NTOS, 0x1000, 0x2000, 0x1000, 0x2000, 1, "KiDispatch"};
    return err ? err : s->symbol ? s->symbol(s->ctx, &kernel) : 0;
}

/* The fixture's entities and stacks around RECORDS interleaved slices, samples and stacks. */
static int mixed_replay(void *ctx, const perch_sink *s)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    static const char *const long_names[] = {
        "InstructionRetired", "A counter whose name is longer than the sixty-four bytes that "
                              "the key cache of a formatter keeps"};
    int err = fx_head(s, long_counter ? long_names : names);
    (void)ctx;
    for (uint32_t i = 0; !err && i < RECORDS; i++) {
        if (i % 1000 == 999)
            err = fx_stack(s, 6 + i / 1000, fx_s2, 2, 0); /* a stack record between events */
        else if (i % 7 == 3 && s->slice)
            err = mixed_slice(s, i);
        else if (s->sample)
            err = mixed_sample(s, i);
    }
    if (!err)
        err = fx_entities(s);
    if (!err && with_symbols)
        err = mixed_symbols(s);
    if (!err)
        err = fx_module(s, LONG_KEY, FX_KEY_P1, 1234, LONG_BASE, 0x10000,
                        "C:\\Program Files\\A Vendor With A Long Name\\A Product With An "
                        "Even Longer Name\\bin\\a_library_whose_file_name_is_long_enough_that_its_"
                        "frame_names_do_not_fit_an_entry_of_the_name_cache_of_the_export.dll");
    return err ? err : fx_tail(s);
}

static char *export_mixed(unsigned threads, bool cpu_tracks, size_t out_cap, uint64_t limit,
                          int *err)
{
    perch_record_source src = {NULL, mixed_replay, NULL};
    perch_export_options opt;
    perch_memory_out mem;
    perch_output out;
    size_t len;
    perch_export_options_init(&opt);
    opt.threads = threads;
    opt.cpu_tracks = cpu_tracks;
    if (limit)
        opt.memory_limit = limit;
    perch_output_memory(&out, &mem, out_cap);
    *err = perch_export_run(PERCH_EXPORT_CHROME, &opt, &src, &out);
    if (!*err)
        *err = out.write(out.ctx, "", 1);
    char *text = (char *)perch_output_memory_take(&mem, &len);
    if (*err) {
        free(text);
        return NULL;
    }
    return text;
}

static void same_both_ways(bool cpu_tracks)
{
    int err;
    char *one = export_mixed(1, cpu_tracks, (size_t)64 << 20, 0, &err);
    assert_int_equal(err, 0);
    assert_true(strlen(one) > 1000000);
    assert_true(fx_count(one, "\"ph\":\"X\"") > RECORDS / 8);
    assert_true(fx_count(one, "\"ph\":\"i\"") > RECORDS / 4);
    assert_true(fx_count(one, "ProfileChunk") > 10);
    assert_true(fx_count(one, "the_name_cache_of_the_export.dll!+0x") > 100);
    /* a PMC sample's stack id only when it has a stack (half of them here), no scope */
    assert_true(fx_count(one, "\"stack_id\":") > RECORDS / 20);
    assert_true(fx_count(one, "\"stack_id\":") < fx_count(one, "\"ph\":\"i\"") - RECORDS / 20);
    assert_int_equal(fx_count(one, "\"stack_id\":0"), 0);
    assert_int_equal(fx_count(one, "\"s\":"), 0);
    if (with_symbols) { /* PMC events and profile nodes named from the symbol tables */
        assert_true(fx_count(one, "{\"name\":\"app.exe!app_func_") > 1000);
        assert_true(fx_count(one, "\"functionName\":\"ntoskrnl.exe!KiDispatch+0x") > 0);
    }
    for (int k = 0; k < 2; k++) {
        perch__chrome_async_batch = k == 0 ? 1 : 0; /* the smallest batches, then the default */
        char *two = export_mixed(0, cpu_tracks, (size_t)64 << 20, 0, &err);
        assert_int_equal(err, 0);
        assert_true(two != NULL);
        assert_true(strcmp(one, two) == 0);
        free(two);
    }
    perch__chrome_async_batch = 0;
    free(one);
}

static void test_same_bytes(void **state)
{
    (void)state;
    long_counter = false;
    same_both_ways(false);
}

static void test_same_bytes_cpu_tracks(void **state)
{
    (void)state;
    long_counter = false;
    same_both_ways(true);
}

static void test_same_bytes_long_counter(void **state)
{
    (void)state;
    long_counter = true;
    same_both_ways(false);
    long_counter = false;
}

static void test_same_bytes_symbols(void **state)
{
    (void)state;
    with_symbols = true;
    same_both_ways(false);
    with_symbols = false;
}

/* The output fails on the formatter thread: the export returns the output's error. */
static void test_output_error(void **state)
{
    int one, two;
    (void)state;
    perch__chrome_async_batch = 1;
    assert_null(export_mixed(1, false, 200000, 0, &one));
    assert_null(export_mixed(0, false, 200000, 0, &two));
    perch__chrome_async_batch = 0;
    assert_int_not_equal(one, 0);
    assert_int_equal(two, one);
}

/* Past the memory limit the export stops with PERCH_ELIMIT either way. */
static void test_memory_limit(void **state)
{
    int one, two;
    (void)state;
    assert_null(export_mixed(1, false, (size_t)64 << 20, 300000, &one));
    assert_null(export_mixed(0, false, (size_t)64 << 20, 300000, &two));
    assert_int_equal(one, PERCH_ELIMIT);
    assert_int_equal(two, PERCH_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes),
        cmocka_unit_test(test_same_bytes_cpu_tracks),
        cmocka_unit_test(test_same_bytes_long_counter),
        cmocka_unit_test(test_same_bytes_symbols),
        cmocka_unit_test(test_output_error),
        cmocka_unit_test(test_memory_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
