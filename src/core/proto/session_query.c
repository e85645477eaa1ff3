/*
 * The live queries and subscriptions of a connection: TOP, SLICES and SAMPLES answered from
 * the live query state (src/core/live/query.h) with the model data as an in-memory capture,
 * and SUBSCRIBE, whose UPDATE messages the transport asks for with perch_proto_session_tick.
 */
#include <stdio.h>
#include <string.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "proto/reply_internal.h"
#include "proto/session_internal.h"
#include "util/mem.h"

#define CAPTURE_LIMIT   (PERCH_PROTO_MAX_MESSAGE - 4096u)
#define MAX_INTERVAL_MS 60000u

/* A capture writer into memory, for the model data of a reply. */
typedef struct memcap {
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink sink;
} memcap;

static int memcap_begin(memcap *m)
{
    perch_capture_writer_opts o;
    perch_capture_writer_opts_default(&o);
    o.chunk_bytes = 16u << 10;
    o.sync_every_chunks = 0;
    o.sync_interval_ms = 0;
    o.flush_interval_ms = 0;
    memset(m, 0, sizeof *m);
    perch_output_memory(&m->out, &m->mem, CAPTURE_LIMIT);
    int err = perch_capture_writer_create(&m->out, &o, &m->w);
    if (err == 0)
        perch_capture_writer_sink(m->w, &m->sink);
    return err;
}

/* Ends the capture; *data (perch_free) and *len receive its bytes. */
static void memcap_end(memcap *m, uint8_t **data, size_t *len)
{
    perch_capture_writer_destroy(m->w);
    m->w = NULL;
    *data = data ? perch_output_memory_take(&m->mem, len) : NULL;
}

static void memcap_abort(memcap *m)
{
    size_t n;
    perch_capture_writer_destroy(m->w);
    perch_free(perch_output_memory_take(&m->mem, &n));
}

static perch_live_query *query_of(perch_proto_session *s, perch_proto_answer *a)
{
    if (s->b->query == NULL)
        perch_proto_answer_fail(a,
                                "%s: live queries are not available (this server keeps no "
                                "live window)",
                                perch__type_label(a->type));
    return s->b->query;
}

static int window_fail(perch_proto_answer *a, int err)
{
    if (err == PERCH_EINVAL)
        perch_proto_answer_fail(a, "%s: the window is empty (from_ts must be below to_ts)",
                                perch__type_label(a->type));
    else if (err == PERCH_ELIMIT)
        perch_proto_answer_fail(a, "%s: the reply would pass %u bytes; ask for fewer records",
                                perch__type_label(a->type), CAPTURE_LIMIT);
    return err;
}

/* Builds the TOP reply payload for req. */
static int top_payload(perch_live_query *q, const perch_proto_top_req *req, uint8_t **out,
                       size_t *len)
{
    perch_live_top top;
    memcap m;
    uint8_t *ent = NULL;
    size_t ent_len = 0;
    int err = perch_live_query_top(q, req, &top);
    if (err < 0)
        return err;
    err = memcap_begin(&m);
    if (err == 0) {
        err = perch_live_query_top_entities(q, req->what, &top, &m.sink);
        if (err < 0)
            memcap_abort(&m);
        else
            memcap_end(&m, &ent, &ent_len);
    }
    if (err == 0) {
        perch_proto_top_rep rep = {
            top.span.from_ts, top.span.to_ts, top.span.perf_freq, top.span.complete, top.samples,
            top.cpu_ticks,    top.idle_ticks, top.row_count,      top.rows,          ent,
            ent_len};
        err = perch_proto_encode(PERCH_MSG_TOP, true, &rep, out, len);
    }
    perch__free(ent);
    perch__free(top.rows);
    return err;
}

int perch__h_top(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    perch_live_query *q = query_of(s, a);
    uint8_t *p;
    size_t n;
    if (q == NULL)
        return PERCH_ENOTSUP;
    int err = top_payload(q, req, &p, &n);
    if (err < 0)
        return window_fail(a, err);
    perch__free(a->payload);
    a->payload = p;
    a->len = n;
    a->set = true;
    return 0;
}

typedef int (*records_fn)(perch_live_query *q, uint32_t id, const perch_proto_window *w,
                          uint32_t max, const perch_sink *sink, perch_live_records *info);

