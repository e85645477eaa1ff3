/*
 * The capture reader's split walk (src/core/capture/read_split.c) against the one-thread walk:
 * a sink with decode_ahead (gecko's, the report's) gets its sample and slice chunks decoded
 * ahead into arrays of records: replayed into a digest of every field
 * (tests/support/ahead_replay.c), it must get the same records in the same order, all on the
 * caller's thread, and stop alike (the same byte, error, reason and record counts), for good
 * captures, cut ones, damaged ones (CRC made valid again), a sink that refuses its n-th record
 * and sinks missing callbacks; the input's reads tell that the chunks were played from their
 * arrays (or sent back: a chunk whose count understated its records, test_ahead_count_lies).
 * The capture fuzz target runs the same comparison on its inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ahead_replay.h"
#include "capture/crc32c.h"
#include "capture/reader.h"
#include "capture_hostile.h"
#include "capture_synth.h"
#include "perch/error.h"

/* Replays data with and without decode_ahead and compares; returns the stop. Fills *sent_back
 * (when not NULL) with the chunks the split walk decoded ahead and then sent back to the
 * ordinary path, told by its reads: one more than the plain walk's per chunk header its scan
 * looked at (every chunk's), two more per chunk sent back; -1 when they do not add up (the
 * split walk did not run). */
static int ahead_takes(const uint8_t *data, size_t len, size_t refuse, unsigned takes,
                       int64_t *sent_back)
{
    ahead_replay one, two;
    ahead_replay_run(data, len, false, refuse, takes, &one);
    ahead_replay_run(data, len, true, refuse, takes, &two);
    const char *why = synth_status_diff(&one.st, &two.st);
    if (why)
        fail_msg("decode-ahead stops differ in %s: %s / %s", why, one.st.reason, two.st.reason);
    assert_int_equal(one.err, two.err);
    assert_int_equal(one.records, two.records);
    assert_true(one.digest == two.digest);
    assert_int_equal(one.strays + two.strays, 0); /* every record on the caller's thread */
    int64_t more = (int64_t)(two.reads - one.reads) - (int64_t)one.st.chunks;
    if (sent_back)
        *sent_back = more >= 0 && more % 2 == 0 ? more / 2 : -1;
    return one.st.stop;
}

static int ahead_both_ways(const uint8_t *data, size_t len, size_t refuse, int64_t *sent_back)
{
    return ahead_takes(data, len, refuse, AHEAD_ALL, sent_back);
}

static void test_split_good_and_cut(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    (void)state;
    synth_random(&in, 11, 30000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    int64_t sent_back = -1;
    assert_non_null(data);
    assert_int_equal(ahead_both_ways(data, len, 0, &sent_back), PERCH_CAPTURE_STOP_END);
    assert_int_equal(sent_back, 0); /* every sample and slice chunk played from its array */
    for (size_t cut = 64; cut < len; cut += len / 97 + 1) {
        ahead_both_ways(data, cut, 0, NULL);
    }
    free(data);
    synth_free(&in);
    synth_extremes(&in); /* fields at their caps: cpu UINT16_MAX, tid 0 */
    data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    assert_int_equal(ahead_both_ways(data, len, 0, NULL), PERCH_CAPTURE_STOP_END);
    free(data);
    synth_free(&in);
}

/* on_chunk: the most bytes one sample or slice chunk's records take decoded (whole records). */
static int note_chunk(void *ctx, const perch_capture_chunk_info *ci)
{
    uint64_t *most = ctx, size = ci->type == PERCH_CHUNK_SAMPLE  ? sizeof(perch_sample_rec)
                                 : ci->type == PERCH_CHUNK_SLICE ? sizeof(perch_slice_rec)
                                                                 : 0;
    if (ci->records * size > *most)
        *most = ci->records * size;
    return 0;
}

static uint64_t most_record_bytes(const uint8_t *data, size_t len)
{
    uint64_t most = 0;
    perch_input in;
    perch_sink sink = {0};
    perch_capture_status st;
    perch_capture_read_opts opts = {sizeof opts, note_chunk, &most, false, false};
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_capture_replay_ex(&in, &sink, &opts, &st), 0);
    perch_input_close(&in);
    return most;
}

