/*
 * The daemon's status (src/win/daemon.h): perch_daemon_status_get gathers it under the lock,
 * perch_daemon_status_text prints it as the lines `perchd status` shows, and the supervisor
 * writes those lines to status.txt in the data directory (through a temporary file and a
 * replacing rename, so a reader never sees half a status).
 */
#include <windows.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon_internal.h"
#include "log.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

void perch_daemon_status_get(perch_daemon *d, perch_daemon_status *st)
{
    memset(st, 0, sizeof *st);
    AcquireSRWLockShared(&d->lock);
    st->state = d->state;
    st->degraded = d->degraded;
    st->console = d->o.console;
    st->pid = (uint32_t)GetCurrentProcessId();
    st->start_filetime = d->start_filetime;
    st->uptime_ms = d->start_ms ? GetTickCount64() - d->start_ms : 0;
    snprintf(st->summary, sizeof st->summary, "%s", d->summary);
    st->feature_count = d->feature_count;
    memcpy(st->features, d->features, sizeof st->features);
    perch__daemon_session_status(d, st);
    perch__daemon_record_status(d, st);
    if (d->pipe_problem[0] != '\0') { /* first, beside whatever the summary says now */
        char rest[sizeof st->summary];
        snprintf(rest, sizeof rest, "%s", st->summary);
        snprintf(st->summary, sizeof st->summary, "%s%s%s", d->pipe_problem, rest[0] ? " " : "",
                 rest);
        st->degraded = true;
    }
    ReleaseSRWLockShared(&d->lock);
    snprintf(st->data_dir, sizeof st->data_dir, "%s", d->data_dir);
    snprintf(st->capture_dir, sizeof st->capture_dir, "%s", d->capture_dir);
    perch_log_file_path(st->log_file, sizeof st->log_file);
    snprintf(st->ran_where, sizeof st->ran_where, "%s", PERCH_DAEMON_RAN_WHERE);
}

struct text {
    char *buf;
    size_t len, used;
    bool truncated;
};

#if defined(__GNUC__)
__attribute__((format(gnu_printf, 2, 3)))
#endif
static void
put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    if (t->used >= t->len) {
        t->truncated = true;
        return;
    }
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->len - t->used) {
        t->truncated = true;
        t->used = t->len;
        return;
    }
    t->used += (size_t)n;
}

static void put_uptime(struct text *t, uint64_t ms)
{
    uint64_t s = ms / 1000;
    put(t, "%lluh%02llum%02llus", (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60),
        (unsigned long long)(s % 60));
}

static void put_engine(struct text *t, const perch_daemon_status *st)
{
    const perch_live_stats *l = &st->live;
    put(t, "events: %llu received, %.1f/s over the last seconds\n", (unsigned long long)l->events,
        l->events_per_second);
    put(t,
        "losses: %llu dropped (queue full), %llu too large for the queue, %llu lost by the "
        "session, %llu buffers lost, %llu real-time buffers lost\n",
        (unsigned long long)l->queue_dropped, (unsigned long long)l->queue_oversized,
        (unsigned long long)st->session_events_lost, (unsigned long long)st->session_buffers_lost,
        (unsigned long long)st->session_rt_buffers_lost);
    put(t, "gaps: %llu (%llu ms without events after an external stop)\n",
        (unsigned long long)l->gaps, (unsigned long long)l->gap_ms);
}

static void put_features(struct text *t, const perch_daemon_status *st)
{
    for (uint32_t i = 0; i < st->feature_count && i < PERCH_DAEMON_MAX_FEATURES; i++) {
        const perch_daemon_feature *f = &st->features[i];
        put(t, "feature %s: %s%s%s%s\n", f->name,
            f->enabled     ? "on"
            : f->requested ? "refused"
                           : "off",
            f->detail[0] ? " (" : "", f->detail, f->detail[0] ? ")" : "");
    }
}

static void put_outputs(struct text *t, const perch_daemon_status *st)
{
    if (st->recording)
        put(t,
            "recording: on for %.0f s, %u file(s), %.1f MiB, %llu deleted for the disk cap, now "
            "%s\n",
            (double)st->recording_elapsed_ms / 1000.0, st->recording_files,
            (double)st->recording_bytes / 1048576.0, (unsigned long long)st->recording_deleted,
            st->recording_file[0] ? st->recording_file : "(a file at the first event)");
    else
        put(t, "recording: off\n");
    if (st->recorder_on)
        put(t, "flight recorder: %.1f s held, %.1f MiB, %llu chunk(s) dropped for the cap\n",
            st->recorder_seconds, (double)st->recorder_bytes / 1048576.0,
            (unsigned long long)st->recorder_dropped);
    else
        put(t, "flight recorder: off\n");
}

