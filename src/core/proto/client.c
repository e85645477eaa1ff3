/*
 * The protocol client (client.h): frames out through the transport, bytes in through the
 * frame reader, the reply of each request matched by its request id (anything else, such as
 * an update that was in flight, is skipped), and ERROR replies turned into codes and
 * sentences.
 */
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "proto/client.h"
#include "util/mem.h"

#define READ_CHUNK (64u << 10)

struct perch_proto_client {
    perch_proto_transport t;
    perch_proto_reader *reader;
    uint16_t version;
    uint32_t next_id, sub_id;
    perch_proto_hello_rep hello;
    void *hello_mem;
    uint8_t *buf;
    size_t buf_len, buf_off; /* bytes read but not yet taken by the reader */
};

static void say(char *why, size_t len, const char *prefix, const char *text)
{
    if (why != NULL && len > 0)
        snprintf(why, len, "%s%s", prefix, text);
}

static int send_request(perch_proto_client *c, unsigned type, const void *req, uint32_t id,
                        uint32_t timeout_ms)
{
    uint8_t *payload = NULL, *frame = NULL;
    size_t len = 0, flen = 0;
    int err = perch_proto_encode(type, false, req, &payload, &len);
    if (err == 0)
        err = perch_proto_frame(c->version ? c->version : PERCH_PROTO_VERSION, (uint16_t)type, id,
                                0, payload, len, &frame, &flen);
    if (err == 0)
        err = c->t.write(c->t.ctx, frame, flen, timeout_ms);
    perch__free(payload);
    perch__free(frame);
    return err;
}

/* The next event of the reader, reading from the transport as needed. */
static int next_event(perch_proto_client *c, perch_proto_event *ev, uint32_t timeout_ms)
{
    for (;;) {
        size_t used;
        if (perch_proto_reader_next(c->reader, ev) == 1)
            return 0;
        if (c->buf_off == c->buf_len) {
            int err = c->t.read(c->t.ctx, c->buf, READ_CHUNK, &c->buf_len, timeout_ms);
            c->buf_off = 0;
            if (err < 0) {
                c->buf_len = 0;
                return err;
            }
        }
        perch_proto_reader_push(c->reader, c->buf + c->buf_off, c->buf_len - c->buf_off, &used);
        c->buf_off += used;
    }
}

/* An ERROR message's code, its sentence into why. */
static int error_of(const perch_proto_event *ev, char *why, size_t why_len)
{
    perch_proto_error e;
    void *mem = NULL;
    char reason[200] = ""; /* written for PERCH_EFORMAT only */
    int err = perch_proto_decode(PERCH_MSG_ERROR, true, ev->payload, ev->len, &e, sizeof e, &mem,
                                 reason, sizeof reason);
    if (err < 0) { /* out of memory: the ERROR may be fine, but its code and sentence are lost */
        say(why, why_len, err == PERCH_EFORMAT ? "the server sent a malformed ERROR: " : "",
            err == PERCH_EFORMAT ? reason : perch_strerror(err));
        return err;
    }
    say(why, why_len, "", e.message);
    perch__free(mem);
    return e.code < 0 ? e.code : PERCH_EFORMAT;
}

/* Waits for the reply to request id: 0 with the event (a message of `type`, or DATA when
 * data is true), or the error it carries. */
static int await(perch_proto_client *c, uint32_t id, unsigned type, bool data,
                 perch_proto_event *ev, uint32_t timeout_ms, char *why, size_t why_len)
{
    for (;;) {
        int err = next_event(c, ev, timeout_ms);
        if (err < 0) {
            say(why, why_len, "",
                err == PERCH_ETIMEDOUT ? "the server did not answer in time"
                                       : "the server closed the pipe");
            return err;
        }
        if (ev->fault != PERCH_PROTO_OK) {
            say(why, why_len, "the server sent a frame this client refuses: ", ev->reason);
            return ev->error;
        }
        if (ev->header.request_id != id && ev->header.type != PERCH_MSG_ERROR)
            continue; /* an update or a late reply to something else */
        if (ev->header.type == PERCH_MSG_ERROR)
            return error_of(ev, why, why_len);
        if (ev->header.type != (data ? PERCH_MSG_DATA : type)) {
            say(why, why_len, "the server answered with an unexpected message of type ",
                perch_proto_type_name(ev->header.type) ? perch_proto_type_name(ev->header.type)
                                                       : "unknown");
            return PERCH_EFORMAT;
        }
        return 0;
    }
}

static int decode_reply(const perch_proto_event *ev, unsigned type, void *rep, size_t rep_size,
                        void **mem, char *why, size_t why_len)
{
    char reason[200] = ""; /* written for PERCH_EFORMAT only */
    int err = perch_proto_decode(type, true, ev->payload, ev->len, rep, rep_size, mem, reason,
                                 sizeof reason);
    if (err == PERCH_EFORMAT)
        say(why, why_len, "the server's reply is malformed: ", reason);
    else if (err < 0) /* out of memory: the reply may be fine */
        say(why, why_len, "", perch_strerror(err));
    return err;
}

