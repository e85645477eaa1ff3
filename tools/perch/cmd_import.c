/*
 * perch import: turns an .etl trace into a compact capture file (docs/capture-format.md):
 * .etl reader -> model -> capture writer -> file, the reading on a thread of its own ahead of
 * the model, the same thread playing the capture writer behind it (a sink relay), unless
 * --threads 1 (or PERCH_THREADS=1) says otherwise. The file is written through
 * perch_output_open_file in whole, checksummed chunks, so an import that dies halfway leaves
 * a capture readable up to its last complete chunk. Like gzip or cp it does not fsync unless
 * asked (--sync): the .etl is still there to import again, and a capture cut by a power loss
 * is detected as truncated by its chunk checks. A progress bar (bytes, events/s, ETA) is
 * drawn on stderr when it is a terminal; the command is otherwise quiet apart from one summary
 * line on stdout.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "input_kind.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "out_guard.h"
#include "perch/io.h"
#include "perch/pipeline.h"
#include "perch/platform.h"

struct import_args {
    const char *input;
    const char *output;
    bool sync; /* --sync: the writer's sync policy (every 16 chunks and at the end) */
};

struct import_progress {
    uint64_t started;
    uint64_t last_draw;
    uint64_t events; /* records read, counted from the pipeline's progress calls */
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch import TRACE.etl -o OUT.perch [--threads N] [--sync]\n\n"
                 "Turns an .etl kernel trace into a compact capture file: the processes,\n"
                 "threads, modules, stacks, samples, slices and ledger the model derives from\n"
                 "it. 'perch report', 'perch info' and 'perch export' read the capture. OUT is\n"
                 "never the input: an existing OUT is replaced only when it is a capture.\n\n"
                 "  -o, --output FILE   the capture to write (required)\n"
                 "  --threads N         1: read and model on one thread; 2 (the default): a\n"
                 "                      second thread reads (file reads, XPRESS) ahead of the\n"
                 "                      model and runs the capture writer behind it.\n"
                 "                      The capture is the same either way. Also the\n"
                 "                      PERCH_THREADS environment variable (every command)\n"
                 "  --sync              make the capture durable as it is written (fsync every\n"
                 "                      16 chunks and at the end); without it the file is left\n"
                 "                      to the system's write-back, like cp or gzip\n"
                 "  --help              show this help\n");
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct import_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "perch import: %s needs a file name\n", arg);
                return 2;
            }
            a->output = argv[++i];
        } else if (strcmp(arg, "--threads") == 0) {
            if (i + 1 >= argc || (strcmp(argv[i + 1], "1") != 0 && strcmp(argv[i + 1], "2") != 0)) {
                fprintf(stderr, "perch import: --threads needs 1 or 2\n");
                return 2;
            }
            perch_cli_set_threads((unsigned)(argv[++i][0] - '0'));
        } else if (strcmp(arg, "--sync") == 0) {
            a->sync = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr, "perch import: unknown option '%s'\n\n", arg);
            usage(stderr);
            return 2;
        } else if (a->input == NULL) {
            a->input = arg;
        } else {
            fprintf(stderr, "perch import: only one trace may be given ('%s')\n", arg);
            return 2;
        }
    }
    if (a->input == NULL || a->output == NULL) {
        fprintf(stderr, "perch import: %s is required\n\n",
                a->input ? "-o OUT.perch" : "TRACE.etl");
        usage(stderr);
        return 2;
    }
    return -1;
}

static void draw(void *ctx, uint64_t done, uint64_t total)
{
    struct import_progress *p = ctx;
    uint64_t now = perch_monotonic_ns();
    p->events += PERCH_PIPELINE_PROGRESS_RECORDS;
    if (done < total && now - p->last_draw < 100000000u)
        return;
    p->last_draw = now;
    double secs = (double)(now - p->started) / 1e9;
    double rate = secs > 0 ? (double)done / secs : 0;
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    fprintf(stderr, "\rperch import: %7.1f / %.1f MiB  %5.1f%%  %9.0f events/s  ETA %4.0f s ",
            (double)done / 1048576.0, (double)total / 1048576.0,
            total ? (double)done * 100.0 / (double)total : 100.0, secs > 0 ? p->events / secs : 0,
            eta);
    if (done >= total)
        fputc('\n', stderr);
}

/* True when path names an existing file that is not a capture (so not ours to replace). */
static bool holds_other_data(const char *path)
{
    perch_input old;
    if (perch_input_open_file(&old, path) < 0)
        return false;
    bool other = !perch_cli_is_capture(&old);
    perch_input_close(&old);
    return other;
}

/* Opens the .etl before the output is created, so a file that is not a trace leaves no empty
 * capture behind; the reader (it owns *in then) is the one the import reads. 0 or the exit
 * status. */
