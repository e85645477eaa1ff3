/*
 * The server session and the client together over an in-memory pipe (proto_loop.h), with a
 * fake daemon: the handshake and its refusals (no HELLO first, versions with no overlap, a
 * second HELLO), every hostile frame answered by an ERROR naming the type, version or field
 * (unknown type, wrong version, garbage, oversized, a request over the request cap, a reply
 * flag from a client), the read-only role refused RECORD and STOP with a log line naming the
 * client's pid and image, status and capture lists round-tripped, FETCH and SNAPSHOT
 * streams byte-identical to the capture (with an offset, a bad name, a read failing mid-
 * stream), the live queries answered with captures that replay into a sink, and
 * subscriptions at a bounded rate with skipped updates counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "live/query.h"
#include "live_fixture.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/synth.h"
#include "proto/client.h"
#include "proto/session.h"
#include "proto_fake.h"
#include "proto_loop.h"

static int setup(void **state)
{
    (void)state;
    fake_init(6u << 20);
    assert_true(F.capture_len > 3 * PERCH_PROTO_DATA_FRAME);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_free();
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static const perch_proto_peer admin = {1234, "C:\\Tools\\perch.exe", PERCH_ROLE_ADMIN};
static const perch_proto_peer reader = {5678, "C:\\Users\\u\\perch.exe", PERCH_ROLE_READ};

static perch_proto_client *connect_as(loop *l, const perch_proto_peer *peer)
{
    perch_proto_transport t;
    perch_proto_client *c;
    char why[256];
    assert_int_equal(loop_init(l, &backend, peer), 0);
    loop_transport(l, &t);
    int err = perch_proto_client_open(&t, "perch test", 1, 1000, &c, why, sizeof why);
    if (err != 0)
        fail_msg("open: %s", why);
    return c;
}

/* Raw bytes into a fresh session; the ERROR replies that come back, decoded. */
typedef struct raw_out {
    perch_proto_error e[8];
    char msg[8][300];
    int n;
    bool closed;
} raw_out;

static void raw_exchange(const perch_proto_peer *peer, const uint8_t *bytes, size_t len,
                         raw_out *out)
{
    loop l;
    perch_proto_reader *r;
    perch_proto_event ev;
    size_t used;
    memset(out, 0, sizeof *out);
    memset(&ev, 0, sizeof ev);
    assert_int_equal(loop_init(&l, &backend, peer), 0);
    assert_int_equal(loop_server_take(&l, bytes, len), 0);
    assert_int_equal(perch_proto_reader_create(0, &r), 0);
    for (size_t off = 0;;) {
        int got = perch_proto_reader_next(r, &ev);
        if (got == 0 && off == l.out_len)
            break;
        if (got == 1 && ev.header.type == PERCH_MSG_ERROR && out->n < 8) {
            void *mem = NULL;
            assert_int_equal(ev.fault, PERCH_PROTO_OK);
            assert_true(ev.header.flags & PERCH_PROTO_FLAG_REPLY);
            assert_int_equal(perch_proto_decode(PERCH_MSG_ERROR, true, ev.payload, ev.len,
                                                &out->e[out->n], sizeof out->e[0], &mem, NULL, 0),
                             0);
            snprintf(out->msg[out->n], sizeof out->msg[0], "%s", out->e[out->n].message);
            out->e[out->n].message = out->msg[out->n];
            out->n++;
            perch_free(mem);
        }
        if (got == 0) {
            perch_proto_reader_push(r, l.out + off, l.out_len - off, &used);
            off += used;
        }
    }
    out->closed = l.closing;
    perch_proto_reader_destroy(r);
    loop_free(&l);
}

