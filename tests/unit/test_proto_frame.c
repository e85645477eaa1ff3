/*
 * Frames of the pipe protocol: the header's bytes pinned as a table, every refusal of a bad
 * header with what the receiver may still trust (skip the frame or close), and the
 * incremental reader fed whole, byte by byte and in random pieces: messages joined from MORE
 * frames, DATA frames delivered one by one, interleaving refused, caps enforced, memory given
 * back after a large message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/error.h"
#include "perch/proto.h"
#include "proto_loop.h"

static void test_header_bytes(void **state)
{
    (void)state;
    perch_proto_header h = {PERCH_PROTO_MAGIC,      1,           PERCH_MSG_STATUS, 0x01020304u,
                            PERCH_PROTO_FLAG_REPLY, 0x00112233u, {0, 0, 0}};
    uint8_t got[PERCH_PROTO_HEADER_SIZE], want[PERCH_PROTO_HEADER_SIZE];
    assert_int_equal(perch_test_hex("50524348"
                                    "0100"
                                    "0400"
                                    "04030201"
                                    "01000000"
                                    "33221100"
                                    "000000000000000000000000",
                                    want, sizeof want),
                     PERCH_PROTO_HEADER_SIZE);
    perch_proto_header_write(&h, got);
    assert_memory_equal(got, want, sizeof want);
    perch_proto_header back;
    perch_proto_fault fault;
    want[16] = want[17] = want[18] = 0; /* a payload length within the cap */
    assert_int_equal(perch_proto_header_read(want, 0, &back, &fault, NULL, 0), 0);
    assert_int_equal(back.magic, PERCH_PROTO_MAGIC);
    assert_int_equal(back.version, 1);
    assert_int_equal(back.type, PERCH_MSG_STATUS);
    assert_int_equal(back.request_id, 0x01020304u);
    assert_int_equal(back.flags, PERCH_PROTO_FLAG_REPLY);
    assert_int_equal(back.payload_len, 0);
    assert_int_equal(fault, PERCH_PROTO_OK);
}

struct bad_case {
    unsigned off; /* byte to change */
    uint8_t value;
    uint16_t version; /* the connection's version */
    int err;
    perch_proto_fault fault;
    const char *says; /* part of the reason */
};

static void test_header_refusals(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {0, 'X', 0, PERCH_EFORMAT, PERCH_PROTO_FATAL, "magic"},
        {19, 0x01, 0, PERCH_ELIMIT, PERCH_PROTO_FATAL, "over the 1048576-byte cap"},
        {4, 7, 0, PERCH_EVERSION, PERCH_PROTO_SKIP, "version 7"},
        {4, 0, 0, PERCH_EVERSION, PERCH_PROTO_SKIP, "version 0"},
        {4, 2, 1, PERCH_EVERSION, PERCH_PROTO_SKIP, "version 2"},
        {12, 0x04, 0, PERCH_EFORMAT, PERCH_PROTO_SKIP, "flags 0x4"},
        {15, 0x80, 0, PERCH_EFORMAT, PERCH_PROTO_SKIP, "flags 0x80000000"},
        {20, 1, 0, PERCH_EFORMAT, PERCH_PROTO_SKIP, "reserved header word 0"},
        {31, 1, 0, PERCH_EFORMAT, PERCH_PROTO_SKIP, "reserved header word 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        perch_proto_header h = {PERCH_PROTO_MAGIC, 1, PERCH_MSG_PING, 9, 0, 5, {0, 0, 0}};
        uint8_t b[PERCH_PROTO_HEADER_SIZE];
        char why[160];
        perch_proto_fault fault;
        perch_proto_header_write(&h, b);
        b[cases[i].off] = cases[i].value;
        int err = perch_proto_header_read(b, cases[i].version, &h, &fault, why, sizeof why);
        if (err != cases[i].err || fault != cases[i].fault || !strstr(why, cases[i].says))
            fail_msg("case %zu: err %d fault %d reason '%s'", i, err, fault, why);
    }
}

typedef struct got {
    perch_proto_event ev[16];
    uint8_t *payload[16];
    int n;
} got;

/* Feeds b to r in pieces of `piece` bytes (0: random pieces), collecting every event. */
static void feed(perch_proto_reader *r, const frames *b, size_t piece, got *g)
{
    size_t off = 0;
    unsigned seed = 7;
    perch_proto_event ev;
    while (off < b->len) {
        size_t n = piece ? piece : (size_t)(seed = seed * 1103515245u + 12345u) % 700 + 1;
        size_t used;
        n = n > b->len - off ? b->len - off : n;
        perch_proto_reader_push(r, b->p + off, n, &used);
        off += used;
        while (perch_proto_reader_next(r, &ev) == 1) {
            assert_true(g->n < 16);
            g->ev[g->n] = ev;
            g->payload[g->n] = malloc(ev.len + 1);
            if (ev.len)
                memcpy(g->payload[g->n], ev.payload, ev.len);
            g->n++;
        }
        assert_true(used > 0 || n == 0);
    }
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->payload[i]);
    g->n = 0;
}

