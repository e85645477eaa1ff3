/*
 * The Perch pipe protocol: how the `perch` client and `perchd` talk over \\.\pipe\perch.
 * docs/protocol.md describes every byte; this header is the portable codec (src/core/proto/),
 * tested natively and fuzzed. The pipe itself (Windows) is src/win/pipe_*.c.
 *
 * A connection carries frames: a fixed 32-byte header (magic, version, type, request id,
 * flags, payload length, reserved zeroes) and a payload of at most PERCH_PROTO_MAX_PAYLOAD
 * bytes. A message larger than one frame is split over frames flagged MORE. The first
 * exchange is HELLO (the version handshake); every request gets exactly one reply (or an
 * ERROR reply naming what was refused), and FETCH and SNAPSHOT replies are followed by a
 * stream of DATA frames holding the bytes of a capture file. Payloads are sequences of
 * fields in a fixed order (LEB128 varints, zigzag integers, length-prefixed strings and
 * blobs, counted arrays); each message's fields are one table in src/core/proto/schema.c.
 * Replies that carry model data (queries) hold a capture (include/perch/capture.h) written
 * in memory, so one reader, perch_capture_replay_memory, serves files and the pipe.
 */
#ifndef PERCH_PROTO_H
#define PERCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- frames ----------------------------------------------------------------------------- */

#define PERCH_PROTO_MAGIC       0x48435250u /* "PRCH" as bytes 50 52 43 48 */
#define PERCH_PROTO_VERSION     1u          /* the version this build prefers */
#define PERCH_PROTO_VERSION_MIN 1u          /* versions this build speaks: [MIN, MAX] */
#define PERCH_PROTO_VERSION_MAX 1u
#define PERCH_PROTO_HEADER_SIZE 32u
#define PERCH_PROTO_MAX_PAYLOAD (1u << 20) /* bytes in one frame, a hard cap */
#define PERCH_PROTO_MAX_MESSAGE (8u << 20) /* bytes of one message split over frames */
#define PERCH_PROTO_MAX_STRING  (64u << 10)
#define PERCH_PROTO_MAX_ARRAY   (64u << 10)  /* elements of one array field */
#define PERCH_PROTO_DATA_FRAME  (256u << 10) /* payload of the DATA frames a server sends */

/* Frame flags. Bits not listed must be zero. */
#define PERCH_PROTO_FLAG_REPLY  0x1u /* server to client */
#define PERCH_PROTO_FLAG_MORE   0x2u /* the message continues in the next frame */
#define PERCH_PROTO_FLAGS_KNOWN 0x3u

/* Message types. Values are on the wire: never renumber. */
typedef enum perch_proto_type {
    PERCH_MSG_HELLO = 1,      /* version handshake, always first */
    PERCH_MSG_ERROR = 2,      /* reply only: a request was refused or failed */
    PERCH_MSG_PING = 3,       /* empty request, empty reply (the floor of every latency) */
    PERCH_MSG_STATUS = 4,     /* session, features, rates, losses, recorder, uptime */
    PERCH_MSG_CAPTURES = 5,   /* the captures in the capture directory */
    PERCH_MSG_RECORD = 6,     /* start a recording (admin) */
    PERCH_MSG_STOP = 7,       /* stop a recording (admin) */
    PERCH_MSG_SNAPSHOT = 8,   /* the flight recorder's last N seconds, as a capture stream */
    PERCH_MSG_FETCH = 9,      /* a capture file, as a stream */
    PERCH_MSG_DATA = 10,      /* reply only: stream bytes after a FETCH or SNAPSHOT reply */
    PERCH_MSG_TOP = 11,       /* top processes, threads or stacks over a window */
    PERCH_MSG_SLICES = 12,    /* the CPU slices of one thread over a window */
    PERCH_MSG_SAMPLES = 13,   /* the samples of one process over a window */
    PERCH_MSG_SUBSCRIBE = 14, /* periodic UPDATE messages at a bounded rate */
    PERCH_MSG_UNSUBSCRIBE = 15,
    PERCH_MSG_UPDATE = 16, /* reply only: one periodic update of a subscription */
} perch_proto_type;

