/*
 * perch synth: writes a synthetic kernel trace (.etl) for demos, tests and benchmarks through
 * perch_synth_write (include/perch/synth.h). Shows progress on a terminal and prints what was
 * written. The trace is made up: it is not a substitute for a real one as ground truth.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/json.h"
#include "perch/kind.h"
#include "perch/platform.h"
#include "perch/sym.h"
#include "perch/synth.h"

struct synth_args {
    const char *path;
    const char *stats_path; /* --stats: the generator's figures as JSON */
    const char *module;     /* --module: a real image standing in for demo.exe */
    perch_synth_options opt;
    perch_synth_image image;
    perch_pe *pe;            /* the --module image (its strings are image's) */
    uint32_t *rva, *fn_size; /* image's function arrays */
};

struct progress {
    bool on;
    uint64_t started;
    uint64_t last_draw;
};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: perch synth -o FILE [--seed N] [--size N[K|M|G]] [--cpus N]\n"
            "                   [--duration-ms N] [--stats FILE] [--module FILE]\n\n"
            "Writes a synthetic NT kernel logger trace (.etl, 64-bit, QPC clock): rundown,\n"
            "process/thread/image events with PDB ids, context switches with PMC counters,\n"
            "ready-thread events, 1 ms timer samples with kernel and user stacks, PMC samples\n"
            "and LBR records. Deterministic for a seed. Made up: not ground truth.\n\n"
            "Options:\n"
            "  -o, --output FILE   the .etl file to write (required)\n"
            "  --seed N            scenario seed (default 1)\n"
            "  --size N[K|M|G]     about this file size (default 8M; minimum (cpus+2)*64K)\n"
            "  --cpus N            processors, 1..%d (default %d)\n"
            "  --duration-ms N     stop after N ms of trace time (with --size: first wins)\n"
            "  --stats FILE        also write the generator's own figures as JSON ('-' for\n"
            "                      stdout, then nothing else is printed there), keyed like\n"
            "                      'perch report --json'\n"
            "  --module FILE       an x64 PE image (.exe or .dll with .pdata) that stands in\n"
            "                      for the game's demo.exe: its image events log FILE as\n"
            "                      given, its size, TimeDateStamp and PDB identity, and the\n"
            "                      game's frames in its executable hit the image's own\n"
            "                      functions, so symbols can be checked end to end\n"
            "  -h, --help          this text\n",
            PERCH_SYNTH_MAX_CPUS, PERCH_SYNTH_DEFAULT_CPUS);
}

