/*
 * Recordings, snapshots and the capture directory (src/win/daemon.h). A recording is a capture
 * file in the capture directory, perch-YYYYMMDD-HHMMSS.perch (UTC), written by the capture
 * writer as a sink of the live engine; one started while the engine runs is attached there
 * and brought up to date first, so the file names every entity and stack its records use.
 * A snapshot is snapshot-YYYYMMDD-HHMMSS.perch there, written from the flight recorder
 * (include/perch/recorder.h), a sink of the engine. (The rotating writer of
 * include/perch/capture_rotate.h replaces the single recording file when it lands.) A recording
 * that fails to start after its first file was created (a full disk) deletes that file, and
 * only it, and says what failed: left there, it made a retry with the same name a clash.
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rotate_names.h"
#include "capture/snapshot_files.h"
#include "daemon_internal.h"
#include "log.h"
#include "perch/capture_rotate.h"
#include "perch/error.h"
#include "perch/fs.h"
#include "perch/platform.h"
#include "perch/recorder.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

/* Captures listed at most: the newest, as many as one CAPTURES reply's array holds. */
#define MAX_CAPTURES 65536u

static uint64_t writer_clock(void *ctx)
{
    (void)ctx;
    return perch_monotonic_ns();
}

/* A new file name in the capture directory, kind-YYYYMMDD-HHMMSS.perch (UTC time; a counter
 * when the second repeats). */
static void new_path(perch_daemon *d, const char *kind, char *out, size_t len)
{
    SYSTEMTIME t;
    GetSystemTime(&t);
    for (unsigned n = 0; n < 1000; n++) {
        char suffix[8] = "";
        if (n > 0)
            snprintf(suffix, sizeof suffix, "-%u", n);
        snprintf(out, len, "%s\\%s-%04u%02u%02u-%02u%02u%02u%s.perch", d->capture_dir, kind,
                 t.wYear, t.wMonth, t.wDay, t.wHour, t.wMinute, t.wSecond, suffix);
        wchar_t *w = perch__utf8_to_wide(out);
        DWORD attr = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
        perch__free(w);
        if (attr == INVALID_FILE_ATTRIBUTES)
            return;
    }
}

static const char *base_of(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            b = p + 1;
    return b;
}

/* perch_fs_join's separator '/' as the '\' Windows shows. */
static void windows_separators(char *path)
{
    for (char *c = path; *c; c++)
        if (*c == '/')
            *c = '\\';
}

/* Model thread: a file of the recording whose header the disk refused, deleted or not (the
 * rotation's error then switches the recording off; the files before it are complete). */
static void log_headless(void *ctx, const char *path, uint64_t files_before, int err,
                         int remove_err)
{
    char shown[PERCH_CONFIG_PATH_MAX];
    const char *which = files_before ? "its next file" : "its first file";
    const char *before = files_before ? "; the files before it are complete" : "";
    (void)ctx;
    snprintf(shown, sizeof shown, "%s", path);
    windows_separators(shown);
    if (remove_err == 0)
        perch_log(PERCH_LOG_ERROR,
                  "The recording could not write the header of %s (%s), so perchd deleted that "
                  "empty file%s: %s",
                  which, perch_strerror(err), before, shown);
    else
        perch_log(PERCH_LOG_ERROR,
                  "The recording could not write the header of %s (%s), and perchd could not "
                  "delete that empty file (%s)%s: delete it by hand: %s",
                  which, perch_strerror(err), perch_strerror(remove_err), before, shown);
}

/* The rotation's options from the configuration: RotateSizeMb, RotateAgeMinutes, DiskCapMb;
 * chunks flushed by time too, so every file is readable while written. */
