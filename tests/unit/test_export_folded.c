/*
 * Folded-stack export over the synthetic stream (export_fixture.h): exact lines (root first,
 * kernel+user frames named module!+0xoffset, late-arriving modules resolved per process,
 * overlapping kernel modules, unresolvable addresses), merged counts, PMC rows kept apart,
 * the optional process/thread prefixes, and the shared format table and frame resolver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export_fixture.h"

static char *export_folded_pmc(bool process, bool thread, bool pmc, uint16_t source)
{
    perch_export_options opt;
    size_t len;
    int err;
    char *text;
    perch_export_options_init(&opt);
    opt.folded_process = process;
    opt.folded_thread = thread;
    opt.folded_pmc = pmc;
    opt.folded_pmc_source = source;
    text = fx_export(PERCH_EXPORT_FOLDED, &opt, &len, &err);
    assert_int_equal(err, 0);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

static char *export_folded(bool process, bool thread)
{
    return export_folded_pmc(process, thread, false, 0);
}

/* Sorted lines: '?' (0x3f) sorts before letters, "app" before "ntdll"... Timer samples only:
 * the PMC samples (source 2) are a file of their own. */
static const char expected_plain[] =
    "?!0x12345678 1\n"
    "app.exe!+0x400 1\n"
    "ntdll.dll!+0x50;app.exe!+0x100;ntoskrnl.exe!+0x2000;ntoskrnl.exe!+0x1000 4\n"
    "ntdll.dll!+0x50;app.exe!+0x200 2\n"
    "ntdll.dll!+0x60;svc.exe!+0x300 5\n"
    "ntoskrnl.exe!+0x3000;hal.dll!+0x10 2\n"
    "ntoskrnl.exe!+0x5000 1\n";

static void test_plain_lines(void **state)
{
    char *text = export_folded(false, false);
    (void)state;
    assert_string_equal(text, expected_plain);
    free(text);
}

static unsigned long long sum_counts(const char *text)
{
    unsigned long long total = 0;
    for (const char *nl = strchr(text, '\n'); nl; text = nl + 1, nl = strchr(text, '\n')) {
        const char *sp = nl;
        while (sp > text && sp[-1] != ' ')
            sp--;
        total += strtoull(sp, NULL, 10);
    }
    return total;
}

static void test_prefixed_lines(void **state)
{
    char *text = export_folded(true, true);
    (void)state;
    /* T1 and T2 both sampled S1: with thread prefixes they are separate lines. */
    assert_non_null(strstr(text, "app.exe (1234);main (1001);ntdll.dll!+0x50;app.exe!+0x100;"
                                 "ntoskrnl.exe!+0x2000;ntoskrnl.exe!+0x1000 3\n"));
    /* T2's record has no pid: it comes from its process record. */
    assert_non_null(strstr(text, "app.exe (1234);worker (1002);ntdll.dll!+0x50;app.exe!+0x100;"
                                 "ntoskrnl.exe!+0x2000;ntoskrnl.exe!+0x1000 1\n"));
    assert_non_null(strstr(text, "svc.exe (5678);thread 2001;ntdll.dll!+0x60;svc.exe!+0x300 5\n"));
    /* T4 never got a thread record: unknown process, kernel address still resolves. */
    assert_non_null(strstr(text, "? (?);thread 3001;ntoskrnl.exe!+0x5000 1\n"));
    assert_null(strstr(text, "pmc"));
    assert_int_equal(fx_count(text, "\n"), 8); /* T1 2, T2 3, T3 2, T4 1 timer rows */
    assert_int_equal(sum_counts(text), 16);
    free(text);
}

/* --folded-pmc 2: only the PMC samples of source 2, never added to the timer samples; a
 * source with no samples gives an empty file. */
static void test_pmc_source(void **state)
{
    char *text = export_folded_pmc(false, true, true, 2);
    (void)state;
    assert_string_equal(text, "main (1001);ntdll.dll!+0x50;app.exe!+0x200 2\n");
    free(text);
    text = export_folded_pmc(false, false, true, 19);
    assert_string_equal(text, "");
    free(text);
}

static void test_format_table(void **state)
{
    perch_export_format f = PERCH_EXPORT_FORMAT_COUNT;
    (void)state;
    for (unsigned i = 0; i < PERCH_EXPORT_FORMAT_COUNT; i++) {
        assert_int_equal(perch_export_format_parse(perch_export_format_name(i), &f), 0);
        assert_int_equal(f, i);
        assert_non_null(perch_export_format_opens(i));
    }
    f = PERCH_EXPORT_GECKO;
    assert_int_equal(perch_export_format_parse("svg", &f), PERCH_EINVAL);
    assert_int_equal(f, PERCH_EXPORT_GECKO);
    assert_int_equal(perch_export_passes(PERCH_EXPORT_CHROME), 2);
    assert_int_equal(perch_export_passes(PERCH_EXPORT_FOLDED), 1);
    assert_int_equal(perch_export_passes(PERCH_EXPORT_FORMAT_COUNT), 0);
    assert_false(perch_export_relay_pass(PERCH_EXPORT_CHROME, 0));
    assert_false(perch_export_relay_pass(PERCH_EXPORT_CHROME, 1));
    assert_true(perch_export_relay_pass(PERCH_EXPORT_FOLDED, 0));
    assert_false(perch_export_relay_pass(PERCH_EXPORT_FOLDED, 1)); /* it has one pass */
    assert_false(perch_export_relay_pass(PERCH_EXPORT_GECKO, 0));
    assert_false(perch_export_relay_pass(PERCH_EXPORT_PPROF, 0)); /* decoded ahead instead */
    assert_false(perch_export_relay_pass(PERCH_EXPORT_SPEEDSCOPE, 0));
    assert_false(perch_export_relay_pass(PERCH_EXPORT_FORMAT_COUNT, 0));
    assert_null(perch_export_format_name(PERCH_EXPORT_FORMAT_COUNT));
}