static void hello_frame(frames *b, uint32_t lo, uint32_t hi)
{
    perch_proto_hello_req h = {lo, hi, 1, "raw"};
    uint8_t *p;
    size_t n;
    assert_int_equal(perch_proto_encode(PERCH_MSG_HELLO, false, &h, &p, &n), 0);
    frames_add(b, 1, PERCH_MSG_HELLO, 1, 0, p, n);
    perch_free(p);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_handshake(void **state)
{
    (void)state;
    loop l;
    perch_proto_client *c = connect_as(&l, &admin);
    const perch_proto_hello_rep *h = perch_proto_client_hello(c);
    assert_int_equal(h->version, PERCH_PROTO_VERSION);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->role, PERCH_ROLE_ADMIN);
    assert_int_equal(h->max_payload, PERCH_PROTO_MAX_PAYLOAD);
    assert_string_equal(h->server, "perchd test");
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_PING, NULL, NULL, 0, NULL, 100, NULL, 0),
                     0);
    perch_proto_client_close(c);
    assert_true(l.closed);
    loop_free(&l);

    raw_out o;
    frames b = {NULL, 0};
    frames_add(&b, 1, PERCH_MSG_STATUS, 5, 0, NULL, 0);
    hello_frame(&b, 1, 1);
    hello_frame(&b, 1, 1);
    raw_exchange(&admin, b.p, b.len, &o);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.e[0].code, PERCH_ESTATE);
    assert_int_equal(o.e[0].about_type, PERCH_MSG_STATUS);
    assert_non_null(strstr(o.msg[0], "the first message must be HELLO (got STATUS"));
    assert_int_equal(o.e[1].code, PERCH_ESTATE);
    assert_non_null(strstr(o.msg[1], "HELLO was already done"));
    assert_false(o.closed);
    free(b.p);

    b = (frames){NULL, 0};
    hello_frame(&b, 5, 7);
    frames_add(&b, 1, PERCH_MSG_PING, 2, 0, NULL, 0); /* never read: the connection closes */
    raw_exchange(&admin, b.p, b.len, &o);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.e[0].code, PERCH_EVERSION);
    assert_non_null(strstr(o.msg[0], "speaks protocol versions 5..7, this server speaks 1..1"));
    assert_true(o.closed);
    free(b.p);
}

static void test_hostile_frames(void **state)
{
    (void)state;
    raw_out o;
    frames b = {NULL, 0};
    uint8_t *big = calloc(1, PERCH_PROTO_MAX_REQUEST + 1);
    hello_frame(&b, 1, 1);
    frames_add(&b, 1, 77, 2, 0, NULL, 0);
    frames_add(&b, 1, PERCH_MSG_DATA, 3, 0, "x", 1);
    frames_add(&b, 2, PERCH_MSG_STATUS, 4, 0, NULL, 0);
    frames_add(&b, 1, PERCH_MSG_STATUS, 5, PERCH_PROTO_FLAG_REPLY, NULL, 0);
    frames_add(&b, 1, PERCH_MSG_TOP, 6, 0, big, PERCH_PROTO_MAX_REQUEST + 1);
    frames_add(&b, 1, PERCH_MSG_TOP, 7, 0, "\x05", 1);
    frames_add(&b, 1, PERCH_MSG_PING, 8, 0, NULL, 0);
    raw_exchange(&admin, b.p, b.len, &o);
    assert_int_equal(o.n, 6);
    assert_int_equal(o.e[0].code, PERCH_ENOTSUP);
    assert_non_null(strstr(o.msg[0], "message type 77 (unknown) is not a request"));
    assert_non_null(strstr(o.msg[1], "message type 10 (DATA) is not a request"));
    assert_int_equal(o.e[2].code, PERCH_EVERSION);
    assert_int_equal(o.e[2].about_version, 2);
    assert_non_null(strstr(o.msg[2], "protocol version 2 is not spoken here"));
    assert_non_null(strstr(o.msg[3], "carries the reply flag"));
    assert_int_equal(o.e[4].code, PERCH_ELIMIT);
    assert_int_equal(o.e[5].code, PERCH_EFORMAT);
    assert_non_null(strstr(o.msg[5], "malformed top request: field what"));
    assert_false(o.closed);
    free(b.p);

    /* Garbage and a frame over the hard cap lose the framing: ERROR, then close. */
    uint8_t junk[40];
    memset(junk, 0xA5, sizeof junk);
    raw_exchange(&admin, junk, sizeof junk, &o);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.e[0].code, PERCH_EFORMAT);
    assert_non_null(strstr(o.msg[0], "not a Perch frame"));
    assert_true(o.closed);
    b = (frames){NULL, 0};
    hello_frame(&b, 1, 1);
    uint8_t hdr[PERCH_PROTO_HEADER_SIZE];
    perch_proto_header h = {PERCH_PROTO_MAGIC, 1, PERCH_MSG_STATUS, 9, 0, 64u << 20, {0, 0, 0}};
    perch_proto_header_write(&h, hdr);
    b.p = realloc(b.p, b.len + sizeof hdr);
    memcpy(b.p + b.len, hdr, sizeof hdr);
    b.len += sizeof hdr;
    raw_exchange(&admin, b.p, b.len, &o);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.e[0].code, PERCH_ELIMIT);
    assert_true(o.closed);
    free(b.p);
    free(big);
}