/* Large chunks: the records of the chunks decoded ahead share a ring of 4 MiB (RING_BYTES),
 * so a chunk is played from it whenever its records fit the ring, even chunks of 512 KiB whose
 * records took 3.5 MiB (a slot held at most 1 MiB before); the largest chunks, whose records
 * need more than the ring, go the ordinary way at once, without being decoded twice (a chunk
 * sent back would count). The records are the same either way. */
static void test_ahead_large_chunks(void **state)
{
    static const uint32_t sizes[] = {256u << 10, 512u << 10, PERCH_CAPTURE_MAX_CHUNK - 30};
    synth_rec in = {0};
    (void)state;
    synth_random(&in, 13, 120000);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t len = 0;
        int64_t sent_back = -1;
        uint8_t *data = synth_capture(&in, sizes[i], &len, NULL);
        assert_non_null(data);
        uint64_t most = most_record_bytes(data, len);
        if (i == 1)
            assert_true(most > (1u << 20) && most <= (4u << 20));
        if (i == 2)
            assert_true(most > (4u << 20));
        assert_int_equal(ahead_both_ways(data, len, 0, &sent_back), PERCH_CAPTURE_STOP_END);
        assert_int_equal(sent_back, 0);
        free(data);
    }
    synth_free(&in);
}

/* A sink without a sample, slice or stack callback: the split walk keeps no records it has
 * no callback for (and still checks them, and the stack ids samples name); the same records
 * and stops, cut captures and refusals included. */