/* Parses a decimal number with an optional K/M/G (binary) suffix. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t mult = 1;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    if (*end == 'K' || *end == 'k')
        mult = 1024ull;
    else if (*end == 'M' || *end == 'm')
        mult = 1024ull * 1024;
    else if (*end == 'G' || *end == 'g')
        mult = 1024ull * 1024 * 1024;
    if (mult != 1)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > UINT64_MAX / mult)
        return false;
    *out = v * mult;
    return true;
}

static bool parse_plain(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static int bad_value(const char *opt, const char *v)
{
    fprintf(stderr, "perch synth: invalid value '%s' for %s\n", v, opt);
    return 2;
}

static int parse_one(struct synth_args *a, const char *k, const char *v)
{
    uint64_t n;
    if (strcmp(k, "-o") == 0 || strcmp(k, "--output") == 0)
        a->path = v;
    else if (strcmp(k, "--stats") == 0)
        a->stats_path = v;
    else if (strcmp(k, "--module") == 0)
        a->module = v;
    else if (strcmp(k, "--seed") == 0) {
        if (!parse_plain(v, &a->opt.seed))
            return bad_value(k, v);
    } else if (strcmp(k, "--size") == 0) {
        if (!parse_size(v, &a->opt.target_bytes) || a->opt.target_bytes == 0)
            return bad_value(k, v);
    } else if (strcmp(k, "--cpus") == 0) {
        if (!parse_plain(v, &n) || n < 1 || n > PERCH_SYNTH_MAX_CPUS)
            return bad_value(k, v);
        a->opt.cpus = (uint32_t)n;
    } else if (strcmp(k, "--duration-ms") == 0) {
        if (!parse_plain(v, &a->opt.duration_ms) || a->opt.duration_ms == 0)
            return bad_value(k, v);
    } else {
        fprintf(stderr, "perch synth: unknown option '%s'\n", k);
        return 2;
    }
    return 0;
}

/* Returns 0, 1 for --help (exit 0), or 2 for a usage error. */
static int parse_args(struct synth_args *a, int argc, char **argv)
{
    bool size_given = false, duration_given = false;
    perch_synth_options_init(&a->opt);
    a->path = NULL;
    a->stats_path = NULL;
    a->module = NULL;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
        if (i + 1 >= argc) {
            fprintf(stderr, "perch synth: option '%s' needs a value\n", argv[i]);
            return 2;
        }
        size_given |= strcmp(argv[i], "--size") == 0;
        duration_given |= strcmp(argv[i], "--duration-ms") == 0;
        int err = parse_one(a, argv[i], argv[i + 1]);
        if (err)
            return err;
    }
    if (duration_given && !size_given)
        a->opt.target_bytes = 0;
    if (!a->path) {
        fprintf(stderr, "perch synth: missing -o FILE\n");
        return 2;
    }
    if (a->opt.target_bytes && a->opt.target_bytes < perch_synth_min_bytes(a->opt.cpus)) {
        fprintf(stderr, "perch synth: --size must be at least %" PRIu64 " bytes for %u CPUs\n",
                perch_synth_min_bytes(a->opt.cpus), a->opt.cpus);
        return 2;
    }
    return 0;
}

static void on_progress(void *ctx, int pass, uint64_t done, uint64_t total)
{
    struct progress *p = ctx;
    uint64_t now = perch_monotonic_ns();
    if (!p->on || now - p->last_draw < 100000000ull)
        return;
    p->last_draw = now;
    if (total)
        fprintf(stderr, "\r%s %3u%%", pass == 1 ? "planning" : "writing ",
                (unsigned)(done * 100 / total));
    else
        fprintf(stderr, "\r%s %" PRIu64 " MiB", pass == 1 ? "planning" : "writing ", done >> 20);
    fflush(stderr);
}

static void json_u(perch_json *j, const char *key, uint64_t v)
{
    perch_json_key(j, key);
    perch_json_uint(j, v);
}

static void json_header(perch_json *j, const perch_synth_stats *st)
{
    perch_json_key(j, "header");
    perch_json_begin_object(j);
    json_u(j, "buffers_lost", 0);
    json_u(j, "build", 19045);
    json_u(j, "clock_type", 1);
    json_u(j, "cpus", st->cpus);
    json_u(j, "end_time", st->end_time);
    json_u(j, "events_lost", 0);
    json_u(j, "perf_freq", st->perf_freq);
    json_u(j, "pointer_size", 8);
    json_u(j, "start_time", st->start_time);
    perch_json_end_object(j);
}

/* Rows {pid, name, samples} (processes) or {name, samples} (modules), as in model.json. */
static void json_top(perch_json *j, const char *key, const perch_synth_top_row *rows, uint32_t n,
                     bool with_pid)
{
    perch_json_key(j, key);
    perch_json_begin_array(j);
    for (uint32_t i = 0; i < n; i++) {
        perch_json_begin_object(j);
        if (with_pid)
            json_u(j, "pid", rows[i].pid);
        perch_json_key(j, "name");
        perch_json_string(j, rows[i].name);
        json_u(j, "samples", rows[i].samples);
        perch_json_end_object(j);
    }
    perch_json_end_array(j);
}

