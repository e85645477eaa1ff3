/*
 * Frames of the pipe protocol (docs/protocol.md, "Frames"): the fixed 32-byte header, read
 * and written field by field at pinned offsets, its checks (what the receiver can still
 * trust when it refuses one), and building a whole frame.
 */
#include <stdio.h>
#include <string.h>

#include "capture/codec.h"
#include "perch/error.h"
#include "perch/proto.h"
#include "proto/proto_internal.h"
#include "util/mem.h"

/* Offsets of the header fields; the header is never cast to a struct. */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_TYPE = 6,
    OFF_REQUEST = 8,
    OFF_FLAGS = 12,
    OFF_LEN = 16,
    OFF_RESERVED = 20,
};

_Static_assert(OFF_RESERVED + 12 == PERCH_PROTO_HEADER_SIZE, "frame header is 32 bytes");
_Static_assert(PERCH_PROTO_MAX_PAYLOAD <= UINT32_MAX, "payload length fits its field");
_Static_assert(PERCH_PROTO_DATA_FRAME <= PERCH_PROTO_MAX_PAYLOAD, "DATA frames fit a frame");

static const char *const type_names[PERCH_MSG_TYPE_LIMIT] = {
    [PERCH_MSG_HELLO] = "HELLO",
    [PERCH_MSG_ERROR] = "ERROR",
    [PERCH_MSG_PING] = "PING",
    [PERCH_MSG_STATUS] = "STATUS",
    [PERCH_MSG_CAPTURES] = "CAPTURES",
    [PERCH_MSG_RECORD] = "RECORD",
    [PERCH_MSG_STOP] = "STOP",
    [PERCH_MSG_SNAPSHOT] = "SNAPSHOT",
    [PERCH_MSG_FETCH] = "FETCH",
    [PERCH_MSG_DATA] = "DATA",
    [PERCH_MSG_TOP] = "TOP",
    [PERCH_MSG_SLICES] = "SLICES",
    [PERCH_MSG_SAMPLES] = "SAMPLES",
    [PERCH_MSG_SUBSCRIBE] = "SUBSCRIBE",
    [PERCH_MSG_UNSUBSCRIBE] = "UNSUBSCRIBE",
    [PERCH_MSG_UPDATE] = "UPDATE",
};

const char *perch_proto_type_name(unsigned type)
{
    return type < PERCH_MSG_TYPE_LIMIT ? type_names[type] : NULL;
}

void perch_proto_header_write(const perch_proto_header *h, uint8_t out[PERCH_PROTO_HEADER_SIZE])
{
    cap_store_le(out + OFF_MAGIC, h->magic, 4);
    cap_store_le(out + OFF_VERSION, h->version, 2);
    cap_store_le(out + OFF_TYPE, h->type, 2);
    cap_store_le(out + OFF_REQUEST, h->request_id, 4);
    cap_store_le(out + OFF_FLAGS, h->flags, 4);
    cap_store_le(out + OFF_LEN, h->payload_len, 4);
    for (unsigned i = 0; i < 3; i++)
        cap_store_le(out + OFF_RESERVED + 4 * i, h->reserved[i], 4);
}

static void header_load(const uint8_t *in, perch_proto_header *h)
{
    h->magic = (uint32_t)cap_load_le(in + OFF_MAGIC, 4);
    h->version = (uint16_t)cap_load_le(in + OFF_VERSION, 2);
    h->type = (uint16_t)cap_load_le(in + OFF_TYPE, 2);
    h->request_id = (uint32_t)cap_load_le(in + OFF_REQUEST, 4);
    h->flags = (uint32_t)cap_load_le(in + OFF_FLAGS, 4);
    h->payload_len = (uint32_t)cap_load_le(in + OFF_LEN, 4);
    for (unsigned i = 0; i < 3; i++)
        h->reserved[i] = (uint32_t)cap_load_le(in + OFF_RESERVED + 4 * i, 4);
}

static int refuse(perch_proto_fault *fault, perch_proto_fault f, int err)
{
    *fault = f;
    return err;
}

int perch_proto_header_read(const uint8_t in[PERCH_PROTO_HEADER_SIZE], uint16_t version,
                            perch_proto_header *h, perch_proto_fault *fault, char *reason,
                            size_t reason_len)
{
    char dummy[8];
    if (reason == NULL || reason_len == 0) {
        reason = dummy;
        reason_len = sizeof dummy;
    }
    header_load(in, h);
    reason[0] = '\0';
    *fault = PERCH_PROTO_OK;
    if (h->magic != PERCH_PROTO_MAGIC) {
        snprintf(reason, reason_len, "not a Perch frame (magic 0x%08x, expected 0x%08x)",
                 (unsigned)h->magic, PERCH_PROTO_MAGIC);
        return refuse(fault, PERCH_PROTO_FATAL, PERCH_EFORMAT);
    }
    if (h->payload_len > PERCH_PROTO_MAX_PAYLOAD) {
        snprintf(reason, reason_len, "frame payload of %u bytes is over the %u-byte cap",
                 (unsigned)h->payload_len, PERCH_PROTO_MAX_PAYLOAD);
        return refuse(fault, PERCH_PROTO_FATAL, PERCH_ELIMIT);
    }
    if (version == 0
            ? (h->version < PERCH_PROTO_VERSION_MIN || h->version > PERCH_PROTO_VERSION_MAX)
            : h->version != version) {
        snprintf(reason, reason_len,
                 "protocol version %u is not spoken here (this connection speaks %u..%u)",
                 (unsigned)h->version, version ? version : PERCH_PROTO_VERSION_MIN,
                 version ? version : PERCH_PROTO_VERSION_MAX);
        return refuse(fault, PERCH_PROTO_SKIP, PERCH_EVERSION);
    }
    if (h->flags & ~PERCH_PROTO_FLAGS_KNOWN) {
        snprintf(reason, reason_len, "unknown frame flags 0x%x",
                 (unsigned)(h->flags & ~PERCH_PROTO_FLAGS_KNOWN));
        return refuse(fault, PERCH_PROTO_SKIP, PERCH_EFORMAT);
    }
    for (unsigned i = 0; i < 3; i++) {
        if (h->reserved[i] != 0) {
            snprintf(reason, reason_len, "reserved header word %u is 0x%x, must be zero", i,
                     (unsigned)h->reserved[i]);
            return refuse(fault, PERCH_PROTO_SKIP, PERCH_EFORMAT);
        }
    }
    return 0;
}

int perch_proto_frame(uint16_t version, uint16_t type, uint32_t request_id, uint32_t flags,
                      const void *payload, size_t len, uint8_t **out, size_t *out_len)
{
    perch_proto_header h = {PERCH_PROTO_MAGIC, version, type, request_id, flags, 0, {0, 0, 0}};
    if (len > PERCH_PROTO_MAX_PAYLOAD)
        return PERCH_ELIMIT;
    uint8_t *p = perch__alloc(PERCH_PROTO_HEADER_SIZE + len);
    if (p == NULL)
        return PERCH_ENOMEM;
    h.payload_len = (uint32_t)len;
    perch_proto_header_write(&h, p);
    if (len)
        memcpy(p + PERCH_PROTO_HEADER_SIZE, payload, len);
    *out = p;
    *out_len = PERCH_PROTO_HEADER_SIZE + len;
    return 0;
}