#define PERCH_MSG_TYPE_LIMIT 17 /* one past the highest type */

/* The upper-case name of a type ("STATUS"), or NULL for an unknown one. */
const char *perch_proto_type_name(unsigned type);

/* A decoded frame header (docs/protocol.md, "Frames"). */
typedef struct perch_proto_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t request_id;
    uint32_t flags;
    uint32_t payload_len;
    uint32_t reserved[3];
} perch_proto_header;

/* Writes the 32-byte header of h to out (little-endian, fields at their offsets). */
void perch_proto_header_write(const perch_proto_header *h, uint8_t out[PERCH_PROTO_HEADER_SIZE]);

/* How much a receiver can trust a header it refused. */
typedef enum perch_proto_fault {
    PERCH_PROTO_OK = 0,
    PERCH_PROTO_SKIP,  /* the framing holds: skip payload_len bytes, reply ERROR, go on */
    PERCH_PROTO_FATAL, /* the framing is lost (bad magic, oversized): reply ERROR, close */
} perch_proto_fault;

/* Reads and checks a header: magic, version in [PERCH_PROTO_VERSION_MIN, MAX] (version is
 * the connection's negotiated version, or 0 to accept any version of the window), known
 * flags, reserved zeroes, payload_len <= PERCH_PROTO_MAX_PAYLOAD. Always fills *h. Returns 0
 * or PERCH_EFORMAT / PERCH_EVERSION / PERCH_ELIMIT with *fault saying whether the framing
 * still holds and reason (may be NULL, reason_len bytes) one line of English naming the
 * offending value. */
int perch_proto_header_read(const uint8_t in[PERCH_PROTO_HEADER_SIZE], uint16_t version,
                            perch_proto_header *h, perch_proto_fault *fault, char *reason,
                            size_t reason_len);

/* Builds one frame (header + payload) into a new buffer the caller frees with perch_free.
 * PERCH_ELIMIT when len > PERCH_PROTO_MAX_PAYLOAD, PERCH_ENOMEM. */
int perch_proto_frame(uint16_t version, uint16_t type, uint32_t request_id, uint32_t flags,
                      const void *payload, size_t len, uint8_t **out, size_t *out_len);

/* ---- the incremental frame reader (both sides) -------------------------------------------- */

/* Accumulates bytes from a stream into frames and frames into messages (payloads of frames
 * flagged MORE are joined). Bounded: at most one header plus PERCH_PROTO_MAX_PAYLOAD bytes of
 * frame and `max_message` bytes of message are held. */
typedef struct perch_proto_reader perch_proto_reader;

/* max_message: the largest joined message accepted (0: PERCH_PROTO_MAX_MESSAGE). */
int perch_proto_reader_create(size_t max_message, perch_proto_reader **out);
void perch_proto_reader_destroy(perch_proto_reader *r);

/* The version every later header must carry (0 until the handshake: any in the window). */
void perch_proto_reader_set_version(perch_proto_reader *r, uint16_t version);

/* Appends up to len bytes from data; *used receives how many were taken (the reader stops
 * taking bytes once a message is complete, until it is consumed by _next). */
void perch_proto_reader_push(perch_proto_reader *r, const void *data, size_t len, size_t *used);

/* One event of the reader. */
typedef struct perch_proto_event {
    perch_proto_header header; /* of the message's first frame (flags without MORE) */
    const uint8_t *payload;    /* the joined payload, valid until the next call */
    size_t len;
    perch_proto_fault fault; /* != OK: the message was refused (error below) */
    int error;               /* 0, or why it was refused */
    char reason[160];
} perch_proto_event;

/* 1 and *ev when a message (or a refused frame) is ready, 0 when more bytes are needed.
 * After a FATAL fault the reader refuses everything (the connection should be closed).
 * A DATA frame is delivered frame by frame, never joined (a stream can be any length). */
