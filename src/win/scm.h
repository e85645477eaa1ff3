/*
 * Installing, removing and querying the Perch service through the service control manager:
 * what `perchd install`, `perchd uninstall` and `perchd status` do. Each step is said in one
 * sentence through a callback, including why a step could not be done (not elevated, already
 * installed, marked for deletion).
 */
#ifndef PERCH_WIN_SCM_H
#define PERCH_WIN_SCM_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one sentence; error is true when it says why something was not done. */
typedef void (*perch_say_fn)(void *ctx, bool error, const char *sentence);

typedef struct perch_scm_info {
    bool installed;
    uint32_t state; /* SERVICE_STOPPED (1) .. SERVICE_PAUSED (7) */
    uint32_t pid;   /* 0 when not running */
    bool auto_start;
    uint32_t exit_code;                 /* dwWin32ExitCode of the last stop */
    uint32_t specific_exit;             /* dwServiceSpecificExitCode: a Perch error, negated */
    char binary[PERCH_CONFIG_PATH_MAX]; /* the command line the SCM runs */
} perch_scm_info;

/* Registers the service for this perchd.exe: own process, LocalSystem, demand (or auto)
 * start, a description, failure actions restarting it twice then leaving it stopped, a
 * preshutdown timeout, and the event log source. Returns 0, PERCH_EACCES (not elevated),
 * PERCH_EEXIST (already installed), PERCH_ESTATE (a previous one is marked for deletion) or
 * the translated error. A later step that fails is said but does not undo the install. */
int perch_scm_install(bool auto_start, perch_say_fn say, void *ctx);

/* Stops the service when it runs (waiting up to stop_wait_ms for it), deletes it with its
 * configuration, and removes the event log source. Returns 0, PERCH_ENOENT (not installed),
 * PERCH_EACCES, PERCH_ESTATE (already marked for deletion) or the translated error. */
int perch_scm_uninstall(uint32_t stop_wait_ms, perch_say_fn say, void *ctx);

/* What the SCM knows about the service (installed false when it is not). 0 or the error. */
int perch_scm_query(perch_scm_info *info);

/* "stopped", "start pending", "running", ... */
const char *perch_scm_state_name(uint32_t state);

/* The full path of this program (UTF-8). 0 or the translated error. */
int perch_self_path(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
