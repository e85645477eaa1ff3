/*
 * What the commands that talk to perchd share (status, record, stop, snapshot, captures,
 * fetch, top, watch): connecting to the pipe with a clear sentence and a documented exit
 * status for every way that fails, parsing durations, and the names of the processes,
 * threads, modules and stacks a reply's capture carries.
 *
 * The pipe is \\.\pipe\perch, or the one named by the PERCH_PIPE environment variable (tests
 * and a second perchd use it). On systems other than Windows these commands say in a
 * sentence that they talk to perchd on Windows and what to use instead.
 */
#ifndef PERCH_TOOLS_SERVICE_CLIENT_H
#define PERCH_TOOLS_SERVICE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "perch/json.h"
#include "perch/records.h"
#include "proto/client.h"

/* Exit statuses of the service commands (perch --help and docs/protocol.md list them). */
enum {
    PERCH_EXIT_SERVICE_NOT_HERE = 4,      /* not Windows: there is no perchd to talk to */
    PERCH_EXIT_SERVICE_NOT_INSTALLED = 5, /* the Perch service is not installed */
    PERCH_EXIT_SERVICE_NOT_RUNNING = 6,   /* installed (or not) but nothing serves the pipe */
    PERCH_EXIT_ACCESS_DENIED = 7,         /* the pipe or the request refused this user */
    PERCH_EXIT_NO_ANSWER = 8,             /* busy, timed out, or not a Perch server */
};

/* Seconds a request may take before the client gives up. */
#define PERCH_CLI_TIMEOUT_MS 15000u

/* Connects and says HELLO. On failure prints why (one or two sentences, naming cmd) and
 * returns the exit status; 0 and *out on success. */
int perch_cli_connect(const char *cmd, perch_proto_client **out);

/* Connects, sends one request of `type` and decodes its reply into *rep (memory in *mem,
 * perch_free; the connection in *c, to close). Returns 0, or the exit status after printing
 * why (nothing to free then). */
int perch_cli_request(const char *cmd, unsigned type, const void *req, void *rep, size_t rep_size,
                      void **mem, perch_proto_client **c);

/* Parses the arguments of a command whose only option is --json. Returns -1 to go on, else
 * the exit status (after --help or a usage error). */
int perch_cli_json_only(const char *cmd, int argc, char **argv, void (*usage)(FILE *), bool *json);

/* Prints "perch <cmd>: <why>" for a failed request and returns its exit status. */
int perch_cli_request_failed(const char *cmd, int err, const char *why);

/* Parses a duration: "250ms", "10s", "2m", "1h", or a plain number of seconds ("1.5").
 * Returns 0 and *ms, or -1. */
int perch_cli_parse_duration(const char *s, uint64_t *ms);

/* The same with "ns" and "us" too, in nanoseconds (at most 1e18). */
int perch_cli_parse_duration_ns(const char *s, uint64_t *ns);

/* Parses a non-negative integer no larger than max. 0 or -1. */
int perch_cli_parse_uint(const char *s, uint64_t max, uint64_t *v);

/* An option's value that is missing (value NULL) or not what it takes: prints "perch <cmd>:
 * <opt> takes <what>" (and ", not '<value>'") and returns 2, the usage exit status. */
int perch_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *what);

/* A required argument left out: prints "perch <cmd>: <what> is required", then the usage,
 * and returns 2. */
int perch_cli_missing(const char *cmd, const char *what, void (*usage)(FILE *));

/* The entities of a reply's capture, by key. */
typedef struct perch_cli_names perch_cli_names;

/* Replays the capture into a new table. NULL (after printing why) when it cannot be read. */
perch_cli_names *perch_cli_names_load(const char *cmd, const uint8_t *capture, size_t len);
void perch_cli_names_free(perch_cli_names *n);
const perch_process_rec *perch_cli_process(const perch_cli_names *n, uint64_t key);
const perch_thread_rec *perch_cli_thread(const perch_cli_names *n, uint64_t key);
const perch_stack_rec *perch_cli_stack(const perch_cli_names *n, uint32_t id);
/* "module+0x1a2b" for an address (the base name of the module holding it, among those of
 * process_key and the kernel's), or "0x..." when none does. */
void perch_cli_frame(const perch_cli_names *n, uint64_t process_key, uint64_t addr, char *buf,
                     size_t len);
uint64_t perch_cli_perf_freq(const perch_cli_names *n);

/* Prints a TOP reply (rows of `what`) as a table, or as one JSON object into w. The reply's
 * entities name the rows. Returns 0 or an exit status after printing why. */
int perch_cli_print_top(const char *cmd, const perch_proto_top_rep *top, uint8_t what,
                        uint8_t order, FILE *out);
int perch_cli_json_top(const char *cmd, const perch_proto_top_rep *top, uint8_t what, uint8_t order,
                       perch_json *w);

/* Milliseconds of ticks at freq. */
double perch_cli_ms(uint64_t ticks, uint64_t freq);

/* A perch_json writer on stdout. */
void perch_cli_json(perch_json *w);
/* "key": value members, and the end of a top-level object (newline, flush). */
void perch_cli_json_u(perch_json *w, const char *key, uint64_t v);
void perch_cli_json_s(perch_json *w, const char *key, const char *v);
void perch_cli_json_done(perch_json *w);

/* FETCH or SNAPSHOT req into the file at path (created or replaced; removed again when the
 * stream fails), with a progress line on stderr when it is a terminal. Prints what was
 * written (text, or a JSON object with --json) and returns the exit status. */
int perch_cli_stream_to_file(const char *cmd, perch_proto_client *c, unsigned type, const void *req,
                             const char *path, bool json);

/* What perch_cli_stream_quiet wrote: the server's name of the stream and its bytes. */
typedef struct perch_cli_streamed {
    char name[260];
    uint64_t bytes;
} perch_cli_streamed;

/* The same without printing what was written (errors are still said on stderr): fills got and
 * returns the exit status. */
int perch_cli_stream_quiet(const char *cmd, perch_proto_client *c, unsigned type, const void *req,
                           const char *path, perch_cli_streamed *got);

/* True when the user pressed Ctrl+C (or the process got SIGTERM) since perch_cli_catch. */
void perch_cli_catch_interrupt(void);
bool perch_cli_interrupted(void);

#endif
