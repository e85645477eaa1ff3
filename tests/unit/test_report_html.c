/*
 * perch report --html over the export fixture's record stream (late entity records, stacks
 * with and without user halves, PMC samples, slices): one page with no external reference;
 * the embedded report JSON is byte for byte perch_report_write_json's; the page data parses
 * (strict JSON) and holds a flame tree whose root is every timer sample (16), whose children
 * are processes then threads then frames named as the exports name them, with every node's
 * value at least the sum of its children; top functions (self at the leaf); CPU over time
 * per process that adds up to the samples; a name with "</script>" cannot end a block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export_fixture.h"
#include "json_check.h"
#include "perch/report.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The text between <script type="application/json" id="ID"> and </script>, NUL-ended in place. */
static char *block(char *page, const char *id)
{
    char open[96], *p, *end;
    snprintf(open, sizeof open, "<script type=\"application/json\" id=\"%s\">", id);
    p = strstr(page, open);
    assert_non_null(p);
    p += strlen(open);
    end = strstr(p, "</script>");
    assert_non_null(end);
    *end = 0;
    return p;
}

static perch_report *fixture_report(bool html)
{
    perch_report *r = NULL;
    perch_sink s;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    if (html)
        assert_int_equal(perch_report_enable_html(r), 0);
    perch_report_sink(r, &s);
    assert_int_equal(fx_replay(NULL, &s), 0);
    return r;
}

static char *json_of(perch_report *r)
{
    const char *path = "test_report_html.json.tmp";
    FILE *f = fopen(path, "wb");
    perch_json w;
    char *text;
    assert_non_null(f);
    perch_json_init(&w, perch_json_file_sink, f);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    fclose(f);
    text = slurp(path);
    remove(path);
    return text;
}

static char *page_of(perch_report *r)
{
    const char *path = "test_report_html.html.tmp";
    FILE *f = fopen(path, "wb");
    char *text;
    assert_non_null(f);
    assert_int_equal(perch_report_write_html(r, f), 0);
    fclose(f);
    text = slurp(path);
    remove(path);
    return text;
}

static double num_at(const struct jdoc *d, long arr, long i)
{
    return jnum(d, jat(d, arr, i));
}

static void test_page(void **state)
{
    perch_report *r = fixture_report(true), *plain = fixture_report(false);
    char *page = page_of(r), *json = json_of(plain);
    char *report, *html;
    struct jdoc d;
    long flame, parent, value, names, name, n;
    (void)state;
    assert_non_null(strstr(page, "<!DOCTYPE html>"));
    assert_null(strstr(page, "@@"));    /* every marker filled */
    assert_null(strstr(page, " src=")); /* no external script */
    assert_null(strstr(page, "<link")); /* no external style */
    report = block(page, "perch-report");
    html = block(report + strlen(report) + 1, "perch-html");
    while (*report == '\n')
        report++;
    assert_true(strncmp(report, json, strlen(json)) == 0); /* the same report, with .html too */
    assert_true(jparse(&d, html));
    flame = jget(&d, 0, "flame");
    parent = jget(&d, flame, "parent");
    value = jget(&d, flame, "value");
    names = jget(&d, flame, "names");
    name = jget(&d, flame, "name");
    n = jlen(&d, parent);
    assert_true(n > 10);
    assert_true(num_at(&d, value, 0) == 16); /* every timer sample, PMC not counted */
    assert_true(jstreq(&d, jat(&d, names, (long)num_at(&d, name, 0)), "all"));
    for (long i = 1; i < n; i++) {
        double sum = 0;
        assert_true(num_at(&d, parent, i) < i); /* parents first */
        for (long k = i + 1; k < n; k++)
            if (num_at(&d, parent, k) == i)
                sum += num_at(&d, value, k);
        assert_true(num_at(&d, value, i) >= sum);
    }
    /* root children: app.exe (1234) 9, svc.exe (5678) 6, ? (?) 1 */
    for (long i = 1; i < n; i++) {
        if (num_at(&d, parent, i) != 0)
            continue;
        long nm = jat(&d, names, (long)num_at(&d, name, i));
        double v = num_at(&d, value, i);
        assert_true((jstreq(&d, nm, "app.exe (1234)") && v == 9) ||
                    (jstreq(&d, nm, "svc.exe (5678)") && v == 6) ||
                    (jstreq(&d, nm, "? (?)") && v == 1));
    }
    /* the busiest leaf: svc.exe!+0x300 (T3's S4, 5 samples) */
    long f0 = jat(&d, jget(&d, 0, "functions"), 0);
    assert_true(jstreq(&d, jget(&d, f0, "name"), "svc.exe!+0x300"));
    assert_true(jnum(&d, jget(&d, f0, "self")) == 5);
    /* CPU over time adds up to the samples */
    long series = jget(&d, jget(&d, 0, "timeline"), "series");
    double total = 0;
    for (long s = 0; s < jlen(&d, series); s++) {
        long c = jget(&d, jat(&d, series, s), "counts");
        for (long b = 0; b < jlen(&d, c); b++)
            total += num_at(&d, c, b);
    }
    assert_true(total == 16);
    assert_true(jnum(&d, jget(&d, 0, "interval_ns")) == 1000000);
    jfree(&d);
    free(page);
    free(json);
    perch_report_destroy(r);
    perch_report_destroy(plain);
}

