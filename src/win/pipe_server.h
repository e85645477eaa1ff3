/*
 * The named-pipe server of perchd: \\.\pipe\perch with an explicit security descriptor
 * (Administrators and LocalSystem full access, Performance Log Users read and write data
 * only, network logons denied), PIPE_REJECT_REMOTE_CLIENTS, FILE_FLAG_FIRST_PIPE_INSTANCE and
 * a check for a squatter that holds the name first. Overlapped I/O on one completion port
 * with several listening instances; a few worker threads run the protocol session
 * (src/core/proto/session.h) for each client, one request at a time.
 *
 * Every client has a bounded outbound queue: a reply is pulled frame by frame only while
 * less than out_high bytes wait, so a slow client costs at most that much memory, a client
 * that stops reading for stall_ms is disconnected with a logged reason, and nothing it does
 * reaches the ETW consumer, the model thread or another client. A client that sends no HELLO
 * within hello_ms is disconnected too, and clients past max_clients get an ERROR reply that
 * says the server is busy (unless a connection that has sent nothing yet can give up its
 * slot), as do read-only clients past seven eighths of max_clients (the rest is kept for
 * administrators). A client that keeps the pipe open after the reply that
 * ends its connection is disconnected 2 s later.
 */
#ifndef PERCH_WIN_PIPE_SERVER_H
#define PERCH_WIN_PIPE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/session.h"

#define PERCH_PIPE_NAME "\\\\.\\pipe\\perch"

typedef struct perch_pipe_server perch_pipe_server;

typedef struct perch_pipe_server_opts {
    size_t size;                        /* sizeof(perch_pipe_server_opts) */
    const char *name;                   /* UTF-8 pipe name; NULL: PERCH_PIPE_NAME */
    const perch_proto_backend *backend; /* borrowed: must outlive the server */
    uint32_t max_clients;               /* connected at once (default 64) */
    uint32_t listeners;                 /* instances waiting for a client (default 4) */
    uint32_t workers;                   /* threads running sessions (default 2) */
    uint32_t out_high;                  /* bytes queued per client before its reply waits
                                           (default 1 MiB) */
    uint32_t stall_ms; /* a client that reads none of its queued bytes this long is dropped
                          (default 10000) */
    uint32_t hello_ms; /* no HELLO this long after connecting: dropped (default 5000) */
    uint32_t idle_ms;  /* no request this long (and no subscription): dropped (0: never) */
    uint32_t tick_ms;  /* timer resolution (default 50) */
} perch_pipe_server_opts;

void perch_pipe_server_opts_default(perch_pipe_server_opts *o);

/* Creates the pipe and starts serving. Returns 0; PERCH_EEXIST when another process already
 * serves the name (a squatter: nothing is served, and why says which pid holds it);
 * PERCH_EINVAL, PERCH_ENOMEM or the translated Win32 error. why (may be NULL) receives one
 * sentence on error. *out is stored before the threads start (the backend's requests may
 * read it); NULL on error. */
int perch_pipe_server_start(const perch_pipe_server_opts *o, perch_pipe_server **out, char *why,
                            size_t why_len);

/* Disconnects every client, closes every instance and joins the threads. Accepts NULL. */
void perch_pipe_server_stop(perch_pipe_server *s);

typedef struct perch_pipe_server_stats {
    uint32_t clients;      /* connected now */
    uint32_t instances;    /* pipe instances open now (clients + listeners) */
    uint64_t accepted;     /* connections since start */
    uint64_t closed;       /* connections ended (by either side) */
    uint64_t dropped;      /* of which the server ended: slow, silent, hostile */
    uint64_t refused_busy; /* turned away past max_clients */
    uint64_t requests;     /* messages handled */
    uint64_t bytes_in, bytes_out;
    uint64_t queued_bytes; /* in outbound queues now */
    uint64_t queued_high;  /* the most one client ever had queued */
} perch_pipe_server_stats;

void perch_pipe_server_get_stats(perch_pipe_server *s, perch_pipe_server_stats *st);

#endif