static void rotate_opts_of(perch_daemon *d, const perch_config *c, const char *stem, char *first,
                           size_t len, perch_capture_rotate_opts *o)
{
    perch_capture_rotate_opts_default(o);
    o->dir = d->capture_dir;
    o->prefix = stem[0] ? stem : "perch";
    if (stem[0]) {
        snprintf(first, len, "%s.perch", stem);
        o->first_name = first;
    }
    o->max_file_bytes = (uint64_t)c->rotate_size_mb << 20;
    o->max_file_age_ms = (uint64_t)c->rotate_age_minutes * 60000u;
    o->max_total_bytes = (uint64_t)c->disk_cap_mb << 20;
    o->writer.now_ns = writer_clock;
    o->wall_ms = perch_fs_wall_ms;
    o->open = perch__daemon_create_capture_file;
    o->headless = log_headless;
}

/* Model thread (or no model thread running): the rotation's figures into what status shows. */
static void publish(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_capture_rotate_stats rs;
    perch_capture_rotate_get_stats(v->rotate, &rs);
    windows_separators(rs.current_path);
    AcquireSRWLockExclusive(&d->lock);
    if (rs.current_path[0] != '\0') {
        snprintf(v->rec_path, sizeof v->rec_path, "%s", rs.current_path);
        if (v->rec_name[0] == '\0')
            snprintf(v->rec_name, sizeof v->rec_name, "%s", base_of(rs.current_path));
    }
    v->rec_bytes = rs.bytes_written + rs.current_bytes;
    v->rec_files = (uint32_t)rs.files_created;
    v->rec_deleted = rs.files_deleted;
    bool refused = rs.deletes_failed > v->rec_delete_failed;
    v->rec_delete_failed = rs.deletes_failed;
    ReleaseSRWLockExclusive(&d->lock);
    if (refused) /* a file open in another program without delete sharing: kept */
        perch_log(PERCH_LOG_WARNING,
                  "The disk cap could not delete an old capture file (open in another "
                  "program?); it is kept and tried again at the next file, and newer ones "
                  "are deleted in its place (%llu refused so far).",
                  (unsigned long long)rs.deletes_failed);
}

/* Model thread, between records: a recording that went quiet still rotates by age (an error
 * is sticky in the rotation and returned by its next record, as for a write). */
static void publish_idle(void *ctx)
{
    perch_daemon *d = ctx;
    (void)perch_capture_rotate_tick(d->live.rotate);
    publish(d);
}

static int publish_call(void *ctx)
{
    publish(ctx);
    return 0;
}

/* Creates the rotation and its sink into d->live, not attached; each file gets the names of
 * what its own records hit at its end (perch_symworker_names, on the model thread). */
static int open_recording(perch_daemon *d, const perch_config *c, const char *stem)
{
    struct perch_daemon_live *v = &d->live;
    perch_capture_rotate_opts ro;
    char first[64];
    if (d->capture_dir[0] == '\0')
        return PERCH_ENOENT;
    rotate_opts_of(d, c, stem, first, sizeof first, &ro);
    perch__daemon_symbols_names(d, true, &ro.names);
    int err = perch_capture_rotate_create(&ro, &v->rotate);
    if (err < 0)
        return err;
    perch_capture_rotate_sink(v->rotate, &v->rec_sink);
    return 0;
}

static void close_recording(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_capture_rotate_destroy(v->rotate);
    v->rotate = NULL;
    memset(&v->rec_sink, 0, sizeof v->rec_sink);
}

/* A recording whose attach failed (its first file could not be written, say: a full disk):
 * the rotation goes with the one file it created, so a retry with the same name is not a
 * clash; why gets what failed. Only that file: never one that was there before. */
static void discard_recording(perch_daemon *d, int err, char *why, size_t why_len)
{
    struct perch_daemon_live *v = &d->live;
    char path[PERCH_CONFIG_PATH_MAX];
    int gone = perch_capture_rotate_discard(v->rotate, path, sizeof path);
    v->rotate = NULL;
    memset(&v->rec_sink, 0, sizeof v->rec_sink);
    windows_separators(path);
    if (path[0] == '\0')
        snprintf(why, why_len, "bringing it up to date with the live model failed (%s)",
                 perch_strerror(err));
    else if (gone == 0) /* the path last: a long one cuts only itself, not what to do */
        snprintf(why, why_len,
                 "writing its first file failed (%s); perchd deleted that file, so the same "
                 "name can be used again: %s",
                 perch_strerror(err), path);
    else
        snprintf(why, why_len,
                 "writing its first file failed (%s), and perchd could not delete it (%s): "
                 "delete it before using that name again: %s",
                 perch_strerror(err), perch_strerror(gone), path);
}

