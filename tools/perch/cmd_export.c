/*
 * perch export: converts a capture (or an .etl) to chrome, gecko, pprof, speedscope or folded.
 *
 *   perch export --format FORMAT [options] INPUT [-o OUTPUT]
 *
 * The input comes through perch_record_source (record_source.h), replayed once per pass the
 * format needs; the output goes to OUTPUT or standard output, written on a thread of its own
 * (out_async.h). PERCH_THREADS=1 keeps everything on one thread: the replay, the exporter
 * (perch_export_options.threads) and the writes. When stdout is a terminal, a file written is
 * named in one line there, with its size and what opens it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "perch/export.h"
#include "perch/fs.h"
#include "input_kind.h"
#include "out_async.h"
#include "out_guard.h"
#include "perch/io.h"
#include "perch/platform.h"
#include "record_source.h"

struct export_args {
    const char *format;
    const char *input;
    const char *output;
    perch_export_options opt;
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch export --format FORMAT [options] INPUT [-o OUTPUT]\n\n"
                 "Converts a capture to a file another tool opens. OUTPUT defaults to the\n"
                 "standard output.\n\nFormats:\n");
    for (unsigned i = 0; i < PERCH_EXPORT_FORMAT_COUNT; i++)
        fprintf(out, "  %-11s %s\n", perch_export_format_name(i), perch_export_format_opens(i));
    fprintf(out, "\nOptions:\n"
                 "  -f, --format FORMAT   one of the formats above (required)\n"
                 "  -o, --output FILE     write to FILE instead of the standard output\n"
                 "  --interval-us N       CPU time one sample stands for (default 1000)\n"
                 "  --cpu-tracks          chrome: also one track per CPU\n"
                 "  --folded-process      folded: prefix stacks with the process\n"
                 "  --folded-thread       folded: prefix stacks with the thread\n"
                 "  --folded-pmc SOURCE   folded: the PMC samples of profile source SOURCE\n"
                 "                        instead of the timer samples (never both in one file)\n"
                 "  --gecko-max-markers N gecko: most slices kept as markers (default 1000000)\n"
                 "  --gecko-max-samples N gecko: most samples kept at their own times; past it,\n"
                 "                        one sample per distinct stack (default 20000000)\n"
                 "  --memory-limit-mb N   memory the exporter may hold (default 1024)\n");
}

/* The value of option argv[*i] ("--opt V" or "--opt=V"); NULL when missing. */
static const char *value_of(int argc, char **argv, int *i, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (eq && arg[1] == '-')
        return eq + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static bool is_opt(const char *arg, const char *s, const char *l)
{
    size_t n = strlen(l);
    return (s && strcmp(arg, s) == 0) || strcmp(arg, l) == 0 ||
           (strncmp(arg, l, n) == 0 && arg[n] == '=');
}

static int parse_number(const char *v, unsigned long long *out)
{
    char *end;
    if (!v || !*v || *v == '-')
        return -1;
    *out = strtoull(v, &end, 10);
    return *end ? -1 : 0;
}

static int parse_option(int argc, char **argv, int *i, struct export_args *a)
{
    const char *arg = argv[*i];
    unsigned long long n;
    if (is_opt(arg, "-f", "--format"))
        return (a->format = value_of(argc, argv, i, arg)) ? 0 : -1;
    if (is_opt(arg, "-o", "--output"))
        return (a->output = value_of(argc, argv, i, arg)) ? 0 : -1;
    if (is_opt(arg, NULL, "--interval-us")) {
        if (parse_number(value_of(argc, argv, i, arg), &n) || n == 0 || n > 10000000)
            return -1;
        a->opt.sample_interval_ns = n * 1000;
        return 0;
    }
    if (is_opt(arg, NULL, "--memory-limit-mb")) {
        if (parse_number(value_of(argc, argv, i, arg), &n) || n == 0 || n > (1u << 20))
            return -1;
        a->opt.memory_limit = (uint64_t)n << 20;
        return 0;
    }
    if (is_opt(arg, NULL, "--gecko-max-markers")) {
        if (parse_number(value_of(argc, argv, i, arg), &n) || n == 0)
            return -1;
        a->opt.gecko_max_markers = n;
        return 0;
    }
    if (is_opt(arg, NULL, "--gecko-max-samples")) {
        if (parse_number(value_of(argc, argv, i, arg), &n) || n == 0)
            return -1;
        a->opt.gecko_max_samples = n;
        return 0;
    }
    if (is_opt(arg, NULL, "--folded-pmc")) {
        if (parse_number(value_of(argc, argv, i, arg), &n) || n > UINT16_MAX)
            return -1;
        a->opt.folded_pmc = true;
        a->opt.folded_pmc_source = (uint16_t)n;
        return 0;
    }
    if (strcmp(arg, "--cpu-tracks") == 0)
        return a->opt.cpu_tracks = true, 0;
    if (strcmp(arg, "--folded-process") == 0)
        return a->opt.folded_process = true, 0;
    if (strcmp(arg, "--folded-thread") == 0)
        return a->opt.folded_thread = true, 0;
    return -1;
}

/* 0, 1 for --help (printed), 2 for a usage error (printed). */
static int parse_args(int argc, char **argv, struct export_args *a)
{
    memset(a, 0, sizeof *a);
    perch_export_options_init(&a->opt);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (arg[0] == '-' && arg[1]) {
            if (parse_option(argc, argv, &i, a)) {
                fprintf(stderr, "perch: export: bad or incomplete option '%s'\n\n", arg);
                usage(stderr);
                return 2;
            }
        } else if (!a->input) {
            a->input = arg;
        } else {
            fprintf(stderr, "perch: export: more than one input ('%s')\n", arg);
            return 2;
        }
    }
    if (!a->format || !a->input) {
        fprintf(stderr, "perch: export: %s is required\n\n", a->format ? "INPUT" : "--format");
        usage(stderr);
        return 2;
    }
    return 0;
}

