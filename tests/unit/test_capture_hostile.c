/*
 * The capture reader on crafted captures that break a rule across records, which no sink
 * should have to check on its own (a review of hostile .perch files): a second trace_info
 * record; a ledger or stat name given twice (or not UTF-8, or past the reader's cap of names),
 * which became a JSON key given twice in `perch report --json`; stack ids that are not dense
 * from 1, and a sample naming a stack not defined before it, which the report refused as its
 * own error and the exports took silently. Each is refused as a malformed chunk at the
 * offending record, with a reason that says what and where, after every record before it was
 * delivered (and finish called, so a report of what was read can still be made). The captures
 * are written by the capture writer, which writes whatever its sink is given (the producers
 * never give it these), or by hand where the writer cannot lay the bytes out.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_hostile.h"
#include "perch/export.h"
#include "perch/report.h"
#include "testdata.h"

/* ---- one trace_info record ------------------------------------------------------------- */

/* A second trace_info chunk (what a second trace_info call on the writer writes) is refused at
 * its record; the first trace info and the records before the second are delivered, nothing
 * after it, and finish is called. Before: the second silently replaced the first in the
 * report and the exports. */
static void test_second_trace_info_chunk(void **state)
{
    cap c;
    perch_trace_info a, b;
    perch_process_rec p = {100, 1234, 4, 1, 0, 0, 0, 0, "game.exe", ""};
    perch_process_rec q = {101, 1235, 4, 1, 0, 0, 0, 0, "other.exe", ""};
    synth_rec out = {0};
    perch_capture_status st;
    char want[160];
    size_t len;
    (void)state;
    info_of(&a, "first", 10000000);
    info_of(&b, "second", 3000000);
    cap_open(&c);
    assert_int_equal(c.s.trace_info(c.s.ctx, &a), 0);
    assert_int_equal(c.s.process(c.s.ctx, &p), 0);
    assert_int_equal(perch__cap_flush_all(c.w), 0); /* p's chunk before the second info */
    assert_int_equal(c.s.trace_info(c.s.ctx, &b), 0);
    assert_int_equal(c.s.process(c.s.ctx, &q), 0);
    uint8_t *data = cap_take(&c, &len);

    uint64_t first = chunk_at(data, len, PERCH_CHUNK_TRACE_INFO, 0);
    uint64_t second = chunk_at(data, len, PERCH_CHUNK_TRACE_INFO, 1);
    assert_int_equal(replay(data, len, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.error, PERCH_EFORMAT);
    assert_int_equal(st.offset, second + 13); /* the record, after the count byte */
    assert_int_equal(st.good_bytes, second);
    snprintf(want, sizeof want,
             "malformed trace_info chunk at offset %" PRIu64 ": a second trace_info record (the "
             "first is in the chunk at offset %" PRIu64 ") at byte %" PRIu64,
             second, first, second + 13);
    assert_reason(&st, want);
    assert_int_equal(count_type(&out, PERCH_CHUNK_TRACE_INFO), 1);
    assert_string_equal(out.ev[0].u.info.source, "first");
    assert_int_equal(out.ev[0].u.info.perf_freq, 10000000);
    assert_int_equal(count_type(&out, PERCH_CHUNK_END), 1);     /* finish: what was read */
    assert_int_equal(count_type(&out, PERCH_CHUNK_PROCESS), 1); /* p, not q after it */
    assert_int_equal(out.ev[1].u.process.key, 100);
    synth_free(&out);
    free(data);
}

/* Two trace_info records in one chunk (not something the writer lays out): the second is
 * refused at its first byte. */
static void test_second_trace_info_record(void **state)
{
    uint8_t data[64 + 12 + 32], payload[32];
    size_t len = 0;
    synth_rec out = {0};
    perch_capture_status st;
    char want[160];
    (void)state;
    header_into(data);
    payload[len++] = 2; /* count */
    for (int rec = 0; rec < 2; rec++) {
        payload[len++] = 0;          /* source: NULL */
        for (int f = 0; f < 10; f++) /* os_build .. buffers_lost */
            payload[len++] = (uint8_t)(f == 4 ? 100 + rec : 0);
        payload[len++] = 0; /* session_config: NULL */
    }
    size_t n = 64 + put_chunk(data + 64, PERCH_CHUNK_TRACE_INFO, payload, (uint32_t)len);
    assert_int_equal(replay(data, n, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.offset, 64 + 12 + 1 + 12);
    snprintf(want, sizeof want,
             "malformed trace_info chunk at offset 64: a second trace_info record (the first is "
             "in the chunk at offset 64) at byte %d",
             64 + 12 + 1 + 12);
    assert_reason(&st, want);
    assert_int_equal(count_type(&out, PERCH_CHUNK_TRACE_INFO), 1);
    assert_int_equal(out.ev[0].u.info.perf_freq, 100);
    synth_free(&out);
}

/* ---- ledger and stat names, each once ------------------------------------------------- */

/* A ledger reason given twice is refused at its second record; the entries before it (and the
 * rest of the capture before the chunk) are delivered, no stat after it. Before: the report's
 * JSON had the key twice ("ledger":{"stack.orphan_user":1,...,"stack.orphan_user":3}). */
static void test_ledger_name_twice(void **state)
{
    const char *reasons[] = {"stack.orphan_user", "decode.short_payload", "stack.orphan_user"};
    const char *names[] = {"records.total"};
    synth_rec out = {0};
    perch_capture_status st;
    char want[160];
    size_t len;
    (void)state;
    uint8_t *data = named_capture(reasons, 3, names, 1, &len);
    uint64_t ledger = chunk_at(data, len, PERCH_CHUNK_LEDGER, 0);
    uint64_t at = record_at(data, len, PERCH_CHUNK_LEDGER, 2);
    assert_int_equal(replay(data, len, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.offset, at);
    snprintf(want, sizeof want,
             "malformed ledger chunk at offset %" PRIu64
             ": ledger name \"stack.orphan_user\" given twice at byte %" PRIu64,
             ledger, at);
    assert_reason(&st, want);
    assert_int_equal(count_type(&out, PERCH_CHUNK_LEDGER), 2);
    assert_int_equal(count_type(&out, PERCH_CHUNK_PROCESS), 1);
    assert_int_equal(count_type(&out, PERCH_CHUNK_STAT), 0);
    assert_int_equal(count_type(&out, PERCH_CHUNK_END), 1);
    synth_free(&out);
    free(data);
}

/* The same for a stat name; a name may be both a ledger reason and a stat (two lists). */
static void test_stat_name_twice(void **state)
{
    const char *reasons[] = {"records.total"};
    const char *names[] = {"records.total", "kind.SampledProfile", "kind.CSwitch",
                           "kind.SampledProfile"};
    synth_rec out = {0};
    perch_capture_status st;
    char want[160];
    size_t len;
    (void)state;
    uint8_t *data = named_capture(reasons, 1, names, 4, &len);
    uint64_t stat = chunk_at(data, len, PERCH_CHUNK_STAT, 0);
    uint64_t at = record_at(data, len, PERCH_CHUNK_STAT, 3);
    assert_int_equal(replay(data, len, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.offset, at);
    snprintf(want, sizeof want,
             "malformed stat chunk at offset %" PRIu64
             ": stat name \"kind.SampledProfile\" given twice at byte %" PRIu64,
             stat, at);
    assert_reason(&st, want);
    assert_int_equal(count_type(&out, PERCH_CHUNK_LEDGER), 1);
    assert_int_equal(count_type(&out, PERCH_CHUNK_STAT), 3);
    synth_free(&out);
    free(data);
}

/* Names that differ on disk but not as a consumer sees them are the same name: a NULL name
 * and "" (both print as ""), and strings that differ only after a NUL byte (the strings chunk
 * may hold one; the sink sees the C string). Crafted by hand: the writer writes C strings. */
static void test_names_equal_as_printed(void **state)
{
    static const uint8_t strings[] = {0, 1, 3, 3, 'a', 0, 'x', 3, 'a', 0, 'y', 0};
    static const uint8_t ledger[] = {4, 1, 1, 2, 2, 0, 3, 3, 4}; /* ids 1, 2 (same), 0 */
    uint8_t data[256];
    synth_rec out = {0};
    perch_capture_status st;
    size_t n = 64;
    (void)state;
    header_into(data);
    n += put_chunk(data + n, PERCH_CHUNK_STRINGS, strings, sizeof strings);
    uint64_t chunk = n;
    n += put_chunk(data + n, PERCH_CHUNK_LEDGER, ledger, sizeof ledger);
    assert_int_equal(replay(data, n, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.offset, chunk + 12 + 3); /* "a\0y" after "a\0x" */
    assert_non_null(strstr(st.reason, ": ledger name \"a\" given twice at byte"));
    synth_free(&out);

    /* the NULL name after "" */
    static const uint8_t empty[] = {0, 1, 1, 0};
    static const uint8_t ledger2[] = {2, 1, 1, 0, 2};
    n = 64;
    n += put_chunk(data + n, PERCH_CHUNK_STRINGS, empty, sizeof empty);
    chunk = n;
    n += put_chunk(data + n, PERCH_CHUNK_LEDGER, ledger2, sizeof ledger2);
    assert_int_equal(replay(data, n, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.offset, chunk + 12 + 3);
    assert_non_null(strstr(st.reason, ": ledger name \"\" given twice at byte"));
    synth_free(&out);
}

/* A name that is not UTF-8 is refused: its bytes would print as \u00XX escapes, and "\xe9"
 * then reads back in JSON as the same key as the UTF-8 "\xc3\xa9" (both U+00E9). */
static void test_name_not_utf8(void **state)
{
    const char *names[] = {"cpu.\xc3\xa9t\xc3\xa9", "cpu.\xe9t\xe9"};
    synth_rec out = {0};
    perch_capture_status st;
    size_t len;
    (void)state;
    uint8_t *data = named_capture(NULL, 0, names, 2, &len);
    assert_int_equal(replay(data, len, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.offset, record_at(data, len, PERCH_CHUNK_STAT, 1));
    assert_non_null(strstr(st.reason, ": stat name \"cpu.?t?\" is not UTF-8 at byte"));
    assert_int_equal(count_type(&out, PERCH_CHUNK_STAT), 1);
    synth_free(&out);
    free(data);
}

/* The names a reader holds are capped: the 4097th distinct ledger name stops reading with
 * stop reason `limit`. */
static void test_name_cap(void **state)
{
    char(*buf)[16] = malloc((PERCH_CAPTURE_MAX_NAMES + 1) * sizeof *buf);
    const char **reasons = malloc((PERCH_CAPTURE_MAX_NAMES + 1) * sizeof *reasons);
    synth_rec out = {0};
    perch_capture_status st;
    size_t len;
    (void)state;
    assert_non_null(buf);
    assert_non_null(reasons);
    for (unsigned i = 0; i <= PERCH_CAPTURE_MAX_NAMES; i++) {
        snprintf(buf[i], sizeof buf[i], "reason.%u", i);
        reasons[i] = buf[i];
    }
    uint8_t *data = named_capture(reasons, PERCH_CAPTURE_MAX_NAMES, NULL, 0, &len);
    assert_int_equal(replay(data, len, &out, &st), 0); /* 4096 names: fine */
    synth_free(&out);
    free(data);
    data = named_capture(reasons, PERCH_CAPTURE_MAX_NAMES + 1, NULL, 0, &len);
    assert_int_equal(replay(data, len, &out, &st), PERCH_ELIMIT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_LIMIT);
    assert_non_null(strstr(st.reason, ": more than 4096 ledger names or 1048576 bytes of them"));
    assert_int_equal(count_type(&out, PERCH_CHUNK_LEDGER), PERCH_CAPTURE_MAX_NAMES);
    synth_free(&out);
    free(data);
    free(reasons);
    free(buf);
}

/* What `perch report --json` makes of a capture with a ledger reason twice: each key once
 * (the entries read before the repeat), where before the key came twice. */
static void test_report_keys_once(void **state)
{
    const char *reasons[] = {"stack.orphan_user", "decode.short_payload", "stack.orphan_user"};
    perch_report *r = NULL;
    perch_sink s;
    perch_capture_status st;
    size_t len;
    (void)state;
    uint8_t *data = named_capture(reasons, 3, NULL, 0, &len);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &s);
    int err = perch_capture_replay_memory(data, len, &s, &st);
    char *json = perch_test_report_json(r);
    const char *ledger = strstr(json, "\"ledger\":{");
    assert_non_null(ledger);
    const char *first = strstr(ledger, "\"stack.orphan_user\":");
    assert_non_null(first);
    assert_null(strstr(first + 1, "\"stack.orphan_user\":"));
    assert_non_null(
        strstr(ledger, "\"ledger\":{\"stack.orphan_user\":1,\"decode.short_payload\":2}"));
    assert_int_equal(err, PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    free(json);
    perch_report_destroy(r);
    free(data);
}

/* ---- stack ids dense from 1, defined before a sample names them ------------------------- */

/* A sample naming a stack that was never defined is refused at the sample; the sample before
 * it is delivered. Before: the report refused it as its own sink error and the exports took
 * the sample's ip for its stack, a silent wrong answer. */
static void test_sample_stack_undefined(void **state)
{
    const step steps[] = {{'s', 1}, {'s', 2}, {'p', 2}, {'f', 0}, {'p', 3}, {'p', 1}};
    size_t len;
    (void)state;
    uint8_t *data = stack_capture(steps, 6, &len);
    uint64_t chunk = chunk_at(data, len, PERCH_CHUNK_SAMPLE, 1);
    synth_rec out = expect_stop(data, len, PERCH_EFORMAT, chunk + 13,
                                ": a sample names stack id 3 before it is defined (2 stacks so "
                                "far) at byte");
    assert_int_equal(count_type(&out, PERCH_CHUNK_STACK), 2);
    assert_int_equal(count_type(&out, PERCH_CHUNK_SAMPLE), 1);
    assert_int_equal(count_type(&out, PERCH_CHUNK_END), 1);
    synth_free(&out);
    free(data);
}

/* A sample before the stack it names (in file order) is refused too: a streaming consumer
 * (the report) cannot know the stack yet. */
static void test_sample_before_its_stack(void **state)
{
    const step steps[] = {{'p', 1}, {'f', 0}, {'s', 1}, {'p', 1}};
    size_t len;
    (void)state;
    uint8_t *data = stack_capture(steps, 4, &len);
    uint64_t chunk = chunk_at(data, len, PERCH_CHUNK_SAMPLE, 0);
    assert_true(chunk < chunk_at(data, len, PERCH_CHUNK_STACK, 0));
    synth_rec out = expect_stop(data, len, PERCH_EFORMAT, chunk + 13,
                                ": a sample names stack id 1 before it is defined (0 stacks so "
                                "far) at byte");
    assert_int_equal(count_type(&out, PERCH_CHUNK_SAMPLE), 0);
    synth_free(&out);

    /* the flight recorder's segments: stacks elsewhere, so not checked */
    perch_capture_read_opts opts = {sizeof opts, NULL, NULL, true, true};
    perch_capture_status st;
    perch_input in;
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_capture_replay_ex(&in, NULL, &opts, &st), 0);
    perch_input_close(&in);
    free(data);
}

/* Stack ids must be the next one, from 1: not 2 first, not 3 after 1, not 1 again, not 0. */
static void test_stack_ids_dense(void **state)
{
    static const struct {
        step steps[4];
        const char *why;
    } cases[] = {
        {{{'s', 2}}, ": stack id 2 out of order: the next is 1 (ids are dense from 1) at byte"},
        {{{'s', 1}, {'f', 0}, {'s', 3}},
         ": stack id 3 out of order: the next is 2 (ids are dense from 1) at byte"},
        {{{'s', 1}, {'s', 2}, {'f', 0}, {'s', 1}}, ": stack id 1 given twice at byte"},
        {{{'s', 1}, {'f', 0}, {'s', UINT32_MAX}},
         ": stack id 4294967295 out of order: the next is 2 (ids are dense from 1) at byte"},
        {{{'s', 1}, {'f', 0}, {'s', 0}},
         ": stack id 0 (ids are dense from 1; 0 means no stack) at byte"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0, len;
        while (n < 4 && cases[i].steps[n].what)
            n++;
        uint8_t *data = stack_capture(cases[i].steps, n, &len);
        unsigned last = 0;
        while (chunk_at_or_0(data, len, PERCH_CHUNK_STACK, last + 1))
            last++;
        uint64_t chunk = chunk_at(data, len, PERCH_CHUNK_STACK, last);
        synth_rec out = expect_stop(data, len, PERCH_EFORMAT, chunk + 13, cases[i].why);
        assert_int_equal(count_type(&out, PERCH_CHUNK_STACK), n == 1 ? 0 : n - 2);
        synth_free(&out);
        free(data);
    }
}

/* A record source over a capture in memory: ctx is {start, end}. */
static int replay_mem(void *ctx, const perch_sink *sink)
{
    const uint8_t *const *d = ctx;
    perch_capture_status st;
    return perch_capture_replay_memory(d[0], (size_t)(d[1] - d[0]), sink, &st);
}

/* What the report and the exports make of a capture whose sample names an undefined stack:
 * the reader's stop for each (for the report a partial capture, with what was read). Before:
 * the report stopped with its own refusal (stop `sink`, "the sink refused a sample record")
 * and all five exports succeeded, the sample drawn at its ip. */
static void test_consumers_get_the_reader_stop(void **state)
{
    const step steps[] = {{'s', 1}, {'p', 1}, {'f', 0}, {'p', 2}};
    perch_report *r = NULL;
    perch_sink s;
    perch_capture_status st;
    size_t len;
    (void)state;
    uint8_t *data = stack_capture(steps, 4, &len);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &s);
    assert_int_equal(perch_capture_replay_memory(data, len, &s, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK); /* not the report's own refusal */
    char *json = perch_test_report_json(r);
    assert_non_null(strstr(json, "\"samples\":1,\"samples_with_stack\":1,"));
    free(json);
    perch_report_destroy(r);
    const uint8_t *ends[2] = {data, data + len};
    perch_record_source src = {(void *)ends, replay_mem, NULL};
    for (int fmt = 0; fmt < PERCH_EXPORT_FORMAT_COUNT; fmt++) {
        perch_output out;
        perch_memory_out mem;
        size_t olen;
        perch_output_memory(&out, &mem, 16 << 20);
        assert_int_equal(perch_export_run((perch_export_format)fmt, NULL, &src, &out),
                         PERCH_EFORMAT);
        free(perch_output_memory_take(&mem, &olen));
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_trace_info_chunk),
        cmocka_unit_test(test_second_trace_info_record),
        cmocka_unit_test(test_ledger_name_twice),
        cmocka_unit_test(test_stat_name_twice),
        cmocka_unit_test(test_names_equal_as_printed),
        cmocka_unit_test(test_name_not_utf8),
        cmocka_unit_test(test_name_cap),
        cmocka_unit_test(test_report_keys_once),
        cmocka_unit_test(test_sample_stack_undefined),
        cmocka_unit_test(test_sample_before_its_stack),
        cmocka_unit_test(test_stack_ids_dense),
        cmocka_unit_test(test_consumers_get_the_reader_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