static void set_recording(perch_daemon *d, bool on)
{
    struct perch_daemon_live *v = &d->live;
    AcquireSRWLockExclusive(&d->lock);
    v->recording = on;
    if (on) {
        v->rec_id++;
        v->rec_name[0] = v->rec_path[0] = '\0';
        v->rec_bytes = v->rec_deleted = v->rec_delete_failed = 0;
        v->rec_files = 0;
        v->rec_start_ms = GetTickCount64();
        v->rec_end_ms = 0;
        GetSystemTimeAsFileTime((FILETIME *)&v->rec_start_filetime);
    } else {
        v->rec_end_ms = GetTickCount64();
    }
    ReleaseSRWLockExclusive(&d->lock);
}

int perch__daemon_record_start_locked(perch_daemon *d, const perch_config *c, const char *stem,
                                      char *file, size_t len, char *why, size_t why_len)
{
    struct perch_daemon_live *v = &d->live;
    char said[PERCH_DAEMON_TEXT] = "";
    if (v->recording || v->engine == NULL)
        return PERCH_ESTATE;
    set_recording(d, true); /* before the attach: the model thread publishes at once */
    int err = open_recording(d, c, stem);
    if (err == 0) {
        err = perch_live_attach_idle(v->engine, "recording", &v->rec_sink, publish_idle, d);
        if (err < 0)
            discard_recording(d, err, said, sizeof said);
    }
    if (err < 0) {
        set_recording(d, false);
        perch_log(err == PERCH_EEXIST ? PERCH_LOG_WARNING : PERCH_LOG_ERROR,
                  "The recording%s%s could not start in %s: %s.", stem[0] ? " " : "", stem,
                  d->capture_dir[0] ? d->capture_dir : "(no capture directory)",
                  said[0] ? said : perch_strerror(err));
        if (why != NULL && said[0] != '\0')
            snprintf(why, why_len, "the recording could not start: %s", said);
        return err;
    }
    perch_live_call(v->engine, publish_call, d, UINT32_MAX); /* its first file, if open */
    char path[sizeof v->rec_path];
    AcquireSRWLockShared(&d->lock);
    snprintf(path, sizeof path, "%s", v->rec_path);
    ReleaseSRWLockShared(&d->lock);
    if (file != NULL)
        snprintf(file, len, "%s", path);
    /* never under d->lock: a log line can wait (a console paused by a selection, an output
     * pipe nobody reads), and STATUS and the supervisor would wait behind it */
    perch_log(PERCH_LOG_INFO,
              "Recording into %s (a new file every %u MiB or %u minutes, at most %u MiB of "
              "them).",
              path[0] ? path : d->capture_dir, c->rotate_size_mb, c->rotate_age_minutes,
              c->disk_cap_mb);
    return 0;
}

int perch_daemon_record_start_with(perch_daemon *d, const perch_daemon_record_opts *o, char *file,
                                   size_t len, char *why, size_t why_len)
{
    perch_config c;
    char stem[64], sentence[PERCH_DAEMON_TEXT] = "";
    if (d == NULL)
        return PERCH_EINVAL;
    int err = perch__daemon_record_config(d, o, &c, stem, sizeof stem, sentence, sizeof sentence);
    AcquireSRWLockExclusive(&d->ctl);
    if (err == 0)
        err = perch__daemon_state(d) == PERCH_DAEMON_RUNNING
                  ? perch__daemon_record_start_locked(d, &c, stem, file, len, sentence,
                                                      sizeof sentence)
                  : PERCH_ESTATE;
    bool recording = d->live.recording; /* ctl guards it */
    ReleaseSRWLockExclusive(&d->ctl);
    if (err == PERCH_EEXIST && sentence[0] == '\0')
        snprintf(sentence, sizeof sentence,
                 "a capture called %s.perch (or %s-...) is already in %s: choose another name, "
                 "or delete it",
                 stem, stem, d->capture_dir);
    else if (err == PERCH_ESTATE && sentence[0] == '\0')
        snprintf(sentence, sizeof sentence, "%s",
                 recording ? "a recording is already running; stop it with 'perch stop'"
                           : "perchd is not running its engine");
    if (why != NULL)
        snprintf(why, why_len, "%s", sentence);
    return err;
}

