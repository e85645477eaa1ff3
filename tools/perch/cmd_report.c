/*
 * perch report: summarizes where the CPU went in a trace: a readable text summary, or with
 * --json one JSON object (docs/report.md). The input kind is chosen by input_kind.c: an .etl
 * file goes through reader -> model -> report; a capture file is replayed into the same
 * report sink, so both give the same figures.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "input_kind.h"
#include "out_guard.h"
#include "perch/error.h"
#include "perch/json.h"
#include "perch/report.h"
#include "perch/window.h"
#include "service_client.h"

struct report_args {
    const char *path;
    const char *html; /* --html OUT */
    bool json;
    uint32_t top;
    uint64_t from_ns, to_ns; /* --from / --to: the window, from the trace's start */
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch report [--json | --html OUT.html] [--top N] [--from T] [--to T]\n"
                 "                    FILE.etl|FILE.perch\n\n"
                 "Summarizes where the CPU went: trace header, samples and CPU time per process\n"
                 "and thread, top modules and stacks, slice statistics, and the ledger of\n"
                 "everything that could not be turned into model data.\n\n"
                 "  --json      print one JSON object instead (fields: docs/report.md)\n"
                 "  --html OUT  write one self-contained HTML page to OUT instead: summary,\n"
                 "              CPU over time, flame graph, top tables, slices, ledger\n"
                 "  --top N     rows in each top list (default 10)\n"
                 "  --from T    only what happened from T after the trace's start: samples\n"
                 "              and LBR records from then, slices cut there (2.5s, 300ms,\n"
                 "              1m; a plain number is seconds)\n"
                 "  --to T      ... and before T after the start (default: the end); a\n"
                 "              capture perchd recorded counts from its session's start\n"
                 "  --help      show this help\n");
}

static int parse_top(const char *s, uint32_t *top)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == '-' || v == 0 || v > 100000)
        return -1;
    *top = (uint32_t)v;
    return 0;
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct report_args *a)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
        } else if (strcmp(argv[i], "--html") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fprintf(stderr, "perch report: --html needs an output file\n");
                return 2;
            }
            a->html = argv[++i];
        } else if (strcmp(argv[i], "--top") == 0) {
            if (i + 1 >= argc || parse_top(argv[++i], &a->top) < 0) {
                fprintf(stderr, "perch report: --top needs a number from 1 to 100000\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--from") == 0 || strcmp(argv[i], "--to") == 0) {
            uint64_t *t = argv[i][2] == 'f' ? &a->from_ns : &a->to_ns;
            if (i + 1 >= argc || perch_cli_parse_duration_ns(argv[i + 1], t) < 0) {
                fprintf(stderr,
                        "perch report: %s needs a time from the trace's start, such as "
                        "2.5s or 300ms\n",
                        argv[i]);
                return 2;
            }
            i++;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "perch report: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (a->path == NULL) {
            a->path = argv[i];
        } else {
            fprintf(stderr, "perch report: only one file may be given\n");
            return 2;
        }
    }
    if (a->path == NULL) {
        usage(stderr);
        return 2;
    }
    if (a->from_ns >= a->to_ns) {
        fprintf(stderr, "perch report: --from must come before --to\n");
        return 2;
    }
    if (a->json && a->html) {
        fprintf(stderr, "perch report: --json and --html: choose one\n");
        return 2;
    }
    return -1;
}

/* Writes the page to path; 0, or 1 with the reason on stderr. */
static int write_html(perch_report *r, const char *path)
{
    FILE *f = fopen(path, "wb");
    int err;
    if (f == NULL) {
        fprintf(stderr, "perch report: %s: %s\n", path, strerror(errno));
        return 1;
    }
    err = perch_report_write_html(r, f);
    if (fclose(f) != 0 && err == 0)
        err = PERCH_EIO;
    if (err < 0) {
        remove(path);
        return perch_cli_error(path, err);
    }
    fprintf(stderr, "perch report: wrote %s\n", path);
    return 0;
}

/* The result of writing the report to standard output: a failed write or flush (a full
 * disk, a closed pipe) names standard output and fails the command, out of memory names the
 * report. */
static int stdout_result(int err)
{
    if (err == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        err = PERCH_EIO;
    if (err == PERCH_EIO)
        err = perch_cli_stdio_error();
    if (err == PERCH_ENOMEM)
        return perch_cli_error("report", err);
    return err < 0 ? perch_cli_error("standard output", err) : 0;
}

/* One line on stderr: which part of the trace the report covers; when it holds no sample
 * of the capture's, where they are (a live capture's clock starts at its session's start,
 * perhaps long before the file's first record). */
static void print_window(const perch_window *w)
{
    char to[40] = "the end", where[160] = "";
    uint64_t first, last;
    if (w->to_ns != PERCH_WINDOW_END)
        snprintf(to, sizeof to, "%.6g s", (double)w->to_ns / 1e9);
    if (w->samples_in == 0 && perch_window_sample_span(w, &first, &last))
        snprintf(where, sizeof where, " (the samples lie from %.3f s to %.3f s after it)",
                 (double)first / 1e9, (double)last / 1e9);
    fprintf(stderr,
            "perch report: from %.6g s to %s after the trace's start: %llu of %llu samples%s\n",
            (double)w->from_ns / 1e9, to, (unsigned long long)w->samples_in,
            (unsigned long long)(w->samples_in + w->samples_out), where);
}

int perch_cmd_report(int argc, char **argv)
{
    struct report_args a = {NULL, NULL, false, 10, 0, PERCH_WINDOW_END};
    perch_window window;
    perch_report_options ro = {.sz = sizeof ro, .top = 10};
    perch_report *r = NULL;
    perch_sink report_sink, sink;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    ro.top = a.top;
    if (perch_report_create(&ro, &r) < 0 || (a.html && perch_report_enable_html(r) < 0)) {
        perch_report_destroy(r);
        return perch_cli_error("report", PERCH_ENOMEM);
    }
    perch_report_sink(r, &report_sink);
    sink = report_sink;
    if (a.from_ns != 0 || a.to_ns != PERCH_WINDOW_END)
        perch_window_sink(&window, &report_sink, a.from_ns, a.to_ns, &sink);
    /* a capture's sample and slice chunks decoded on a second thread (docs/report.md) */
    unsigned threads = 0;
    if (perch_cli_threads(&threads) < 0) {
        perch_report_destroy(r);
        return 1;
    }
    sink.decode_ahead = threads != 1;
    int played = perch_cli_play_file("report", a.path, &sink, true);
    rc = played < 0 ? 1 : 0;
    if (rc == 0 && sink.ctx == &window)
        print_window(&window);
    if (rc == 0 && a.html) {
        rc = write_html(r, a.html);
    } else if (rc == 0 && a.json) {
        perch_json w;
        perch_json_init(&w, perch_json_file_sink, stdout);
        rc = stdout_result(perch_report_write_json(r, &w));
    } else if (rc == 0) {
        rc = stdout_result(perch_report_write_text(r, stdout));
    }
    perch_report_destroy(r);
    return rc == 0 && played == PERCH_CLI_PARTIAL ? PERCH_EXIT_PARTIAL : rc;
}