static void test_reader_joins_and_splits(void **state)
{
    (void)state;
    static const size_t pieces[] = {0, 1, 3, 31, 32, 33, 4096, 1u << 22};
    frames b = {NULL, 0};
    uint8_t big[3000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + 1);
    frames_add(&b, 1, PERCH_MSG_HELLO, 1, 0, "hi", 2);
    frames_add(&b, 1, PERCH_MSG_STATUS, 2, PERCH_PROTO_FLAG_MORE, big, 1000);
    frames_add(&b, 1, PERCH_MSG_STATUS, 2, PERCH_PROTO_FLAG_MORE, big + 1000, 0);
    frames_add(&b, 1, PERCH_MSG_STATUS, 2, 0, big + 1000, 2000);
    frames_add(&b, 1, PERCH_MSG_DATA, 3, PERCH_PROTO_FLAG_MORE | 1, big, 10);
    frames_add(&b, 1, PERCH_MSG_DATA, 3, 1, big + 10, 20);
    frames_add(&b, 1, PERCH_MSG_PING, 4, 0, NULL, 0);
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
        perch_proto_reader *r;
        got g = {0};
        assert_int_equal(perch_proto_reader_create(0, &r), 0);
        feed(r, &b, pieces[k], &g);
        assert_int_equal(g.n, 5);
        assert_int_equal(g.ev[0].header.type, PERCH_MSG_HELLO);
        assert_int_equal(g.ev[0].len, 2);
        assert_memory_equal(g.payload[0], "hi", 2);
        assert_int_equal(g.ev[1].header.type, PERCH_MSG_STATUS);
        assert_int_equal(g.ev[1].header.request_id, 2);
        assert_int_equal(g.ev[1].header.flags & PERCH_PROTO_FLAG_MORE, 0);
        assert_int_equal(g.ev[1].len, 3000);
        assert_memory_equal(g.payload[1], big, 3000);
        assert_int_equal(g.ev[2].header.type, PERCH_MSG_DATA); /* not joined */
        assert_int_equal(g.ev[2].len, 10);
        assert_true(g.ev[2].header.flags & PERCH_PROTO_FLAG_MORE);
        assert_int_equal(g.ev[3].len, 20);
        assert_memory_equal(g.payload[3], big + 10, 20);
        assert_int_equal(g.ev[4].header.type, PERCH_MSG_PING);
        for (int i = 0; i < g.n; i++)
            assert_int_equal(g.ev[i].fault, PERCH_PROTO_OK);
        got_free(&g);
        perch_proto_reader_destroy(r);
    }
    free(b.p);
}

static void test_reader_skips_and_closes(void **state)
{
    (void)state;
    frames b = {NULL, 0};
    perch_proto_reader *r;
    got g = {0};
    uint8_t pay[100] = {0};
    assert_int_equal(perch_proto_reader_create(64, &r), 0);
    perch_proto_reader_set_version(r, 1);
    frames_add(&b, 2, PERCH_MSG_STATUS, 1, 0, pay, 10); /* wrong version: skipped */
    frames_add(&b, 1, PERCH_MSG_TOP, 2, 0, pay, 100);   /* over the 64-byte cap: skipped */
    frames_add(&b, 1, PERCH_MSG_PING, 3, 0, NULL, 0);   /* fine */
    frames_add(&b, 1, PERCH_MSG_TOP, 4, PERCH_PROTO_FLAG_MORE, pay, 40);
    frames_add(&b, 1, PERCH_MSG_STATUS, 5, 0, pay, 1); /* interrupts a split message: fatal */
    frames_add(&b, 1, PERCH_MSG_PING, 6, 0, NULL, 0);  /* never read */
    feed(r, &b, 0, &g);
    assert_int_equal(g.n, 4);
    assert_int_equal(g.ev[0].fault, PERCH_PROTO_SKIP);
    assert_int_equal(g.ev[0].error, PERCH_EVERSION);
    assert_non_null(strstr(g.ev[0].reason, "version 2"));
    assert_int_equal(g.ev[1].fault, PERCH_PROTO_SKIP);
    assert_int_equal(g.ev[1].error, PERCH_ELIMIT);
    assert_int_equal(g.ev[1].header.request_id, 2);
    assert_int_equal(g.ev[2].fault, PERCH_PROTO_OK);
    assert_int_equal(g.ev[2].header.request_id, 3);
    assert_int_equal(g.ev[3].fault, PERCH_PROTO_FATAL);
    assert_int_equal(g.ev[3].error, PERCH_EFORMAT);
    assert_non_null(strstr(g.ev[3].reason, "interrupts"));
    /* Dead: everything is swallowed, nothing more comes out. */
    size_t used;
    perch_proto_event ev;
    perch_proto_reader_push(r, b.p, b.len, &used);
    assert_int_equal(used, b.len);
    assert_int_equal(perch_proto_reader_next(r, &ev), 0);
    got_free(&g);
    perch_proto_reader_destroy(r);
    free(b.p);
}