int perch_daemon_record_start(perch_daemon *d, char *file, size_t len)
{
    return perch_daemon_record_start_with(d, NULL, file, len, NULL, 0);
}

/* The end of a recording in the log (after its last publish). */
static void log_end(perch_daemon *d, int err)
{
    const struct perch_daemon_live *v = &d->live;
    char name[sizeof v->rec_name], path[sizeof v->rec_path];
    AcquireSRWLockShared(&d->lock);
    snprintf(name, sizeof name, "%s", v->rec_name);
    snprintf(path, sizeof path, "%s", v->rec_path);
    uint32_t files = v->rec_files;
    uint64_t bytes = v->rec_bytes, deleted = v->rec_deleted, refused = v->rec_delete_failed;
    ReleaseSRWLockShared(&d->lock); /* logged after: see perch__daemon_record_start_locked */
    perch_log(err < 0 ? PERCH_LOG_ERROR : PERCH_LOG_INFO,
              "The recording %s %s%s: %u file(s), %.1f MiB, the last %s, %llu deleted for the "
              "disk cap (%llu deletes refused).",
              name, err < 0 ? "ended with an error: " : "is complete",
              err < 0 ? perch_strerror(err) : "", files, (double)bytes / 1048576.0, path,
              (unsigned long long)deleted, (unsigned long long)refused);
}

int perch_daemon_record_stop(perch_daemon *d)
{
    if (d == NULL)
        return PERCH_EINVAL;
    AcquireSRWLockExclusive(&d->ctl);
    struct perch_daemon_live *v = &d->live;
    int err = PERCH_ESTATE;
    if (v->recording && v->engine != NULL) {
        err = perch_live_detach(v->engine, v->rec_sink.ctx, true);
        publish(d); /* detached: the model thread no longer touches the rotation */
        close_recording(d);
        set_recording(d, false);
        log_end(d, err);
    }
    ReleaseSRWLockExclusive(&d->ctl);
    return err;
}

void perch__daemon_record_close(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    if (!v->recording)
        return;
    /* the engine finished the rotation already (the model's end); a second finish says so */
    int err = v->rotate ? perch_capture_rotate_finish(v->rotate) : 0;
    if (v->rotate)
        publish(d);
    close_recording(d);
    set_recording(d, false);
    log_end(d, err == PERCH_ESTATE ? 0 : err);
}

void perch__daemon_record_leave(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    char name[sizeof v->rec_name], path[sizeof v->rec_path];
    if (!v->recording)
        return;
    /* v->rotate stays: the model thread may be inside it, and if its call returns before the
     * process ends, publish_idle still reads it through d (neither is ever freed now) */
    memset(&v->rec_sink, 0, sizeof v->rec_sink);
    set_recording(d, false);
    AcquireSRWLockShared(&d->lock);
    snprintf(name, sizeof name, "%s", v->rec_name);
    snprintf(path, sizeof path, "%s", v->rec_path);
    ReleaseSRWLockShared(&d->lock);
    perch_log(PERCH_LOG_ERROR,
              "The recording %s is left as it was: its files hold what was written up to their "
              "last complete chunk, and the last one, %s, has no end.",
              name, path);
}

