/*
 * The protocol client against a server that lies: a scripted byte stream (a HELLO reply, then
 * whatever the case builds) read in small pieces, every request the client writes dropped.
 * A FETCH stream whose DATA frames would pass the size its reply announced stops at the frame
 * that would pass it, with none of that frame written (before, the client wrote every byte the
 * server sent and then called the stream short); one that ends short is PERCH_ETRUNC; an
 * ERROR whose code is not negative is a format error; frames for other requests are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/io.h"
#include "failalloc.h"
#include "perch/proto.h"
#include "proto/client.h"

/* The server's side: bytes handed out in pieces of at most 7. */
typedef struct script {
    uint8_t *bytes;
    size_t len, off;
} script;

static int s_write(void *ctx, const void *data, size_t len, uint32_t timeout_ms)
{
    (void)ctx, (void)data, (void)len, (void)timeout_ms;
    return 0;
}

static int s_read(void *ctx, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    script *s = ctx;
    (void)timeout_ms;
    if (s->off == s->len)
        return PERCH_EPIPE;
    size_t n = s->len - s->off < 7 ? s->len - s->off : 7;
    n = n < cap ? n : cap;
    memcpy(buf, s->bytes + s->off, n);
    s->off += n;
    *got = n;
    return 0;
}

static void s_close(void *ctx)
{
    (void)ctx;
}

/* Appends one frame of a reply message (msg: its struct, encoded) or raw payload. */
static void put(script *s, uint16_t type, uint32_t id, uint32_t flags, const void *msg,
                const void *raw, size_t raw_len)
{
    uint8_t *payload = NULL, *frame = NULL;
    size_t len = raw_len, flen = 0;
    if (msg != NULL)
        assert_int_equal(perch_proto_encode(type, true, msg, &payload, &len), 0);
    assert_int_equal(perch_proto_frame(PERCH_PROTO_VERSION, type, id,
                                       PERCH_PROTO_FLAG_REPLY | flags, msg != NULL ? payload : raw,
                                       len, &frame, &flen),
                     0);
    s->bytes = realloc(s->bytes, s->len + flen);
    assert_non_null(s->bytes);
    memcpy(s->bytes + s->len, frame, flen);
    s->len += flen;
    perch_free(payload);
    perch_free(frame);
}

/* A script that starts with the HELLO reply (request 1). */
static script with_hello(void)
{
    script s = {NULL, 0, 0};
    perch_proto_hello_rep h = {PERCH_PROTO_VERSION, 42, PERCH_ROLE_ADMIN, PERCH_PROTO_MAX_PAYLOAD,
                               "liar"};
    put(&s, PERCH_MSG_HELLO, 1, 0, &h, NULL, 0);
    return s;
}

/* FETCH (request 2) against the script: its result, what went to the output, and why. */
static int fetch(script *s, size_t *written, char *why, size_t why_len)
{
    perch_proto_transport t = {s, s_write, s_read, s_close};
    perch_proto_client *c = NULL;
    perch_proto_fetch_req req = {"a.perch", 0};
    perch_proto_stream_rep hdr;
    perch_memory_out mem;
    perch_output out;
    void *hmem = NULL;
    assert_int_equal(perch_proto_client_open(&t, "test", 7, 1000, &c, why, why_len), 0);
    perch_output_memory(&out, &mem, 1u << 20);
    int err = perch_proto_client_stream(c, PERCH_MSG_FETCH, &req, &hdr, &hmem, &out, NULL, NULL,
                                        1000, why, why_len);
    perch_free(perch_output_memory_take(&mem, written));
    perch_free(hmem);
    perch_proto_client_close(c);
    free(s->bytes);
    return err;
}

static const uint8_t eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* DATA frames of 8, 8 (the last) after a reply announcing `size`. */
static script two_frames_after(uint64_t size)
{
    script s = with_hello();
    perch_proto_stream_rep rep = {"a.perch", size};
    put(&s, PERCH_MSG_FETCH, 2, 0, &rep, NULL, 0);
    put(&s, PERCH_MSG_DATA, 2, PERCH_PROTO_FLAG_MORE, NULL, eight, sizeof eight);
    put(&s, PERCH_MSG_DATA, 2, 0, NULL, eight, sizeof eight);
    return s;
}

static void test_stream_past_its_size_stops(void **state)
{
    char why[256] = "";
    size_t written = 99;
    (void)state;
    script s = two_frames_after(10);
    assert_int_equal(fetch(&s, &written, why, sizeof why), PERCH_EFORMAT);
    assert_int_equal(written, 8); /* the first frame, none of the one that passed */
    assert_string_equal(why, "the server sent more bytes than the size it announced");
    s = two_frames_after(8);
    assert_int_equal(fetch(&s, &written, why, sizeof why), PERCH_EFORMAT);
    assert_int_equal(written, 8);
}

