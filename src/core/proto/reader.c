/*
 * The incremental frame reader: bytes from a pipe in, whole messages out. A message split
 * over frames flagged MORE is joined (same type, request id and version, up to a cap); DATA
 * frames are handed out one by one. A refused header is reported once, with what the
 * receiver can still trust: SKIP (its payload is skipped and reading goes on) or FATAL
 * (nothing more is read). Memory is bounded by the message cap and released after a large
 * message, so an idle connection holds only the reader itself.
 */
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/proto.h"
#include "util/mem.h"

#define KEEP_BYTES (64u << 10) /* message buffer kept between messages */

struct perch_proto_reader {
    size_t max_message;
    uint16_t version;
    uint8_t hdr[PERCH_PROTO_HEADER_SIZE];
    size_t hdr_have;
    perch_proto_header cur; /* header of the frame whose payload is being read */
    bool in_payload;
    size_t pay_left;          /* payload bytes of the current frame still to come */
    uint64_t skip_left;       /* bytes of a refused frame still to skip */
    bool joining;             /* the message continues (a MORE frame was read) */
    perch_proto_header first; /* of the message's first frame */
    uint8_t *msg;
    size_t msg_len, msg_cap;
    bool ready, dead;
    perch_proto_event pending;
};

int perch_proto_reader_create(size_t max_message, perch_proto_reader **out)
{
    perch_proto_reader *r = perch__calloc(1, sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    r->max_message = max_message ? max_message : PERCH_PROTO_MAX_MESSAGE;
    *out = r;
    return 0;
}

void perch_proto_reader_destroy(perch_proto_reader *r)
{
    if (r == NULL)
        return;
    perch__free(r->msg);
    perch__free(r);
}

void perch_proto_reader_set_version(perch_proto_reader *r, uint16_t version)
{
    r->version = version;
}

size_t perch_proto_reader_bytes(const perch_proto_reader *r)
{
    return sizeof *r + r->msg_cap;
}

static void set_event(perch_proto_reader *r, perch_proto_fault fault, int err)
{
    r->pending.fault = fault;
    r->pending.error = err;
    r->ready = true;
}

static void refuse(perch_proto_reader *r, perch_proto_fault fault, int err, const char *why)
{
    r->pending.header = r->cur;
    r->pending.payload = NULL;
    r->pending.len = 0;
    if (why != NULL)
        snprintf(r->pending.reason, sizeof r->pending.reason, "%s", why);
    set_event(r, fault, err);
    r->joining = false;
    r->msg_len = 0;
    if (fault == PERCH_PROTO_FATAL)
        r->dead = true;
    else
        r->skip_left = r->cur.payload_len;
}

static int reserve(perch_proto_reader *r, size_t need)
{
    if (need <= r->msg_cap)
        return 0;
    size_t cap = r->msg_cap ? r->msg_cap : 4096;
    while (cap < need)
        cap *= 2;
    uint8_t *p = perch__realloc(r->msg, cap);
    if (p == NULL)
        return PERCH_ENOMEM;
    r->msg = p;
    r->msg_cap = cap;
    return 0;
}

/* A continuation must belong to the message being joined. */
static bool continues(const perch_proto_reader *r)
{
    return r->cur.type == r->first.type && r->cur.request_id == r->first.request_id &&
           r->cur.version == r->first.version &&
           (r->cur.flags & PERCH_PROTO_FLAG_REPLY) == (r->first.flags & PERCH_PROTO_FLAG_REPLY);
}

/* A whole header was read: check it and get ready for its payload. */
static void on_header(perch_proto_reader *r)
{
    perch_proto_fault fault;
    char why[160];
    int err = perch_proto_header_read(r->hdr, r->version, &r->cur, &fault, why, sizeof why);
    r->hdr_have = 0;
    if (err < 0) {
        refuse(r, fault, err, why);
        return;
    }
    bool data = r->cur.type == PERCH_MSG_DATA;
    if (r->joining && (data || !continues(r))) {
        snprintf(why, sizeof why, "frame %s #%u interrupts a %s message split over frames",
                 perch_proto_type_name(r->cur.type) ? perch_proto_type_name(r->cur.type) : "?",
                 (unsigned)r->cur.request_id,
                 perch_proto_type_name(r->first.type) ? perch_proto_type_name(r->first.type) : "?");
        refuse(r, PERCH_PROTO_FATAL, PERCH_EFORMAT, why);
        return;
    }
    size_t base = data ? 0 : r->msg_len;
    /* DATA too: a server's reader caps requests, and a DATA frame from a client is refused
     * only once read, so its header alone must not reserve more than a request may */
    if (base + r->cur.payload_len > r->max_message) {
        snprintf(why, sizeof why, "message of more than %zu bytes is over the %zu-byte cap",
                 base + r->cur.payload_len, r->max_message);
        refuse(r, r->joining ? PERCH_PROTO_FATAL : PERCH_PROTO_SKIP, PERCH_ELIMIT, why);
        return;
    }
    if (!r->joining)
        r->first = r->cur;
    if (reserve(r, base + r->cur.payload_len) < 0) {
        refuse(r, PERCH_PROTO_FATAL, PERCH_ENOMEM, "out of memory for a frame");
        return;
    }
    r->msg_len = base;
    r->in_payload = true;
    r->pay_left = r->cur.payload_len;
}

/* The current frame's payload is complete. */
static void on_payload(perch_proto_reader *r)
{
    r->in_payload = false;
    bool more = (r->cur.flags & PERCH_PROTO_FLAG_MORE) != 0;
    if (r->cur.type != PERCH_MSG_DATA && more) {
        r->joining = true;
        return;
    }
    r->joining = false;
    r->pending.header = r->cur.type == PERCH_MSG_DATA ? r->cur : r->first;
    if (r->cur.type != PERCH_MSG_DATA)
        r->pending.header.flags &= ~PERCH_PROTO_FLAG_MORE;
    r->pending.header.payload_len = (uint32_t)r->msg_len;
    r->pending.payload = r->msg;
    r->pending.len = r->msg_len;
    r->pending.reason[0] = '\0';
    set_event(r, PERCH_PROTO_OK, 0);
}

void perch_proto_reader_push(perch_proto_reader *r, const void *data, size_t len, size_t *used)
{
    const uint8_t *p = data;
    size_t n = 0;
    if (r->dead) {
        *used = len; /* the connection is being closed: nothing more is read */
        return;
    }
    while (n < len && !r->ready && !r->dead) {
        size_t take;
        if (r->skip_left > 0) {
            take = len - n < r->skip_left ? len - n : (size_t)r->skip_left;
            r->skip_left -= take;
        } else if (r->in_payload) {
            take = len - n < r->pay_left ? len - n : r->pay_left;
            memcpy(r->msg + r->msg_len, p + n, take);
            r->msg_len += take;
            r->pay_left -= take;
        } else {
            take = PERCH_PROTO_HEADER_SIZE - r->hdr_have;
            take = len - n < take ? len - n : take;
            memcpy(r->hdr + r->hdr_have, p + n, take);
            r->hdr_have += take;
        }
        n += take;
        if (!r->in_payload && r->skip_left == 0 && r->hdr_have == PERCH_PROTO_HEADER_SIZE)
            on_header(r);
        if (r->in_payload && r->pay_left == 0)
            on_payload(r);
    }
    *used = r->dead ? len : n;
}

int perch_proto_reader_next(perch_proto_reader *r, perch_proto_event *ev)
{
    if (!r->ready) {
        if (!r->joining && !r->in_payload && r->msg_cap > KEEP_BYTES) {
            perch__free(r->msg);
            r->msg = NULL;
            r->msg_cap = 0;
        }
        return 0;
    }
    *ev = r->pending;
    r->ready = false;
    r->msg_len = 0;
    return 1;
}
