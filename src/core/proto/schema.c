/*
 * The message schemas: for every message type and direction, its fields in wire order with
 * their kinds and ranges. The encoder and decoder (codec.c) are generic walkers of these
 * tables, docs/protocol.md lists the same tables, and a test checks that every field of every
 * struct is covered, so a message cannot silently lose a field.
 */
#include <stddef.h>
#include <stdint.h>

#include "perch/proto.h"
#include "proto/proto_internal.h"

#define F(s, f, k, mx)                                                                             \
    {                                                                                              \
#f, k, offsetof(s, f), 0, mx, NULL                                                         \
    }
#define U8(s, f, mx)  F(s, f, PK_U8, mx)
#define BOOL(s, f)    F(s, f, PK_BOOL, 1)
#define U32(s, f, mx) F(s, f, PK_U32, mx)
#define U64(s, f)     F(s, f, PK_U64, UINT64_MAX)
#define I32(s, f)     F(s, f, PK_I32, 0)
#define STR(s, f)     F(s, f, PK_STR, PERCH_PROTO_MAX_STRING)
#define BLOB(s, f, l)                                                                              \
    {                                                                                              \
#f, PK_BLOB, offsetof(s, f), offsetof(s, l), PERCH_PROTO_MAX_MESSAGE, NULL                 \
    }
#define ARRAY(s, f, n, e)                                                                          \
    {                                                                                              \
#f, PK_ARRAY, offsetof(s, f), offsetof(s, n), PERCH_PROTO_MAX_ARRAY, &e                    \
    }
#define SCHEMA(nm, s, a)                                                                           \
    {                                                                                              \
        nm, sizeof(s), sizeof(a) / sizeof((a)[0]), a                                               \
    }
#define WINDOW(s) U64(s, window.last_ms), U64(s, window.from_ts), U64(s, window.to_ts)

static const perch__pfield hello_req_f[] = {
    U32(perch_proto_hello_req, min_version, UINT16_MAX),
    U32(perch_proto_hello_req, max_version, UINT16_MAX),
    U32(perch_proto_hello_req, pid, UINT32_MAX),
    STR(perch_proto_hello_req, client),
};
static const perch__pfield hello_rep_f[] = {
    U32(perch_proto_hello_rep, version, UINT16_MAX),
    U32(perch_proto_hello_rep, pid, UINT32_MAX),
    U8(perch_proto_hello_rep, role, PERCH_ROLE_ADMIN),
    U32(perch_proto_hello_rep, max_payload, UINT32_MAX),
    STR(perch_proto_hello_rep, server),
};
static const perch__pfield error_f[] = {
    I32(perch_proto_error, code),
    U32(perch_proto_error, about_type, UINT16_MAX),
    U32(perch_proto_error, about_version, UINT16_MAX),
    STR(perch_proto_error, message),
};

static const perch__pfield feature_f[] = {
    STR(perch_proto_feature, name),
    BOOL(perch_proto_feature, enabled),
    STR(perch_proto_feature, reason),
};
static const perch__pfield count_f[] = {
    STR(perch_proto_count, name),
    U64(perch_proto_count, count),
};
static const perch__pfield capture_f[] = {
    STR(perch_proto_capture, name),           U64(perch_proto_capture, bytes),
    U64(perch_proto_capture, start_filetime), U64(perch_proto_capture, elapsed_ms),
    U64(perch_proto_capture, duration_ms),    U8(perch_proto_capture, state, PERCH_CAPTURE_PARTIAL),
};
static const perch__pschema feature_s = SCHEMA("feature", perch_proto_feature, feature_f);
static const perch__pschema count_s = SCHEMA("count", perch_proto_count, count_f);
static const perch__pschema capture_s = SCHEMA("capture", perch_proto_capture, capture_f);