/* A thread named "</script><script>alert(1)" is written as \u003c/script>... */
static void test_names_cannot_end_a_block(void **state)
{
    perch_report *r = NULL;
    perch_sink s;
    char *page;
    (void)state;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    assert_int_equal(perch_report_enable_html(r), 0);
    perch_report_sink(r, &s);
    assert_int_equal(fx_info(&s), 0);
    assert_int_equal(fx_process(&s, 7, 70, "</script><script>alert(1)</script>"), 0);
    assert_int_equal(fx_thread(&s, 8, 7, 71, 70, "t"), 0);
    perch_sample_rec x = {8, 71, 0, PERCH_SAMPLE_TIMER, 0, 0, FX_START + 10, 0x1234, 0, 0, 1};
    assert_int_equal(s.sample(s.ctx, &x), 0);
    page = page_of(r);
    assert_null(strstr(page, "<script>alert"));
    assert_non_null(strstr(page, "\\u003c/script>\\u003cscript>alert(1)"));
    free(page);
    perch_report_destroy(r);
}

/* The CPU-over-time chart of 0.5 s of samples an hour after the trace's start: a live capture
 * (no end time) starts the chart at its first sample, in 10 ms bars; a trace with an end time
 * (an .etl, an import) keeps the trace's start, so its bars cover the hour. */
static void chart_of_late_samples(uint64_t end_filetime, double *bucket_ns, double *buckets)
{
    perch_report *r = NULL;
    perch_sink s;
    struct jdoc d;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    assert_int_equal(perch_report_enable_html(r), 0);
    perch_report_sink(r, &s);
    assert_int_equal(fx_info_ended(&s, end_filetime), 0);
    assert_int_equal(fx_process(&s, 7, 70, "late.exe"), 0);
    assert_int_equal(fx_thread(&s, 8, 7, 71, 70, "t"), 0);
    for (uint64_t k = 0; k < 50; k++) {
        perch_sample_rec x = {8,
                              71,
                              0,
                              PERCH_SAMPLE_TIMER,
                              0,
                              0,
                              FX_START + 3600ull * FX_FREQ + k * (FX_FREQ / 100),
                              0x1234,
                              0,
                              0,
                              1};
        assert_int_equal(s.sample(s.ctx, &x), 0);
    }
    char *page = page_of(r);
    char *report = block(page, "perch-report");
    char *html = block(report + strlen(report) + 1, "perch-html");
    assert_true(jparse(&d, html));
    long timeline = jget(&d, 0, "timeline");
    *bucket_ns = jnum(&d, jget(&d, timeline, "bucket_ns"));
    *buckets = jnum(&d, jget(&d, timeline, "buckets"));
    jfree(&d);
    free(page);
    perch_report_destroy(r);
}

static void test_live_chart_starts_at_first_sample(void **state)
{
    double bucket_ns, buckets;
    (void)state;
    chart_of_late_samples(0, &bucket_ns, &buckets);
    assert_true(bucket_ns <= 10.0e6 + 200 && buckets >= 49 && buckets <= 51);
    chart_of_late_samples(133000000000000000ull + 3601ull * 10000000u, &bucket_ns, &buckets);
    assert_true(bucket_ns * buckets >= 3600.0e9); /* from the trace's start */
}

/* Without perch_report_enable_html the page cannot be written. */
static void test_needs_html_option(void **state)
{
    perch_report *r = fixture_report(false);
    FILE *f = fopen("test_report_html.none.tmp", "wb");
    (void)state;
    assert_non_null(f);
    assert_int_equal(perch_report_write_html(r, f), PERCH_EINVAL);
    fclose(f);
    remove("test_report_html.none.tmp");
    perch_report_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_names_cannot_end_a_block),
        cmocka_unit_test(test_live_chart_starts_at_first_sample),
        cmocka_unit_test(test_needs_html_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
