/*
 * The process-wide log of perchd (src/win/log.h): formats one line per sentence with a UTC
 * timestamp and level, and hands it to the rotating log file, the event log and the console
 * echo under one lock, so lines from different threads never interleave. The echo only queues
 * the line (src/win/log_echo.c), since a console can stop taking output for as long as someone
 * selects text in it; the log file's path, which every status asks for, has a lock of its own.
 */
#include <windows.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eventlog.h"
#include "log.h"
#include "log_echo.h"
#include "logfile.h"

/* How long closing the log waits for the console to show the last lines. */
#define PERCH_LOG_ECHO_CLOSE_MS 2000

static SRWLOCK lock = SRWLOCK_INIT;
static perch_logfile *file = NULL;
static bool event_log = false;
static bool echo = false;
static SRWLOCK path_lock = SRWLOCK_INIT; /* guards file_path only, never held while writing */
static char file_path[1100];

static void set_path(const char *dir)
{
    AcquireSRWLockExclusive(&path_lock);
    if (dir != NULL)
        snprintf(file_path, sizeof file_path, "%s\\perchd.log", dir);
    else
        file_path[0] = '\0';
    ReleaseSRWLockExclusive(&path_lock);
}

int perch_log_open(const perch_log_options *o)
{
    int err = 0;
    AcquireSRWLockExclusive(&lock);
    echo = o->echo != NULL;
    if (echo)
        perch__log_echo_start(o->echo);
    event_log = o->event_log && perch__eventlog_open() == 0;
    set_path(NULL);
    if (o->dir != NULL && file == NULL) {
        err = perch__logfile_open(o->dir, "perchd", o->file_bytes, o->files, &file);
        if (err == 0)
            set_path(o->dir);
    }
    ReleaseSRWLockExclusive(&lock);
    return err;
}

void perch_log_file_path(char *out, size_t size)
{
    AcquireSRWLockShared(&path_lock);
    snprintf(out, size, "%s", file_path);
    ReleaseSRWLockShared(&path_lock);
}

void perch_log(perch_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"info", "warning", "error"};
    char msg[1024], line[1100];
    SYSTEMTIME t;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    GetSystemTime(&t);
    int n = snprintf(line, sizeof line, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ %-7s %s\r\n", t.wYear,
                     t.wMonth, t.wDay, t.wHour, t.wMinute, t.wSecond, t.wMilliseconds,
                     names[(unsigned)level < 3 ? level : 2], msg);
    if (n < 0)
        return;
    AcquireSRWLockExclusive(&lock);
    if (file != NULL)
        perch__logfile_write(file, line, strlen(line));
    if (event_log)
        perch__eventlog_report(level, msg);
    if (echo) {
        bool info = level == PERCH_LOG_INFO;
        n = snprintf(line, sizeof line, "perchd: %s%s%s\r\n", info ? "" : names[level],
                     info ? "" : ": ", msg);
        if (n > 0)
            perch__log_echo_put(line, strlen(line));
    }
    ReleaseSRWLockExclusive(&lock);
}

void perch_log_close(void)
{
    bool echoed;
    AcquireSRWLockExclusive(&lock);
    perch__logfile_close(file);
    file = NULL;
    set_path(NULL);
    if (event_log)
        perch__eventlog_close();
    event_log = false;
    echoed = echo;
    echo = false;
    ReleaseSRWLockExclusive(&lock);
    if (echoed)
        perch__log_echo_stop(PERCH_LOG_ECHO_CLOSE_MS);
}
