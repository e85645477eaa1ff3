/*
 * Replies as sequences of frames, produced one frame at a time so a transport can pull them
 * as its bounded outbound queue drains: a message payload split over frames flagged MORE,
 * and for FETCH and SNAPSHOT the stream of DATA frames read from a capture after it.
 */
#include <string.h>

#include "perch/error.h"
#include "perch/proto.h"
#include "proto/reply_internal.h"
#include "util/mem.h"

int perch__reply_create(uint16_t version, uint16_t type, uint32_t request_id, uint8_t *payload,
                        size_t len, perch_proto_reply **out)
{
    perch_proto_reply *r = perch__calloc(1, sizeof *r);
    if (r == NULL) {
        perch__free(payload);
        return PERCH_ENOMEM;
    }
    r->version = version;
    r->type = type;
    r->request_id = request_id;
    r->payload = payload;
    r->len = len;
    *out = r;
    return 0;
}

void perch__reply_attach_stream(perch_proto_reply *r, perch_input *in, uint64_t offset)
{
    r->stream = true;
    r->in = *in;
    memset(in, 0, sizeof *in);
    r->pos = offset < r->in.size ? offset : r->in.size;
}

bool perch_proto_reply_is_stream(const perch_proto_reply *r)
{
    return r->stream;
}

static int message_frame(perch_proto_reply *r, uint8_t **frame, size_t *len)
{
    size_t n = r->len - r->off;
    uint32_t flags = PERCH_PROTO_FLAG_REPLY;
    if (n > PERCH_PROTO_MAX_PAYLOAD) {
        n = PERCH_PROTO_MAX_PAYLOAD;
        flags |= PERCH_PROTO_FLAG_MORE;
    }
    int err = perch_proto_frame(r->version, r->type, r->request_id, flags, r->payload + r->off, n,
                                frame, len);
    if (err < 0)
        return err;
    r->off += n;
    r->message_done = r->off == r->len;
    return 1;
}

/* The stream failed after some DATA frames: an ERROR frame ends it. */
static int error_frame(perch_proto_reply *r, int code, uint8_t **frame, size_t *len)
{
    perch_proto_error e = {code, PERCH_MSG_DATA, r->version, "reading the capture failed"};
    uint8_t *p;
    size_t n;
    int err = perch_proto_encode(PERCH_MSG_ERROR, true, &e, &p, &n);
    if (err == 0) {
        err = perch_proto_frame(r->version, PERCH_MSG_ERROR, r->request_id, PERCH_PROTO_FLAG_REPLY,
                                p, n, frame, len);
        perch__free(p);
    }
    r->stream_done = true;
    return err < 0 ? err : 1;
}

static int data_frame(perch_proto_reply *r, uint8_t **frame, size_t *len)
{
    uint64_t left = r->in.size - r->pos;
    size_t n = left > PERCH_PROTO_DATA_FRAME ? PERCH_PROTO_DATA_FRAME : (size_t)left;
    uint32_t flags = PERCH_PROTO_FLAG_REPLY | (left > n ? PERCH_PROTO_FLAG_MORE : 0);
    uint8_t *p = perch__alloc(PERCH_PROTO_HEADER_SIZE + n);
    perch_proto_header h = {PERCH_PROTO_MAGIC, r->version, PERCH_MSG_DATA, r->request_id, flags,
                            (uint32_t)n,       {0, 0, 0}};
    if (p == NULL)
        return PERCH_ENOMEM;
    int err = n ? perch_input_read_exact(&r->in, r->pos, p + PERCH_PROTO_HEADER_SIZE, n) : 0;
    if (err < 0) {
        perch__free(p);
        return error_frame(r, err, frame, len);
    }
    perch_proto_header_write(&h, p);
    r->pos += n;
    r->stream_done = !(flags & PERCH_PROTO_FLAG_MORE);
    *frame = p;
    *len = PERCH_PROTO_HEADER_SIZE + n;
    return 1;
}

int perch_proto_reply_next(perch_proto_reply *r, uint8_t **frame, size_t *len)
{
    if (!r->message_done)
        return message_frame(r, frame, len);
    if (r->stream && !r->stream_done)
        return data_frame(r, frame, len);
    return 0;
}

void perch_proto_reply_destroy(perch_proto_reply *r)
{
    if (r == NULL)
        return;
    perch_input_close(&r->in);
    perch__free(r->payload);
    perch__free(r);
}
