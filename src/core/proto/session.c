/*
 * One connection's server logic (session.h): the handshake, the table of requests (who may
 * send each, which are logged), decoding, calling the backend, and turning every refusal
 * into an ERROR reply that names the type, the version or the field at fault. The live
 * queries and subscriptions are in session_query.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/proto.h"
#include "perch/utf16.h"
#include "proto/reply_internal.h"
#include "proto/session_internal.h"
#include "util/mem.h"

int perch_proto_answer_set(perch_proto_answer *a, const void *msg)
{
    uint8_t *p;
    size_t n;
    int err = perch_proto_encode(a->type, true, msg, &p, &n);
    if (err < 0)
        return err;
    perch__free(a->payload);
    a->payload = p;
    a->len = n;
    a->set = true;
    return 0;
}

void perch_proto_answer_fail(perch_proto_answer *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
}

int perch__session_error(perch_proto_session *s, const perch_proto_header *h, int code,
                         const char *message, perch_proto_reply **reply)
{
    char valid[sizeof((perch_proto_answer *)0)->message];
    /* a sentence cut mid-character (a client's name in it) would fail the encoder's UTF-8
     * check, and the client would get no reply at all */
    snprintf(valid, sizeof valid, "%s", message);
    perch_proto_error e = {code, h->type, h->version, perch_utf8_make_valid(valid)};
    uint8_t *p;
    size_t n;
    int err = perch_proto_encode(PERCH_MSG_ERROR, true, &e, &p, &n);
    if (err < 0)
        return err;
    return perch__reply_create(s->version ? s->version : PERCH_PROTO_VERSION, PERCH_MSG_ERROR,
                               h->request_id, p, n, reply);
}

int perch__session_errorf(perch_proto_session *s, const perch_proto_header *h, int code,
                          perch_proto_reply **reply, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return perch__session_error(s, h, code, msg, reply);
}

void perch__session_log(perch_proto_session *s, int level, const char *fmt, ...)
{
    char line[600];
    int n;
    va_list ap;
    if (s->b->log == NULL)
        return;
    n = snprintf(line, sizeof line, "pipe client pid %u (%s, %s): ", (unsigned)s->peer.pid,
                 s->peer.image[0] ? s->peer.image : "image unknown",
                 s->peer.role == PERCH_ROLE_ADMIN ? "admin" : "read-only");
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    s->b->log(s->b->ctx, level | (s->peer.role == PERCH_ROLE_ADMIN ? 0 : PERCH_PROTO_LOG_UNTRUSTED),
              line);
}

const char *perch__type_label(unsigned type)
{
    const char *n = perch_proto_type_name(type);
    return n ? n : "unknown";
}

/* ---- plain requests ----------------------------------------------------------------------- */

static int h_ping(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    (void)s, (void)req;
    return perch_proto_answer_set(a, NULL);
}

static int h_status(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    (void)req;
    return s->b->status ? s->b->status(s->b->ctx, a) : PERCH_ENOTSUP;
}

static int h_captures(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    (void)req;
    return s->b->captures ? s->b->captures(s->b->ctx, a) : PERCH_ENOTSUP;
}

static int h_record(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_record_req *r = req;
    snprintf(a->detail, sizeof a->detail, " (duration %llu ms, name '%.64s', %u option(s))",
             (unsigned long long)r->duration_ms, r->name ? r->name : "", (unsigned)r->option_count);
    return s->b->record ? s->b->record(s->b->ctx, &s->peer, req, a) : PERCH_ENOTSUP;
}

static int h_stop(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_stop_req *r = req;
    snprintf(a->detail, sizeof a->detail, " (name '%.64s')", r->name ? r->name : "");
    return s->b->stop ? s->b->stop(s->b->ctx, &s->peer, req, a) : PERCH_ENOTSUP;
}

/* FETCH and SNAPSHOT: the stream header message; the source goes into a->source. */
static int stream_answer(perch_proto_answer *a)
{
    perch_proto_source *src = &a->source;
    uint64_t off = src->offset < src->in.size ? src->offset : src->in.size;
    perch_proto_stream_rep rep = {src->name, src->in.size - off};
    a->has_source = true;
    return perch_proto_answer_set(a, &rep);
}

static int h_snapshot(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    snprintf(a->detail, sizeof a->detail, " (last %llu ms)",
             (unsigned long long)((const perch_proto_snapshot_req *)req)->last_ms);
    if (s->b->snapshot == NULL)
        return PERCH_ENOTSUP;
    int err = s->b->snapshot(s->b->ctx, &s->peer, req, &a->source, a);
    return err < 0 ? err : stream_answer(a);
}

