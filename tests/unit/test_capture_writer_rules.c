/*
 * The capture writer refuses what the capture reader refuses (the rules across records,
 * docs/capture-format.md 2): a second trace_info record; a ledger or stat name given twice or
 * not UTF-8 (PERCH_EINVAL), or past the caps of names (PERCH_ELIMIT); stack ids that are not
 * 1, 2, 3, ... (0, a skip, a repeat) and a sample naming a stack not yet written. Each case
 * checks the error code, the reason, that not a byte or a record of the refused one was
 * taken, that the writer goes on (a refusal is not sticky), and that the capture, finished,
 * reads back to its end chunk with exactly the records taken. The flight recorder's segments
 * opt out (stacks_elsewhere) and read back with the reader's option of that name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/writer.h"
#include "util/mem.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/io.h"

typedef struct cap {
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink s;
} cap;

static void cap_open_ex(cap *c, bool stacks_elsewhere)
{
    perch_capture_writer_opts o;
    perch_capture_writer_opts_default(&o);
    o.stacks_elsewhere = stacks_elsewhere;
    perch_output_memory(&c->out, &c->mem, 32 << 20);
    assert_int_equal(perch_capture_writer_create(&c->out, &o, &c->w), 0);
    perch_capture_writer_sink(c->w, &c->s);
}

static void cap_open(cap *c)
{
    cap_open_ex(c, false);
}

/* Records of each type a replay delivered. */
typedef struct counts {
    uint64_t n[PERCH_CHUNK_TYPE_LIMIT];
} counts;

static int count_info(void *ctx, const perch_trace_info *r)
{
    (void)r;
    ((counts *)ctx)->n[PERCH_CHUNK_TRACE_INFO]++;
    return 0;
}

static int count_stack(void *ctx, const perch_stack_rec *r)
{
    (void)r;
    ((counts *)ctx)->n[PERCH_CHUNK_STACK]++;
    return 0;
}

static int count_sample(void *ctx, const perch_sample_rec *r)
{
    (void)r;
    ((counts *)ctx)->n[PERCH_CHUNK_SAMPLE]++;
    return 0;
}

static int count_ledger(void *ctx, const perch_ledger_rec *r)
{
    (void)r;
    ((counts *)ctx)->n[PERCH_CHUNK_LEDGER]++;
    return 0;
}

static int count_stat(void *ctx, const perch_stat_rec *r)
{
    (void)r;
    ((counts *)ctx)->n[PERCH_CHUNK_STAT]++;
    return 0;
}

/* Replays the capture held so far (finished or not) with the reader's stacks_elsewhere as
 * given; returns the stop reason and fills *got. */
static int replay(const uint8_t *data, size_t len, bool stacks_elsewhere, counts *got)
{
    perch_sink s = {0};
    perch_input in;
    perch_capture_status st;
    perch_capture_read_opts o = {sizeof o, NULL, NULL, true, stacks_elsewhere};
    memset(got, 0, sizeof *got);
    s.ctx = got;
    s.trace_info = count_info;
    s.stack = count_stack;
    s.sample = count_sample;
    s.ledger = count_ledger;
    s.stat = count_stat;
    perch_input_memory(&in, data, len);
    perch_capture_replay_ex(&in, &s, &o, &st);
    perch_input_close(&in);
    if (st.stop != PERCH_CAPTURE_STOP_END && st.stop != PERCH_CAPTURE_STOP_NO_END)
        print_message("stopped: %s\n", st.reason);
    return st.stop;
}

/* Finishes the capture and checks that it reads to its end chunk with the writer's own count
 * of records of every type (so every record taken, none refused); want_elsewhere is the
 * reader's option. */
static void finish_and_check(cap *c, bool want_elsewhere)
{
    perch_capture_writer_stats ws;
    counts got;
    size_t len;
    assert_int_equal(perch_capture_writer_finish(c->w), 0);
    perch_capture_writer_get_stats(c->w, &ws);
    perch_capture_writer_destroy(c->w);
    uint8_t *data = perch_output_memory_take(&c->mem, &len);
    assert_int_equal(replay(data, len, want_elsewhere, &got), PERCH_CAPTURE_STOP_END);
    static const unsigned types[] = {PERCH_CHUNK_TRACE_INFO, PERCH_CHUNK_STACK, PERCH_CHUNK_SAMPLE,
                                     PERCH_CHUNK_LEDGER, PERCH_CHUNK_STAT};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        assert_int_equal(got.n[types[i]], ws.records[types[i]]);
    perch_free(data);
}

/* Calls `call` (a sink callback's return), which must be refused with want and a reason
 * holding `why`, taking nothing: no byte written, no record counted, the refusal counted. */