void perch__daemon_record_status(perch_daemon *d, perch_daemon_status *st)
{
    const struct perch_daemon_live *v = &d->live;
    st->recording = v->recording;
    st->recording_id = v->rec_id; /* the figures below: of the last one once it ended */
    snprintf(st->recording_name, sizeof st->recording_name, "%s", v->rec_name);
    snprintf(st->recording_file, sizeof st->recording_file, "%s", v->rec_path);
    st->recording_bytes = v->rec_bytes;
    st->recording_files = v->rec_files;
    st->recording_deleted = v->rec_deleted;
    st->recording_start_filetime = v->rec_start_filetime;
    if (v->rec_id != 0)
        st->recording_elapsed_ms =
            (v->rec_end_ms ? v->rec_end_ms : GetTickCount64()) - v->rec_start_ms;
}

static int write_snapshot(perch_daemon *d, uint32_t last_seconds, const char *path)
{
    perch_output out;
    perch_live_stats ls;
    perch_recorder_snap_counts n = {0, 0, 0};
    int err = perch__daemon_create_capture_file(&out, path);
    if (err < 0)
        return err; /* nothing made: a file already there is not ours to delete */
    perch_live_get_stats(d->live.engine, &ls); /* the engine lives as long as ctl is held */
    err = perch_recorder_snapshot_counted(d->live.recorder, last_seconds, ls.samples_waiting, &out,
                                          &n);
    int closed = out.close(out.ctx);
    err = err < 0 ? err : closed;
    if (err == 0)
        perch_log(PERCH_LOG_INFO,
                  "The snapshot %s holds %llu samples and %llu slices; %llu samples the model "
                  "still held back for their stack are not in it (ledger "
                  "recorder.samples_waiting).",
                  path, (unsigned long long)n.samples, (unsigned long long)n.slices,
                  (unsigned long long)ls.samples_waiting);
    if (err < 0) { /* no half snapshot among the captures */
        wchar_t *w = perch__utf8_to_wide(path);
        if (w == NULL || !DeleteFileW(w))
            perch_log(PERCH_LOG_ERROR,
                      "The snapshot that failed could not be deleted (%s): delete it by hand: %s",
                      w == NULL ? perch_strerror(PERCH_ENOMEM)
                                : perch_strerror(perch_win_last_error()),
                      path);
        perch__free(w);
    }
    return err;
}

int perch_daemon_snapshot(perch_daemon *d, uint32_t last_seconds, char *path, size_t len, char *why,
                          size_t why_len)
{
    char file[PERCH_CONFIG_PATH_MAX] = "", sentence[PERCH_DAEMON_TEXT] = "";
    if (why != NULL && why_len > 0)
        why[0] = '\0';
    if (d == NULL)
        return PERCH_EINVAL;
    AcquireSRWLockExclusive(&d->ctl); /* the recorder lives until the session stops (ctl) */
    int err = d->live.recorder == NULL ? PERCH_ESTATE : d->capture_dir[0] ? 0 : PERCH_ENOENT;
    if (err == 0) /* made again if someone removed it, as a recording's rotation does */
        err = perch_fs_mkdir(d->capture_dir);
    if (err == 0)
        err = perch__snapshot_cap_check(d->capture_dir, d->o.config.snapshot_cap_mb,
                                        PERCH_SNAPSHOT_MAX_FILES, sentence, sizeof sentence);
    for (int tries = 1; err == 0; tries++) {
        new_path(d, "snapshot", file, sizeof file);
        err = write_snapshot(d, last_seconds, file);
        if (err != PERCH_EEXIST || tries == 3)
            break;
        err = 0; /* a file came under that name since new_path looked: the next name */
    }
    ReleaseSRWLockExclusive(&d->ctl);
    if (err == 0 && path != NULL)
        snprintf(path, len, "%s", file);
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, "%s", sentence);
    if (err < 0 && err != PERCH_ESTATE && sentence[0] == '\0') /* the caller logs a refusal */
        perch_log(PERCH_LOG_ERROR, "The snapshot could not be written (%s): %s.",
                  err == PERCH_ENOENT ? "no capture directory"
                  : file[0]           ? file
                                      : d->capture_dir,
                  perch_strerror(err));
    return err;
}

