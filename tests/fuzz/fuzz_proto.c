/*
 * Fuzz target for the pipe protocol: the frame reader, the message codec and the server
 * session. The first byte picks the mode:
 *   even, bit 2 clear: the rest is a client's byte stream, fed to a server-side reader in
 *         pieces sized by that byte, every event handled by a session over a fake daemon with
 *         a small live query state (whose refusals quote the client's text, as perchd's do);
 *         the reader must hold no more than a request may, the session must answer every
 *         event it does not close on, and every frame of every reply is drained and must read
 *         back, with a client-side reader, as a well-formed reply frame;
 *   odd:  the second byte names a message type, the third its direction, the rest is its
 *         payload: when it decodes, encoding the result and decoding again must give the
 *         same bytes (the codec has one canonical form);
 *   even with bit 2 set: the client against a hostile server. The second byte picks what the
 *         client asks after its HELLO (STATUS, a FETCH stream, SUBSCRIBE and its updates, TOP),
 *         the rest is the server's byte stream, read in pieces sized by the first byte. Every
 *         error must be a negative code with a terminated sentence, and a stream must never
 *         write more than the size its reply announced.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "live/query.h"
#include "perch/error.h"
#include "perch/proto.h"
#include "proto/client.h"
#include "proto/proto_internal.h"
#include "proto/session.h"

static uint8_t capture_bytes[300000];

/* What a server's reader may hold: a request at the cap, rounded up, and the reader. */
#define READER_MAX_BYTES (2u * PERCH_PROTO_MAX_REQUEST + 4096u)

static int f_status(void *ctx, perch_proto_answer *a)
{
    (void)ctx;
    static const perch_proto_feature f[] = {{"cswitch", true, ""}};
    perch_proto_status st;
    memset(&st, 0, sizeof st);
    st.server = "fuzz";
    st.feature_count = 1;
    st.features = f;
    return perch_proto_answer_set(a, &st);
}

static int f_open(void *ctx, const char *name, perch_proto_source *src, perch_proto_answer *a)
{
    (void)ctx;
    if (name[0] == 'x') { /* the sentence names the client's text, as perchd's do */
        perch_proto_answer_fail(a, "there is no capture called '%s'", name);
        return PERCH_ENOENT;
    }
    perch_input_memory(&src->in, capture_bytes, sizeof capture_bytes);
    return 0;
}

static int f_snapshot(void *ctx, const perch_proto_peer *p, const perch_proto_snapshot_req *r,
                      perch_proto_source *src, perch_proto_answer *a)
{
    (void)p, (void)r;
    return f_open(ctx, "s", src, a);
}

static int f_record(void *ctx, const perch_proto_peer *p, const perch_proto_record_req *r,
                    perch_proto_answer *a)
{
    (void)ctx, (void)p, (void)r;
    perch_proto_record_rep rep = {"r.perch", "C:\\r.perch"};
    return perch_proto_answer_set(a, &rep);
}

static perch_live_query *make_query(void)
{
    perch_live_query *q;
    perch_sink s;
    if (perch_live_query_create(NULL, &q) < 0)
        abort();
    perch_live_query_sink(q, &s);
    perch_trace_info info = {"fuzz", 0, 2, 8, 1, 10000000, 0, 0, 0, 0, 0, NULL};
    perch_process_rec p = {7, 100, 4, 1, 0, 0, 0, 0, "a.exe", ""};
    perch_thread_rec t = {8, 7, 200, 100, 0, 0, 0, "t"};
    uint64_t frames[3] = {1, 2, 3};
    perch_stack_rec st = {1, 3, 1, frames};
    s.trace_info(s.ctx, &info);
    s.process(s.ctx, &p);
    s.thread(s.ctx, &t);
    s.stack(s.ctx, &st);
    for (uint64_t i = 0; i < 2000; i++) {
        perch_sample_rec sm = {8, 200, 0, 0, 0, 0, 1000000 + i * 4000, 5, 0, (uint32_t)(i & 1), 1};
        perch_slice_rec sl = {8, 200, 1, 0,  1000000 + i * 4000, 1000000 + i * 4000 + 3000, 0, 8, 0,
                              0, 0,   0, {0}};
        s.sample(s.ctx, &sm);
        s.slice(s.ctx, &sl);
    }
    perch_live_query_flush(q);
    return q;
}

static perch_proto_backend backend = {NULL, "fuzz",     1,      f_status, NULL, f_record,
                                      NULL, f_snapshot, f_open, NULL,     NULL, NULL};

