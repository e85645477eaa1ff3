/*
 * The capture reader on crafted captures that break a rule across records, which no sink
 * should have to check on its own (a review of hostile .perch files): a second trace_info
 * record. Each is refused as a malformed chunk at the offending record, with a reason that
 * says what and where, after every record before it was delivered (and finish called, so a
 * report of what was read can still be made). The captures are written by the capture writer,
 * which writes whatever its sink is given (the producers never give it these), or by hand
 * where the writer cannot lay the bytes out.
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

#include "capture/crc32c.h"
#include "capture/writer.h"
#include "capture_synth.h"
#include "perch/capture.h"
#include "perch/error.h"

/* ---- writing and reading --------------------------------------------------------------- */

typedef struct cap {
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink s;
} cap;

static void cap_open(cap *c)
{
    perch_output_memory(&c->out, &c->mem, 16 << 20);
    assert_int_equal(perch_capture_writer_create(&c->out, NULL, &c->w), 0);
    perch_capture_writer_sink(c->w, &c->s);
}

/* Finishes the capture and takes its bytes (free them). */
static uint8_t *cap_take(cap *c, size_t *len)
{
    assert_int_equal(perch_capture_writer_finish(c->w), 0);
    perch_capture_writer_destroy(c->w);
    return perch_output_memory_take(&c->mem, len);
}

static void info_of(perch_trace_info *t, const char *source, uint64_t freq)
{
    memset(t, 0, sizeof *t);
    t->source = source;
    t->pointer_size = 8;
    t->cpu_count = 4;
    t->perf_freq = freq;
}

static int replay(const uint8_t *data, size_t len, synth_rec *out, perch_capture_status *st)
{
    perch_sink rec;
    synth_recorder(out, &rec);
    memset(st, 0xff, sizeof *st);
    return perch_capture_replay_memory(data, len, &rec, st);
}

/* The offset of the n-th chunk (0 first) of type `type`, walking the chunk headers. */
static uint64_t chunk_at(const uint8_t *data, size_t len, unsigned type, unsigned n)
{
    for (size_t off = PERCH_CAPTURE_HEADER_SIZE; off + 12 <= len;) {
        unsigned t = data[off] | (unsigned)data[off + 1] << 8;
        uint32_t plen = (uint32_t)data[off + 4] | (uint32_t)data[off + 5] << 8 |
                        (uint32_t)data[off + 6] << 16 | (uint32_t)data[off + 7] << 24;
        if (t == type && n-- == 0)
            return off;
        off += 12 + (size_t)plen;
    }
    fail_msg("no chunk of type %u", type);
    return 0;
}

static size_t count_type(const synth_rec *r, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < r->count; i++)
        n += r->ev[i].type == type;
    return n;
}

static void assert_reason(const perch_capture_status *st, const char *want)
{
    if (strcmp(st->reason, want) != 0)
        fail_msg("reason\n  \"%s\"\nwanted\n  \"%s\"", st->reason, want);
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes a chunk of `type` with payload p[0..n) at out; returns its size. */
static size_t put_chunk(uint8_t *out, unsigned type, const uint8_t *p, uint32_t n)
{
    put_le(out, type, 2);
    put_le(out + 2, 0, 2);
    put_le(out + 4, n, 4);
    memcpy(out + 12, p, n);
    put_le(out + 8, perch__crc32c(perch__crc32c(0, out, 8), out + 12, n), 4);
    return 12 + (size_t)n;
}

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
    cap c;
    cap_open(&c);
    size_t hlen;
    uint8_t *head = cap_take(&c, &hlen); /* a header and an end chunk */
    memcpy(data, head, 64);
    free(head);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_trace_info_chunk),
        cmocka_unit_test(test_second_trace_info_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
