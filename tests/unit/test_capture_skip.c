/*
 * A capture replayed into a sink with skip_events (perch_sink: chrome's first pass, which
 * gathers only the entities before a second replay) against the ordinary replay of the same
 * bytes: the sink gets every other record, the same ones in the same order, and no stack,
 * slice, sample or LBR record even though it has callbacks for them; every chunk is walked
 * and counted, the skipped ones by their headers alone, their payloads never read. So a cut
 * capture stops both replays at the same byte with the same error, while a chunk whose CRC
 * does not match or a record malformed under a good CRC (a crafted capture) stops only the
 * ordinary replay, which the skipping one then passes, reaching the end (the behaviour
 * records.h promises).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_hostile.h"
#include "capture_synth.h"

static bool skipped(uint32_t type)
{
    return type == PERCH_CHUNK_STACK || type == PERCH_CHUNK_SLICE || type == PERCH_CHUNK_SAMPLE ||
           type == PERCH_CHUNK_LBR;
}

/* An input over memory that counts the bytes read. */
struct counted {
    const uint8_t *data;
    size_t len;
    uint64_t bytes_read;
};

static int counted_read(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    struct counted *c = ctx;
    size_t n = off < c->len ? c->len - (size_t)off : 0;
    n = n < len ? n : len;
    memcpy(buf, c->data + off, n);
    c->bytes_read += n;
    *got = n;
    return 0;
}

/* The replay with skip_events or without; the bytes it read into *bytes_read when not NULL. */
static int replay_counted(const uint8_t *data, size_t len, bool skip, synth_rec *rec,
                          perch_capture_status *st, uint64_t *bytes_read)
{
    struct counted c = {data, len, 0};
    perch_input in = {counted_read, NULL, len, &c};
    perch_sink sink;
    synth_recorder(rec, &sink);
    sink.skip_events = skip;
    perch_capture_replay(&in, &sink, st);
    if (bytes_read)
        *bytes_read = c.bytes_read;
    return st->stop;
}

static int replay_skip(const uint8_t *data, size_t len, bool skip, synth_rec *rec,
                       perch_capture_status *st)
{
    return replay_counted(data, len, skip, rec, st, NULL);
}

/* The records of `all` that are not skipped against `got`, one by one: the same, all of them. */
static void same_entities(const synth_rec *all, const synth_rec *got)
{
    size_t j = 0;
    for (size_t i = 0; i < all->count; i++) {
        if (skipped((uint32_t)all->ev[i].type))
            continue;
        assert_true(j < got->count);
        const char *why = synth_diff(&all->ev[i], &got->ev[j]);
        if (why)
            fail_msg("record %zu differs in %s", j, why);
        j++;
    }
    assert_int_equal(j, got->count);
}

static void test_skip_good(void **state)
{
    synth_rec in = {0}, a = {0}, b = {0};
    perch_capture_status sa, sb;
    size_t len = 0, events = 0;
    (void)state;
    synth_random(&in, 5, 20000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    uint64_t read_a = 0, read_b = 0, payloads = 0;
    assert_int_equal(replay_counted(data, len, false, &a, &sa, &read_a), PERCH_CAPTURE_STOP_END);
    assert_int_equal(replay_counted(data, len, true, &b, &sb, &read_b), PERCH_CAPTURE_STOP_END);
    for (uint32_t t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (skipped(t))
            payloads += sb.types[t].bytes - sb.types[t].chunks * (uint64_t)CAP_CHUNK_HEADER;
    assert_true(read_a >= len); /* every byte at least once */
    assert_true(payloads > len / 2);
    assert_int_equal(read_b, read_a - payloads); /* the skipped payloads alone left unread */
    for (size_t i = 0; i < a.count; i++)
        events += skipped((uint32_t)a.ev[i].type);
    assert_true(events > 20000); /* the capture has samples, slices and stacks to skip */
    same_entities(&a, &b);
    assert_true(sa.chunks == sb.chunks && sa.good_bytes == sb.good_bytes);
    assert_true(sb.types[PERCH_CHUNK_SAMPLE].chunks > 10); /* walked and counted */
    assert_true(sb.types[PERCH_CHUNK_SAMPLE].records == 0 &&
                sa.types[PERCH_CHUNK_SAMPLE].records > 0);
    free(data);
    synth_free(&in);
    synth_free(&a);
    synth_free(&b);
}

/* Cut anywhere: both replays stop at the same byte with the same error, the skipping one with
 * the entities the ordinary one had by then. */
static void test_skip_cut(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    (void)state;
    synth_random(&in, 7, 6000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    for (size_t cut = 40; cut < len; cut += len / 61 + 1) {
        synth_rec a = {0}, b = {0};
        perch_capture_status sa, sb;
        replay_skip(data, cut, false, &a, &sa);
        replay_skip(data, cut, true, &b, &sb);
        const char *why = synth_status_diff(&sa, &sb);
        if (why && strcmp(why, "records") != 0) /* the skipped types count no records */
            fail_msg("cut at %zu: the stops differ in %s: %s / %s", cut, why, sa.reason, sb.reason);
        assert_int_equal(sa.stop, sb.stop);
        assert_true(sa.error == sb.error && sa.offset == sb.offset);
        same_entities(&a, &b);
        synth_free(&a);
        synth_free(&b);
    }
    free(data);
    synth_free(&in);
}

/* A sample, slice or stack chunk damaged: with its CRC left wrong the ordinary replay stops
 * there; with the CRC made good again it may stop at a malformed record. Either way the
 * skipping one reads on to the end, with every entity of the capture. */
static void test_skip_damaged(void **state)
{
    synth_rec in = {0}, whole = {0};
    perch_capture_status sw;
    size_t len = 0;
    uint64_t rng = 0x2545f4914f6cdd1du;
    int malformed = 0, crc = 0;
    (void)state;
    synth_random(&in, 3, 8000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL), *copy = malloc(len);
    assert_non_null(data);
    assert_non_null(copy);
    assert_int_equal(replay_skip(data, len, false, &whole, &sw), PERCH_CAPTURE_STOP_END);
    for (int round = 0; round < 300; round++) {
        synth_rec a = {0}, b = {0};
        perch_capture_status sa, sb;
        bool good_crc = round % 5 != 4;
        size_t off = damage_chunk(data, len, copy, &rng, skipped, round % 2 == 0, good_crc);
        replay_skip(copy, len, false, &a, &sa);
        replay_skip(copy, len, true, &b, &sb);
        if (!good_crc && memcmp(copy + off + 8, data + off + 8, 4) == 0 &&
            memcmp(copy, data, len) != 0) {
            crc++;
            assert_true(sa.offset == off && sa.stop == PERCH_CAPTURE_STOP_CRC);
        } else {
            malformed += sa.stop == PERCH_CAPTURE_STOP_BAD_CHUNK;
        }
        assert_int_equal(sb.stop, PERCH_CAPTURE_STOP_END);
        same_entities(&whole, &b);
        synth_free(&a);
        synth_free(&b);
    }
    assert_true(malformed > 50); /* the damage reached the ordinary decoders */
    assert_true(crc > 20);
    free(copy);
    free(data);
    synth_free(&in);
    synth_free(&whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skip_good),
        cmocka_unit_test(test_skip_cut),
        cmocka_unit_test(test_skip_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
