/*
 * Tests for the capture container: the file header byte by byte, the version window, required
 * and optional features, the header checksum, a larger header from a later version, unknown
 * chunk types, the chunk size cap, and crash safety: a capture cut at every byte offset (and
 * a large one at random offsets) reads up to its last complete chunk and says where and why
 * it stopped; a capture with any single byte damaged never delivers a record from the damaged
 * chunk or after it. Also a round trip through the platform's file backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/crc32c.h"
#include "capture_synth.h"
#include "perch/capture.h"
#include "perch/error.h"

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the header CRC of a header of `size` bytes after a test changed a field. */
static void fix_header_crc(uint8_t *h, uint32_t size)
{
    put_le(h + 36, 0, 4);
    put_le(h + 36, perch__crc32c(0, h, size), 4);
}

static uint8_t *empty_capture(size_t *len)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_output_memory(&out, &mem, 1 << 20);
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    assert_int_equal(perch_capture_writer_finish(w), 0);
    perch_capture_writer_destroy(w);
    return perch_output_memory_take(&mem, len);
}

static int replay(const uint8_t *data, size_t len, synth_rec *out, perch_capture_status *st)
{
    perch_sink rec;
    synth_recorder(out, &rec);
    memset(st, 0xff, sizeof *st);
    return perch_capture_replay_memory(data, len, &rec, st);
}

static void test_header_bytes(void **state)
{
    size_t len;
    uint8_t *data = empty_capture(&len);
    uint8_t expect[64] = {
        0x89, 'P',  'E',  'R',  'C', 'H', '\r', '\n', /* magic */
        2,    0,    0,    0,                          /* version */
        64,   0,    0,    0,                          /* header size */
        0,    0,    0,    0,    0,   0,   0,    0,    /* required features */
        0,    0,    0,    0,    0,   0,   0,    0,    /* optional features */
        0x00, 0x00, 0x01, 0x00,                       /* chunk bytes: 65536 */
    };
    uint8_t end_chunk[12] = {13, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(len, 64 + 12);
    put_le(expect + 36, perch__crc32c(0, expect, 64), 4);
    assert_memory_equal(data, expect, 64);
    put_le(end_chunk + 8, perch__crc32c(0, end_chunk, 8), 4);
    assert_memory_equal(data + 64, end_chunk, 12);
    synth_rec out = {0};
    perch_capture_status st;
    assert_int_equal(replay(data, len, &out, &st), 0);
    assert_int_equal(out.count, 1);
    assert_int_equal(out.ev[0].type, PERCH_CHUNK_END);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_END);
    assert_int_equal(st.chunks, 1);
    assert_string_equal(st.reason, "");
    synth_free(&out);
    free(data);
}

static void expect_bad_header(const uint8_t *data, size_t len, int err, const char *why)
{
    synth_rec out = {0};
    perch_capture_status st;
    assert_int_equal(replay(data, len, &out, &st), err);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_HEADER);
    assert_int_equal(st.error, err);
    assert_int_equal(st.offset, 0);
    assert_int_equal(st.chunks, 0);
    assert_int_equal(out.count, 0); /* not even finish: nothing was read */
    if (!strstr(st.reason, why))
        fail_msg("reason '%s' lacks '%s'", st.reason, why);
    synth_free(&out);
}

static void test_not_a_capture(void **state)
{
    static const char text[] = "this is a text file, not a capture at all; long enough.......";
    uint8_t etl[64] = {0};
    expect_bad_header((const uint8_t *)"", 0, PERCH_EFORMAT, "not a Perch capture");
    expect_bad_header((const uint8_t *)text, sizeof text, PERCH_EFORMAT, "not a Perch capture");
    expect_bad_header(etl, sizeof etl, PERCH_EFORMAT, "bad magic");
    size_t len;
    uint8_t *data = empty_capture(&len);
    expect_bad_header(data, 40, PERCH_ETRUNC, "cut short: 40 of 64");
    data[6] = '\n'; /* a CRLF -> LF conversion in transit */
    expect_bad_header(data, len, PERCH_EFORMAT, "bad magic");
    free(data);
}

static void test_version_window(void **state)
{
    size_t len;
    uint8_t *data = empty_capture(&len);
    put_le(data + 8, PERCH_CAPTURE_VERSION_MAX + 1, 4);
    fix_header_crc(data, 64);
    expect_bad_header(data, len, PERCH_EVERSION, "format version 3");
    put_le(data + 8, 0, 4);
    fix_header_crc(data, 64);
    expect_bad_header(data, len, PERCH_EVERSION, "reads versions 1 to 2");
    free(data);
}