static int h_fetch(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_fetch_req *r = req;
    if (s->b->open_capture == NULL)
        return PERCH_ENOTSUP;
    int err = s->b->open_capture(s->b->ctx, r->name, &a->source, a);
    a->source.offset = r->offset;
    return err < 0 ? err : stream_answer(a);
}

/* The requests: decoded struct size, the role they need, whether they are logged. */
static const struct request {
    size_t size;
    uint8_t role;
    bool logged;
    int (*run)(perch_proto_session *s, const void *req, perch_proto_answer *a);
} requests[PERCH_MSG_TYPE_LIMIT] = {
    [PERCH_MSG_PING] = {0, PERCH_ROLE_READ, false, h_ping},
    [PERCH_MSG_STATUS] = {0, PERCH_ROLE_READ, false, h_status},
    [PERCH_MSG_CAPTURES] = {0, PERCH_ROLE_READ, false, h_captures},
    [PERCH_MSG_RECORD] = {sizeof(perch_proto_record_req), PERCH_ROLE_ADMIN, true, h_record},
    [PERCH_MSG_STOP] = {sizeof(perch_proto_stop_req), PERCH_ROLE_ADMIN, true, h_stop},
    [PERCH_MSG_SNAPSHOT] = {sizeof(perch_proto_snapshot_req), PERCH_ROLE_READ, true, h_snapshot},
    [PERCH_MSG_FETCH] = {sizeof(perch_proto_fetch_req), PERCH_ROLE_READ, false, h_fetch},
    [PERCH_MSG_TOP] = {sizeof(perch_proto_top_req), PERCH_ROLE_READ, false, perch__h_top},
    [PERCH_MSG_SLICES] = {sizeof(perch_proto_slices_req), PERCH_ROLE_READ, false, perch__h_slices},
    [PERCH_MSG_SAMPLES] = {sizeof(perch_proto_samples_req), PERCH_ROLE_READ, false,
                           perch__h_samples},
    [PERCH_MSG_SUBSCRIBE] = {sizeof(perch_proto_subscribe_req), PERCH_ROLE_READ, false,
                             perch__h_subscribe},
    [PERCH_MSG_UNSUBSCRIBE] = {0, PERCH_ROLE_READ, false, perch__h_unsubscribe},
};

/* The ERROR reply of a failed backend call, and the log line of a logged request. */
static int failed(perch_proto_session *s, const perch_proto_header *h, perch_proto_answer *a,
                  int err, perch_proto_reply **reply)
{
    const char *t = perch__type_label(h->type);
    if (a->message[0] == '\0')
        snprintf(a->message, sizeof a->message, "%s failed: %s%s", t, perch_strerror(err),
                 err == PERCH_ENOTSUP ? " (not available in this server)" : "");
    if (requests[h->type].logged)
        perch__session_log(s, PERCH_PROTO_LOG_WARN, "%s%s refused: %s", t, a->detail, a->message);
    return perch__session_error(s, h, err, a->message, reply);
}

static int answered(perch_proto_session *s, const perch_proto_header *h, perch_proto_answer *a,
                    perch_proto_reply **reply)
{
    int err = perch__reply_create(s->version, h->type, h->request_id, a->payload, a->len, reply);
    a->payload = NULL;
    if (err == 0 && a->has_source) {
        perch__reply_attach_stream(*reply, &a->source.in, a->source.offset);
        a->has_source = false;
    }
    if (err == 0 && requests[h->type].logged)
        perch__session_log(s, PERCH_PROTO_LOG_INFO, "%s%s done%s%s", perch__type_label(h->type),
                           a->detail, a->source.name[0] ? ": " : "", a->source.name);
    return err;
}

static int run_request(perch_proto_session *s, const perch_proto_event *ev,
                       perch_proto_reply **reply)
{
    const struct request *rq = &requests[ev->header.type];
    const char *t = perch__type_label(ev->header.type);
    perch_proto_answer a;
    union {
        perch_proto_record_req record;
        perch_proto_stop_req stop;
        perch_proto_snapshot_req snapshot;
        perch_proto_fetch_req fetch;
        perch_proto_top_req top;
        perch_proto_slices_req slices;
        perch_proto_samples_req samples;
        perch_proto_subscribe_req subscribe;
    } req;
    void *mem = NULL;
    char why[200];
    memset(&a, 0, sizeof a);
    a.type = ev->header.type;
    a.request_id = ev->header.request_id;
    if (s->peer.role < rq->role) {
        if (rq->logged)
            perch__session_log(s, PERCH_PROTO_LOG_WARN, "%s refused: not an administrator", t);
        return perch__session_errorf(s, &ev->header, PERCH_EACCES, reply,
                                     "%s needs administrator rights: this client may only read "
                                     "status, captures and queries",
                                     t);
    }
    int err = perch_proto_decode(a.type, false, ev->payload, ev->len, rq->size ? &req : NULL,
                                 rq->size, &mem, why, sizeof why);
    if (err < 0)
        return perch__session_error(s, &ev->header, err, why, reply);
    err = rq->run(s, rq->size ? &req : NULL, &a);
    if (err == 0 && !a.set)
        err = PERCH_ESTATE; /* a backend that returned 0 without an answer */
    err = err < 0 ? failed(s, &ev->header, &a, err, reply) : answered(s, &ev->header, &a, reply);
    if (a.has_source)
        perch_input_close(&a.source.in);
    perch__free(a.payload);
    perch__free(mem);
    return err;
}