static void json_synth(perch_json *j, const perch_synth_stats *st, uint64_t seed)
{
    perch_json_key(j, "synth");
    perch_json_begin_object(j);
    json_u(j, "seed", seed);
    json_u(j, "bytes", st->bytes);
    json_u(j, "buffers", st->buffers);
    json_u(j, "records", st->records);
    json_u(j, "cswitches", st->cswitches);
    json_u(j, "slices", st->slices);
    json_u(j, "idle_slices", st->idle_slices);
    json_u(j, "processes", st->processes);
    json_u(j, "processes_started", st->processes_started);
    json_u(j, "processes_ended", st->processes_ended);
    json_u(j, "threads", st->threads);
    json_u(j, "threads_started", st->threads_started);
    json_u(j, "threads_ended", st->threads_ended);
    json_u(j, "images", st->images);
    json_u(j, "rsds_records", st->rsds_records);
    json_u(j, "lbr_records", st->lbr_records);
    json_u(j, "pmc_samples", st->pmc_samples);
    json_u(j, "user_parts_deferred", st->user_parts_deferred);
    json_u(j, "first_timestamp", st->first_timestamp);
    json_u(j, "last_timestamp", st->last_timestamp);
    perch_json_end_object(j);
}

/* The figures an ideal reader must reproduce: the keys of 'perch report --json' where they
 * exist (shared/data/reference/model.json), the generator's own ones under "synth". */
static void json_stats(perch_json *j, const perch_synth_stats *st, uint64_t seed)
{
    perch_json_begin_object(j);
    perch_json_key(j, "by_kind");
    perch_json_begin_object(j);
    for (int k = 0; k < PERCH_KIND_COUNT; k++)
        json_u(j, perch_kind_name((perch_kind)k), st->by_kind[k]);
    perch_json_end_object(j);
    json_u(j, "frames_total", st->frames_total);
    json_header(j, st);
    json_u(j, "pdb_ids", st->pdb_ids);
    json_u(j, "samples", st->samples);
    json_u(j, "samples_with_stack", st->samples_with_stack);
    json_u(j, "stacks_kernel_only", st->stacks_kernel_only);
    json_u(j, "stacks_merged", st->stacks_merged);
    json_u(j, "stacks_user_only", st->stacks_user_only);
    json_top(j, "top_modules", st->top_modules, st->top_module_count, false);
    json_top(j, "top_processes", st->top_processes, st->top_process_count, true);
    json_synth(j, st, seed);
    perch_json_end_object(j);
    perch_json_newline(j);
}

static int write_stats(const char *path, const perch_synth_stats *st, uint64_t seed)
{
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb"); /* same bytes on every platform */
    perch_json j;
    if (!f) {
        fprintf(stderr, "perch synth: cannot create %s\n", path);
        return 1;
    }
    perch_json_init(&j, perch_json_file_sink, f);
    json_stats(&j, st, seed);
    int err = perch_json_flush(&j);
    int cerr = to_stdout ? fflush(f) : fclose(f);
    if (err || cerr) {
        fprintf(stderr, "perch synth: writing %s: %s\n", path,
                perch_strerror(err ? err : PERCH_EIO));
        return 1;
    }
    return 0;
}

static void report(const char *path, const perch_synth_stats *st, uint64_t seed, uint64_t ns)
{
    double secs = (double)(st->last_timestamp - st->first_timestamp) / (double)st->perf_freq;
    double wall = (double)ns / 1e9;
    printf("wrote %s: %.1f MiB, %" PRIu64 " buffers, %u CPUs, %.3f s of trace, seed %" PRIu64 "\n",
           path, (double)st->bytes / 1048576.0, st->buffers, st->cpus, secs, seed);
    printf("  %" PRIu64 " samples (%" PRIu64 " with stacks: %" PRIu64 " merged, %" PRIu64
           " kernel-only, %" PRIu64 " user-only), %" PRIu64 " context switches,\n",
           st->samples, st->samples_with_stack, st->stacks_merged, st->stacks_kernel_only,
           st->stacks_user_only, st->cswitches);
    printf("  %" PRIu64 " ready-thread, %" PRIu64 " PMC samples, %" PRIu64 " LBR records, %" PRIu64
           " processes, %" PRIu64 " threads, %" PRIu64 " images\n",
           st->by_kind[PERCH_KIND_ReadyThread], st->pmc_samples, st->lbr_records, st->processes,
           st->threads, st->images);
    printf("  %.2f s (%.0f MB/s)\n", wall, wall > 0 ? (double)st->bytes / 1e6 / wall : 0.0);
}

