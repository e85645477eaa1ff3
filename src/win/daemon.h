/*
 * The Perch daemon: everything perchd does between start and stop, whether it runs under the
 * SCM (src/win/service.c) or in a console (`perchd run`, src/win/console.c). It owns the
 * kernel session (src/win/etw.h) and its consumer, the event queue, the live engine
 * (include/perch/live.h) and its sinks: rotating capture files for recordings, the flight
 * recorder, and the live query state the pipe serves.
 *
 * This header is also the pipe's door into the daemon (PLAN.md seam 9): the pipe's request
 * handlers call perch_daemon_status, the recording and snapshot calls and the capture calls,
 * from their own threads. Every function below is thread-safe unless it says otherwise;
 * strings are UTF-8. It uses no Windows types.
 */
#ifndef PERCH_WIN_DAEMON_H
#define PERCH_WIN_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/config.h"
#include "perch/io.h"
#include "perch/live.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_daemon perch_daemon;

/* The sentence every status carries, and docs/service.md repeats. */
#define PERCH_DAEMON_RAN_WHERE                                                                     \
    "The live kernel path has run against recorded traces under Wine only, never on a "            \
    "Windows machine."

#define PERCH_DAEMON_TEXT         320
#define PERCH_DAEMON_MAX_FEATURES 16

typedef enum perch_daemon_state {
    PERCH_DAEMON_CREATED = 0,
    PERCH_DAEMON_STARTING = 1,
    PERCH_DAEMON_RUNNING = 2,
    PERCH_DAEMON_STOPPING = 3,
    PERCH_DAEMON_STOPPED = 4,
} perch_daemon_state;

/* "starting", "running", ...; "unknown" out of range. */
const char *perch_daemon_state_name(uint32_t state);

/* One session feature (event group, stacks, sample interval, PMC, LBR, ...). */
typedef struct perch_daemon_feature {
    char name[32];    /* "groups", "stacks", "sample_interval", "pmc_sources", "lbr", ... */
    bool requested;   /* the configuration asks for it */
    bool enabled;     /* the OS accepted it */
    char detail[160]; /* "1000 us", or why it is off ("the OS refused it: access denied") */
} perch_daemon_feature;

typedef struct perch_daemon_status {
    uint32_t state; /* perch_daemon_state */
    bool degraded;  /* running without some or all kernel data */
    bool console;   /* `perchd run`, not the service */
    uint32_t pid;
    uint64_t start_filetime; /* UTC FILETIME of the daemon's start */
    uint64_t uptime_ms;
    char summary[PERCH_DAEMON_TEXT]; /* one sentence: what it does, or why data is missing */
    char session[64];                /* the kernel session's name, "" when none */
    char session_kind[32];           /* "private system logger", "NT Kernel Logger", "" */
    uint32_t session_restarts;       /* after an external stop */
    uint64_t session_events_lost;    /* as the session reports them */
    uint64_t session_buffers_lost;
    uint64_t session_rt_buffers_lost;
    perch_live_stats live; /* the engine: events, rate, drops, gaps */
    uint32_t feature_count;
    perch_daemon_feature features[PERCH_DAEMON_MAX_FEATURES];
    /* The recording: the figures of the one running, else of the last one (0 and "" when
     * none ran). */
    bool recording;                             /* rotating capture files are being written */
    uint32_t recording_id;                      /* grows by one per recording started */
    char recording_name[256];                   /* its first file's name ("" until it exists) */
    char recording_file[PERCH_CONFIG_PATH_MAX]; /* the current one (full path) */
    uint64_t recording_bytes;                   /* written by this recording, every file */
    uint32_t recording_files;                   /* files it created */
    uint64_t recording_deleted;                 /* of its files, deleted for DiskCapMb */
    uint64_t recording_start_filetime;          /* UTC FILETIME of its start */
    uint64_t recording_elapsed_ms;              /* since its start; its length once it ended */
    bool recorder_on;                           /* the flight recorder keeps history */
    double recorder_seconds;                    /* history it holds now */
    uint64_t recorder_bytes;
    uint64_t recorder_cap_bytes;             /* FlightRecorderMb */
    uint64_t recorder_dropped;               /* chunks dropped for the memory cap */
    char data_dir[PERCH_CONFIG_PATH_MAX];    /* expanded */
    char capture_dir[PERCH_CONFIG_PATH_MAX]; /* expanded */
    char log_file[PERCH_CONFIG_PATH_MAX];
    char ran_where[160]; /* PERCH_DAEMON_RAN_WHERE */
} perch_daemon_status;

typedef struct perch_daemon_options {
    size_t sz;           /* sizeof(perch_daemon_options) */
    perch_config config; /* the configuration to run with (copied) */
    bool console;        /* console mode: log lines are echoed to stderr */
    bool no_privileges;  /* behave as if not elevated (tests of the degraded start) */
    /* The named pipe the daemon serves (pipe_daemon.h): NULL for \\.\pipe\perch, "" for
     * none. */
    const char *pipe_name;
    /* Sentences about the configuration (values refused at load), logged at start. */
    const char *const *issues;
    size_t issue_count;
    /* Called during start and stop with a new wait hint while a step may take long (the SCM
     * wants checkpoints then); may be NULL. Runs on the caller's thread. */
    void (*progress)(void *ctx, uint32_t wait_hint_ms);
    void *progress_ctx;
} perch_daemon_options;

