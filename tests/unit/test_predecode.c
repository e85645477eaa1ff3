/*
 * Decoding on the import's reader thread (src/core/pipeline/predecode.c): every record of the
 * real traces and of a synthetic one goes through a queue whose producer packs its decoding
 * after it; the consumer's unpacked decoding must equal what perch_decode gives for the popped
 * record: the result, the type and header fields byte for byte, every decoded field and PMC
 * value (as perch_decoded_write_json renders them, both sides pre-filled with 0xff so an unset
 * field shows), and a stack's frames point into the ring's copy of the payload. A model fed the
 * unpacked decodings (perch_model_feed_decoded) writes the same capture as one that decodes itself,
 * decode errors and unknown records included; and feed_decoded refuses a success without a
 * decoding.
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
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/json.h"
#include "perch/model.h"
#include "perch/pipeline.h"
#include "pipeline/predecode.h"
#include "pipeline/queue_batch.h"
#include "testdata.h"
#include "util/mem.h"

struct counts {
    uint64_t records, decoded, failed;
};

/* d's fields as perch_decoded_write_json writes them (every decoded field, PMC values too). */
static void render(const perch_decoded *d, perch_test_text *t)
{
    perch_json w;
    t->len = 0;
    perch_json_init(&w, perch_test_text_sink, t);
    perch_json_begin_object(&w);
    assert_int_equal(perch_decoded_write_json(&w, d), 0);
    perch_json_end_object(&w);
    assert_int_equal(perch_json_flush(&w), 0);
}

/* The unpacked decoding of the record popped last from q equals perch_decode's of it: the
 * fields before the PMC values byte for byte, every field as JSON, and a stack's frames in the
 * ring's copy of the payload. */
static void check_popped(perch_event_queue *q, const perch_event *ev, struct counts *c)
{
    static perch_test_text want_text, got_text;
    perch_decoded want, got;
    uint32_t len;
    const uint8_t *packed = perch__event_queue_popped_extra(q, &len);
    assert_non_null(packed);
    assert_true(len >= 16 && len <= perch__predecode_max() && len % 8 == 0);
    memset(&want, 0xff, sizeof want);
    memset(&got, 0xff, sizeof got);
    int rc = perch_decode(ev, &want, NULL);
    assert_int_equal(perch__predecode_unpack(ev, packed, len, &got), rc);
    c->records++;
    if (rc != 0) {
        c->failed++;
        return;
    }
    c->decoded++;
    assert_memory_equal(&got, &want, offsetof(perch_decoded, pmc));
    render(&want, &want_text);
    render(&got, &got_text);
    assert_string_equal(got_text.data, want_text.data);
    if (want.type == PERCH_DECODED_STACK_WALK && want.stack_walk.frames.count > 0) {
        const uint8_t *f = got.stack_walk.frames.data;
        assert_ptr_equal(f, want.stack_walk.frames.data);
        assert_true(f >= ev->payload && f < ev->payload + ev->payload_len); /* the ring's */
    }
}

/* Every record of the .etl in etl/len through a queue that packs its decoding. */
static void check_etl(const char *name, const uint8_t *etl, size_t len, struct counts *c)
{
    perch_input in;
    perch_etl_reader *r = NULL;
    perch_event_queue *q = NULL;
    perch_event ev, out;
    perch_input_memory(&in, etl, len);
    assert_int_equal(perch_etl_open_owned(&in, NULL, &r, NULL), 0);
    assert_int_equal(perch_event_queue_create(8u << 20, &q), 0);
    perch__event_queue_extra(q, perch__predecode_pack, NULL, perch__predecode_max());
    while (perch_etl_next(r, &ev) == 0) {
        assert_int_equal(perch__event_queue_push_nowait(q, &ev), 0);
        assert_int_equal(perch_event_queue_pop(q, &out, 0), 0);
        check_popped(q, &out, c);
    }
    printf("  %-40s %8llu records, %8llu decoded, %5llu not\n", name,
           (unsigned long long)c->records, (unsigned long long)c->decoded,
           (unsigned long long)c->failed);
    perch_event_queue_destroy(q);
    perch_etl_destroy(r);
}

