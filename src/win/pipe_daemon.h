/*
 * perchd's pipe: the pipe server (pipe_server.h) with a backend that answers each request
 * from the daemon (daemon.h) and its live query state. The daemon starts it once it runs and
 * stops it before it stops itself; a squatter holding the pipe name makes the start fail
 * with a sentence the daemon logs and puts in its status.
 */
#ifndef PERCH_WIN_PIPE_DAEMON_H
#define PERCH_WIN_PIPE_DAEMON_H

#include <stddef.h>

#include "daemon.h"
#include "live/query.h"
#include "pipe_server.h"

typedef struct perch_pipe_daemon perch_pipe_daemon;

/* Serves d (and query, which may be NULL: live queries are then refused with a sentence) on
 * the pipe `name` (NULL: \\.\pipe\perch). d and query are borrowed and must outlive the
 * pipe. Returns 0 or perch_pipe_server_start's error (PERCH_EEXIST for a squatter) with one
 * sentence in why. */
int perch_pipe_daemon_start(perch_daemon *d, perch_live_query *query, const char *name,
                            perch_pipe_daemon **out, char *why, size_t why_len);

/* Stops serving (every client is disconnected) and cancels a pending timed stop. Accepts
 * NULL. */
void perch_pipe_daemon_stop(perch_pipe_daemon *p);

/* The pipe's figures, for the daemon's own status. */
void perch_pipe_daemon_stats(perch_pipe_daemon *p, perch_pipe_server_stats *st);

#endif