#define REFUSED(c, call, want, why)                                                                \
    do {                                                                                           \
        perch_capture_writer_stats before_, after_;                                                \
        perch_capture_writer_get_stats((c)->w, &before_);                                          \
        assert_int_equal((call), (want));                                                          \
        perch_capture_writer_get_stats((c)->w, &after_);                                           \
        assert_int_equal(after_.bytes, before_.bytes);                                             \
        assert_memory_equal(after_.records, before_.records, sizeof after_.records);               \
        assert_int_equal(after_.refused, before_.refused + 1);                                     \
        assert_non_null(strstr(perch_capture_writer_refusal((c)->w), (why)));                      \
    } while (0)

static int info(cap *c)
{
    perch_trace_info t = {0};
    t.source = "test";
    t.cpu_count = 4;
    return c->s.trace_info(c->s.ctx, &t);
}

static int stack(cap *c, uint32_t id)
{
    static const uint64_t frames[3] = {0x1000, 0x2000, 0x3000};
    perch_stack_rec s = {id, 3, 1, frames};
    return c->s.stack(c->s.ctx, &s);
}

static int sample(cap *c, uint32_t stack_id)
{
    perch_sample_rec s = {0};
    s.thread_key = 7;
    s.tid = 7;
    s.ts = 100;
    s.ip = 0x1000;
    s.count = 1;
    s.stack_id = stack_id;
    return c->s.sample(c->s.ctx, &s);
}

static int ledger(cap *c, const char *name)
{
    perch_ledger_rec l = {name, 1};
    return c->s.ledger(c->s.ctx, &l);
}

static int stat(cap *c, const char *name)
{
    perch_stat_rec s = {name, 2};
    return c->s.stat(c->s.ctx, &s);
}

static void test_second_trace_info(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(info(&c), 0);
    assert_string_equal(perch_capture_writer_refusal(c.w), "");
    REFUSED(&c, info(&c), PERCH_EINVAL, "a second trace_info record");
    assert_int_equal(stack(&c, 1), 0); /* not sticky */
    finish_and_check(&c, false);
}

/* The refusal's words are the reader's, the first record's offset included: a capture written
 * unchecked with two trace_info records stops with the same reason. */
static void test_second_trace_info_reason_is_the_readers(void **state)
{
    cap c, u;
    perch_capture_status st;
    size_t len;
    (void)state;
    cap_open(&c);
    assert_int_equal(info(&c), 0);
    REFUSED(&c, info(&c), PERCH_EINVAL, "a second trace_info record (the first is in the chunk");
    cap_open(&u);
    perch__cap_writer_unchecked(u.w);
    assert_int_equal(info(&u), 0);
    assert_int_equal(info(&u), 0);
    assert_int_equal(perch_capture_writer_finish(u.w), 0);
    perch_capture_writer_destroy(u.w);
    uint8_t *data = perch_output_memory_take(&u.mem, &len);
    perch_sink none = {0};
    perch_capture_replay_memory(data, len, &none, &st);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    print_message("reader: %s\nwriter: %s\n", st.reason, perch_capture_writer_refusal(c.w));
    assert_non_null(strstr(st.reason, perch_capture_writer_refusal(c.w)));
    perch_free(data);
    finish_and_check(&c, false);
}

static void *no_memory(void *p, size_t size)
{
    if (size == 0)
        return perch__default_realloc(p, 0);
    return NULL;
}

/* Running out of memory while noting a name (the writer's list of names written) leaves the
 * record out whole, not half written, and is not sticky: the same record then goes in. */
static void test_noting_a_name_out_of_memory(void **state)
{
    cap c;
    perch_capture_writer_stats before, after;
    size_t len = 100u << 10; /* the list's arena must grow for it */
    char *name = malloc(len + 1);
    (void)state;
    memset(name, 'n', len);
    name[len] = '\0';
    cap_open(&c);
    assert_int_equal(ledger(&c, "a.lost"), 0); /* the ledger chunk and the list exist */
    assert_int_equal(stat(&c, name), 0);       /* the string is interned: no allocation */
    perch_capture_writer_get_stats(c.w, &before);
    perch__realloc_hook = no_memory;
    int err = ledger(&c, name);
    perch__realloc_hook = perch__default_realloc;
    assert_int_equal(err, PERCH_ENOMEM);
    perch_capture_writer_get_stats(c.w, &after);
    assert_memory_equal(after.records, before.records, sizeof after.records);
    assert_int_equal(after.refused, before.refused);
    assert_int_equal(ledger(&c, name), 0);
    free(name);
    finish_and_check(&c, false);
}

