/*
 * speedscope export over the synthetic stream: the output parses as JSON (test-side strict
 * parser, itself checked on bad input), carries the schema fields of
 * https://www.speedscope.app/file-format-schema.json, one sampled profile per thread and PMC
 * source, root-first frame-index stacks, weights that sum to the expected CPU time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export_extreme.h"
#include "export_fixture.h"
#include "json_check.h"

static char *export_speedscope(struct jdoc *d)
{
    size_t len;
    int err;
    char *text = fx_export(PERCH_EXPORT_SPEEDSCOPE, NULL, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(d, text));
    return text;
}

static void test_json_checker_rejects(void **state)
{
    static const char *const bad[] = {"{",          "[1,]", "{\"a\" 1}", "01", "\"\x01\"", "[1] 2",
                                      "{\"a\":1,}", "nul",  "[\"\\x\"]", "1.", "-"};
    struct jdoc d;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(jparse(&d, bad[i]));
    assert_true(jparse(&d, "{\"a\":[1,-2.5e3,\"x\\u00e9\",true,null,{}]}"));
    assert_int_equal(jlen(&d, jget(&d, 0, "a")), 6);
    assert_true(jnum(&d, jat(&d, jget(&d, 0, "a"), 1)) == -2500.0);
    jfree(&d);
}

static void test_schema_fields(void **state)
{
    struct jdoc d;
    char *text = export_speedscope(&d);
    long frames = jget(&d, jget(&d, 0, "shared"), "frames");
    (void)state;
    assert_true(
        jstreq(&d, jget(&d, 0, "$schema"), "https://www.speedscope.app/file-format-schema.json"));
    assert_true(jstreq(&d, jget(&d, 0, "exporter"), "perch"));
    assert_int_equal(jtype_of(&d, jget(&d, 0, "name")), J_STR);
    /* distinct frame names: S1 4, app+0x200, hal, ntos+0x3000, app+0x400, svc+0x300,
     * ntdll+0x60, ?!0x12345678, ntos+0x5000 = 12 */
    assert_int_equal(jlen(&d, frames), 12);
    for (long i = 0; i < jlen(&d, frames); i++)
        assert_int_equal(jtype_of(&d, jget(&d, jat(&d, frames, i), "name")), J_STR);
    /* the heaviest timer profile: T3 (6 ms) is the 4th (T1, T1 pmc, T2, T3, T4) */
    assert_true(jnum(&d, jget(&d, 0, "activeProfileIndex")) == 3.0);
    jfree(&d);
    free(text);
}

static void test_profiles(void **state)
{
    struct jdoc d;
    char *text = export_speedscope(&d);
    long profiles = jget(&d, 0, "profiles");
    long frames = jget(&d, jget(&d, 0, "shared"), "frames");
    double timer_total = 0, pmc_total = 0;
    (void)state;
    assert_int_equal(jlen(&d, profiles), 5);
    for (long i = 0; i < 5; i++) {
        long p = jat(&d, profiles, i);
        long samples = jget(&d, p, "samples"), weights = jget(&d, p, "weights");
        double sum = 0;
        bool pmc = jstreq(&d, jget(&d, p, "unit"), "none");
        assert_true(jstreq(&d, jget(&d, p, "type"), "sampled"));
        assert_int_equal(jlen(&d, samples), jlen(&d, weights));
        for (long k = 0; k < jlen(&d, weights); k++) {
            long st = jat(&d, samples, k);
            sum += jnum(&d, jat(&d, weights, k));
            for (long f = 0; f < jlen(&d, st); f++) {
                double idx = jnum(&d, jat(&d, st, f));
                assert_true(idx >= 0 && idx < (double)jlen(&d, frames));
            }
        }
        assert_true(jnum(&d, jget(&d, p, "startValue")) == 0.0);
        assert_true(jnum(&d, jget(&d, p, "endValue")) == sum);
        if (pmc)
            pmc_total += sum;
        else
            timer_total += sum;
    }
    assert_true(timer_total == 16e6); /* 16 samples x 1 ms in ns */
    assert_true(pmc_total == 2.0);
    assert_true(jstreq(&d, jget(&d, jat(&d, profiles, 0), "name"), "app.exe (1234) main (1001)"));
    assert_true(jstreq(&d, jget(&d, jat(&d, profiles, 1), "name"),
                       "app.exe (1234) main (1001) pmc source 2"));
    assert_true(jstreq(&d, jget(&d, jat(&d, profiles, 4), "name"), "? (?) thread 3001"));
    {
        /* T1's first sample is S1 (3 samples), root first */
        long p = jat(&d, profiles, 0);
        long st = jat(&d, jget(&d, p, "samples"), 0);
        static const char *const names[] = {"ntdll.dll!+0x50", "app.exe!+0x100",
                                            "ntoskrnl.exe!+0x2000", "ntoskrnl.exe!+0x1000"};
        assert_int_equal(jlen(&d, st), 4);
        assert_true(jnum(&d, jat(&d, jget(&d, p, "weights"), 0)) == 3e6);
        for (long f = 0; f < 4; f++) {
            long fr = jat(&d, frames, (long)jnum(&d, jat(&d, st, f)));
            assert_true(jstreq(&d, jget(&d, fr, "name"), names[f]));
        }
    }
    jfree(&d);
    free(text);
}

/* Weights (count x interval ns) and endValue past 64 bits fail the export with PERCH_ELIMIT
 * instead of wrapping (2026-12-06). The interval 2^32 ns makes one sample of Count 2^32 - 1
 * the last that fits: 2^64 - 2^32 ns. */
static void test_weight_limit(void **state)
{
    static const struct xt_sample max = {10000000, UINT32_MAX};
    struct xt_stream x = {10000000, 0, &max, 1, 1};
    perch_export_options opt;
    struct jdoc d;
    size_t len;
    int err;
    char *text;
    (void)state;
    perch_export_options_init(&opt);
    opt.sample_interval_ns = (uint64_t)1 << 32;
    text = xt_export(PERCH_EXPORT_SPEEDSCOPE, &opt, &x, &len, &err);
    assert_int_equal(err, 0);
    assert_true(jparse(&d, text));
    assert_non_null(strstr(text, "\"endValue\":18446744069414584320,"));
    assert_non_null(strstr(text, "\"weights\":[18446744069414584320]"));
    jfree(&d);
    free(text);
    x.repeat = 2;
    assert_null(xt_export(PERCH_EXPORT_SPEEDSCOPE, &opt, &x, &len, &err));
    assert_int_equal(err, PERCH_ELIMIT);
    /* the review's capture: 5,000 samples of Count 2^32 - 1 at the default 1 ms */
    x.repeat = 5000;
    assert_null(xt_export(PERCH_EXPORT_SPEEDSCOPE, NULL, &x, &len, &err));
    assert_int_equal(err, PERCH_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_checker_rejects),
        cmocka_unit_test(test_schema_fields),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_weight_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