static bool ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* --module: the image's identity and its primary .pdata functions into a->image (freed by
 * free_module). 0 or 1 with a message. */
static int load_module(struct synth_args *a)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why = NULL;
    int err = perch_input_open_file(&in, a->module);
    if (err == 0) {
        err = perch_pe_read(&in, &pe, &why);
        perch_input_close(&in);
    }
    if (err) {
        fprintf(stderr, "perch synth: --module %s: %s\n", a->module,
                why ? why : perch_strerror(err));
        return 1;
    }
    const perch_pe_info *pi = perch_pe_get_info(pe);
    uint32_t n = 0, *rva = calloc(pi->function_count + 1u, sizeof *rva);
    uint32_t *size = calloc(pi->function_count + 1u, sizeof *size);
    a->pe = pe;
    a->rva = rva;
    a->fn_size = size;
    for (uint32_t i = 0; rva && size && i < pi->function_count; i++)
        if (pi->functions[i].begin == pi->functions[i].primary_begin &&
            pi->functions[i].end > pi->functions[i].begin) {
            rva[n] = pi->functions[i].begin;
            size[n++] = pi->functions[i].end - pi->functions[i].begin;
        }
    a->image = (perch_synth_image){a->module,
                                   pi->has_codeview ? pi->pdb_path : "",
                                   pi->pdb_guid,
                                   pi->pdb_age,
                                   pi->size_of_image,
                                   pi->time_date_stamp,
                                   n,
                                   rva,
                                   size};
    if (n == 0 || !ascii(a->module) || !ascii(a->image.pdb_name)) {
        fprintf(stderr, "perch synth: --module %s: %s\n", a->module,
                n == 0 ? "the image has no .pdata functions (an x64 image is needed)"
                       : "only ASCII paths can be logged");
        return 1;
    }
    a->opt.image = &a->image;
    return 0;
}

static void free_module(struct synth_args *a)
{
    perch_pe_destroy(a->pe);
    free(a->rva);
    free(a->fn_size);
}

/* Writes the trace a asks for and says what was written. 0 or 1. */
static int write_trace(struct synth_args *a)
{
    struct progress prog = {perch_is_terminal(stderr), perch_monotonic_ns(), 0};
    perch_output out;
    perch_synth_stats st;
    a->opt.progress = on_progress;
    a->opt.progress_ctx = &prog;
    int err = perch_output_open_file(&out, a->path);
    if (err) {
        fprintf(stderr, "perch synth: cannot create %s: %s\n", a->path, perch_strerror(err));
        return 1;
    }
    err = perch_synth_write(&a->opt, &out, &st);
    int cerr = out.close(out.ctx);
    if (prog.on)
        fprintf(stderr, "\r%20s\r", "");
    if (err || cerr) {
        /* never removed: the path may be a device or something else not ours to delete */
        fprintf(stderr, "perch synth: writing %s: %s (what was written is left as it is)\n",
                a->path, perch_strerror(err ? err : cerr));
        return 1;
    }
    if (!a->stats_path || strcmp(a->stats_path, "-") != 0)
        report(a->path, &st, a->opt.seed, perch_monotonic_ns() - prog.started);
    return a->stats_path ? write_stats(a->stats_path, &st, a->opt.seed) : 0;
}

int perch_cmd_synth(int argc, char **argv)
{
    struct synth_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(&a, argc, argv);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "Try 'perch synth --help'.\n");
        return 2;
    }
    rc = a.module != NULL && load_module(&a) != 0 ? 1 : write_trace(&a);
    free_module(&a);
    return rc;
}