int perch_proto_client_call(perch_proto_client *c, unsigned type, const void *req, void *rep,
                            size_t rep_size, void **mem, uint32_t timeout_ms, char *why,
                            size_t why_len)
{
    perch_proto_event ev;
    uint32_t id = c->next_id++;
    void *dummy = NULL;
    int err = send_request(c, type, req, id, timeout_ms);
    if (err < 0) {
        say(why, why_len, "", "sending the request failed: the server closed the pipe");
        return err;
    }
    err = await(c, id, type, false, &ev, timeout_ms, why, why_len);
    if (err == 0)
        err = decode_reply(&ev, type, rep, rep_size, mem ? mem : &dummy, why, why_len);
    if (err == 0 && type == PERCH_MSG_SUBSCRIBE)
        c->sub_id = id;
    perch__free(dummy);
    return err;
}

int perch_proto_client_stream(perch_proto_client *c, unsigned type, const void *req,
                              perch_proto_stream_rep *hdr, void **mem, perch_output *out,
                              perch_proto_progress_fn progress, void *progress_ctx,
                              uint32_t timeout_ms, char *why, size_t why_len)
{
    perch_proto_event ev;
    uint32_t id = c->next_id;
    uint64_t done = 0;
    int err =
        perch_proto_client_call(c, type, req, hdr, sizeof *hdr, mem, timeout_ms, why, why_len);
    for (bool more = err == 0; more;) {
        err = await(c, id, type, true, &ev, timeout_ms, why, why_len);
        if (err < 0)
            break;
        more = (ev.header.flags & PERCH_PROTO_FLAG_MORE) != 0;
        if (ev.len > hdr->size - done) { /* none of it written (done <= size) */
            say(why, why_len, "", "the server sent more bytes than the size it announced");
            err = PERCH_EFORMAT;
            break;
        }
        if (ev.len && (err = out->write(out->ctx, ev.payload, ev.len)) < 0) {
            say(why, why_len, "", "writing the received bytes failed");
            break;
        }
        done += ev.len;
        if (progress)
            progress(progress_ctx, done, hdr->size);
    }
    if (err == 0 && done != hdr->size) {
        say(why, why_len, "", "the stream ended before the size the server announced");
        err = PERCH_ETRUNC;
    }
    return err;
}

int perch_proto_client_update(perch_proto_client *c, perch_proto_update *u, void **mem,
                              uint32_t timeout_ms, char *why, size_t why_len)
{
    perch_proto_event ev;
    if (c->sub_id == 0)
        return PERCH_ESTATE;
    int err = await(c, c->sub_id, PERCH_MSG_UPDATE, false, &ev, timeout_ms, why, why_len);
    return err < 0 ? err : decode_reply(&ev, PERCH_MSG_UPDATE, u, sizeof *u, mem, why, why_len);
}

const perch_proto_hello_rep *perch_proto_client_hello(const perch_proto_client *c)
{
    return &c->hello;
}

int perch_proto_client_open(perch_proto_transport *t, const char *name, uint32_t pid,
                            uint32_t timeout_ms, perch_proto_client **out, char *why,
                            size_t why_len)
{
    perch_proto_client *c = perch__calloc(1, sizeof *c);
    perch_proto_hello_req req = {PERCH_PROTO_VERSION_MIN, PERCH_PROTO_VERSION_MAX, pid, name};
    int err = c == NULL ? PERCH_ENOMEM : 0;
    if (err == 0) {
        c->t = *t;
        c->next_id = 1;
        c->buf = perch__alloc(READ_CHUNK);
        err = c->buf == NULL ? PERCH_ENOMEM : perch_proto_reader_create(0, &c->reader);
    } else if (t->close) {
        t->close(t->ctx);
    }
    memset(t, 0, sizeof *t);
    if (err == 0)
        err = perch_proto_client_call(c, PERCH_MSG_HELLO, &req, &c->hello, sizeof c->hello,
                                      &c->hello_mem, timeout_ms, why, why_len);
    if (err < 0) {
        if (err == PERCH_ENOMEM)
            say(why, why_len, "", "out of memory");
        perch_proto_client_close(c);
        return err;
    }
    c->version = (uint16_t)c->hello.version;
    perch_proto_reader_set_version(c->reader, c->version);
    *out = c;
    return 0;
}

void perch_proto_client_close(perch_proto_client *c)
{
    if (c == NULL)
        return;
    if (c->t.close)
        c->t.close(c->t.ctx);
    perch_proto_reader_destroy(c->reader);
    perch__free(c->hello_mem);
    perch__free(c->buf);
    perch__free(c);
}