static void test_ledger_name_twice(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(ledger(&c, "a.lost"), 0);
    assert_int_equal(ledger(&c, "b.lost"), 0);
    REFUSED(&c, ledger(&c, "a.lost"), PERCH_EINVAL, "ledger name \"a.lost\" given twice");
    assert_int_equal(stat(&c, "a.lost"), 0); /* a reason may also be a stat name */
    assert_int_equal(ledger(&c, "c.lost"), 0);
    finish_and_check(&c, false);
}

static void test_stat_name_twice(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(stat(&c, "events"), 0);
    REFUSED(&c, stat(&c, "events"), PERCH_EINVAL, "stat name \"events\" given twice");
    assert_int_equal(stat(&c, NULL), 0);
    REFUSED(&c, stat(&c, ""), PERCH_EINVAL, "stat name \"\" given twice"); /* NULL reads as "" */
    finish_and_check(&c, false);
}

static void test_name_not_utf8(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    REFUSED(&c, ledger(&c, "bad\xff"), PERCH_EINVAL, "ledger name \"bad?\" is not UTF-8");
    REFUSED(&c, stat(&c, "x\xc3\x28"), PERCH_EINVAL, "stat name \"x?(\" is not UTF-8");
    assert_int_equal(stat(&c, "caf\xc3\xa9"), 0);
    assert_int_equal(ledger(&c, "bad"), 0);
    finish_and_check(&c, false);
}

static void test_name_count_cap(void **state)
{
    cap c;
    char name[32];
    (void)state;
    cap_open(&c);
    for (unsigned i = 0; i < PERCH_CAPTURE_MAX_NAMES; i++) {
        snprintf(name, sizeof name, "stat.%u", i);
        assert_int_equal(stat(&c, name), 0);
    }
    REFUSED(&c, stat(&c, "one.more"), PERCH_ELIMIT, "more than 4096 stat names");
    assert_int_equal(ledger(&c, "one.more"), 0); /* the cap is per type */
    finish_and_check(&c, false);
}

/* Eight names of PERCH_CAPTURE_MAX_STRING - 1 bytes fill the 1 MiB exactly (each counts its
 * NUL): a ninth, however short, is past the cap; so is one more ledger name of the same
 * size after a short one. */
static void test_name_bytes_cap(void **state)
{
    cap c;
    size_t len = PERCH_CAPTURE_MAX_STRING - 1;
    char *name = malloc(len + 1);
    (void)state;
    assert_non_null(name);
    memset(name, 'n', len);
    name[len] = '\0';
    cap_open(&c);
    for (unsigned i = 0; i < PERCH_CAPTURE_MAX_NAME_BYTES / PERCH_CAPTURE_MAX_STRING; i++) {
        name[0] = (char)('a' + i);
        assert_int_equal(stat(&c, name), 0);
    }
    REFUSED(&c, stat(&c, "x"), PERCH_ELIMIT, "more than 4096 stat names or 1048576 bytes");
    assert_int_equal(ledger(&c, "x"), 0);
    for (unsigned i = 0; i < 7; i++) {
        name[0] = (char)('a' + i);
        assert_int_equal(ledger(&c, name), 0);
    }
    name[0] = 'z';
    REFUSED(&c, ledger(&c, name), PERCH_ELIMIT, "ledger names or 1048576 bytes");
    free(name);
    finish_and_check(&c, false);
}

/* Names longer than a string may be are cut (at a UTF-8 boundary) before they are compared,
 * as the reader sees them: two that differ only past the cut are the same name. */
static void test_name_compared_after_cut(void **state)
{
    cap c;
    size_t len = PERCH_CAPTURE_MAX_STRING + 100;
    char *name = malloc(len + 1);
    (void)state;
    assert_non_null(name);
    memset(name, 'n', len);
    name[len] = '\0';
    cap_open(&c);
    assert_int_equal(stat(&c, name), 0);
    name[len - 1] = 'm';
    REFUSED(&c, stat(&c, name), PERCH_EINVAL, "given twice");
    free(name);
    finish_and_check(&c, false);
}

static void test_stack_id_skipping(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(stack(&c, 1), 0);
    REFUSED(&c, stack(&c, 3), PERCH_EINVAL,
            "stack id 3 out of order: the next is 2 (ids are dense from 1)");
    assert_int_equal(stack(&c, 2), 0);
    assert_int_equal(sample(&c, 2), 0);
    finish_and_check(&c, false);
}

static void test_stack_id_zero(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    REFUSED(&c, stack(&c, 0), PERCH_EINVAL, "stack id 0 (ids are dense from 1; 0 means no stack)");
    assert_int_equal(stack(&c, 1), 0);
    REFUSED(&c, stack(&c, 0), PERCH_EINVAL, "stack id 0");
    finish_and_check(&c, false);
}