static void test_reader_garbage_and_memory(void **state)
{
    (void)state;
    perch_proto_reader *r;
    perch_proto_event ev;
    size_t used;
    uint8_t junk[64];
    memset(junk, 'G', sizeof junk);
    assert_int_equal(perch_proto_reader_create(0, &r), 0);
    perch_proto_reader_push(r, junk, sizeof junk, &used);
    assert_int_equal(used, sizeof junk);
    assert_int_equal(perch_proto_reader_next(r, &ev), 1);
    assert_int_equal(ev.fault, PERCH_PROTO_FATAL);
    assert_non_null(strstr(ev.reason, "not a Perch frame"));
    perch_proto_reader_destroy(r);

    /* A large message is held only while it is being read. */
    frames b = {NULL, 0};
    uint8_t *big = calloc(1, PERCH_PROTO_MAX_PAYLOAD);
    frames_add(&b, 1, PERCH_MSG_STATUS, 1, 0, big, PERCH_PROTO_MAX_PAYLOAD);
    assert_int_equal(perch_proto_reader_create(0, &r), 0);
    perch_proto_reader_push(r, b.p, b.len, &used);
    assert_int_equal(used, b.len);
    assert_true(perch_proto_reader_bytes(r) >= PERCH_PROTO_MAX_PAYLOAD);
    assert_int_equal(perch_proto_reader_next(r, &ev), 1);
    assert_int_equal(ev.len, PERCH_PROTO_MAX_PAYLOAD);
    assert_int_equal(perch_proto_reader_next(r, &ev), 0);
    assert_true(perch_proto_reader_bytes(r) < 4096);
    perch_proto_reader_destroy(r);
    free(big);
    free(b.p);
}

/* A DATA frame's header asks for more than a request may hold: refused at the header, before
 * its payload is reserved (a client's DATA used to reserve up to 1 MiB on a server whose
 * requests are capped at 64 KiB). */
static void test_reader_caps_data_frames(void **state)
{
    (void)state;
    frames b = {NULL, 0};
    perch_proto_reader *r;
    got g = {0};
    uint8_t *big = calloc(1, PERCH_PROTO_MAX_PAYLOAD);
    frames_add(&b, 1, PERCH_MSG_DATA, 1, 0, big, PERCH_PROTO_MAX_PAYLOAD);
    frames_add(&b, 1, PERCH_MSG_PING, 2, 0, NULL, 0);
    size_t used;
    assert_int_equal(perch_proto_reader_create(PERCH_PROTO_MAX_REQUEST, &r), 0);
    perch_proto_reader_set_version(r, 1);
    perch_proto_reader_push(r, b.p, PERCH_PROTO_HEADER_SIZE, &used); /* the header alone */
    assert_int_equal(used, PERCH_PROTO_HEADER_SIZE);
    assert_true(perch_proto_reader_bytes(r) < 4096);
    perch_proto_reader_destroy(r);
    assert_int_equal(perch_proto_reader_create(PERCH_PROTO_MAX_REQUEST, &r), 0);
    perch_proto_reader_set_version(r, 1);
    feed(r, &b, 0, &g);
    assert_true(perch_proto_reader_bytes(r) < 4096);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.ev[0].fault, PERCH_PROTO_SKIP);
    assert_int_equal(g.ev[0].error, PERCH_ELIMIT);
    assert_int_equal(g.ev[1].fault, PERCH_PROTO_OK);
    assert_int_equal(g.ev[1].header.type, PERCH_MSG_PING);
    got_free(&g);
    perch_proto_reader_destroy(r);
    free(big);
    free(b.p);
}

static void test_type_names(void **state)
{
    (void)state;
    for (unsigned t = 1; t < PERCH_MSG_TYPE_LIMIT; t++)
        assert_non_null(perch_proto_type_name(t));
    assert_null(perch_proto_type_name(0));
    assert_null(perch_proto_type_name(PERCH_MSG_TYPE_LIMIT));
    assert_string_equal(perch_proto_type_name(PERCH_MSG_FETCH), "FETCH");
    uint8_t *f;
    size_t n;
    assert_int_equal(perch_proto_frame(1, 1, 1, 0, NULL, PERCH_PROTO_MAX_PAYLOAD + 1, &f, &n),
                     PERCH_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bytes),
        cmocka_unit_test(test_header_refusals),
        cmocka_unit_test(test_reader_joins_and_splits),
        cmocka_unit_test(test_reader_skips_and_closes),
        cmocka_unit_test(test_reader_garbage_and_memory),
        cmocka_unit_test(test_reader_caps_data_frames),
        cmocka_unit_test(test_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