static void test_features(void **state)
{
    synth_rec out = {0};
    perch_capture_status st;
    size_t len;
    uint8_t *data = empty_capture(&len);
    put_le(data + 16, 1ull << 40, 8); /* an unknown required feature */
    fix_header_crc(data, 64);
    expect_bad_header(data, len, PERCH_EFEATURE, "unknown required features 0x10000000000");
    put_le(data + 16, 0, 8);
    put_le(data + 24, 0xf0, 8); /* unknown optional features are ignored */
    fix_header_crc(data, 64);
    assert_int_equal(replay(data, len, &out, &st), 0);
    assert_int_equal(st.optional_features, 0xf0);
    assert_int_equal(out.count, 1);
    synth_free(&out);
    free(data);
}

static void test_header_crc(void **state)
{
    size_t len;
    uint8_t *data = empty_capture(&len);
    data[50] = 1; /* a reserved byte */
    expect_bad_header(data, len, PERCH_ECRC, "checksum");
    data[50] = 0;
    put_le(data + 12, 8192, 4); /* header size beyond the cap */
    fix_header_crc(data, 64);
    expect_bad_header(data, len, PERCH_EFORMAT, "header size 8192");
    free(data);
}

/* A later version's larger header: the extra bytes are covered by the CRC and skipped. */
static void test_larger_header(void **state)
{
    synth_rec in = {0}, out = {0};
    perch_capture_status st;
    size_t len;
    synth_extremes(&in);
    uint8_t *data = synth_capture(&in, 0, &len, NULL);
    uint8_t *big = malloc(len + 64);
    assert_non_null(big);
    memcpy(big, data, 64);
    memset(big + 64, 0xab, 64);
    memcpy(big + 128, data + 64, len - 64);
    put_le(big + 12, 128, 4);
    fix_header_crc(big, 128);
    assert_int_equal(replay(big, len + 64, &out, &st), 0);
    assert_int_equal(st.header_size, 128);
    assert_int_equal(out.count, in.count);
    big[100] ^= 1;
    expect_bad_header(big, len + 64, PERCH_ECRC, "checksum");
    synth_free(&in);
    synth_free(&out);
    free(data);
    free(big);
}

/* Inserts a chunk of an unknown type right after the header. */
static void test_unknown_chunk_is_skipped(void **state)
{
    synth_rec in = {0}, out = {0};
    perch_capture_status st;
    size_t len;
    synth_extremes(&in);
    uint8_t *data = synth_capture(&in, 0, &len, NULL);
    uint8_t chunk[12 + 6] = {200, 0, 0x55, 0, 6, 0, 0, 0, 0, 0, 0, 0, 'f', 'u', 't', 'u', 'r', 'e'};
    put_le(chunk + 8, perch__crc32c(perch__crc32c(0, chunk, 8), chunk + 12, 6), 4);
    uint8_t *more = malloc(len + sizeof chunk);
    assert_non_null(more);
    memcpy(more, data, 64);
    memcpy(more + 64, chunk, sizeof chunk);
    memcpy(more + 64 + sizeof chunk, data + 64, len - 64);
    assert_int_equal(replay(more, len + sizeof chunk, &out, &st), 0);
    assert_int_equal(st.unknown_chunks, 1);
    assert_int_equal(out.count, in.count);
    synth_free(&in);
    synth_free(&out);
    free(data);
    free(more);
}

static void test_chunk_over_cap(void **state)
{
    synth_rec out = {0};
    perch_capture_status st;
    size_t len;
    uint8_t *data = empty_capture(&len);
    put_le(data + 64 + 4, PERCH_CAPTURE_MAX_CHUNK + 1, 4);
    assert_int_equal(replay(data, len, &out, &st), PERCH_EFORMAT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.offset, 64);
    assert_non_null(strstr(st.reason, "over the 1048576 limit"));
    synth_free(&out);
    free(data);
}

struct chunk_ends {
    uint64_t end[4096];
    size_t count;
};

static int note_chunk(void *ctx, const perch_capture_chunk_info *ci)
{
    struct chunk_ends *e = ctx;
    if (e->count < 4096)
        e->end[e->count++] = ci->offset + 12 + ci->payload_len;
    return 0;
}

/* Replays the whole capture; returns its events and chunk end offsets. */
static void full_replay(const uint8_t *data, size_t len, synth_rec *out, struct chunk_ends *ends)
{
    perch_sink rec;
    perch_capture_status st;
    perch_capture_read_opts opts = {sizeof opts, note_chunk, ends, true, false};
    perch_input in;
    synth_recorder(out, &rec);
    perch_input_memory(&in, data, len);
    assert_int_equal(perch_capture_replay_ex(&in, &rec, &opts, &st), 0);
    perch_input_close(&in);
    assert_true(ends->count < 4096);
}