int perch_proto_reader_next(perch_proto_reader *r, perch_proto_event *ev);

/* Bytes held (header, frame and message buffers' capacity): the reader's memory. */
size_t perch_proto_reader_bytes(const perch_proto_reader *r);

/* ---- messages ------------------------------------------------------------------------------ */

/* Who may do what (HELLO reply; the server decides from the client's token). */
typedef enum perch_proto_role {
    PERCH_ROLE_READ = 0,  /* Performance Log Users: status, captures, queries, fetch */
    PERCH_ROLE_ADMIN = 1, /* Administrators and LocalSystem: everything */
} perch_proto_role;

typedef struct perch_proto_hello_req {
    uint32_t min_version, max_version; /* the versions the client speaks */
    uint32_t pid;                      /* the client's own pid (informative; the server logs
                                          the pid the pipe reports) */
    const char *client;                /* "perch 0.1.0" */
} perch_proto_hello_req;

typedef struct perch_proto_hello_rep {
    uint32_t version;     /* chosen: every later frame carries it */
    uint32_t pid;         /* the server's pid */
    uint8_t role;         /* perch_proto_role granted to this client */
    uint32_t max_payload; /* the server's frame cap */
    const char *server;   /* "perchd 0.1.0" */
} perch_proto_hello_rep;

typedef struct perch_proto_error {
    int32_t code;           /* a PERCH_E* */
    uint32_t about_type;    /* the type of the refused frame (0: none) */
    uint32_t about_version; /* its version */
    const char *message;    /* one line of English, naming what was refused and why */
} perch_proto_error;

/* Session states and kinds (STATUS). */
typedef enum perch_proto_session_state {
    PERCH_SESSION_STOPPED = 0,
    PERCH_SESSION_STARTING = 1,
    PERCH_SESSION_RUNNING = 2,
    PERCH_SESSION_DEGRADED = 3, /* running with some feature refused, or without kernel data */
    PERCH_SESSION_FAILED = 4,
    PERCH_SESSION_RESTARTING = 5,
} perch_proto_session_state;

typedef enum perch_proto_session_kind {
    PERCH_SESSION_NONE = 0,
    PERCH_SESSION_PRIVATE_LOGGER = 1, /* a private system-logger session (Windows 8+) */
    PERCH_SESSION_NT_KERNEL_LOGGER = 2,
} perch_proto_session_kind;

typedef struct perch_proto_feature {
    const char *name; /* "cswitch", "sampled_profile", "lbr", ... */
    bool enabled;
    const char *reason; /* why it is off ("" when on) */
} perch_proto_feature;

typedef struct perch_proto_count {
    const char *name;
    uint64_t count;
} perch_proto_count;

typedef enum perch_proto_capture_state {
    PERCH_CAPTURE_COMPLETE = 0,  /* ends with the end chunk */
    PERCH_CAPTURE_RECORDING = 1, /* being written now */
    PERCH_CAPTURE_PARTIAL = 2,   /* no end chunk and not being written (a crash, a cut) */
} perch_proto_capture_state;

typedef struct perch_proto_capture {
    const char *name; /* file name in the capture directory */
    uint64_t bytes;
    uint64_t start_filetime; /* 0: unknown */
    uint64_t elapsed_ms;     /* recordings: time since start */
    uint64_t duration_ms;    /* recordings: planned length (0: until stopped) */
    uint8_t state;           /* perch_proto_capture_state */
} perch_proto_capture;