/* Creates a daemon (nothing runs yet). PERCH_EINVAL, PERCH_ENOMEM. */
int perch_daemon_create(const perch_daemon_options *o, perch_daemon **out);

/* Starts: data directories, the log, privileges, the session and the engine. Degraded states
 * (not elevated, no session, features refused) are not errors: they are logged and the status
 * says them. Returns 0, PERCH_EBUSY when another perchd already runs on this machine (the
 * service or a console), or an error that leaves nothing running. */
int perch_daemon_start(perch_daemon *d);

/* Stops everything it started: the session first (always, so no kernel session outlives the
 * daemon), then the consumer, the engine's drain, the sinks. The drain is bounded
 * (StopDrainSeconds, then the events still queued are dropped; docs/service.md, "Stopping").
 * Idempotent. Returns 0 or the first error met while draining (everything is stopped anyway);
 * PERCH_ETIMEDOUT when the model thread did not end even then: it is left running, and what
 * it may still use (the daemon included) is never freed, so the process should exit. */
int perch_daemon_stop(perch_daemon *d);

/* Frees the daemon, stopping it first if needed (but for a daemon whose stop left its model
 * thread running: perch_daemon_stop). Accepts NULL. */
void perch_daemon_destroy(perch_daemon *d);

/* True once the daemon failed for good (the engine or a required sink), so the runner should
 * stop with an error and let the SCM's failure actions restart it. */
bool perch_daemon_failed(const perch_daemon *d, int *error);

/* Fills *st. */
void perch_daemon_status_get(perch_daemon *d, perch_daemon_status *st);

/* Writes *st as readable lines (what `perchd status` prints) into buf. Returns 0 or
 * PERCH_ERANGE (truncated, still NUL-terminated). */
int perch_daemon_status_text(const perch_daemon_status *st, char *buf, size_t len);

/* Reads the status file the daemon writing in data_dir keeps (status.txt) into buf, and how
 * long ago it was written into *age_ms. PERCH_ENOENT when there is none. */
int perch_daemon_read_status_file(const char *data_dir, char *buf, size_t len, uint64_t *age_ms);

/* Starts a recording: rotating capture files in the capture directory. The name of its first
 * file goes into file (may be NULL). PERCH_ESTATE when one is already running or the daemon
 * is not running. */
int perch_daemon_record_start(perch_daemon *d, char *file, size_t len);

typedef struct perch_daemon_option {
    const char *key, *value;
} perch_daemon_option;

typedef struct perch_daemon_record_opts {
    /* NULL or "": perch-YYYYMMDD-HHMMSS-NNNNNN.perch; else NAME (".perch" added when absent):
     * the first file is NAME.perch, later ones NAME-YYYYMMDD-HHMMSS-NNNNNN.perch, from 2. */
    const char *name;
    size_t option_count;
    const perch_daemon_option *options; /* KEY=VALUE for this recording (docs/service.md) */
} perch_daemon_record_opts;

/* perch_daemon_record_start with a name and configuration keys for this recording: the
 * rotation caps (RotateSizeMb, RotateAgeMinutes, DiskCapMb) apply to it. On a refusal why
 * receives one sentence: PERCH_EINVAL (not a capture name, or a value not of its key's type),
 * PERCH_ERANGE (a value out of range: the sentence names key, value and range), PERCH_ENOENT
 * (no such key), PERCH_ENOTSUP (a key of the kernel session or of perchd itself, which one
 * recording cannot change), PERCH_EEXIST (a capture of that name is there already),
 * PERCH_ESTATE (a recording runs, or the daemon does not). */
int perch_daemon_record_start_with(perch_daemon *d, const perch_daemon_record_opts *o, char *file,
                                   size_t len, char *why, size_t why_len);

/* Stops the recording (its last file is finished and complete). PERCH_ESTATE when none. */
int perch_daemon_record_stop(perch_daemon *d);

/* Writes the flight recorder's last last_seconds (0: all it holds) as a self-contained
 * capture in the capture directory, without pausing the session; the full path goes into
 * path (snapshot-YYYYMMDD-HHMMSS.perch). PERCH_ESTATE when the recorder is off
 * (FlightRecorderSeconds 0) or holds no event yet, PERCH_ENOENT without a capture
 * directory, PERCH_ELIMIT when the snapshots already there reach SnapshotCapMb (why, when
 * why_len > 0, gets a sentence for the client and the log; "" for every other error), or the
 * write's error (no file is left then). */
int perch_daemon_snapshot(perch_daemon *d, uint32_t last_seconds, char *path, size_t len, char *why,
                          size_t why_len);

typedef struct perch_daemon_capture {
    char name[256]; /* file name in the capture directory */
    uint64_t bytes;
    uint64_t created_filetime;  /* UTC: when the recording's file or the snapshot began */
    uint64_t modified_filetime; /* UTC: last written */
    bool active;                /* still being written */
} perch_daemon_capture;

/* Lists the capture files (*.perch) in the capture directory, newest first, into *out
 * (release with perch_free): the newest 65,536 when there are more. */
int perch_daemon_list_captures(perch_daemon *d, perch_daemon_capture **out, size_t *count);

/* Opens the capture called name (a plain file name from the list: no directory part) for
 * reading, also while it is being written. PERCH_EINVAL for a name with a path in it,
 * PERCH_ENOENT when there is no such capture. */
int perch_daemon_open_capture(perch_daemon *d, const char *name, perch_input *in);

#ifdef __cplusplus
}
#endif

#endif