static void test_stream_of_its_size(void **state)
{
    char why[256] = "";
    size_t written = 0;
    (void)state;
    script s = two_frames_after(16);
    assert_int_equal(fetch(&s, &written, why, sizeof why), 0);
    assert_int_equal(written, 16);
    s = two_frames_after(0); /* 0: nothing follows (an empty capture, or offset at its end) */
    assert_int_equal(fetch(&s, &written, why, sizeof why), PERCH_EFORMAT);
    assert_int_equal(written, 0);
    assert_string_equal(why, "the server sent more bytes than the size it announced");
    s = with_hello(); /* what perchd sends for an empty capture: one empty DATA frame */
    perch_proto_stream_rep rep = {"a.perch", 0};
    put(&s, PERCH_MSG_FETCH, 2, 0, &rep, NULL, 0);
    put(&s, PERCH_MSG_DATA, 2, 0, NULL, NULL, 0);
    assert_int_equal(fetch(&s, &written, why, sizeof why), 0);
    assert_int_equal(written, 0);
    s = two_frames_after(17);
    assert_int_equal(fetch(&s, &written, why, sizeof why), PERCH_ETRUNC);
    assert_int_equal(written, 16);
    assert_string_equal(why, "the stream ended before the size the server announced");
}

/* Frames for another request are skipped; an ERROR with a code that is not an error is a
 * format error carrying the server's sentence. */
static void test_foreign_frames_and_bad_error(void **state)
{
    char why[256] = "";
    size_t written = 0;
    perch_proto_stream_rep rep = {"a.perch", 8};
    perch_proto_error e = {5, 0, 0, "all is well"};
    (void)state;
    script s = with_hello();
    put(&s, PERCH_MSG_DATA, 77, 0, NULL, eight, sizeof eight); /* not ours */
    put(&s, PERCH_MSG_FETCH, 2, 0, &rep, NULL, 0);
    put(&s, PERCH_MSG_DATA, 2, 0, NULL, eight, sizeof eight);
    assert_int_equal(fetch(&s, &written, why, sizeof why), 0);
    assert_int_equal(written, 8);
    s = with_hello();
    put(&s, PERCH_MSG_ERROR, 2, 0, &e, NULL, 0);
    assert_int_equal(fetch(&s, &written, why, sizeof why), PERCH_EFORMAT);
    assert_string_equal(why, "all is well");
    assert_int_equal(written, 0);
}

/* The client out of memory while it decodes the reply (the N-th allocation of a FETCH fails):
 * PERCH_ENOMEM, and the sentence says so. Before, decode_reply called any decode error
 * "the server's reply is malformed: " followed by a reason the decoder never wrote (an
 * uninitialized buffer) for an allocation that failed. */
static void test_out_of_memory_is_not_malformed(void **state)
{
    perch_proto_stream_rep rep = {"a.perch", 8};
    unsigned enomem = 0;
    (void)state;
    for (uint64_t n = 1; n < 64; n++) {
        script s = with_hello();
        put(&s, PERCH_MSG_FETCH, 2, 0, &rep, NULL, 0);
        put(&s, PERCH_MSG_DATA, 2, 0, NULL, eight, sizeof eight);
        perch_proto_transport t = {&s, s_write, s_read, s_close};
        perch_proto_client *c = NULL;
        perch_proto_fetch_req req = {"a.perch", 0};
        perch_proto_stream_rep hdr;
        perch_memory_out mem;
        perch_output out;
        void *hmem = NULL;
        char why[256];
        size_t written;
        memset(why, 'x', sizeof why);
        assert_int_equal(perch_proto_client_open(&t, "test", 7, 1000, &c, why, sizeof why), 0);
        perch_output_memory(&out, &mem, 1u << 20);
        perch_failalloc_begin(n, false);
        int err = perch_proto_client_stream(c, PERCH_MSG_FETCH, &req, &hdr, &hmem, &out, NULL, NULL,
                                            1000, why, sizeof why);
        perch_failalloc_end();
        if (err == PERCH_ENOMEM) {
            enomem++;
            assert_non_null(memchr(why, 0, sizeof why));
            assert_null(strstr(why, "malformed"));
        }
        perch_free(perch_output_memory_take(&mem, &written));
        perch_free(hmem);
        perch_proto_client_close(c);
        free(s.bytes);
    }
    assert_true(enomem > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_past_its_size_stops),
        cmocka_unit_test(test_stream_of_its_size),
        cmocka_unit_test(test_foreign_frames_and_bad_error),
        cmocka_unit_test(test_out_of_memory_is_not_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