static void test_stack_id_repeated(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(stack(&c, 1), 0);
    assert_int_equal(stack(&c, 2), 0);
    REFUSED(&c, stack(&c, 2), PERCH_EINVAL, "stack id 2 given twice");
    REFUSED(&c, stack(&c, 1), PERCH_EINVAL, "stack id 1 given twice");
    assert_int_equal(stack(&c, 3), 0);
    finish_and_check(&c, false);
}

static void test_sample_before_its_stack(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(sample(&c, 0), 0); /* no stack */
    REFUSED(&c, sample(&c, 1), PERCH_EINVAL,
            "a sample names stack id 1 before it is defined (0 stacks so far)");
    assert_int_equal(stack(&c, 1), 0);
    assert_int_equal(sample(&c, 1), 0);
    finish_and_check(&c, false);
}

static void test_sample_stack_undefined(void **state)
{
    cap c;
    (void)state;
    cap_open(&c);
    assert_int_equal(stack(&c, 1), 0);
    assert_int_equal(stack(&c, 2), 0);
    REFUSED(&c, sample(&c, 5), PERCH_EINVAL, "stack id 5 before it is defined (2 stacks so far)");
    REFUSED(&c, sample(&c, UINT32_MAX), PERCH_EINVAL, "before it is defined");
    assert_int_equal(sample(&c, 2), 0);
    assert_int_equal(sample(&c, 1), 0);
    finish_and_check(&c, false);
}

/* The flight recorder's segments: samples name the model's stack ids, whose stacks are kept
 * elsewhere. The writer takes them, and the reader reads them with the same option (and
 * refuses them without it, so the option is what made the difference). */
static void test_stacks_elsewhere(void **state)
{
    cap c;
    counts got;
    size_t len;
    (void)state;
    cap_open_ex(&c, true);
    assert_int_equal(sample(&c, 7), 0);
    assert_int_equal(stack(&c, 5), 0);
    assert_int_equal(sample(&c, 9), 0);
    assert_int_equal(perch_capture_writer_finish(c.w), 0);
    perch_capture_writer_destroy(c.w);
    uint8_t *data = perch_output_memory_take(&c.mem, &len);
    assert_int_equal(replay(data, len, true, &got), PERCH_CAPTURE_STOP_END);
    assert_int_equal(got.n[PERCH_CHUNK_SAMPLE], 2);
    assert_int_equal(got.n[PERCH_CHUNK_STACK], 1);
    assert_int_equal(replay(data, len, false, &got), PERCH_CAPTURE_STOP_BAD_CHUNK);
    perch_free(data);
    /* The other rules still hold there. */
    cap_open_ex(&c, true);
    assert_int_equal(stat(&c, "s"), 0);
    REFUSED(&c, stat(&c, "s"), PERCH_EINVAL, "given twice");
    finish_and_check(&c, true);
}

/* The writer's own ledger of what it cut ("capture.truncated", written by finish) is left out
 * when the producer gave that reason already: finish still ends a readable capture. */
static void test_own_ledger_taken(void **state)
{
    cap c;
    size_t n = PERCH_CAPTURE_MAX_FRAMES + 1;
    uint64_t *frames = calloc(n, sizeof *frames);
    (void)state;
    assert_non_null(frames);
    cap_open(&c);
    perch_stack_rec s = {1, (uint32_t)n, 0, frames};
    assert_int_equal(c.s.stack(c.s.ctx, &s), 0);
    assert_int_equal(ledger(&c, "capture.truncated"), 0);
    free(frames);
    finish_and_check(&c, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_trace_info),
        cmocka_unit_test(test_second_trace_info_reason_is_the_readers),
        cmocka_unit_test(test_noting_a_name_out_of_memory),
        cmocka_unit_test(test_ledger_name_twice),
        cmocka_unit_test(test_stat_name_twice),
        cmocka_unit_test(test_name_not_utf8),
        cmocka_unit_test(test_name_count_cap),
        cmocka_unit_test(test_name_bytes_cap),
        cmocka_unit_test(test_name_compared_after_cut),
        cmocka_unit_test(test_stack_id_skipping),
        cmocka_unit_test(test_stack_id_zero),
        cmocka_unit_test(test_stack_id_repeated),
        cmocka_unit_test(test_sample_before_its_stack),
        cmocka_unit_test(test_sample_stack_undefined),
        cmocka_unit_test(test_stacks_elsewhere),
        cmocka_unit_test(test_own_ledger_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