static const perch__pfield status_f[] = {
    STR(perch_proto_status, server),
    U64(perch_proto_status, uptime_ms),
    U8(perch_proto_status, session_state, PERCH_SESSION_RESTARTING),
    U8(perch_proto_status, session_kind, PERCH_SESSION_NT_KERNEL_LOGGER),
    STR(perch_proto_status, session_name),
    STR(perch_proto_status, degraded),
    ARRAY(perch_proto_status, features, feature_count, feature_s),
    U64(perch_proto_status, events_total),
    U64(perch_proto_status, events_per_sec),
    U32(perch_proto_status, rate_window_ms, UINT32_MAX),
    ARRAY(perch_proto_status, losses, loss_count, count_s),
    ARRAY(perch_proto_status, recordings, recording_count, capture_s),
    U64(perch_proto_status, recorder_span_ms),
    U64(perch_proto_status, recorder_bytes),
    U64(perch_proto_status, recorder_cap_bytes),
    U64(perch_proto_status, recorder_dropped),
    U64(perch_proto_status, window_span_ms),
    U64(perch_proto_status, window_bytes),
    U64(perch_proto_status, window_dropped),
    U32(perch_proto_status, clients, UINT32_MAX),
    U64(perch_proto_status, clients_dropped),
    STR(perch_proto_status, pipe_state),
};
static const perch__pfield captures_rep_f[] = {
    STR(perch_proto_captures_rep, directory),
    ARRAY(perch_proto_captures_rep, captures, count, capture_s),
};

static const perch__pfield option_f[] = {
    STR(perch_proto_option, key),
    STR(perch_proto_option, value),
};
static const perch__pschema option_s = SCHEMA("option", perch_proto_option, option_f);
static const perch__pfield record_req_f[] = {
    U64(perch_proto_record_req, duration_ms),
    STR(perch_proto_record_req, name),
    ARRAY(perch_proto_record_req, options, option_count, option_s),
};
static const perch__pfield record_rep_f[] = {
    STR(perch_proto_record_rep, name),
    STR(perch_proto_record_rep, path),
};
static const perch__pfield stop_req_f[] = {STR(perch_proto_stop_req, name)};
static const perch__pfield stop_rep_f[] = {
    STR(perch_proto_stop_rep, name),
    U64(perch_proto_stop_rep, bytes),
    U64(perch_proto_stop_rep, duration_ms),
};
static const perch__pfield snapshot_req_f[] = {U64(perch_proto_snapshot_req, last_ms)};
static const perch__pfield fetch_req_f[] = {
    STR(perch_proto_fetch_req, name),
    U64(perch_proto_fetch_req, offset),
};
static const perch__pfield stream_rep_f[] = {
    STR(perch_proto_stream_rep, name),
    U64(perch_proto_stream_rep, size),
};

static const perch__pfield top_req_f[] = {
    U8(perch_proto_top_req, what, PERCH_TOP_STACKS),
    U8(perch_proto_top_req, order, PERCH_ORDER_SAMPLES),
    U32(perch_proto_top_req, limit, PERCH_PROTO_MAX_TOP),
    BOOL(perch_proto_top_req, has_pid),
    U32(perch_proto_top_req, pid, UINT32_MAX),
    WINDOW(perch_proto_top_req),
};
static const perch__pfield top_row_f[] = {
    U64(perch_proto_top_row, key),
    U64(perch_proto_top_row, owner),
    U64(perch_proto_top_row, samples),
    U64(perch_proto_top_row, cpu_ticks),
};
static const perch__pschema top_row_s = SCHEMA("row", perch_proto_top_row, top_row_f);
static const perch__pfield top_rep_f[] = {
    U64(perch_proto_top_rep, from_ts),
    U64(perch_proto_top_rep, to_ts),
    U64(perch_proto_top_rep, perf_freq),
    BOOL(perch_proto_top_rep, complete),
    U64(perch_proto_top_rep, samples),
    U64(perch_proto_top_rep, cpu_ticks),
    U64(perch_proto_top_rep, idle_ticks),
    ARRAY(perch_proto_top_rep, rows, row_count, top_row_s),
    BLOB(perch_proto_top_rep, entities, entities_len),
};
static const perch__pfield slices_req_f[] = {
    U32(perch_proto_slices_req, tid, UINT32_MAX),
    U32(perch_proto_slices_req, max, UINT32_MAX),
    WINDOW(perch_proto_slices_req),
};
static const perch__pfield samples_req_f[] = {
    U32(perch_proto_samples_req, pid, UINT32_MAX),
    U32(perch_proto_samples_req, max, UINT32_MAX),
    WINDOW(perch_proto_samples_req),
};
static const perch__pfield records_rep_f[] = {
    U64(perch_proto_records_rep, from_ts),
    U64(perch_proto_records_rep, to_ts),
    U64(perch_proto_records_rep, perf_freq),
    BOOL(perch_proto_records_rep, complete),
    BOOL(perch_proto_records_rep, truncated),
    U64(perch_proto_records_rep, matched),
    BLOB(perch_proto_records_rep, capture, capture_len),
};
static const perch__pfield subscribe_req_f[] = {
    U32(perch_proto_subscribe_req, interval_ms, UINT32_MAX),
    U32(perch_proto_subscribe_req, top, 50),
    U32(perch_proto_subscribe_req, window_ms, UINT32_MAX),
};
static const perch__pfield subscribe_rep_f[] = {
    U32(perch_proto_subscribe_rep, interval_ms, UINT32_MAX),
};
static const perch__pfield update_f[] = {
    U64(perch_proto_update, seq),
    U64(perch_proto_update, events_total),
    U64(perch_proto_update, events_per_sec),
    U64(perch_proto_update, lost_total),
    U64(perch_proto_update, skipped),
    BLOB(perch_proto_update, top, top_len),
};