static void test_roles_and_log(void **state)
{
    (void)state;
    loop l;
    char why[300];
    perch_proto_record_req req = {10000, "", 0, NULL};
    perch_proto_record_rep rep;
    perch_proto_stop_req sreq = {""};
    perch_proto_stop_rep srep;
    perch_proto_status st;
    void *mem = NULL;
    F.log[0] = '\0';
    perch_proto_client *c = connect_as(&l, &reader);
    assert_int_equal(perch_proto_client_hello(c)->role, PERCH_ROLE_READ);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem, 100,
                                             why, sizeof why),
                     PERCH_EACCES);
    assert_non_null(strstr(why, "RECORD needs administrator rights"));
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_STOP, &sreq, &srep, sizeof srep, &mem,
                                             100, why, sizeof why),
                     PERCH_EACCES);
    assert_int_equal(F.records + F.stops, 0);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 100,
                                             why, sizeof why),
                     0);
    perch_free(mem);
    /* warning (1) | untrusted (16): a read-only client's lines may be kept within a budget */
    assert_non_null(strstr(F.log, "17 pipe client pid 5678 (C:\\Users\\u\\perch.exe, read-only): "
                                  "RECORD refused: not an administrator"));
    assert_non_null(strstr(F.log, "STOP refused"));
    assert_null(strstr(F.log, "STATUS")); /* reads are not logged */
    perch_proto_client_close(c);
    loop_free(&l);

    F.log[0] = '\0';
    c = connect_as(&l, &admin);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem, 100,
                                             why, sizeof why),
                     0);
    assert_string_equal(rep.name, "rec-2.perch");
    perch_free(mem);
    req.duration_ms = 666;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem, 100,
                                             why, sizeof why),
                     PERCH_ESTATE);
    assert_string_equal(why, "a recording is already running (rec-1.perch)");
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_STOP, &sreq, &srep, sizeof srep, &mem,
                                             100, why, sizeof why),
                     0);
    assert_int_equal(srep.bytes, 999);
    perch_free(mem);
    assert_non_null(strstr(F.log, "0 pipe client pid 1234 (C:\\Tools\\perch.exe, admin): RECORD "
                                  "(duration 10000 ms, name '', 0 option(s)) done"));
    assert_non_null(strstr(F.log, "RECORD (duration 666 ms, name '', 0 option(s)) refused: a "
                                  "recording is already running"));
    assert_non_null(strstr(F.log, "STOP (name '') done"));
    perch_proto_client_close(c);
    loop_free(&l);
}

