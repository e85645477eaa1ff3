/*
 * What session.c (handshake, dispatch, errors) and session_query.c (live queries,
 * subscriptions) share.
 */
#ifndef PERCH_PROTO_SESSION_INTERNAL_H
#define PERCH_PROTO_SESSION_INTERNAL_H

#include "proto/session.h"

struct perch_proto_answer {
    unsigned type; /* of the request: the reply is of the same type */
    uint32_t request_id;
    char detail[200]; /* what a logged request asked for */
    uint8_t *payload;
    size_t len;
    bool set;
    bool has_source; /* a stream follows (FETCH, SNAPSHOT) */
    perch_proto_source source;
    char message[300];
};

struct perch_proto_session {
    const perch_proto_backend *b;
    perch_proto_peer peer;
    char image[520];
    uint16_t version;
    /* subscription */
    bool subscribed;
    uint32_t sub_request, sub_interval_ms, sub_top, sub_window_ms;
    uint64_t sub_next_ms, sub_seq, sub_skipped;
};

int perch__session_error(perch_proto_session *s, const perch_proto_header *h, int code,
                         const char *message, perch_proto_reply **reply);
int perch__session_errorf(perch_proto_session *s, const perch_proto_header *h, int code,
                          perch_proto_reply **reply, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
void perch__session_log(perch_proto_session *s, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const char *perch__type_label(unsigned type);

/* Request handlers in session_query.c. */
int perch__h_top(perch_proto_session *s, const void *req, perch_proto_answer *a);
int perch__h_slices(perch_proto_session *s, const void *req, perch_proto_answer *a);
int perch__h_samples(perch_proto_session *s, const void *req, perch_proto_answer *a);
int perch__h_subscribe(perch_proto_session *s, const void *req, perch_proto_answer *a);
int perch__h_unsubscribe(perch_proto_session *s, const void *req, perch_proto_answer *a);

#endif