#define S(nm, s, a) static const perch__pschema a##_s = SCHEMA(nm, s, a##_f)
S("hello request", perch_proto_hello_req, hello_req);
S("hello reply", perch_proto_hello_rep, hello_rep);
S("error reply", perch_proto_error, error);
S("status reply", perch_proto_status, status);
S("captures reply", perch_proto_captures_rep, captures_rep);
S("record request", perch_proto_record_req, record_req);
S("record reply", perch_proto_record_rep, record_rep);
S("stop request", perch_proto_stop_req, stop_req);
S("stop reply", perch_proto_stop_rep, stop_rep);
S("snapshot request", perch_proto_snapshot_req, snapshot_req);
S("fetch request", perch_proto_fetch_req, fetch_req);
S("stream reply", perch_proto_stream_rep, stream_rep);
S("top request", perch_proto_top_req, top_req);
S("top reply", perch_proto_top_rep, top_rep);
S("slices request", perch_proto_slices_req, slices_req);
S("samples request", perch_proto_samples_req, samples_req);
S("records reply", perch_proto_records_rep, records_rep);
S("subscribe request", perch_proto_subscribe_req, subscribe_req);
S("subscribe reply", perch_proto_subscribe_rep, subscribe_rep);
S("update", perch_proto_update, update);

/* NONE: no message in that direction; EMPTY: a message without fields. */
static const perch__pschema none_s = {"none", 0, 0, NULL};
static const perch__pschema empty_s = {"empty", 0, 0, NULL};

static const struct {
    const perch__pschema *req, *rep;
} messages[PERCH_MSG_TYPE_LIMIT] = {
    [PERCH_MSG_HELLO] = {&hello_req_s, &hello_rep_s},
    [PERCH_MSG_ERROR] = {&none_s, &error_s},
    [PERCH_MSG_PING] = {&empty_s, &empty_s},
    [PERCH_MSG_STATUS] = {&empty_s, &status_s},
    [PERCH_MSG_CAPTURES] = {&empty_s, &captures_rep_s},
    [PERCH_MSG_RECORD] = {&record_req_s, &record_rep_s},
    [PERCH_MSG_STOP] = {&stop_req_s, &stop_rep_s},
    [PERCH_MSG_SNAPSHOT] = {&snapshot_req_s, &stream_rep_s},
    [PERCH_MSG_FETCH] = {&fetch_req_s, &stream_rep_s},
    [PERCH_MSG_DATA] = {&none_s, &none_s}, /* raw bytes, no fields */
    [PERCH_MSG_TOP] = {&top_req_s, &top_rep_s},
    [PERCH_MSG_SLICES] = {&slices_req_s, &records_rep_s},
    [PERCH_MSG_SAMPLES] = {&samples_req_s, &records_rep_s},
    [PERCH_MSG_SUBSCRIBE] = {&subscribe_req_s, &subscribe_rep_s},
    [PERCH_MSG_UNSUBSCRIBE] = {&empty_s, &empty_s},
    [PERCH_MSG_UPDATE] = {&none_s, &update_s},
};

const perch__pschema *perch__proto_schema(unsigned type, bool reply, bool *empty)
{
    *empty = false;
    if (type == 0 || type >= PERCH_MSG_TYPE_LIMIT)
        return NULL;
    const perch__pschema *s = reply ? messages[type].rep : messages[type].req;
    if (s == &none_s)
        return NULL;
    *empty = s == &empty_s;
    return s;
}

bool perch_proto_has_message(unsigned type, bool reply)
{
    bool empty;
    return perch__proto_schema(type, reply, &empty) != NULL;
}