static void check_reply_frames(perch_proto_reply *r)
{
    perch_proto_reader *rd;
    uint8_t *f;
    size_t n, used;
    int got, frames = 0;
    perch_proto_event ev;
    if (perch_proto_reader_create(0, &rd) < 0)
        abort();
    while ((got = perch_proto_reply_next(r, &f, &n)) == 1) {
        perch_proto_reader_push(rd, f, n, &used);
        while (perch_proto_reader_next(rd, &ev) == 1)
            if (ev.fault != PERCH_PROTO_OK || !(ev.header.flags & PERCH_PROTO_FLAG_REPLY))
                abort();
        if (used != n && perch_proto_reader_next(rd, &ev) != 1)
            abort();
        perch_free(f);
        if (++frames > 10000)
            abort();
    }
    if (got < 0 && got != PERCH_ENOMEM)
        abort();
    perch_proto_reader_destroy(rd);
}

static void stream_mode(const uint8_t *data, size_t size, uint8_t seed)
{
    perch_proto_reader *r;
    perch_proto_session *s;
    perch_proto_peer peer = {1, "fuzz", (uint8_t)(seed & 1)};
    perch_proto_event ev;
    size_t off = 0;
    uint32_t rng = seed | 1u;
    if (perch_proto_reader_create(PERCH_PROTO_MAX_REQUEST, &r) < 0 ||
        perch_proto_session_create(&backend, &peer, &s) < 0)
        abort();
    bool closing = false;
    while (off < size && !closing) {
        size_t used, n;
        rng = rng * 1103515245u + 12345u;
        n = 1 + (rng >> 8) % 97;
        n = n > size - off ? size - off : n;
        perch_proto_reader_push(r, data + off, n, &used);
        off += used;
        if (perch_proto_reader_bytes(r) > READER_MAX_BYTES)
            abort(); /* a header reserved more than a request may hold */
        while (perch_proto_reader_next(r, &ev) == 1 && !closing) {
            perch_proto_reply *reply = NULL;
            int err = perch_proto_session_handle(s, &ev, &reply);
            if (err != 0 && err != PERCH_EPIPE && err != PERCH_ENOMEM)
                abort(); /* what the session documents: any other error left the client
                          * without an answer */
            if (reply != NULL)
                check_reply_frames(reply);
            perch_proto_reply_destroy(reply);
            closing = err == PERCH_EPIPE;
            perch_proto_reader_set_version(r, perch_proto_session_version(s));
        }
        perch_proto_reply *u = NULL;
        if (perch_proto_session_tick(s, off * 50, true, &u) == 0 && u != NULL)
            check_reply_frames(u);
        perch_proto_reply_destroy(u);
    }
    perch_proto_session_destroy(s);
    perch_proto_reader_destroy(r);
}

static void message_mode(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    unsigned type = data[0] % PERCH_MSG_TYPE_LIMIT;
    bool reply = data[1] & 1;
    uint8_t msg[512], msg2[512];
    void *mem = NULL, *mem2 = NULL;
    uint8_t *enc = NULL, *enc2 = NULL;
    size_t len = 0, len2 = 0;
    bool empty;
    const perch__pschema *schema = perch__proto_schema(type, reply, &empty);
    if (schema == NULL || schema->size > sizeof msg)
        return;
    size_t sz = empty ? 0 : schema->size;
    if (perch_proto_decode(type, reply, data + 2, size - 2, msg, sz, &mem, NULL, 0) < 0)
        return;
    if (perch_proto_encode(type, reply, sz ? msg : NULL, &enc, &len) < 0)
        abort(); /* what decodes must encode */
    if (perch_proto_decode(type, reply, enc, len, msg2, sz, &mem2, NULL, 0) < 0 ||
        perch_proto_encode(type, reply, sz ? msg2 : NULL, &enc2, &len2) < 0 || len2 != len ||
        memcmp(enc, enc2, len) != 0)
        abort();
    perch_free(mem);
    perch_free(mem2);
    perch_free(enc);
    perch_free(enc2);
}

/* The server's byte stream, handed out in pieces of 1 to 97 bytes; what the client writes is
 * dropped. */
typedef struct server_bytes {
    const uint8_t *p;
    size_t len, off;
    uint32_t rng;
} server_bytes;

static int sb_write(void *ctx, const void *data, size_t len, uint32_t timeout_ms)
{
    (void)ctx, (void)data, (void)len, (void)timeout_ms;
    return 0;
}

