/*
 * The capture reader's fast record loops (src/core/capture/read_fast.c) against its checked
 * decoders (perch__cap_replay_checked): for good captures, captures cut into small chunks (so
 * many records fall in the checked tail of a chunk) and thousands of damaged ones (bytes of
 * sample, slice, stack and LBR chunks changed, their CRC made valid again so the decoders see
 * the damage), both replays must deliver the same records in the same order and stop at the
 * same byte with the same error and reason. A sink that refuses its n-th record must be
 * stopped at the same place by both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/crc32c.h"
#include "capture/reader.h"
#include "capture_synth.h"

typedef struct replayed {
    synth_rec rec;
    perch_capture_status st;
    int err;
} replayed;

static void replay(const uint8_t *data, size_t len, bool checked, int fail_at_type, replayed *out)
{
    perch_sink sink;
    perch_input in;
    memset(out, 0, sizeof *out);
    synth_recorder(&out->rec, &sink);
    out->rec.fail_at_type = fail_at_type;
    perch_input_memory(&in, data, len);
    memset(&out->st, 0xff, sizeof out->st);
    out->err = checked ? perch__cap_replay_checked(&in, &sink, NULL, &out->st)
                       : perch_capture_replay_ex(&in, &sink, NULL, &out->st);
    perch_input_close(&in);
}

static void check_same(const replayed *a, const replayed *b)
{
    const char *why = synth_status_diff(&a->st, &b->st);
    assert_int_equal(a->err, b->err);
    if (why)
        fail_msg("the stops differ in %s: %s / %s", why, a->st.reason, b->st.reason);
    assert_int_equal(a->rec.count, b->rec.count);
    for (size_t i = 0; i < a->rec.count; i++) {
        const char *d = synth_diff(&a->rec.ev[i], &b->rec.ev[i]);
        if (d)
            fail_msg("record %zu (type %d) differs in %s", i, a->rec.ev[i].type, d);
    }
}

/* Replays data both ways and compares; returns the fast replay's stop reason. */
static int both_ways(const uint8_t *data, size_t len, int fail_at_type)
{
    replayed fast, checked;
    replay(data, len, false, fail_at_type, &fast);
    replay(data, len, true, fail_at_type, &checked);
    check_same(&fast, &checked);
    int stop = fast.st.stop;
    synth_free(&fast.rec);
    synth_free(&checked.rec);
    return stop;
}

/* Gives some of the stream's slices PMC deltas (the synthetic streams have none), so the
 * slice decoders meet their counter path too. */
static void add_pmc(synth_rec *r, uint64_t seed)
{
    for (size_t i = 0; i < r->count; i++) {
        perch_slice_rec *s = &r->ev[i].u.slice;
        if (r->ev[i].type != PERCH_CHUNK_SLICE)
            continue;
        s->pmc_count = (uint8_t)(synth_rand(&seed) % (PERCH_MAX_PMC + 1));
        for (unsigned k = 0; k < s->pmc_count; k++)
            s->pmc_delta[k] = synth_rand(&seed) >> (synth_rand(&seed) % 64);
    }
}

/* Every record of in, written with each chunk size, reads back the same through both paths. */
static void check_every_chunk_size(synth_rec *in)
{
    static const uint32_t chunk_bytes[] = {0, 4096, 5000, 65536};
    for (size_t i = 0; i < sizeof chunk_bytes / sizeof chunk_bytes[0]; i++) {
        size_t len = 0;
        uint8_t *data = synth_capture(in, chunk_bytes[i], &len, NULL);
        assert_non_null(data);
        assert_int_equal(both_ways(data, len, 0), PERCH_CAPTURE_STOP_END);
        free(data);
    }
}

static void test_fast_good_captures(void **state)
{
    synth_rec in = {0};
    (void)state;
    synth_random(&in, 11, 30000);
    add_pmc(&in, 1);
    check_every_chunk_size(&in);
    synth_free(&in);
    synth_extremes(&in); /* 10-byte varints, every field at its cap */
    check_every_chunk_size(&in);
    synth_free(&in);
}

static void test_fast_sink_errors(void **state)
{
    static const int types[] = {PERCH_CHUNK_SAMPLE, PERCH_CHUNK_SLICE, PERCH_CHUNK_STACK,
                                PERCH_CHUNK_LBR};
    synth_rec in = {0};
    size_t len = 0;
    (void)state;
    synth_random(&in, 5, 5000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        bool has = false;
        for (size_t k = 0; k < in.count && !has; k++)
            has = in.ev[k].type == types[i];
        assert_true(has || types[i] == PERCH_CHUNK_LBR); /* the random stream has no LBR */
        assert_int_equal(both_ways(data, len, types[i]),
                         has ? PERCH_CAPTURE_STOP_SINK : PERCH_CAPTURE_STOP_END);
    }
    free(data);
    synth_free(&in);
    synth_extremes(&in);
    data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        assert_int_equal(both_ways(data, len, types[i]), PERCH_CAPTURE_STOP_SINK);
    free(data);
    synth_free(&in);
}

typedef struct chunk_at {
    size_t off; /* of the chunk header */
    uint32_t type, len;
} chunk_at;

