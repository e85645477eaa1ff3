/*
 * The server side of one pipe connection, portable: the HELLO handshake, the role check,
 * decoding each request, calling the daemon through a backend table, and building the reply
 * (an ERROR reply naming whatever was refused), including FETCH and SNAPSHOT streams and
 * subscription updates. The Windows pipe server (src/win/pipe_server.c) only moves bytes:
 * it feeds the connection's frame reader, hands each event to perch_proto_session_handle and
 * pulls the frames of the reply it gets back as its outbound queue has room. Native tests
 * drive the same code without a pipe.
 */
#ifndef PERCH_PROTO_SESSION_H
#define PERCH_PROTO_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "live/query.h"
#include "perch/io.h"
#include "perch/proto.h"

/* Who is on the other end (filled by the transport from the pipe and the client's token). */
typedef struct perch_proto_peer {
    uint32_t pid;      /* GetNamedPipeClientProcessId */
    const char *image; /* the client's image path ("" when it could not be read) */
    uint8_t role;      /* perch_proto_role */
} perch_proto_peer;

/* The reply a backend call is building. */
typedef struct perch_proto_answer perch_proto_answer;

/* Sets the reply message (the struct of the request's reply type); its strings and arrays
 * are only read during the call. 0 or the encoder's error. */
int perch_proto_answer_set(perch_proto_answer *a, const void *msg);

/* Sets the message of the ERROR reply the failing backend call will produce (printf-style,
 * one line). */
void perch_proto_answer_fail(perch_proto_answer *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A capture to stream (FETCH, SNAPSHOT): the session reads `in` from `offset` and closes it
 * when the stream ends. */
typedef struct perch_proto_source {
    perch_input in;
    uint64_t offset;
    char name[260];
} perch_proto_source;

enum { PERCH_PROTO_LOG_INFO = 0, PERCH_PROTO_LOG_WARN = 1, PERCH_PROTO_LOG_ERROR = 2 };

/* Or'ed into a log line's level when the client it is about is not known to be an
 * administrator (a read-only client, or one that has not said who it is): such a client can
 * cause the line at will, so the backend may keep such lines within a budget. Take the level
 * as level & PERCH_PROTO_LOG_LEVEL. */
enum { PERCH_PROTO_LOG_UNTRUSTED = 16, PERCH_PROTO_LOG_LEVEL = 15 };

/* What the daemon offers. Every callback may be NULL (the request is then refused with
 * PERCH_ENOTSUP, "not available in this server"). A callback returns 0 after calling
 * perch_proto_answer_set once, or a negative PERCH_E* (after perch_proto_answer_fail, whose text
 * becomes the ERROR reply; else a generic one). Callbacks run on pipe worker threads, several
 * at once: they must be thread-safe and must not block on one client for long. */
typedef struct perch_proto_backend {
    void *ctx;
    const char *server_name; /* "perchd 0.1.0" */
    uint32_t server_pid;
    int (*status)(void *ctx, perch_proto_answer *a);
    int (*captures)(void *ctx, perch_proto_answer *a);
    int (*record)(void *ctx, const perch_proto_peer *peer, const perch_proto_record_req *req,
                  perch_proto_answer *a);
    int (*stop)(void *ctx, const perch_proto_peer *peer, const perch_proto_stop_req *req,
                perch_proto_answer *a);
    /* Writes a snapshot (a capture file the daemon keeps) and opens it in *src. */
    int (*snapshot)(void *ctx, const perch_proto_peer *peer, const perch_proto_snapshot_req *req,
                    perch_proto_source *src, perch_proto_answer *a);
    /* Opens the capture `name` of the capture directory in *src (PERCH_ENOENT, PERCH_EINVAL
     * for a name that is not a plain file name). */
    int (*open_capture)(void *ctx, const char *name, perch_proto_source *src,
                        perch_proto_answer *a);
    /* Fills events_total, events_per_sec and lost_total of an update. */
    int (*counters)(void *ctx, perch_proto_update *u);
    /* One line for the log (every state-changing request, with the client's pid and image);
     * level is a PERCH_PROTO_LOG_* level, with PERCH_PROTO_LOG_UNTRUSTED or'ed in for a
     * client not known to be an administrator. */
    void (*log)(void *ctx, int level, const char *line);
    perch_live_query *query; /* the live query state, or NULL */
} perch_proto_backend;

/* Frames to send, produced one at a time (a reply split over frames, a stream). */
typedef struct perch_proto_reply perch_proto_reply;

/* 1 and a new frame (*frame, perch_free it) while there is one, 0 when the reply is done.
 * A stream whose input fails ends with an ERROR frame. */
int perch_proto_reply_next(perch_proto_reply *r, uint8_t **frame, size_t *len);

/* True when the reply is a stream (its frames come from a file, not memory). */
bool perch_proto_reply_is_stream(const perch_proto_reply *r);

/* Frees the reply (a stream's input is closed). Accepts NULL. */
void perch_proto_reply_destroy(perch_proto_reply *r);

typedef struct perch_proto_session perch_proto_session;

/* backend and peer are borrowed (peer->image copied). 0 or PERCH_ENOMEM. */
int perch_proto_session_create(const perch_proto_backend *backend, const perch_proto_peer *peer,
                               perch_proto_session **out);
void perch_proto_session_destroy(perch_proto_session *s);

/* Handles one event of the connection's reader. *reply receives the frames to send (NULL
 * when there is nothing to send). Returns 0, or PERCH_EPIPE when the connection must be
 * closed once the reply is sent (a fatal frame, a failed handshake), or PERCH_ENOMEM. */
int perch_proto_session_handle(perch_proto_session *s, const perch_proto_event *ev,
                               perch_proto_reply **reply);

/* The negotiated version (0 before HELLO): the reader must check later frames against it. */
uint16_t perch_proto_session_version(const perch_proto_session *s);

/* Subscriptions: when an update is due at now_ms, builds it into *reply if `idle` (the client
 * has read everything sent so far), else counts it as skipped. 0 or PERCH_ENOMEM. */
int perch_proto_session_tick(perch_proto_session *s, uint64_t now_ms, bool idle,
                             perch_proto_reply **reply);

/* True while a subscription is active. */
bool perch_proto_session_subscribed(const perch_proto_session *s);

/* The client's frames a server accepts at most (requests are small). */
#define PERCH_PROTO_MAX_REQUEST (64u << 10)

#endif
