/*
 * perchd's log: every start, stop, degraded feature and error goes, as one English sentence,
 * to the rotating log file in the data directory (src/win/logfile.c), to the Windows event
 * log (src/win/eventlog.c) and, in console mode, to the console. One log per process, safe to
 * call from any thread; before perch_log_open (or after a failed open) lines still reach the
 * console and the event log that could be opened.
 */
#ifndef PERCH_WIN_LOG_H
#define PERCH_WIN_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum perch_log_level {
    PERCH_LOG_INFO = 0,
    PERCH_LOG_WARNING = 1,
    PERCH_LOG_ERROR = 2,
} perch_log_level;

typedef struct perch_log_options {
    const char *dir;     /* the data directory (expanded, UTF-8); NULL: no log file */
    uint64_t file_bytes; /* the file rotates before it would exceed this (>= 1024) */
    uint32_t files;      /* files kept, the current one included (>= 1) */
    bool event_log;      /* also report to the Application event log */
    FILE *echo;          /* also show each line here (console mode), through a queue that
                          * never waits (src/win/log_echo.h); may be NULL */
} perch_log_options;

/* Opens the log. Returns 0, or the error of the log file (then the event log and the echo
 * still work: the caller reports the file's failure through perch_log). */
int perch_log_open(const perch_log_options *o);

/* Logs one sentence (printf format; a trailing period is the caller's). */
void perch_log(perch_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(gnu_printf, 2, 3)))
#endif
    ;

/* Copies where the current log file is (UTF-8; "" when there is none) into out, cut to size
 * bytes. A copy taken under the log's lock: a close or reopen may run on another thread. */
void perch_log_file_path(char *out, size_t size);

/* Closes the file and the event source. */
void perch_log_close(void);

#ifdef __cplusplus
}
#endif

#endif