static int sb_read(void *ctx, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    server_bytes *s = ctx;
    (void)timeout_ms;
    if (s->off == s->len)
        return PERCH_EPIPE;
    s->rng = s->rng * 1103515245u + 12345u;
    size_t n = 1 + (s->rng >> 8) % 97;
    n = n > s->len - s->off ? s->len - s->off : n;
    n = n > cap ? cap : n;
    memcpy(buf, s->p + s->off, n);
    s->off += n;
    *got = n;
    return 0;
}

static void sb_close(void *ctx)
{
    (void)ctx;
}

/* A call's result: 0, or a negative code with a terminated sentence. */
static void check_result(int err, const char *why, size_t why_len)
{
    if (err > 0 || (err < 0 && memchr(why, 0, why_len) == NULL))
        abort(); /* a sentence is written only with an error (why starts filled with 'x') */
}

static void client_fetch(perch_proto_client *c, char *why, size_t why_len)
{
    perch_proto_fetch_req req = {"a.perch", 0};
    perch_proto_stream_rep hdr = {NULL, 0};
    perch_memory_out mem;
    perch_output out;
    void *hmem = NULL;
    size_t written = 0;
    perch_output_memory(&out, &mem, 4u << 20);
    int err = perch_proto_client_stream(c, PERCH_MSG_FETCH, &req, &hdr, &hmem, &out, NULL, NULL,
                                        1000, why, why_len);
    check_result(err, why, why_len);
    perch_free(perch_output_memory_take(&mem, &written));
    if (written > hdr.size || (err == 0 && written != hdr.size))
        abort(); /* more than announced, or short of it without an error */
    perch_free(hmem);
}

static void client_subscribe(perch_proto_client *c, char *why, size_t why_len)
{
    perch_proto_subscribe_req req = {100, 5, 0};
    perch_proto_subscribe_rep rep;
    int err = perch_proto_client_call(c, PERCH_MSG_SUBSCRIBE, &req, &rep, sizeof rep, NULL, 1000,
                                      why, why_len);
    check_result(err, why, why_len);
    for (int i = 0; i < 64 && err == 0; i++) {
        perch_proto_update u;
        perch_proto_top_rep top;
        void *mem = NULL, *tmem = NULL;
        err = perch_proto_client_update(c, &u, &mem, 1000, why, why_len);
        check_result(err, why, why_len);
        if (err == 0 && u.top_len > 0) /* as `perch top --follow` reads it */
            (void)perch_proto_decode(PERCH_MSG_TOP, true, u.top, u.top_len, &top, sizeof top, &tmem,
                                     NULL, 0);
        perch_free(tmem);
        perch_free(mem);
    }
}

static void client_mode(const uint8_t *data, size_t size, uint8_t seed)
{
    server_bytes sb = {data + 1, size > 0 ? size - 1 : 0, 0, seed | 1u};
    perch_proto_transport t = {&sb, sb_write, sb_read, sb_close};
    perch_proto_client *c = NULL;
    char why[256];
    if (size < 1)
        return;
    memset(why, 'x', sizeof why);
    int err = perch_proto_client_open(&t, "fuzz", 1, 1000, &c, why, sizeof why);
    check_result(err, why, sizeof why);
    if (err < 0)
        return;
    if (perch_proto_client_hello(c)->server == NULL)
        abort();
    memset(why, 'x', sizeof why);
    switch (data[0] % 4) {
    case 0: {
        perch_proto_status st;
        void *mem = NULL;
        check_result(perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 1000,
                                             why, sizeof why),
                     why, sizeof why);
        perch_free(mem);
        break;
    }
    case 1:
        client_fetch(c, why, sizeof why);
        break;
    case 2:
        client_subscribe(c, why, sizeof why);
        break;
    default: {
        perch_proto_top_req req = {0, 0, 10, false, 0, {1000, 0, 0}};
        perch_proto_top_rep rep;
        void *mem = NULL;
        check_result(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &rep, sizeof rep, &mem, 1000,
                                             why, sizeof why),
                     why, sizeof why);
        perch_free(mem);
        break;
    }
    }
    perch_proto_client_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (backend.query == NULL)
        backend.query = make_query();
    if (size < 1)
        return 0;
    if (data[0] & 1)
        message_mode(data + 1, size - 1);
    else if (data[0] & 4)
        client_mode(data + 1, size - 1, data[0]);
    else
        stream_mode(data + 1, size - 1, data[0]);
    return 0;
}