static void test_status_and_captures(void **state)
{
    (void)state;
    loop l;
    perch_proto_status st;
    perch_proto_captures_rep caps;
    void *mem = NULL, *mem2 = NULL;
    perch_proto_client *c = connect_as(&l, &reader);
    assert_int_equal(
        perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 100, NULL, 0), 0);
    assert_int_equal(st.session_state, PERCH_SESSION_DEGRADED);
    assert_string_equal(st.degraded, "LBR is off: not supported");
    assert_int_equal(st.feature_count, 2);
    assert_string_equal(st.features[1].name, "lbr");
    assert_false(st.features[1].enabled);
    assert_int_equal(st.loss_count, 2);
    assert_int_equal(st.losses[0].count, 12);
    assert_int_equal(st.recording_count, 1);
    assert_string_equal(st.recordings[0].name, "rec-1.perch");
    assert_int_equal(st.recorder_cap_bytes, 256u << 20);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_CAPTURES, NULL, &caps, sizeof caps, &mem2,
                                             100, NULL, 0),
                     0);
    assert_int_equal(caps.count, 2);
    assert_string_equal(caps.captures[0].name, "a.perch");
    assert_string_equal(caps.directory, "C:\\ProgramData\\Perch\\captures");
    perch_free(mem);
    perch_free(mem2);
    perch_proto_client_close(c);
    loop_free(&l);

    /* A daemon without a callback says so. */
    perch_proto_backend none = backend;
    none.captures = NULL;
    perch_proto_transport t;
    char why[300];
    assert_int_equal(loop_init(&l, &none, &admin), 0);
    loop_transport(&l, &t);
    assert_int_equal(perch_proto_client_open(&t, "t", 1, 100, &c, why, sizeof why), 0);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_CAPTURES, NULL, &caps, sizeof caps, &mem,
                                             100, why, sizeof why),
                     PERCH_ENOTSUP);
    assert_non_null(strstr(why, "CAPTURES failed: not supported (not available in this server)"));
    perch_proto_client_close(c);
    loop_free(&l);
}

static void test_fetch_and_snapshot(void **state)
{
    (void)state;
    loop l;
    perch_output out;
    perch_memory_out mem;
    perch_proto_stream_rep hdr;
    void *hmem = NULL;
    char why[300];
    size_t len;
    F.log[0] = '\0';
    perch_proto_client *c = connect_as(&l, &reader);
    for (uint64_t off = 0; off < 2; off++) {
        perch_proto_fetch_req req = {"a.perch", off * 1000};
        perch_output_memory(&out, &mem, 64u << 20);
        assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_FETCH, &req, &hdr, &hmem, &out,
                                                   NULL, NULL, 100, why, sizeof why),
                         0);
        uint8_t *got = perch_output_memory_take(&mem, &len);
        assert_int_equal(len, F.capture_len - off * 1000);
        assert_int_equal(hdr.size, len);
        assert_string_equal(hdr.name, "a.perch");
        assert_memory_equal(got, F.capture + off * 1000, len);
        perch_free(got);
        perch_free(hmem);
    }
    perch_proto_fetch_req bad = {"..\\secret", 0}, missing = {"b.perch", 0};
    perch_output_memory(&out, &mem, 1u << 20);
    assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_FETCH, &bad, &hdr, &hmem, &out, NULL,
                                               NULL, 100, why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "is not a capture name"));
    /* A sentence that names the client's text is cut at 300 bytes, here inside a character:
     * the ERROR still goes out, cut before it (the encoder refuses invalid UTF-8, and the
     * client used to get no reply at all and be dropped). */
    char euros[100 * 3 + 3] = "";
    for (int i = 0; i < 100; i++)
        strcat(euros, "\xe2\x82\xac");
    strcat(euros, "\\x");
    perch_proto_fetch_req cut = {euros, 0};
    assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_FETCH, &cut, &hdr, &hmem, &out, NULL,
                                               NULL, 100, why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "'\xe2\x82\xac\xe2\x82\xac"));
    size_t why_len = strlen(why);
    assert_true(why_len >= 3 && memcmp(why + why_len - 3, "\xe2\x82\xac", 3) == 0);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_PING, NULL, NULL, 0, NULL, 100, NULL, 0),
                     0); /* still connected */
    assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_FETCH, &missing, &hdr, &hmem, &out,
                                               NULL, NULL, 100, why, sizeof why),
                     PERCH_ENOENT);
    assert_string_equal(why, "FETCH failed: no such file or object");

    /* A snapshot is a stream too, and it is logged. */
    perch_proto_snapshot_req sreq = {30000};
    assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_SNAPSHOT, &sreq, &hdr, &hmem, &out,
                                               NULL, NULL, 100, why, sizeof why),
                     0);
    uint8_t *got = perch_output_memory_take(&mem, &len);
    assert_int_equal(len, F.capture_len);
    perch_free(got);
    perch_free(hmem);
    assert_non_null(strstr(F.log, "SNAPSHOT (last 30000 ms) done: snapshot-1.perch"));

    /* The capture's input fails mid-stream: the client gets the error, the bytes it has are
     * a prefix. */
    F.fail_read_at = 2 * PERCH_PROTO_DATA_FRAME + 5;
    perch_proto_fetch_req req = {"a.perch", 0};
    perch_output_memory(&out, &mem, 64u << 20);
    assert_int_equal(perch_proto_client_stream(c, PERCH_MSG_FETCH, &req, &hdr, &hmem, &out, NULL,
                                               NULL, 100, why, sizeof why),
                     PERCH_EIO);
    assert_string_equal(why, "reading the capture failed");
    got = perch_output_memory_take(&mem, &len);
    assert_int_equal(len, 2 * PERCH_PROTO_DATA_FRAME);
    assert_memory_equal(got, F.capture, len);
    perch_free(got);
    perch_free(hmem);
    F.fail_read_at = 0;
    /* and the connection still serves */
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_PING, NULL, NULL, 0, NULL, 100, NULL, 0),
                     0);
    perch_proto_client_close(c);
    loop_free(&l);
}