static void test_ahead_missing_callbacks(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    (void)state;
    synth_random(&in, 17, 6000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    for (unsigned takes = 0; takes < AHEAD_ALL; takes++) {
        int64_t sent_back = -1;
        assert_int_equal(ahead_takes(data, len, 0, takes, &sent_back), PERCH_CAPTURE_STOP_END);
        /* one without stacks gets its stack chunks decoded ahead too: none go back */
        assert_int_equal(sent_back, 0);
        for (size_t cut = 64; cut < len; cut += len / 23 + 1)
            ahead_takes(data, cut, 0, takes, NULL);
        if (takes & (AHEAD_SAMPLES | AHEAD_SLICES))
            assert_int_equal(ahead_takes(data, len, 100, takes, NULL), PERCH_CAPTURE_STOP_SINK);
    }
    free(data);
    synth_free(&in);
}

/* The sink refuses its n-th sample or slice (the first, the last, and n across the capture's
 * chunks): both walks stop at the same record with the same reason. */
static void test_ahead_sink_refuses(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    ahead_replay all;
    (void)state;
    synth_random(&in, 5, 20000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    ahead_replay_run(data, len, false, 0, AHEAD_ALL, &all);
    assert_int_equal(all.st.stop, PERCH_CAPTURE_STOP_END);
    assert_true(all.data > 20000);
    for (uint64_t n = 1; n <= all.data; n += n < 50 ? 1 : all.data / 211 + 1)
        assert_int_equal(ahead_both_ways(data, len, n, NULL), PERCH_CAPTURE_STOP_SINK);
    assert_int_equal(ahead_both_ways(data, len, all.data, NULL), PERCH_CAPTURE_STOP_SINK);
    free(data);
    synth_free(&in);
}

/* Bytes of sample, slice, stack and LBR chunks changed and their CRC made valid again. */
static bool events(uint32_t type)
{
    return type == PERCH_CHUNK_SAMPLE || type == PERCH_CHUNK_SLICE || type == PERCH_CHUNK_STACK;
}

static void test_split_damaged(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    uint64_t rng = 0x9e3779b97f4a7c15u;
    int bad = 0;
    (void)state;
    synth_random(&in, 3, 8000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL), *copy = malloc(len);
    assert_non_null(data);
    assert_non_null(copy);
    for (int round = 0; round < 600; round++) {
        /* some with a CRC that does not match */
        damage_chunk(data, len, copy, &rng, events, round % 3 == 0, round % 10 != 9);
        /* half with no stack callback: the stack chunks are decoded ahead too */
        int stop =
            ahead_takes(copy, len, 0, round % 2 ? AHEAD_ALL : AHEAD_SAMPLES | AHEAD_SLICES, NULL);
        bad += stop == PERCH_CAPTURE_STOP_BAD_CHUNK;
    }
    assert_true(bad > 100); /* the damage reached the decoders */
    free(copy);
    free(data);
    synth_free(&in);
}

/* An input whose scan read (chunk header + CAP_VARINT_MAX bytes at a chunk's offset) says a
 * sample or slice chunk holds 1 record when it holds more (same varint length, non-canonical):
 * the ring reservation is then too small; store() must refuse past it (the chunk goes the
 * ordinary way) instead of writing over the next chunks' records or past the ring. */
static uint64_t lie_off[4096];
static size_t lie_n;

static void lie_count(uint64_t off, void *buf, size_t len)
{
    if (len != CAP_CHUNK_HEADER + CAP_VARINT_MAX)
        return;
    for (size_t i = 0; i < lie_n; i++)
        if (lie_off[i] == off) {
            uint8_t *p = (uint8_t *)buf + CAP_CHUNK_HEADER;
            size_t k = 0;
            while (p[k] & 0x80)
                k++;
            for (size_t j = 0; j <= k; j++)
                p[j] = j == 0 ? (k ? 0x81 : 0x01) : j < k ? 0x80 : 0x00;
            return;
        }
}

static void test_ahead_count_lies(void **state)
{
    static const uint32_t sizes[] = {4096, 64u << 10, 256u << 10};
    synth_rec in = {0};
    (void)state;
    synth_random(&in, 19, 60000);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t len = 0;
        int64_t sent_back = -1;
        uint8_t *data = synth_capture(&in, sizes[z], &len, NULL);
        assert_non_null(data);
        lie_n = 0;
        size_t cand = 0, off = (size_t)data[12] | (size_t)data[13] << 8;
        for (; off + CAP_CHUNK_HEADER <= len && lie_n < 4096;) {
            uint32_t type = data[off] | (uint32_t)data[off + 1] << 8;
            uint32_t plen = (uint32_t)cap_load_le(data + off + 4, 4);
            perch__cap_cursor c;
            cap_cursor_init(&c, data + off + CAP_CHUNK_HEADER, plen);
            uint64_t count = type == PERCH_CHUNK_SAMPLE || type == PERCH_CHUNK_SLICE
                                 ? cap_get_varint_slow(&c)
                                 : 0;
            if (count >= 2 && !c.error && cand++ % 2 == 0) /* every other one tells the truth */
                lie_off[lie_n++] = off;
            off += CAP_CHUNK_HEADER + plen;
        }
        size_t lied = lie_n;
        ahead_replay_tamper = lie_count;
        int stop = ahead_both_ways(data, len, 0, &sent_back);
        ahead_replay_tamper = NULL;
        assert_int_equal(stop, PERCH_CAPTURE_STOP_END);
        /* every chunk whose count was understated was decoded ahead, refused past its room and
         * sent back */
        assert_int_equal(sent_back, lied);
        free(data);
    }
    synth_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_good_and_cut), cmocka_unit_test(test_split_damaged),
        cmocka_unit_test(test_ahead_large_chunks), cmocka_unit_test(test_ahead_missing_callbacks),
        cmocka_unit_test(test_ahead_sink_refuses), cmocka_unit_test(test_ahead_count_lies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
