/*
 * Input kinds of the perch commands (input_kind.h): capture or .etl, chosen by the capture
 * magic, and played into a sink with one error message format for every command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_kind.h"
#include "out_guard.h"
#include "partial.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/platform.h"

/* True when the capture magic is at off. */
static bool magic_at(const perch_input *in, uint64_t off)
{
    static const uint8_t magic[8] = {0x89, 'P', 'E', 'R', 'C', 'H', '\r', '\n'};
    uint8_t head[8];
    return in->size >= sizeof head && off <= in->size - sizeof head &&
           perch_input_read_exact(in, off, head, sizeof head) == 0 &&
           memcmp(head, magic, sizeof magic) == 0;
}

bool perch_cli_is_capture(const perch_input *in)
{
    return magic_at(in, 0);
}

bool perch_cli_capture_trailing(const perch_input *in, const perch_capture_status *st, bool *joined)
{
    bool trailing = st->stop == PERCH_CAPTURE_STOP_END && st->trailing_bytes > 0;
    *joined = trailing && magic_at(in, st->offset);
    return trailing;
}

void perch_cli_etl_source(const char *path, char *buf, size_t len)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\')
            b = p + 1;
    snprintf(buf, len, "etl:%s", b);
}

static void percent(void *ctx, uint64_t done, uint64_t total)
{
    const char *cmd = ctx;
    if (total > 0)
        fprintf(stderr, "\rperch %s: %3u%%", cmd, (unsigned)(done * 100 / total));
    if (done >= total)
        fputc('\n', stderr);
}

static unsigned threads_override; /* perch_cli_set_threads; 0: PERCH_THREADS or the default */

void perch_cli_set_threads(unsigned threads)
{
    threads_override = threads;
}

int perch_cli_threads(unsigned *threads)
{
    const char *env = getenv("PERCH_THREADS");
    *threads = 0;
    if (threads_override != 0) {
        *threads = threads_override;
    } else if (env != NULL && env[0] != '\0') {
        if (strcmp(env, "1") != 0 && strcmp(env, "2") != 0) {
            fprintf(stderr, "perch: PERCH_THREADS must be 1 or 2, not '%s'\n", env);
            return PERCH_EINVAL;
        }
        *threads = (unsigned)(env[0] - '0');
    }
    return 0;
}

/* The pipeline over the opened reader r (taken), or over *in (taken) when r is NULL. */
static int run_etl(const char *cmd, perch_etl_reader *r, perch_input *in, const char *path,
                   const perch_sink *sink, perch_progress_fn progress, void *progress_ctx,
                   bool warn, bool relay_sink)
{
    perch_etl_open_error diag = {0, 0, NULL};
    char source[300];
    perch_etl_stats stats;
    perch_pipeline_options opts = {.sz = sizeof opts,
                                   .progress = progress,
                                   .progress_ctx = progress_ctx,
                                   .reader_stats = &stats,
                                   .relay_sink = relay_sink};
    memset(&stats, 0, sizeof stats);
    if (perch_cli_threads(&opts.threads) < 0) {
        perch_etl_destroy(r);
        if (in != NULL)
            perch_input_close(in);
        return PERCH_EINVAL;
    }
    perch_cli_etl_source(path, source, sizeof source);
    int err = r != NULL ? perch_pipeline_etl_reader(r, source, sink, &opts)
                        : perch_pipeline_etl(in, source, sink, &opts, &diag);
    if (err < 0 && progress != NULL)
        fputc('\n', stderr); /* end the progress line before the message */
    if (err < 0 && perch_cli_output_failed())
        return err; /* the command names its output */
    if (err < 0 && diag.what != NULL)
        fprintf(stderr, "perch %s: %s: %s at byte %llu\n", cmd, path, diag.what,
                (unsigned long long)diag.offset);
    else if (err < 0)
        fprintf(stderr, "perch %s: %s: %s\n", cmd, path, perch_strerror(err));
    if (err < 0)
        return err;
    bool damaged = false;
    for (int i = 0; i < PERCH_ETL_REASON_COUNT; i++)
        damaged |= stats.errors[i] != 0;
    if (damaged && warn)
        perch_cli_warn_etl(cmd, path, &stats);
    return damaged ? PERCH_CLI_PARTIAL : 0;
}

int perch_cli_run_etl(const char *cmd, perch_input *in, const char *path, const perch_sink *sink,
                      perch_progress_fn progress, void *progress_ctx, bool warn, bool relay_sink)
{
    return run_etl(cmd, NULL, in, path, sink, progress, progress_ctx, warn, relay_sink);
}

int perch_cli_run_etl_reader(const char *cmd, perch_etl_reader *r, const char *path,
                             const perch_sink *sink, perch_progress_fn progress, void *progress_ctx,
                             bool warn, bool relay_sink)
{
    return run_etl(cmd, r, NULL, path, sink, progress, progress_ctx, warn, relay_sink);
}

static int run_capture(const char *cmd, perch_input *in, const char *path, const perch_sink *sink,
                       bool warn)
{
    perch_capture_status st;
    uint64_t size = in->size;
    bool joined;
    int err = perch_capture_replay(in, sink, &st);
    bool trailing = err == 0 && perch_cli_capture_trailing(in, &st, &joined);
    perch_input_close(in);
    if (trailing) { /* every record of the capture played, and the rest of the file not read */
        if (warn)
            perch_cli_warn_trailing(cmd, path, &st, joined);
        return PERCH_CLI_PARTIAL;
    }
    if (err < 0 && perch_cli_capture_partial(&st)) {
        if (warn)
            perch_cli_warn_capture(cmd, path, &st, size);
        return PERCH_CLI_PARTIAL;
    }
    if (err < 0 && !perch_cli_output_failed())
        fprintf(stderr, "perch %s: %s: %s at byte %llu\n", cmd, path, st.reason,
                (unsigned long long)st.offset);
    return err;
}

int perch_cli_play_file(const char *cmd, const char *path, const perch_sink *sink,
                        bool percent_progress)
{
    return perch_cli_play_file_ex(cmd, path, sink, percent_progress, true);
}

int perch_cli_play_file_ex(const char *cmd, const char *path, const perch_sink *sink,
                           bool percent_progress, bool warn)
{
    perch_input in;
    int err = perch_input_open_file(&in, path);
    if (err < 0) {
        fprintf(stderr, "perch: %s: %s\n", path, perch_strerror(err));
        return err;
    }
    if (perch_cli_is_capture(&in))
        return run_capture(cmd, &in, path, sink, warn);
    bool show = percent_progress && perch_is_terminal(stderr);
    return perch_cli_run_etl(cmd, &in, path, sink, show ? percent : NULL, (void *)cmd, warn, false);
}