/* A file is truncated by its first write, which the output's thread makes at once (the old
 * file's blocks are freed beside the first pass), or with PERCH_THREADS=1 the exporter's. */
static int open_output(const char *path, perch_output *out)
{
    if (!path || strcmp(path, "-") == 0) {
        perch_output_stdout(out);
        return 0;
    }
    return perch_output_open_file_deferred(out, path);
}

/* One line on a terminal for a file written. Only on a terminal: in a script stdout may be
 * the file itself (-o /dev/stdout), and a line there would end up inside the export. */
static void said_written(const char *path, perch_export_format fmt)
{
    uint64_t size;
    if (!path || strcmp(path, "-") == 0 || !perch_is_terminal(stdout) ||
        perch_fs_size(path, &size) < 0)
        return;
    char amount[32];
    if (size >= 1048576u)
        snprintf(amount, sizeof amount, "%.1f MiB", (double)size / 1048576.0);
    else if (size >= 1024u)
        snprintf(amount, sizeof amount, "%.1f KiB", (double)size / 1024.0);
    else
        snprintf(amount, sizeof amount, "%u bytes", (unsigned)size);
    printf("wrote %s (%s, %s): open it with %s\n", path, perch_export_format_name(fmt), amount,
           perch_export_format_opens(fmt));
}

static int run(const struct export_args *a, perch_export_format fmt,
               perch_record_source_open_fn open_source)
{
    perch_record_source src;
    perch_output out;
    perch_cli_out guard;
    int err = open_source(a->input, &src), cerr;
    if (err)
        return perch_cli_error(a->input, err);
    err = open_output(a->output, &out);
    if (err) {
        if (src.close)
            src.close(src.ctx);
        return perch_cli_error(a->output, err);
    }
    uint32_t unrelayed = 0;
    for (unsigned i = 0; i < perch_export_passes(fmt) && i < 32; i++)
        unrelayed |= (uint32_t)!perch_export_relay_pass(fmt, i) << i;
    perch_record_source_unrelayed(&src, unrelayed);
    perch_cli_out_guard(&guard, &out);
    perch_export_options opt = a->opt;
    if (perch_cli_threads(&opt.threads) == 0 && opt.threads != 1)
        perch_cli_out_async(&out, 0); /* on failure the writes stay on this thread */
    err = perch_export_run(fmt, &opt, &src, &out);
    cerr = out.close ? out.close(out.ctx) : 0;
    bool partial = perch_record_source_partial(&src); /* a cut or damaged input */
    if (src.close)
        src.close(src.ctx);
    if (guard.error) /* the output failed (disk full ...): name it, not the input */
        return perch_cli_error(perch_cli_out_name(a->output), guard.error);
    if (err || cerr)
        return perch_cli_error("export", err ? err : cerr);
    said_written(a->output, fmt);
    return partial ? PERCH_EXIT_PARTIAL : 0;
}

int perch_export_command(int argc, char **argv, perch_record_source_open_fn open_source)
{
    struct export_args a;
    perch_export_format fmt;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (perch_export_format_parse(a.format, &fmt)) {
        fprintf(stderr, "perch: export: unknown format '%s' (run 'perch export --help')\n",
                a.format);
        return 2;
    }
    return run(&a, fmt, open_source);
}

int perch_cmd_export(int argc, char **argv)
{
    return perch_export_command(argc, argv, perch_open_record_source);
}