/* ---- the handshake and the checks before a request -------------------------------------- */

static int hello(perch_proto_session *s, const perch_proto_event *ev, perch_proto_reply **reply)
{
    perch_proto_hello_req req;
    void *mem = NULL;
    char why[200];
    int err = perch_proto_decode(PERCH_MSG_HELLO, false, ev->payload, ev->len, &req, sizeof req,
                                 &mem, why, sizeof why);
    if (err < 0)
        return perch__session_error(s, &ev->header, err, why, reply);
    uint32_t lo =
        req.min_version > PERCH_PROTO_VERSION_MIN ? req.min_version : PERCH_PROTO_VERSION_MIN;
    uint32_t hi =
        req.max_version < PERCH_PROTO_VERSION_MAX ? req.max_version : PERCH_PROTO_VERSION_MAX;
    if (lo > hi) {
        err = perch__session_errorf(s, &ev->header, PERCH_EVERSION, reply,
                                    "the client speaks protocol versions %u..%u, this server "
                                    "speaks %u..%u",
                                    (unsigned)req.min_version, (unsigned)req.max_version,
                                    PERCH_PROTO_VERSION_MIN, PERCH_PROTO_VERSION_MAX);
        perch__free(mem);
        return err < 0 ? err : PERCH_EPIPE;
    }
    perch__free(mem);
    s->version = (uint16_t)hi;
    perch_proto_hello_rep rep = {hi, s->b->server_pid, s->peer.role, PERCH_PROTO_MAX_PAYLOAD,
                                 s->b->server_name};
    uint8_t *p;
    size_t n;
    err = perch_proto_encode(PERCH_MSG_HELLO, true, &rep, &p, &n);
    return err < 0 ? err
                   : perch__reply_create(s->version, PERCH_MSG_HELLO, ev->header.request_id, p, n,
                                         reply);
}

int perch_proto_session_handle(perch_proto_session *s, const perch_proto_event *ev,
                               perch_proto_reply **reply)
{
    const perch_proto_header *h = &ev->header;
    const char *t = perch__type_label(h->type);
    *reply = NULL;
    if (ev->fault != PERCH_PROTO_OK) {
        int err = perch__session_error(s, h, ev->error, ev->reason, reply);
        return err < 0 ? err : ev->fault == PERCH_PROTO_FATAL ? PERCH_EPIPE : 0;
    }
    if (h->flags & PERCH_PROTO_FLAG_REPLY)
        return perch__session_errorf(s, h, PERCH_EFORMAT, reply,
                                     "a %s frame from a client carries the reply flag", t);
    if (h->type == PERCH_MSG_HELLO)
        return s->version ? perch__session_errorf(s, h, PERCH_ESTATE, reply,
                                                  "HELLO was already done (version %u)",
                                                  (unsigned)s->version)
                          : hello(s, ev, reply);
    if (s->version == 0)
        return perch__session_errorf(s, h, PERCH_ESTATE, reply,
                                     "the first message must be HELLO (got %s, type %u)", t,
                                     (unsigned)h->type);
    if (h->type >= PERCH_MSG_TYPE_LIMIT || requests[h->type].run == NULL)
        return perch__session_errorf(s, h, PERCH_ENOTSUP, reply,
                                     "message type %u (%s) is not a request of protocol "
                                     "version %u",
                                     (unsigned)h->type, t, (unsigned)s->version);
    return run_request(s, ev, reply);
}

int perch_proto_session_create(const perch_proto_backend *backend, const perch_proto_peer *peer,
                               perch_proto_session **out)
{
    perch_proto_session *s = perch__calloc(1, sizeof *s);
    if (s == NULL)
        return PERCH_ENOMEM;
    s->b = backend;
    s->peer = *peer;
    snprintf(s->image, sizeof s->image, "%s", peer->image ? peer->image : "");
    s->peer.image = s->image;
    *out = s;
    return 0;
}

void perch_proto_session_destroy(perch_proto_session *s)
{
    perch__free(s);
}

uint16_t perch_proto_session_version(const perch_proto_session *s)
{
    return s->version;
}