static void test_live_queries(void **state)
{
    (void)state;
    loop l;
    perch_proto_top_rep top;
    perch_proto_records_rep recs;
    void *mem = NULL;
    char why[300];
    kept k;
    perch_sink ks;
    perch_capture_status cs;
    perch_proto_client *c = connect_as(&l, &reader);
    perch_proto_top_req req = {PERCH_TOP_THREADS, PERCH_ORDER_CPU, 5, false, 0, {0, 0, 0}};
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 100,
                                             why, sizeof why),
                     0);
    assert_int_equal(top.row_count, 5);
    assert_true(top.complete);
    assert_true(top.cpu_ticks > 0);
    for (uint32_t i = 1; i < top.row_count; i++)
        assert_true(top.rows[i - 1].cpu_ticks >= top.rows[i].cpu_ticks);
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(top.entities, top.entities_len, &ks, &cs), 0);
    assert_int_equal(k.got_info, 1);
    assert_int_equal(k.nthreads, 5);
    assert_true(k.nprocs >= 1);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(k.threads[i].key, top.rows[i].key);
    kept_free(&k);
    perch_free(mem);

    req.what = PERCH_TOP_STACKS;
    req.order = PERCH_ORDER_SAMPLES;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 100,
                                             why, sizeof why),
                     0);
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(top.entities, top.entities_len, &ks, &cs), 0);
    assert_int_equal(k.nstacks, top.row_count);
    for (uint32_t i = 0; i < top.row_count; i++) {
        assert_int_equal(top.rows[i].key, i + 1);
        assert_int_equal(k.stacks[i].id, i + 1);
        assert_true(k.stacks[i].frame_count > 0);
    }
    assert_true(k.nmods > 0);
    kept_free(&k);
    perch_free(mem);

    req.window.from_ts = 100;
    req.window.to_ts = 100;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 100,
                                             why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "TOP: the window is empty"));

    /* SAMPLES of the busiest thread's process, SLICES of that thread. */
    req = (perch_proto_top_req){PERCH_TOP_THREADS, PERCH_ORDER_SAMPLES, 1, false, 0, {0, 0, 0}};
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 100,
                                             why, sizeof why),
                     0);
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(top.entities, top.entities_len, &ks, &cs), 0);
    uint32_t tid = k.threads[0].tid, pid = k.threads[0].pid;
    uint64_t thread_samples = top.rows[0].samples;
    kept_free(&k);
    perch_free(mem);
    perch_proto_samples_req sreq = {pid, 0, {0, 0, 0}};
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_SAMPLES, &sreq, &recs, sizeof recs, &mem,
                                             100, why, sizeof why),
                     0);
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(recs.capture, recs.capture_len, &ks, &cs), 0);
    assert_int_equal(k.nsamples, recs.matched);
    assert_true(recs.matched >= thread_samples);
    assert_int_equal(k.order_errors, 0);
    kept_free(&k);
    perch_free(mem);
    perch_proto_slices_req lreq = {tid, 3, {0, 0, 0}};
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_SLICES, &lreq, &recs, sizeof recs, &mem,
                                             100, why, sizeof why),
                     0);
    kept_sink(&k, &ks);
    assert_int_equal(perch_capture_replay_memory(recs.capture, recs.capture_len, &ks, &cs), 0);
    assert_int_equal(k.nslices, recs.matched > 3 ? 3 : recs.matched);
    assert_int_equal(recs.truncated, recs.matched > 3);
    for (size_t i = 0; i < k.nslices; i++)
        assert_int_equal(k.slices[i].tid, tid);
    kept_free(&k);
    perch_free(mem);
    perch_proto_client_close(c);
    loop_free(&l);

    /* No live state: said in a sentence. */
    perch_proto_backend none = backend;
    none.query = NULL;
    perch_proto_transport t;
    assert_int_equal(loop_init(&l, &none, &admin), 0);
    loop_transport(&l, &t);
    assert_int_equal(perch_proto_client_open(&t, "t", 1, 100, &c, why, sizeof why), 0);
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &mem, 100,
                                             why, sizeof why),
                     PERCH_ENOTSUP);
    assert_non_null(strstr(why, "live queries are not available"));
    perch_proto_client_close(c);
    loop_free(&l);
}