static void test_real_traces(void **state)
{
    struct counts all = {0};
    (void)state;
    for (size_t i = 0; i < perch_test_etl_trace_count; i++) {
        char rel[128];
        size_t len;
        struct counts c = {0};
        snprintf(rel, sizeof rel, "etl/%s", perch_test_etl_traces[i]);
        uint8_t *etl = perch_test_read_file(perch_test_require_data(rel), &len);
        check_etl(perch_test_etl_traces[i], etl, len, &c);
        all.decoded += c.decoded;
        all.failed += c.failed;
        free(etl);
    }
    assert_true(all.decoded > 100000); /* the traces are there and decode */
    assert_true(all.failed > 0);       /* and some records do not: their results ride too */
}

static void test_synthetic(void **state)
{
    struct counts c = {0};
    size_t len;
    uint8_t *etl = perch_test_synth_etl(5, 4u << 20, &len);
    (void)state;
    check_etl("synth seed 5", etl, len, &c);
    assert_true(c.decoded > 10000);
    perch_free(etl);
}

/* Imports etl on one thread, the model fed the packed decodings (through a queue) or not. */
static uint8_t *import(const uint8_t *etl, size_t len, int predecoded, size_t *cap_len)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_model *m = NULL;
    perch_etl_reader *r = NULL;
    perch_event_queue *q = NULL;
    perch_input in;
    perch_sink sink;
    perch_trace_info info;
    perch_event ev, popped;
    perch_output_memory(&out, &mem, (size_t)1 << 30);
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    perch_capture_writer_sink(w, &sink);
    perch_input_memory(&in, etl, len);
    assert_int_equal(perch_etl_open_owned(&in, NULL, &r, NULL), 0);
    perch_pipeline_trace_info(perch_etl_header_of(r), "etl:predecode", &info);
    assert_int_equal(perch_model_create(&sink, &info, NULL, &m), 0);
    assert_int_equal(perch_event_queue_create(8u << 20, &q), 0);
    perch__event_queue_extra(q, perch__predecode_pack, NULL, perch__predecode_max());
    while (perch_etl_next(r, &ev) == 0) {
        perch_decoded d;
        uint32_t n;
        if (!predecoded) {
            assert_int_equal(perch_model_feed(m, &ev), 0);
            continue;
        }
        assert_int_equal(perch__event_queue_push_nowait(q, &ev), 0);
        assert_int_equal(perch_event_queue_pop(q, &popped, 0), 0);
        const uint8_t *packed = perch__event_queue_popped_extra(q, &n);
        int rc = perch__predecode_unpack(&popped, packed, n, &d);
        assert_int_equal(perch_model_feed_decoded(m, &popped, rc, &d), 0);
    }
    assert_int_equal(perch_model_finish(m), 0);
    perch_model_destroy(m);
    perch_event_queue_destroy(q);
    perch_etl_destroy(r);
    perch_capture_writer_destroy(w);
    return perch_output_memory_take(&mem, cap_len);
}

static void test_model_same_capture(void **state)
{
    const char *rel = "etl/perfview_net.4.5.2.x64.etl"; /* 75,468 records not decoded */
    size_t len, a_len, b_len;
    (void)state;
    uint8_t *etl = perch_test_read_file(perch_test_require_data(rel), &len);
    uint8_t *a = import(etl, len, 0, &a_len);
    uint8_t *b = import(etl, len, 1, &b_len);
    assert_true(a_len > 1000);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(a, b, a_len);
    perch_free(a);
    perch_free(b);
    free(etl);
}

static void test_feed_decoded_needs_a_decoding(void **state)
{
    perch_sink sink;
    perch_trace_info info;
    perch_model *m = NULL;
    perch_event ev;
    (void)state;
    memset(&sink, 0, sizeof sink);
    memset(&info, 0, sizeof info);
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = 8;
    assert_int_equal(perch_model_create(&sink, &info, NULL, &m), 0);
    assert_int_equal(perch_model_feed_decoded(m, &ev, 0, NULL), PERCH_EINVAL);
    assert_int_equal(perch_model_feed_decoded(m, &ev, PERCH_EUNKNOWN, NULL), 0);
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_model_same_capture),
        cmocka_unit_test(test_feed_decoded_needs_a_decoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