/* The chunks of a good capture. */
static size_t list_chunks(const uint8_t *data, size_t len, chunk_at *out, size_t cap)
{
    size_t n = 0, off = (size_t)data[12] | (size_t)data[13] << 8;
    while (off + CAP_CHUNK_HEADER <= len && n < cap) {
        chunk_at c = {off, data[off] | (uint32_t)data[off + 1] << 8,
                      (uint32_t)cap_load_le(data + off + 4, 4)};
        out[n++] = c;
        off += CAP_CHUNK_HEADER + c.len;
    }
    return n;
}

static void fix_crc(uint8_t *data, const chunk_at *c)
{
    uint32_t crc =
        perch__crc32c(perch__crc32c(0, data + c->off, 8), data + c->off + CAP_CHUNK_HEADER, c->len);
    cap_store_le(data + c->off + 8, crc, 4);
}

/* One damaged byte value: random, or one that makes a long or endless varint, a big thread
 * index, or a count at or past its cap. */
static uint8_t damage(uint64_t *rng)
{
    static const uint8_t bytes[] = {0x80, 0xff, 0x7f, 0x01, 0x00, 0x0f, 0xf0, 0x81, 0x02};
    uint64_t x = synth_rand(rng);
    return x & 1 ? (uint8_t)(x >> 8) : bytes[(x >> 8) % sizeof bytes];
}

/* `rounds` damaged copies of the capture of `in` replayed both ways; returns how many ended in
 * a malformed chunk. */
static int damaged_rounds(const synth_rec *in, int rounds, uint64_t rng)
{
    size_t len = 0, n = 0;
    chunk_at chunks[1024], bulk[1024];
    int bad = 0;
    uint8_t *data = synth_capture(in, 4096, &len, NULL), *copy = malloc(len);
    assert_non_null(data);
    assert_non_null(copy);
    size_t total = list_chunks(data, len, chunks, 1024);
    for (size_t i = 0; i < total; i++)
        if (chunks[i].type == PERCH_CHUNK_SAMPLE || chunks[i].type == PERCH_CHUNK_SLICE ||
            chunks[i].type == PERCH_CHUNK_STACK || chunks[i].type == PERCH_CHUNK_LBR)
            bulk[n++] = chunks[i];
    assert_true(n >= 4);
    for (int round = 0; round < rounds; round++) {
        const chunk_at *c = &bulk[synth_rand(&rng) % n];
        size_t payload = c->off + CAP_CHUNK_HEADER;
        memcpy(copy, data, len);
        unsigned hits = 1 + (unsigned)(synth_rand(&rng) % 4);
        for (unsigned h = 0; h < hits; h++) {
            size_t at = payload + synth_rand(&rng) % c->len;
            copy[at] = damage(&rng);
            if (synth_rand(&rng) % 4 == 0) /* a run of continuation bytes */
                for (size_t k = at; k < at + 12 && k < payload + c->len; k++)
                    copy[k] |= 0x80;
        }
        fix_crc(copy, c);
        bad += both_ways(copy, len, 0) == PERCH_CAPTURE_STOP_BAD_CHUNK;
    }
    free(copy);
    free(data);
    return bad;
}

static void test_fast_damaged_captures(void **state)
{
    synth_rec in = {0};
    (void)state;
    synth_random(&in, 3, 4000);
    add_pmc(&in, 2);
    /* The damage reached the decoders: most rounds end in a malformed chunk. */
    assert_true(damaged_rounds(&in, 2000, 0x9e3779b97f4a7c15u) > 700);
    synth_free(&in);
    synth_extremes(&in); /* LBR records, long varints, fields at their caps */
    assert_true(damaged_rounds(&in, 1000, 0x2545f4914f6cdd1du) > 300);
    synth_free(&in);
}

/* Every one of the first bytes of the first chunk of each bulk type set to each of a few
 * telling values (zero counts, long varints, thread indexes past the list). */
static void every_byte(const synth_rec *in)
{
    static const uint8_t values[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x8f, 0x9f};
    static const unsigned types[] = {PERCH_CHUNK_SAMPLE, PERCH_CHUNK_SLICE, PERCH_CHUNK_STACK,
                                     PERCH_CHUNK_LBR};
    size_t len = 0;
    chunk_at chunks[1024];
    uint8_t *data = synth_capture(in, 4096, &len, NULL), *copy = malloc(len);
    assert_non_null(data);
    assert_non_null(copy);
    size_t total = list_chunks(data, len, chunks, 1024);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t i = 0;
        while (i < total && chunks[i].type != types[t])
            i++;
        if (i == total)
            continue;
        const chunk_at *c = &chunks[i];
        for (size_t at = 0; at < 96 && at < c->len; at++)
            for (size_t v = 0; v < sizeof values; v++) {
                memcpy(copy, data, len);
                copy[c->off + CAP_CHUNK_HEADER + at] = values[v];
                fix_crc(copy, c);
                both_ways(copy, len, 0);
            }
    }
    free(copy);
    free(data);
}

static void test_fast_every_byte(void **state)
{
    synth_rec in = {0};
    (void)state;
    synth_random(&in, 9, 3000);
    add_pmc(&in, 3);
    every_byte(&in);
    synth_free(&in);
    synth_extremes(&in);
    every_byte(&in);
    synth_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_good_captures),
        cmocka_unit_test(test_fast_sink_errors),
        cmocka_unit_test(test_fast_damaged_captures),
        cmocka_unit_test(test_fast_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