/* The events of a damaged replay are the full replay's first events (plus finish). */
static void check_prefix(const synth_rec *full, const synth_rec *part, int stop)
{
    size_t n = part->count;
    if (stop != PERCH_CAPTURE_STOP_BAD_HEADER && stop != PERCH_CAPTURE_STOP_END) {
        assert_true(n >= 1);
        assert_int_equal(part->ev[n - 1].type, PERCH_CHUNK_END); /* finish_on_error */
        n--;
    }
    assert_true(n <= full->count);
    for (size_t i = 0; i < n; i++) {
        const char *field = synth_diff(&full->ev[i], &part->ev[i]);
        if (field)
            fail_msg("event %zu differs in %s", i, field);
    }
}

static void check_cut(const uint8_t *data, size_t cut, const synth_rec *full,
                      const struct chunk_ends *ends)
{
    synth_rec out = {0};
    perch_capture_status st;
    uint64_t good = 64;
    size_t chunks = 0;
    while (chunks < ends->count && ends->end[chunks] <= cut)
        good = ends->end[chunks++];
    int err = replay(data, cut, &out, &st);
    if (cut < 64) {
        assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_HEADER);
        assert_int_equal(err, cut < 8 ? PERCH_EFORMAT : PERCH_ETRUNC);
    } else if (chunks == ends->count) {
        assert_int_equal(err, 0); /* the whole file: a clean end */
    } else {
        assert_int_equal(err, PERCH_ETRUNC);
        assert_int_equal(st.stop,
                         good == cut ? PERCH_CAPTURE_STOP_NO_END : PERCH_CAPTURE_STOP_TRUNCATED);
        assert_int_equal(st.offset, good);
        assert_int_equal(st.good_bytes, good);
        assert_int_equal(st.chunks, chunks);
        assert_true(st.reason[0] != '\0');
    }
    check_prefix(full, &out, st.stop);
    synth_free(&out);
}

static void test_cut_at_every_offset(void **state)
{
    synth_rec in = {0}, full = {0};
    struct chunk_ends *ends = calloc(1, sizeof *ends);
    size_t len;
    synth_random(&in, 11, 300);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    full_replay(data, len, &full, ends);
    assert_true(ends->count >= 6);
    for (size_t cut = 0; cut <= len; cut++)
        check_cut(data, cut, &full, ends);
    printf("cut a %zu-byte capture of %zu chunks at every offset\n", len, ends->count);
    synth_free(&in);
    synth_free(&full);
    free(data);
    free(ends);
}

static void test_cut_large_at_random_offsets(void **state)
{
    synth_rec in = {0}, full = {0};
    struct chunk_ends *ends = calloc(1, sizeof *ends);
    size_t len;
    uint64_t rng = 99;
    synth_random(&in, 5, 30000);
    uint8_t *data = synth_capture(&in, 8192, &len, NULL);
    assert_non_null(data);
    full_replay(data, len, &full, ends);
    for (int i = 0; i < 300; i++)
        check_cut(data, (size_t)(synth_rand(&rng) % (len + 1)), &full, ends);
    for (size_t c = 0; c < ends->count; c += 7) /* and right at / next to chunk ends */
        for (int d = -1; d <= 1; d++)
            check_cut(data, (size_t)((int64_t)ends->end[c] + d), &full, ends);
    synth_free(&in);
    synth_free(&full);
    free(data);
    free(ends);
}

/* One damaged byte anywhere: no record from its chunk or after it is delivered. */
static void check_flip(uint8_t *data, size_t len, size_t pos, uint8_t bit, const synth_rec *full)
{
    synth_rec out = {0};
    perch_capture_status st;
    data[pos] ^= bit;
    int err = replay(data, len, &out, &st);
    data[pos] ^= bit;
    assert_int_not_equal(err, 0);
    assert_int_not_equal(st.stop, PERCH_CAPTURE_STOP_END);
    assert_true(st.good_bytes <= pos);
    check_prefix(full, &out, st.stop);
    if (pos >= 64)
        assert_true(st.stop == PERCH_CAPTURE_STOP_CRC || st.stop == PERCH_CAPTURE_STOP_TRUNCATED ||
                    st.stop == PERCH_CAPTURE_STOP_BAD_CHUNK);
    synth_free(&out);
}

static void test_flip_every_byte(void **state)
{
    synth_rec in = {0}, full = {0};
    struct chunk_ends *ends = calloc(1, sizeof *ends);
    size_t len;
    synth_random(&in, 13, 200);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    full_replay(data, len, &full, ends);
    for (size_t pos = 0; pos < len; pos++)
        check_flip(data, len, pos, (uint8_t)(1u << (pos % 8)), &full);
    uint64_t rng = 5;
    for (int i = 0; i < 2000; i++)
        check_flip(data, len, (size_t)(synth_rand(&rng) % len),
                   (uint8_t)(1 + synth_rand(&rng) % 255), &full);
    synth_free(&in);
    synth_free(&full);
    free(data);
    free(ends);
}

