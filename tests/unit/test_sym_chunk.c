/*
 * The capture's symbol chunk (type 14, docs/symbols.md "In a capture"): symbol records
 * written through the capture writer come back from the reader field for field, extremes
 * included (RVA 0 and the top of the 32-bit space, a function that starts before its run, an
 * empty and a 4 KiB name, every source value, module keys going down), after the module they
 * name. (Damaged symbol chunks are fuzz_capture's.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "perch/sym.h"

struct seen {
    perch_symbol_rec rec[16];
    char names[16][4100];
    int n, modules;
    bool module_first;
};

static int on_module(void *ctx, const perch_module_rec *r)
{
    struct seen *s = ctx;
    (void)r;
    s->modules++;
    return 0;
}

static int on_symbol(void *ctx, const perch_symbol_rec *r)
{
    struct seen *s = ctx;
    assert_true(s->n < 16);
    s->module_first = s->module_first || s->modules > 0;
    s->rec[s->n] = *r;
    snprintf(s->names[s->n], sizeof s->names[0], "%s", r->name);
    s->rec[s->n].name = s->names[s->n];
    s->n++;
    return 0;
}

static uint8_t *write_capture(const perch_symbol_rec *recs, int n, size_t *len)
{
    perch_memory_out mem;
    perch_output out;
    perch_capture_writer_opts opts;
    perch_capture_writer *w = NULL;
    perch_sink s;
    perch_trace_info info;
    perch_output_memory(&out, &mem, 1u << 24);
    perch_capture_writer_opts_default(&opts);
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), 0);
    perch_capture_writer_sink(w, &s);
    memset(&info, 0, sizeof info);
    info.source = "t";
    info.pointer_size = 8;
    assert_int_equal(s.trace_info(s.ctx, &info), 0);
    perch_module_rec m = {7, 1, 100, 0x10000, 0x1000, 0, 0, 0, 0, "C:\\a.dll", false, {0}, 0, ""};
    assert_int_equal(s.module(s.ctx, &m), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(s.symbol(s.ctx, &recs[i]), 0);
    assert_int_equal(s.finish(s.ctx), 0);
    perch_capture_writer_destroy(w);
    assert_int_equal(out.close(out.ctx), 0);
    return perch_output_memory_take(&mem, len);
}

static int replay(const uint8_t *p, size_t len, struct seen *s)
{
    perch_input in;
    perch_sink sink;
    perch_capture_status st;
    memset(&sink, 0, sizeof sink);
    memset(s, 0, sizeof *s);
    sink.ctx = s;
    sink.module = on_module;
    sink.symbol = on_symbol;
    perch_input_memory(&in, p, len);
    int err = perch_capture_replay(&in, &sink, &st);
    perch_input_close(&in);
    return err;
}

static void test_round_trip(void **state)
{
    static char big[4097];
    (void)state;
    memset(big, 'n', 4096);
    const perch_symbol_rec recs[] = {
        {7, 0x1000, 0x20, 0x1000, 0x20, PERCH_SYM_PROC, "main"},
        {7, 0x0, 0x1, 0x0, 0x0, PERCH_SYM_PUBLIC, ""},
        {7, 0xffffffe0u, 0x1f, 0xffffffe0u, 0x1f, PERCH_SYM_EXPORT, big},
        {7, 0x5000, 0x10, 0x1100, 0x80, PERCH_SYM_PDATA, "fun_1100"},
        {3, 0x2000, 0xffffffffu, 0xffffffffu, 0, PERCH_SYM_DBGHELP, "x"},
        {0xffffffffffffffffull, 1, 1, 1, 1, 255, "unknown source"},
    };
    int n = (int)(sizeof recs / sizeof recs[0]);
    size_t len;
    struct seen s;
    uint8_t *p = write_capture(recs, n, &len);
    assert_int_equal(replay(p, len, &s), 0);
    assert_int_equal(s.n, n);
    assert_true(s.module_first);
    for (int i = 0; i < n; i++) {
        assert_int_equal(s.rec[i].module_key, recs[i].module_key);
        assert_int_equal(s.rec[i].span_rva, recs[i].span_rva);
        assert_int_equal(s.rec[i].span_size, recs[i].span_size);
        assert_int_equal(s.rec[i].func_rva, recs[i].func_rva);
        assert_int_equal(s.rec[i].func_size, recs[i].func_size);
        assert_int_equal(s.rec[i].source, recs[i].source);
        assert_string_equal(s.rec[i].name, recs[i].name);
    }
    perch_free(p);
}

static void test_capture_names(void **state)
{
    (void)state;
    assert_string_equal(perch_capture_chunk_name(PERCH_CHUNK_SYMBOL), "symbol");
    assert_true(PERCH_CHUNK_SYMBOL < PERCH_CHUNK_TYPE_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_capture_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