/* The fixture with stack 2 given a second time (other frames) before the samples. */
static int replay_stack_twice(void *ctx, const perch_sink *s)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    (void)ctx;
    int err = fx_head(s, names);
    err = err ? err : fx_stack(s, 2, fx_s4, 2, 0);
    for (size_t i = 0; !err && i < FX_SAMPLE_COUNT; i++)
        err = fx_sample_out(s, i);
    err = err ? err : fx_entities(s);
    return err ? err : fx_tail(s);
}

/* A stack id given twice leaves which stack a sample meant unknown: every format refuses the
 * input (the report already did) instead of giving every sample of that id the later frames,
 * as they did until 2026-12-06. */
static void test_stack_id_twice_refused(void **state)
{
    static const perch_export_format formats[] = {PERCH_EXPORT_FOLDED, PERCH_EXPORT_CHROME,
                                                  PERCH_EXPORT_GECKO, PERCH_EXPORT_SPEEDSCOPE,
                                                  PERCH_EXPORT_PPROF};
    perch_export_options opt;
    (void)state;
    perch_export_options_init(&opt);
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        perch_record_source src = {NULL, replay_stack_twice, NULL};
        perch_memory_out mem;
        perch_output out;
        size_t len;
        perch_output_memory(&out, &mem, (size_t)64 << 20);
        int err = perch_export_run(formats[i], &opt, &src, &out);
        free(perch_output_memory_take(&mem, &len));
        if (err != PERCH_EFORMAT)
            fail_msg("format %d: %d, not PERCH_EFORMAT", (int)formats[i], err);
    }
}

static void test_pass_order_and_limits(void **state)
{
    perch_memory_out mem;
    perch_output out;
    perch_exporter *exp = NULL;
    perch_export_options opt;
    perch_sink sink;
    size_t len;
    int err;
    (void)state;
    perch_output_memory(&out, &mem, 1 << 20);
    assert_int_equal(perch_exporter_create(PERCH_EXPORT_FOLDED, NULL, &out, &exp), 0);
    assert_int_equal(perch_exporter_sink(exp, 1, &sink), PERCH_EINVAL);
    assert_int_equal(perch_exporter_sink(exp, 0, &sink), 0);
    assert_int_equal(perch_exporter_sink(exp, 0, &sink), PERCH_EINVAL);
    perch_exporter_destroy(exp);
    perch_exporter_destroy(NULL);
    /* A memory budget too small for the stream fails cleanly with ELIMIT. */
    perch_export_options_init(&opt);
    opt.memory_limit = 256;
    assert_null(fx_export(PERCH_EXPORT_FOLDED, &opt, &len, &err));
    assert_int_equal(err, PERCH_ELIMIT);
    free(perch_output_memory_take(&mem, &len));
}

/* The sink of pass `pass` of fmt, with `threads` (0: the default). */
static perch_sink pass_sink(perch_export_format fmt, unsigned threads, unsigned pass)
{
    perch_memory_out mem;
    perch_output out;
    perch_exporter *exp = NULL;
    perch_export_options opt;
    perch_sink sink;
    size_t len;
    perch_export_options_init(&opt);
    opt.threads = threads;
    perch_output_memory(&out, &mem, 1 << 20);
    assert_int_equal(perch_exporter_create(fmt, &opt, &out, &exp), 0);
    for (unsigned i = 0; i <= pass; i++)
        assert_int_equal(perch_exporter_sink(exp, i, &sink), 0);
    perch_exporter_destroy(exp);
    free(perch_output_memory_take(&mem, &len));
    return sink;
}

/* Whether each pass's sink asks for its capture decoded ahead (perch_sink.decode_ahead), with
 * the default threads and with one: chrome's second pass does not (it already shares the second
 * core with its formatter and output threads, and ran slower with it), nor does one thread.
 * Chrome's second pass takes no symbol records either: its first took them, and a second time
 * every name would go into the tables twice. */
static void test_pass_sinks(void **state)
{
    (void)state;
    assert_true(pass_sink(PERCH_EXPORT_GECKO, 0, 0).decode_ahead);
    assert_true(pass_sink(PERCH_EXPORT_PPROF, 0, 0).decode_ahead);
    assert_true(pass_sink(PERCH_EXPORT_SPEEDSCOPE, 0, 0).decode_ahead);
    assert_false(pass_sink(PERCH_EXPORT_CHROME, 0, 1).decode_ahead);
    for (unsigned f = 0; f < PERCH_EXPORT_FORMAT_COUNT; f++)
        for (unsigned pass = 0; pass < perch_export_passes(f); pass++)
            assert_false(pass_sink(f, 1, pass).decode_ahead);
    assert_non_null(pass_sink(PERCH_EXPORT_CHROME, 0, 0).symbol);
    assert_null(pass_sink(PERCH_EXPORT_CHROME, 0, 1).symbol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_lines),
        cmocka_unit_test(test_prefixed_lines),
        cmocka_unit_test(test_pmc_source),
        cmocka_unit_test(test_format_table),
        cmocka_unit_test(test_pass_order_and_limits),
        cmocka_unit_test(test_pass_sinks),
        cmocka_unit_test(test_stack_id_twice_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