int perch_daemon_status_text(const perch_daemon_status *st, char *buf, size_t len)
{
    struct text t = {buf, len, 0, false};
    if (len == 0)
        return PERCH_ERANGE;
    buf[0] = '\0';
    put(&t, "state: %s%s\n", perch_daemon_state_name(st->state), st->degraded ? " (degraded)" : "");
    put(&t, "summary: %s\n", st->summary);
    put(&t, "mode: %s, pid %u, up ", st->console ? "console (perchd run)" : "service", st->pid);
    put_uptime(&t, st->uptime_ms);
    put(&t, "\n");
    if (st->session[0])
        put(&t, "session: %s (%s), restarted %u time(s)\n", st->session, st->session_kind,
            st->session_restarts);
    else
        put(&t, "session: none\n");
    put_engine(&t, st);
    put_features(&t, st);
    put_outputs(&t, st);
    put(&t, "data directory: %s\n", st->data_dir[0] ? st->data_dir : "(none)");
    put(&t, "capture directory: %s\n", st->capture_dir[0] ? st->capture_dir : "(none)");
    put(&t, "log file: %s\n", st->log_file[0] ? st->log_file : "(none)");
    put(&t, "note: %s\n", st->ran_where);
    return t.truncated ? PERCH_ERANGE : 0;
}

/* Writes text to dir\status.txt through dir\status.tmp. */
static void replace_file(const char *dir, const char *text)
{
    char tmp[PERCH_CONFIG_PATH_MAX + 16], dst[PERCH_CONFIG_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s\\status.tmp", dir);
    snprintf(dst, sizeof dst, "%s\\status.txt", dir);
    wchar_t *wtmp = perch__utf8_to_wide(tmp), *wdst = perch__utf8_to_wide(dst);
    HANDLE h =
        wtmp ? CreateFileW(wtmp, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL)
             : INVALID_HANDLE_VALUE;
    if (h != INVALID_HANDLE_VALUE) {
        DWORD n = 0;
        BOOL ok = WriteFile(h, text, (DWORD)strlen(text), &n, NULL);
        CloseHandle(h);
        if (ok && wdst != NULL)
            MoveFileExW(wtmp, wdst, MOVEFILE_REPLACE_EXISTING);
    }
    perch__free(wtmp);
    perch__free(wdst);
}

void perch__daemon_write_status(perch_daemon *d)
{
    perch_daemon_status *st;
    char *text;
    if (d->data_dir[0] == '\0')
        return;
    st = perch__alloc(sizeof *st);
    text = perch__alloc(16384);
    if (st != NULL && text != NULL) {
        perch_daemon_status_get(d, st);
        perch_daemon_status_text(st, text, 16384);
        replace_file(d->data_dir, text);
    }
    perch__free(st);
    perch__free(text);
}

int perch_daemon_read_status_file(const char *data_dir, char *buf, size_t len, uint64_t *age_ms)
{
    char path[PERCH_CONFIG_PATH_MAX + 16];
    WIN32_FILE_ATTRIBUTE_DATA fa;
    FILETIME now;
    DWORD n = 0;
    if (len == 0)
        return PERCH_ERANGE;
    snprintf(path, sizeof path, "%s\\status.txt", data_dir);
    wchar_t *w = perch__utf8_to_wide(path);
    if (w == NULL)
        return PERCH_EINVAL;
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    int err = h == INVALID_HANDLE_VALUE ? perch_win_last_error() : 0;
    if (err == 0) {
        if (!ReadFile(h, buf, (DWORD)(len - 1), &n, NULL))
            err = perch_win_last_error();
        CloseHandle(h);
    }
    buf[err == 0 ? n : 0] = '\0';
    if (err == 0 && GetFileAttributesExW(w, GetFileExInfoStandard, &fa)) {
        GetSystemTimeAsFileTime(&now);
        ULARGE_INTEGER a = {{now.dwLowDateTime, now.dwHighDateTime}};
        ULARGE_INTEGER b = {{fa.ftLastWriteTime.dwLowDateTime, fa.ftLastWriteTime.dwHighDateTime}};
        *age_ms = a.QuadPart > b.QuadPart ? (a.QuadPart - b.QuadPart) / 10000u : 0;
    }
    perch__free(w);
    return err;
}
