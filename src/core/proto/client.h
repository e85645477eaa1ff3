/*
 * The client side of the pipe protocol, portable: the HELLO handshake, a request and its
 * reply, a FETCH or SNAPSHOT stream written straight to an output, and the UPDATE messages
 * of a subscription, over any byte transport (the Windows pipe in src/win/pipe_client.c, an
 * in-memory loop in the tests). Every ERROR reply becomes its PERCH_E* code with the
 * server's sentence in `why`.
 */
#ifndef PERCH_PROTO_CLIENT_H
#define PERCH_PROTO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/io.h"
#include "perch/proto.h"

/* A connected byte stream. */
typedef struct perch_proto_transport {
    void *ctx;
    /* Writes all len bytes within timeout_ms. 0, PERCH_ETIMEDOUT, PERCH_EPIPE (closed). */
    int (*write)(void *ctx, const void *data, size_t len, uint32_t timeout_ms);
    /* Reads 1..cap bytes within timeout_ms. 0, PERCH_ETIMEDOUT, PERCH_EPIPE (closed). */
    int (*read)(void *ctx, void *buf, size_t cap, size_t *got, uint32_t timeout_ms);
    void (*close)(void *ctx);
} perch_proto_transport;

typedef struct perch_proto_client perch_proto_client;

/* Takes *t (closed on error too), says HELLO as `name` with this process's pid, and keeps the
 * server's answer (perch_proto_client_hello). Returns 0, the server's refusal, PERCH_EPIPE,
 * PERCH_ETIMEDOUT or PERCH_EFORMAT (not a Perch server) with a sentence in why. */
int perch_proto_client_open(perch_proto_transport *t, const char *name, uint32_t pid,
                            uint32_t timeout_ms, perch_proto_client **out, char *why,
                            size_t why_len);

/* Closes the transport and frees the client. Accepts NULL. */
void perch_proto_client_close(perch_proto_client *c);

/* The server's HELLO reply (its strings live as long as the client). */
const perch_proto_hello_rep *perch_proto_client_hello(const perch_proto_client *c);

/* Sends a request of `type` (req: its struct, NULL for messages without fields) and decodes
 * the reply into *rep (of rep_size bytes; NULL and 0 for empty replies), its memory into
 * *mem (perch_free). Returns 0, the code of an ERROR reply (its message in why), or a
 * transport or format error. */
int perch_proto_client_call(perch_proto_client *c, unsigned type, const void *req, void *rep,
                            size_t rep_size, void **mem, uint32_t timeout_ms, char *why,
                            size_t why_len);

/* Progress of a stream: bytes received so far of total (0 when unknown). */
typedef void (*perch_proto_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* FETCH or SNAPSHOT: the stream reply into *hdr (memory in *mem), then every DATA frame's
 * bytes appended to out, in order, until the last. PERCH_ETRUNC when the stream ended short
 * of hdr->size, PERCH_EFORMAT at a DATA frame that would pass it (none of that frame is
 * written; a size of 0 is held to as well: nothing follows), an ERROR's code when the server
 * failed mid-stream. timeout_ms applies to each frame. */
int perch_proto_client_stream(perch_proto_client *c, unsigned type, const void *req,
                              perch_proto_stream_rep *hdr, void **mem, perch_output *out,
                              perch_proto_progress_fn progress, void *progress_ctx,
                              uint32_t timeout_ms, char *why, size_t why_len);

/* After a SUBSCRIBE call: waits up to timeout_ms for the next UPDATE. 0, PERCH_ETIMEDOUT, or
 * an error. */
int perch_proto_client_update(perch_proto_client *c, perch_proto_update *u, void **mem,
                              uint32_t timeout_ms, char *why, size_t why_len);

/* Connects to the named pipe `name` (NULL: \\.\pipe\perch), waiting up to timeout_ms while
 * every instance is busy, and fills *t. Implemented per platform (src/win/pipe_client.c;
 * elsewhere PERCH_ENOTSUP). Returns 0, PERCH_ENOENT (nothing serves the pipe), PERCH_EACCES,
 * PERCH_EBUSY, or the translated error, with a sentence in why. */
int perch_pipe_connect(const char *name, uint32_t timeout_ms, perch_proto_transport *t, char *why,
                       size_t why_len);

/* What the service control manager says about the Perch service, for the sentence a client
 * prints when nothing serves the pipe: 0 with *installed and *running, or PERCH_ENOTSUP
 * (not Windows) or the translated error. Implemented per platform. */
int perch_pipe_service_state(bool *installed, bool *running);

#endif