static void test_subscribe(void **state)
{
    (void)state;
    loop l;
    perch_proto_subscribe_req req = {10, 3, 1000}; /* below the minimum interval */
    perch_proto_subscribe_rep rep;
    perch_proto_update u;
    perch_proto_top_rep top;
    void *mem = NULL, *tmem = NULL;
    perch_proto_client *c = connect_as(&l, &reader);
    assert_int_equal(
        perch_proto_client_call(c, PERCH_MSG_SUBSCRIBE, &req, &rep, sizeof rep, NULL, 100, NULL, 0),
        0);
    assert_int_equal(rep.interval_ms, PERCH_PROTO_MIN_INTERVAL_MS);
    uint64_t t0 = 0;
    for (uint64_t i = 0; i < 4; i++) {
        assert_int_equal(perch_proto_client_update(c, &u, &mem, 100, NULL, 0), 0);
        assert_int_equal(u.seq, i);
        assert_int_equal(u.events_per_sec, 200);
        assert_int_equal(u.lost_total, 15);
        assert_int_equal(perch_proto_decode(PERCH_MSG_TOP, true, u.top, u.top_len, &top, sizeof top,
                                            &tmem, NULL, 0),
                         0);
        assert_int_equal(top.row_count, 3);
        perch_free(tmem);
        perch_free(mem);
        if (i == 0)
            t0 = l.now_ms;
    }
    /* the virtual clock moved by the interval between updates: a bounded rate */
    assert_int_equal(l.now_ms - t0, 3 * PERCH_PROTO_MIN_INTERVAL_MS);
    /* A client that has not read the last update gets no new one; the skips are counted. */
    perch_proto_reply *r = NULL;
    for (int i = 0; i < 5; i++) {
        l.now_ms += PERCH_PROTO_MIN_INTERVAL_MS;
        assert_int_equal(perch_proto_session_tick(l.session, l.now_ms, false, &r), 0);
        assert_null(r);
    }
    assert_int_equal(perch_proto_client_update(c, &u, &mem, 100, NULL, 0), 0);
    assert_int_equal(u.skipped, 5);
    perch_free(mem);
    assert_int_equal(
        perch_proto_client_call(c, PERCH_MSG_UNSUBSCRIBE, NULL, NULL, 0, NULL, 100, NULL, 0), 0);
    assert_false(perch_proto_session_subscribed(l.session));
    perch_proto_client_close(c);
    loop_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake),          cmocka_unit_test(test_hostile_frames),
        cmocka_unit_test(test_roles_and_log),      cmocka_unit_test(test_status_and_captures),
        cmocka_unit_test(test_fetch_and_snapshot), cmocka_unit_test(test_live_queries),
        cmocka_unit_test(test_subscribe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