typedef struct perch_proto_status {
    const char *server; /* "perchd 0.1.0" */
    uint64_t uptime_ms;
    uint8_t session_state; /* perch_proto_session_state */
    uint8_t session_kind;  /* perch_proto_session_kind */
    const char *session_name;
    const char *degraded; /* one sentence when degraded or failed, else "" */
    uint32_t feature_count;
    const perch_proto_feature *features;
    uint64_t events_total;
    uint64_t events_per_sec; /* over the last rate_window_ms */
    uint32_t rate_window_ms;
    uint32_t loss_count;
    const perch_proto_count *losses; /* by reason: queue full, events lost, buffers lost ... */
    uint32_t recording_count;
    const perch_proto_capture *recordings; /* captures in progress */
    uint64_t recorder_span_ms;             /* the flight recorder holds this much trace time */
    uint64_t recorder_bytes;
    uint64_t recorder_cap_bytes;
    uint64_t recorder_dropped; /* chunks dropped by its memory cap */
    uint64_t window_span_ms;   /* the live query window */
    uint64_t window_bytes;
    uint64_t window_dropped;  /* records dropped by its memory cap */
    uint32_t clients;         /* connected pipe clients */
    uint64_t clients_dropped; /* disconnected by the server (slow, silent, hostile) */
    const char *pipe_state;   /* "" or one sentence (a squatter holds the pipe name, ...) */
} perch_proto_status;

typedef struct perch_proto_captures_rep {
    const char *directory;
    uint32_t count;
    const perch_proto_capture *captures;
} perch_proto_captures_rep;

typedef struct perch_proto_option {
    const char *key, *value;
} perch_proto_option;

typedef struct perch_proto_record_req {
    uint64_t duration_ms; /* 0: until STOP */
    const char *name;     /* "" lets the server pick one */
    uint32_t option_count;
    const perch_proto_option *options; /* override the service configuration */
} perch_proto_record_req;

typedef struct perch_proto_record_rep {
    const char *name; /* of the capture being written */
    const char *path;
} perch_proto_record_rep;

typedef struct perch_proto_stop_req {
    const char *name; /* "" stops the current recording */
} perch_proto_stop_req;

typedef struct perch_proto_stop_rep {
    const char *name;
    uint64_t bytes;
    uint64_t duration_ms;
} perch_proto_stop_rep;

typedef struct perch_proto_snapshot_req {
    uint64_t last_ms; /* 0: everything the flight recorder holds */
} perch_proto_snapshot_req;

typedef struct perch_proto_fetch_req {
    const char *name;
    uint64_t offset; /* resume a fetch from this byte */
} perch_proto_fetch_req;

/* The reply to FETCH and SNAPSHOT; DATA frames with the bytes follow (docs/protocol.md). */
typedef struct perch_proto_stream_rep {
    const char *name;
    uint64_t size; /* bytes that follow, exactly (a client refuses more or fewer) */
} perch_proto_stream_rep;

/* A window of trace time: the last last_ms of trace time seen, or [from_ts, to_ts) in the
 * trace clock's raw ticks when last_ms is 0 (to_ts 0: up to the newest). */
typedef struct perch_proto_window {
    uint64_t last_ms;
    uint64_t from_ts, to_ts;
} perch_proto_window;

typedef enum perch_proto_top_what {
    PERCH_TOP_PROCESSES = 0,
    PERCH_TOP_THREADS = 1,
    PERCH_TOP_STACKS = 2,
} perch_proto_top_what;

typedef enum perch_proto_top_order {
    PERCH_ORDER_CPU = 0,     /* CPU time from slices */
    PERCH_ORDER_SAMPLES = 1, /* timer samples */
} perch_proto_top_order;

#define PERCH_PROTO_MAX_TOP 1000u

typedef struct perch_proto_top_req {
    uint8_t what;   /* perch_proto_top_what */
    uint8_t order;  /* perch_proto_top_order */
    uint32_t limit; /* rows (1..PERCH_PROTO_MAX_TOP) */
    bool has_pid;   /* threads and stacks of one process only */
    uint32_t pid;
    perch_proto_window window;
} perch_proto_top_req;

