/*
 * The reply object shared by reply.c (producing frames) and session.c (building replies).
 */
#ifndef PERCH_PROTO_REPLY_INTERNAL_H
#define PERCH_PROTO_REPLY_INTERNAL_H

#include "proto/session.h"

struct perch_proto_reply {
    uint16_t version, type;
    uint32_t request_id;
    uint8_t *payload; /* the reply message (owned) */
    size_t len, off;
    bool message_done;
    bool stream, stream_done;
    perch_input in; /* the stream's capture (closed on destroy) */
    uint64_t pos;
};

/* A reply of one message (payload is taken, even on error). 0 or PERCH_ENOMEM. */
int perch__reply_create(uint16_t version, uint16_t type, uint32_t request_id, uint8_t *payload,
                        size_t len, perch_proto_reply **out);

/* Makes r a stream of the bytes of *in from offset (in is taken and cleared). */
void perch__reply_attach_stream(perch_proto_reply *r, perch_input *in, uint64_t offset);

#endif