/* ---- the capture directory ----------------------------------------------------------------- */

static int add_entry(perch_daemon_capture **list, size_t *count, size_t *cap,
                     const WIN32_FIND_DATAW *fd, const char *active)
{
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        perch_daemon_capture *p = perch__realloc(*list, ncap * sizeof *p);
        if (p == NULL)
            return PERCH_ENOMEM;
        *list = p;
        *cap = ncap;
    }
    perch_daemon_capture *c = &(*list)[*count];
    memset(c, 0, sizeof *c);
    if (perch__wide_to_utf8(fd->cFileName, c->name, sizeof c->name) < 0)
        return 0; /* a name that does not fit: not one of Perch's */
    c->bytes = ((uint64_t)fd->nFileSizeHigh << 32) | fd->nFileSizeLow;
    c->created_filetime =
        ((uint64_t)fd->ftCreationTime.dwHighDateTime << 32) | fd->ftCreationTime.dwLowDateTime;
    c->modified_filetime =
        ((uint64_t)fd->ftLastWriteTime.dwHighDateTime << 32) | fd->ftLastWriteTime.dwLowDateTime;
    c->active = active != NULL && strcmp(active, c->name) == 0;
    (*count)++;
    return 0;
}

static int newest_first(const void *a, const void *b)
{
    const perch_daemon_capture *x = a, *y = b;
    return x->modified_filetime < y->modified_filetime   ? 1
           : x->modified_filetime > y->modified_filetime ? -1
                                                         : strcmp(x->name, y->name);
}

int perch_daemon_list_captures(perch_daemon *d, perch_daemon_capture **out, size_t *count)
{
    char pattern[PERCH_CONFIG_PATH_MAX + 16], active[256] = "";
    WIN32_FIND_DATAW fd;
    perch_daemon_capture *list = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    if (d == NULL || out == NULL || count == NULL || d->capture_dir[0] == '\0')
        return PERCH_EINVAL;
    AcquireSRWLockShared(&d->lock);
    if (d->live.recording) {
        const char *slash = strrchr(d->live.rec_path, '\\');
        snprintf(active, sizeof active, "%s", slash ? slash + 1 : d->live.rec_path);
    }
    ReleaseSRWLockShared(&d->lock);
    snprintf(pattern, sizeof pattern, "%s\\*.perch", d->capture_dir);
    wchar_t *w = perch__utf8_to_wide(pattern);
    HANDLE h = w ? FindFirstFileW(w, &fd) : INVALID_HANDLE_VALUE;
    perch__free(w);
    if (h != INVALID_HANDLE_VALUE) {
        do {
            if (!(fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
                err = add_entry(&list, &n, &cap, &fd, active);
            if (err == 0 && n == MAX_CAPTURES + MAX_CAPTURES / 4) { /* the newest, bounded */
                qsort(list, n, sizeof *list, newest_first);
                n = MAX_CAPTURES;
            }
        } while (err == 0 && FindNextFileW(h, &fd));
        FindClose(h);
    }
    if (err < 0) {
        perch__free(list);
        return err;
    }
    if (n > 1)
        qsort(list, n, sizeof *list, newest_first);
    n = n < MAX_CAPTURES ? n : MAX_CAPTURES;
    *out = list;
    *count = n;
    return 0;
}

int perch_daemon_open_capture(perch_daemon *d, const char *name, perch_input *in)
{
    char path[PERCH_CONFIG_PATH_MAX + 260];
    if (d == NULL || name == NULL || in == NULL || !perch__capture_fetch_name_ok(name) ||
        d->capture_dir[0] == '\0')
        return PERCH_EINVAL;
    snprintf(path, sizeof path, "%s\\%s", d->capture_dir, name);
    return perch_input_open_file(in, path); /* shares writing: readable while written */
}