static int records(perch_proto_session *s, perch_proto_answer *a, records_fn fn, uint32_t id,
                   const perch_proto_window *w, uint32_t max)
{
    perch_live_query *q = query_of(s, a);
    perch_live_records info;
    memcap m;
    uint8_t *cap = NULL;
    size_t cap_len = 0;
    if (q == NULL)
        return PERCH_ENOTSUP;
    int err = memcap_begin(&m);
    if (err == 0) {
        err = fn(q, id, w, max, &m.sink, &info);
        if (err < 0)
            memcap_abort(&m);
        else
            memcap_end(&m, &cap, &cap_len);
    }
    if (err < 0)
        return window_fail(a, err);
    perch_proto_records_rep rep = {info.span.from_ts,
                                   info.span.to_ts,
                                   info.span.perf_freq,
                                   info.span.complete,
                                   info.truncated,
                                   info.matched,
                                   cap,
                                   cap_len};
    err = perch_proto_answer_set(a, &rep);
    perch__free(cap);
    return err;
}

int perch__h_slices(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_slices_req *r = req;
    return records(s, a, perch_live_query_slices, r->tid, &r->window, r->max);
}

int perch__h_samples(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_samples_req *r = req;
    return records(s, a, perch_live_query_samples, r->pid, &r->window, r->max);
}

int perch__h_subscribe(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    const perch_proto_subscribe_req *r = req;
    uint32_t iv = r->interval_ms;
    iv = iv < PERCH_PROTO_MIN_INTERVAL_MS ? PERCH_PROTO_MIN_INTERVAL_MS : iv;
    iv = iv > MAX_INTERVAL_MS ? MAX_INTERVAL_MS : iv;
    s->subscribed = true;
    s->sub_request = a->request_id;
    s->sub_interval_ms = iv;
    s->sub_top = r->top;
    s->sub_window_ms = r->window_ms ? r->window_ms : iv;
    s->sub_next_ms = 0;
    s->sub_seq = 0;
    s->sub_skipped = 0;
    perch_proto_subscribe_rep rep = {iv};
    return perch_proto_answer_set(a, &rep);
}

int perch__h_unsubscribe(perch_proto_session *s, const void *req, perch_proto_answer *a)
{
    (void)req;
    s->subscribed = false;
    return perch_proto_answer_set(a, NULL);
}

bool perch_proto_session_subscribed(const perch_proto_session *s)
{
    return s->subscribed;
}

static int build_update(perch_proto_session *s, perch_proto_reply **reply)
{
    perch_proto_update u;
    uint8_t *top = NULL, *p;
    size_t top_len = 0, n;
    int err = 0;
    memset(&u, 0, sizeof u);
    if (s->b->counters)
        err = s->b->counters(s->b->ctx, &u);
    if (err == 0 && s->sub_top > 0 && s->b->query != NULL) {
        perch_proto_top_req tr = {PERCH_TOP_THREADS,       PERCH_ORDER_CPU, s->sub_top, false, 0,
                                  {s->sub_window_ms, 0, 0}};
        err = top_payload(s->b->query, &tr, &top, &top_len);
    }
    if (err < 0) {
        perch__free(top);
        return err;
    }
    u.seq = s->sub_seq++;
    u.skipped = s->sub_skipped;
    u.top = top;
    u.top_len = top_len;
    err = perch_proto_encode(PERCH_MSG_UPDATE, true, &u, &p, &n);
    perch__free(top);
    return err < 0 ? err
                   : perch__reply_create(s->version, PERCH_MSG_UPDATE, s->sub_request, p, n, reply);
}

int perch_proto_session_tick(perch_proto_session *s, uint64_t now_ms, bool idle,
                             perch_proto_reply **reply)
{
    *reply = NULL;
    if (!s->subscribed)
        return 0;
    if (s->sub_next_ms == 0)
        s->sub_next_ms = now_ms;
    if (now_ms < s->sub_next_ms)
        return 0;
    s->sub_next_ms += s->sub_interval_ms;
    if (s->sub_next_ms <= now_ms) /* fell behind: no burst of catch-up updates */
        s->sub_next_ms = now_ms + s->sub_interval_ms;
    if (!idle) {
        s->sub_skipped++;
        return 0;
    }
    return build_update(s, reply);
}
