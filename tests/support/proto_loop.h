/*
 * An in-memory pipe for the protocol tests: a perch_proto_transport whose writes go through
 * a server-side frame reader into a perch_proto_session, and whose reads return the frames
 * of the session's replies (and, when subscribed, updates on a virtual clock). Everything a
 * client does over the real pipe, without the pipe. Header-only: static helpers.
 */
#ifndef PERCH_TEST_PROTO_LOOP_H
#define PERCH_TEST_PROTO_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "proto/client.h"
#include "proto/session.h"

/* A byte string of frames built by a test (free p). */
typedef struct frames {
    uint8_t *p;
    size_t len;
} frames;

/* Appends one frame; aborts when it cannot be built. */
static inline void frames_add(frames *b, uint16_t version, uint16_t type, uint32_t id,
                              uint32_t flags, const void *payload, size_t len)
{
    uint8_t *f;
    size_t n;
    if (perch_proto_frame(version, type, id, flags, payload, len, &f, &n) != 0)
        abort();
    b->p = realloc(b->p, b->len + n);
    memcpy(b->p + b->len, f, n);
    b->len += n;
    perch_free(f);
}

typedef struct loop {
    perch_proto_reader *reader;
    perch_proto_session *session;
    uint8_t *out;
    size_t out_len, out_off;
    bool closing, closed;
    bool idle;       /* what ticks tell the session */
    uint64_t now_ms; /* virtual clock for subscriptions */
    int replies;     /* replies produced */
} loop;

static void loop_push_reply(loop *l, perch_proto_reply *r)
{
    uint8_t *f;
    size_t n;
    int got;
    while ((got = perch_proto_reply_next(r, &f, &n)) == 1) {
        l->out = realloc(l->out, l->out_len + n);
        memcpy(l->out + l->out_len, f, n);
        l->out_len += n;
        perch_free(f);
    }
    if (got < 0)
        abort();
    perch_proto_reply_destroy(r);
    l->replies++;
}

/* Feeds bytes to the server side (what a client's write does). */
static int loop_server_take(loop *l, const void *data, size_t len)
{
    const uint8_t *p = data;
    perch_proto_event ev;
    while (len > 0 && !l->closing) {
        size_t used;
        perch_proto_reader_push(l->reader, p, len, &used);
        p += used;
        len -= used;
        while (perch_proto_reader_next(l->reader, &ev) == 1) {
            perch_proto_reply *r = NULL;
            int err = perch_proto_session_handle(l->session, &ev, &r);
            if (r != NULL)
                loop_push_reply(l, r);
            if (err == PERCH_EPIPE)
                l->closing = true;
            else if (err < 0)
                return err;
            perch_proto_reader_set_version(l->reader, perch_proto_session_version(l->session));
        }
    }
    return 0;
}

static int loop_write(void *ctx, const void *data, size_t len, uint32_t timeout_ms)
{
    loop *l = ctx;
    (void)timeout_ms;
    if (l->closing || l->closed)
        return PERCH_EPIPE;
    return loop_server_take(l, data, len);
}

static int loop_read(void *ctx, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    loop *l = ctx;
    (void)timeout_ms;
    *got = 0;
    if (l->out_off == l->out_len && perch_proto_session_subscribed(l->session) && !l->closing) {
        perch_proto_reply *r = NULL;
        for (int i = 0; i < 100 && r == NULL; i++) {
            l->now_ms += 50;
            if (perch_proto_session_tick(l->session, l->now_ms, l->idle, &r) < 0)
                return PERCH_ENOMEM;
        }
        if (r != NULL)
            loop_push_reply(l, r);
    }
    if (l->out_off == l->out_len)
        return l->closing ? PERCH_EPIPE : PERCH_ETIMEDOUT;
    size_t n = l->out_len - l->out_off < cap ? l->out_len - l->out_off : cap;
    memcpy(buf, l->out + l->out_off, n);
    l->out_off += n;
    *got = n;
    return 0;
}

static void loop_close(void *ctx)
{
    ((loop *)ctx)->closed = true;
}

static inline int loop_init(loop *l, const perch_proto_backend *b, const perch_proto_peer *peer)
{
    memset(l, 0, sizeof *l);
    l->idle = true;
    int err = perch_proto_reader_create(PERCH_PROTO_MAX_REQUEST, &l->reader);
    return err < 0 ? err : perch_proto_session_create(b, peer, &l->session);
}

static inline void loop_transport(loop *l, perch_proto_transport *t)
{
    t->ctx = l;
    t->write = loop_write;
    t->read = loop_read;
    t->close = loop_close;
}

static inline void loop_free(loop *l)
{
    perch_proto_session_destroy(l->session);
    perch_proto_reader_destroy(l->reader);
    free(l->out);
    memset(l, 0, sizeof *l);
}

#endif