/* Appends a strings chunk of `count` strings of `len` bytes, ids from first_id, at *at. */
static size_t put_strings_chunk(uint8_t *p, uint32_t first_id, unsigned count, size_t len)
{
    uint8_t *q = p + 12;
    *q++ = 0;                               /* flags */
    for (uint32_t v = first_id;; v >>= 7) { /* first_id varint */
        *q++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f)
            break;
    }
    *q++ = (uint8_t)count;
    for (unsigned i = 0; i < count; i++) {
        for (size_t v = len;; v >>= 7) {
            *q++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            if (v <= 0x7f)
                break;
        }
        memset(q, 'a' + (int)(i % 26), len);
        q[0] = (uint8_t)first_id; /* distinct strings */
        q += len;
    }
    uint32_t plen = (uint32_t)(q - p - 12);
    put_le(p, 2, 2);
    put_le(p + 2, 0, 2);
    put_le(p + 4, plen, 4);
    put_le(p + 8, perch__crc32c(perch__crc32c(0, p, 8), p + 12, plen), 4);
    return 12 + plen;
}

/* A string table past the reader's cap (no reset) stops reading with a clear reason. */
static void test_reader_string_table_cap(void **state)
{
    synth_rec out = {0};
    perch_capture_status st;
    size_t len, at = 64;
    uint8_t *head = empty_capture(&len);
    uint8_t *data = malloc(64 + 10 * (1u << 20));
    assert_non_null(data);
    memcpy(data, head, 64);
    uint32_t id = 1;
    for (int chunk = 0; chunk < 10; chunk++, id += 7)
        at += put_strings_chunk(data + at, id, 7, PERCH_CAPTURE_MAX_STRING);
    assert_int_equal(replay(data, at, &out, &st), PERCH_ELIMIT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_LIMIT);
    assert_int_equal(st.chunks, 9); /* 63 strings of 128 KiB fit under 8 MiB, the 64th not */
    assert_non_null(strstr(st.reason, "strings chunk"));
    synth_free(&out);
    free(head);
    free(data);
}

static int failing_read(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    (void)ctx, (void)buf, (void)len;
    *got = 0;
    return off >= 64 ? PERCH_EIO : 0;
}

static int eio_after_header(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    const uint8_t *data = ctx;
    if (off >= 64)
        return failing_read(ctx, off, buf, len, got);
    size_t n = len < 64 - off ? len : (size_t)(64 - off);
    memcpy(buf, data + off, n);
    *got = n;
    return 0;
}

static void test_input_error(void **state)
{
    size_t len;
    uint8_t *data = empty_capture(&len);
    perch_input in = {eio_after_header, NULL, len, data};
    perch_capture_status st;
    assert_int_equal(perch_capture_replay(&in, NULL, &st), PERCH_EIO);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_IO);
    assert_int_equal(st.offset, 64);
    assert_non_null(strstr(st.reason, "input/output error"));
    free(data);
}

static void test_file_round_trip(void **state)
{
    synth_rec in = {0}, out = {0};
    perch_output out_file;
    perch_input in_file;
    perch_capture_writer *w;
    perch_capture_status st;
    perch_sink s, rec;
    const char *path = "test_capture_container.perch";
    synth_extremes(&in);
    assert_int_equal(perch_output_open_file(&out_file, path), 0);
    assert_int_equal(perch_capture_writer_create(&out_file, NULL, &w), 0);
    perch_capture_writer_sink(w, &s);
    assert_int_equal(synth_play(&in, &s), 0);
    perch_capture_writer_destroy(w);
    assert_int_equal(out_file.close(out_file.ctx), 0);
    assert_int_equal(perch_input_open_file(&in_file, path), 0);
    synth_recorder(&out, &rec);
    assert_int_equal(perch_capture_replay(&in_file, &rec, &st), 0);
    assert_int_equal(st.offset, in_file.size);
    perch_input_close(&in_file);
    assert_int_equal(out.count, in.count);
    remove(path);
    synth_free(&in);
    synth_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bytes),
        cmocka_unit_test(test_not_a_capture),
        cmocka_unit_test(test_version_window),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_header_crc),
        cmocka_unit_test(test_larger_header),
        cmocka_unit_test(test_unknown_chunk_is_skipped),
        cmocka_unit_test(test_chunk_over_cap),
        cmocka_unit_test(test_cut_at_every_offset),
        cmocka_unit_test(test_cut_large_at_random_offsets),
        cmocka_unit_test(test_flip_every_byte),
        cmocka_unit_test(test_reader_string_table_cap),
        cmocka_unit_test(test_input_error),
        cmocka_unit_test(test_file_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