typedef struct perch_proto_top_row {
    uint64_t key;       /* process key, thread key, or the stack's id in the entities */
    uint64_t owner;     /* thread rows: the process key; stack rows: the thread key of one
                           of its samples; process rows: 0 */
    uint64_t samples;   /* timer samples */
    uint64_t cpu_ticks; /* slice time inside the window (raw ticks) */
} perch_proto_top_row;

typedef struct perch_proto_top_rep {
    uint64_t from_ts, to_ts;                 /* the window covered, raw ticks */
    uint64_t perf_freq;                      /* ticks per second */
    bool complete;                           /* false: part of the window was no longer held */
    uint64_t samples, cpu_ticks, idle_ticks; /* totals over the window */
    uint32_t row_count;
    const perch_proto_top_row *rows;
    /* A capture (trace_info, then the process, thread, module and stack records the rows
     * name) that replays into any perch_sink. */
    const uint8_t *entities;
    size_t entities_len;
} perch_proto_top_rep;

typedef struct perch_proto_slices_req {
    uint32_t tid;
    uint32_t max; /* slices at most (0: the server's default) */
    perch_proto_window window;
} perch_proto_slices_req;

typedef struct perch_proto_samples_req {
    uint32_t pid;
    uint32_t max; /* samples at most (0: the server's default) */
    perch_proto_window window;
} perch_proto_samples_req;

/* The reply to SLICES and SAMPLES. */
typedef struct perch_proto_records_rep {
    uint64_t from_ts, to_ts, perf_freq;
    bool complete;
    bool truncated;         /* more matched than max */
    uint64_t matched;       /* records that matched (before max) */
    const uint8_t *capture; /* trace_info, entities, stacks, then the slices or samples */
    size_t capture_len;
} perch_proto_records_rep;

#define PERCH_PROTO_MIN_INTERVAL_MS 100u /* subscriptions: at most 10 updates a second */

typedef struct perch_proto_subscribe_req {
    uint32_t interval_ms; /* clamped to [PERCH_PROTO_MIN_INTERVAL_MS, 60000] */
    uint32_t top;         /* top threads in each update (0..50) */
    uint32_t window_ms;   /* their window (0: the interval) */
} perch_proto_subscribe_req;

typedef struct perch_proto_subscribe_rep {
    uint32_t interval_ms; /* granted */
} perch_proto_subscribe_rep;

typedef struct perch_proto_update {
    uint64_t seq;
    uint64_t events_total;
    uint64_t events_per_sec;
    uint64_t lost_total; /* sum of the status losses */
    uint64_t skipped;    /* updates not sent because the client had not read the last */
    const uint8_t *top;  /* a TOP reply payload (threads by CPU), or empty */
    size_t top_len;
} perch_proto_update;

/* Encodes msg (the struct of type/reply, e.g. perch_proto_status for STATUS replies; NULL for
 * messages without fields) into a new buffer the caller frees with perch_free. PERCH_EINVAL
 * for a type/direction without a message or a field out of its range, PERCH_ELIMIT past
 * PERCH_PROTO_MAX_MESSAGE, PERCH_ENOMEM. Strings may be NULL (sent as ""). */
int perch_proto_encode(unsigned type, bool reply, const void *msg, uint8_t **out, size_t *len);

/* Decodes payload into *msg (of msg_size bytes: sizeof the struct of type/reply). Strings,
 * arrays and blobs point into one block stored in *mem, which the caller frees with
 * perch_free (NULL when nothing was allocated); strings are NUL-terminated, blobs point into
 * the block too. PERCH_EFORMAT (with reason) for bytes that are not exactly the message:
 * a truncated field, a value out of range, a bad bool, a string with a NUL or invalid UTF-8,
 * bytes after the last field. *msg and *mem are untouched on error. */
int perch_proto_decode(unsigned type, bool reply, const void *payload, size_t len, void *msg,
                       size_t msg_size, void **mem, char *reason, size_t reason_len);

/* True when type/reply has a message (a schema) in this version. */
bool perch_proto_has_message(unsigned type, bool reply);

#ifdef __cplusplus
}
#endif

#endif