static int open_etl(const char *path, perch_input *in, perch_etl_reader **r)
{
    perch_etl_open_error diag = {0, 0, NULL};
    int err = perch_etl_open_owned(in, NULL, r, &diag);
    if (err == 0)
        return 0;
    fprintf(stderr, "perch import: %s: %s at byte %llu\n", path,
            diag.what ? diag.what : perch_strerror(err), (unsigned long long)diag.offset);
    return 1;
}

/* The input must be an .etl and the output must not be it: an existing output is replaced
 * only when it is a capture (so never the .etl being read). Opens *r; 0 or the exit status. */
static int check_paths(const struct import_args *a, perch_etl_reader **r)
{
    perch_input in;
    int err = perch_input_open_file(&in, a->input);
    if (err < 0)
        return perch_cli_error(a->input, err);
    if (perch_cli_is_capture(&in)) {
        fprintf(stderr, "perch import: %s is already a capture (try 'perch info')\n", a->input);
    } else if (strcmp(a->input, a->output) == 0 || holds_other_data(a->output)) {
        fprintf(stderr, "perch import: refusing to overwrite %s: it is %s\n", a->output,
                strcmp(a->input, a->output) == 0 ? "the input" : "not a capture");
    } else {
        return open_etl(a->input, &in, r); /* closes in when it fails */
    }
    perch_input_close(&in);
    return 1;
}

static void summary(const struct import_args *a, uint64_t in_size, perch_capture_writer *w,
                    uint64_t ns)
{
    perch_capture_writer_stats st;
    perch_capture_writer_get_stats(w, &st);
    double secs = (double)ns / 1e9;
    printf("imported %s (%.1f MiB) -> %s (%.2f MiB, %.1f%%): %llu samples, %llu slices, "
           "%llu stacks in %.2f s\n",
           a->input, (double)in_size / 1048576.0, a->output, (double)st.bytes / 1048576.0,
           in_size ? (double)st.bytes * 100.0 / (double)in_size : 0.0,
           (unsigned long long)st.records[PERCH_CHUNK_SAMPLE],
           (unsigned long long)st.records[PERCH_CHUNK_SLICE],
           (unsigned long long)st.records[PERCH_CHUNK_STACK], secs);
}

static int import(const struct import_args *a, perch_etl_reader *r, perch_output *out)
{
    struct import_progress prog = {perch_monotonic_ns(), 0, 0};
    perch_capture_writer_opts wo;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    uint64_t in_size = perch_etl_input_size(r);
    perch_capture_writer_opts_default(&wo);
    int err = perch_capture_writer_create(out, &wo, &w);
    if (err < 0) {
        perch_etl_destroy(r);
        return perch_cli_error(a->output, err);
    }
    perch_capture_writer_sink(w, &sink);
    /* With a reader thread the capture writer (encoding, CRCs, writes) runs on it too, behind
     * the model (a sink relay: the same records in the same order, so the same bytes). */
    err = perch_cli_run_etl_reader("import", r, a->input, &sink,
                                   perch_is_terminal(stderr) ? draw : NULL, &prog, true, true);
    if (err >= 0) /* PERCH_CLI_PARTIAL too: a damaged .etl imported as far as it reads */
        summary(a, in_size, w, perch_monotonic_ns() - prog.started);
    else /* the model broke a capture rule? */
        perch_cli_say_refusal("import", w, "the trace");
    perch_capture_writer_destroy(w);
    return err;
}

int perch_cmd_import(int argc, char **argv)
{
    struct import_args a = {NULL, NULL, false};
    perch_etl_reader *r = NULL;
    perch_output out;
    perch_cli_out guard;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if ((rc = check_paths(&a, &r)) != 0)
        return rc;
    int err = perch_output_open_file(&out, a.output);
    if (err < 0) {
        perch_etl_destroy(r);
        return perch_cli_error(a.output, err);
    }
    if (!a.sync) /* the writer skips a NULL sync: no fsync at all (see the top of the file) */
        out.sync = NULL;
    perch_cli_out_guard(&guard, &out);
    err = import(&a, r, &out);
    int cerr = out.close(out.ctx);
    if (guard.error && err < 0) /* the output failed (disk full ...): name it, not the input */
        perch_cli_error(a.output, guard.error);
    else if (err == 0 && cerr < 0)
        return perch_cli_error(a.output, cerr);
    if (err < 0)
        fprintf(stderr,
                "perch import: %s is incomplete: it holds what was written before the "
                "error ('perch info' shows how far it goes)\n",
                a.output);
    return err < 0 ? 1 : err == PERCH_CLI_PARTIAL ? PERCH_EXIT_PARTIAL : 0;
}
