/*
 * perch_synth_write: checks the options, runs the scenario twice (a planning pass that only
 * counts, then the writing pass) so that the header buffer written first can state the
 * trace's EndTime and BuffersWritten, and fills in the stats.
 */
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "synth_internal.h"
#include "util/mem.h"

#define QPC_HZ              10000000ull
#define BUILD               19045u
#define CPU_MHZ             2995u
#define FILETIME_2026_01_15 134129088000000000ull

void perch_synth_options_init(perch_synth_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->cpus = PERCH_SYNTH_DEFAULT_CPUS;
    opt->seed = 1;
    opt->target_bytes = PERCH_SYNTH_DEFAULT_SIZE;
}

uint64_t perch_synth_min_bytes(uint32_t cpus)
{
    return (uint64_t)(cpus + 2u) * PERCH_SYNTH_BUFFER_SIZE;
}

/* An image's functions lie inside it, each at least one byte. */
static bool image_ok(const perch_synth_image *im)
{
    if (!im->path || im->function_count == 0 || !im->function_rva || !im->function_size ||
        im->size_of_image == 0)
        return false;
    for (uint32_t i = 0; i < im->function_count; i++)
        if (im->function_size[i] == 0 || im->function_rva[i] >= im->size_of_image ||
            im->function_size[i] > im->size_of_image - im->function_rva[i])
            return false;
    return true;
}

static int check_options(const perch_synth_options *opt)
{
    if (!opt || opt->struct_size < sizeof *opt)
        return PERCH_EINVAL;
    if (opt->image && !image_ok(opt->image))
        return PERCH_EINVAL;
    if (opt->cpus < 1 || opt->cpus > PERCH_SYNTH_MAX_CPUS)
        return PERCH_EINVAL;
    if (opt->target_bytes == 0 && opt->duration_ms == 0)
        return PERCH_EINVAL;
    if (opt->target_bytes && opt->target_bytes < perch_synth_min_bytes(opt->cpus))
        return PERCH_EINVAL;
    if (opt->target_bytes / PERCH_SYNTH_BUFFER_SIZE > UINT32_MAX ||
        opt->duration_ms > UINT64_MAX / 2 / QPC_HZ)
        return PERCH_ERANGE;
    return 0;
}

static uint64_t start_raw(uint64_t seed)
{
    return QPC_HZ * (5u * 3600u + synth_hash(seed, 1) % 3600u); /* about 5 h after boot */
}

static void fill_logfile(struct synth_logfile *lf, const perch_synth_options *opt, uint64_t last_ts,
                         uint64_t buffers, const struct synth_sim *s)
{
    memset(lf, 0, sizeof *lf);
    lf->cpus = opt->cpus;
    lf->build = BUILD;
    lf->perf_freq = QPC_HZ;
    lf->start_raw = start_raw(opt->seed);
    lf->start_time = FILETIME_2026_01_15 + (synth_hash(opt->seed, 2) % 86400u) * QPC_HZ;
    lf->boot_time = lf->start_time - lf->start_raw; /* QPC ticks are 100 ns here */
    lf->end_time = lf->start_time + (last_ts - lf->start_raw);
    lf->buffers_written = (uint32_t)buffers;
    lf->max_file_mb = (uint32_t)((buffers * PERCH_SYNTH_BUFFER_SIZE + 0xFFFFF) >> 20);
    lf->cpu_mhz = CPU_MHZ;
    lf->logger_tid = s->th[s->cpus].tid; /* the first System thread */
    lf->logger_pid = 4;
}

/* One run of the scenario; out == NULL plans (lf is then ignored). */
static int run_pass(struct synth_sim *s, const perch_synth_options *opt, perch_output *out,
                    int pass, const struct synth_logfile *lf)
{
    int err;
    memset(s, 0, sizeof *s);
    s->seed = opt->seed;
    s->rng.s = synth_hash(opt->seed, 0x5EED);
    s->cpus = opt->cpus;
    err = perch__synth_writer_init(&s->w, out, opt->cpus);
    if (err)
        return err;
    s->w.pass = pass;
    s->w.progress = opt->progress;
    s->w.progress_ctx = opt->progress_ctx;
    s->w.bytes_goal = opt->target_bytes;
    if (opt->target_bytes)
        s->w.full_budget = opt->target_bytes / PERCH_SYNTH_BUFFER_SIZE - 1 - opt->cpus;
    s->stop_at =
        opt->duration_ms ? start_raw(opt->seed) + opt->duration_ms * (QPC_HZ / 1000) : SYNTH_NEVER;
    s->now = start_raw(opt->seed);
    s->image = opt->image;
    perch__synth_world_init(s);
    struct synth_logfile dummy;
    if (!lf) {
        memset(&dummy, 0, sizeof dummy);
        lf = &dummy;
    }
    err = perch__synth_write_header_buffer(&s->w, lf);
    s->now = start_raw(opt->seed) + 10;
    if (!err) {
        perch__synth_rundown(s);
        s->now += 1000;
        perch__synth_sched_start(s);
        perch__synth_run(s);
        err = perch__synth_writer_finish(&s->w);
    }
    return err ? err : s->w.err;
}

static void finish_stats(struct synth_sim *s, const struct synth_logfile *lf, perch_synth_stats *st)
{
    *st = s->st;
    st->bytes = s->w.bytes;
    st->buffers = s->w.buffers;
    st->records = s->w.records;
    st->by_kind[PERCH_KIND_OTHER_KERNEL]++; /* the logfile header record */
    st->stacks_merged = st->user_parts_deferred;
    st->stacks_kernel_only = st->samples_with_stack - st->stacks_user_only - st->stacks_merged;
    st->perf_freq = lf->perf_freq;
    st->first_timestamp = lf->start_raw;
    st->last_timestamp = s->w.last_ts;
    st->start_time = lf->start_time;
    st->end_time = lf->end_time;
    st->cpus = s->cpus;
    perch__synth_top_lists(s, st);
}

int perch_synth_write(const perch_synth_options *opt, perch_output *out, perch_synth_stats *stats)
{
    struct synth_logfile lf;
    struct synth_sim *s;
    int err = check_options(opt);
    if (err)
        return err;
    if (!out || !out->write)
        return PERCH_EINVAL;
    s = perch__calloc(1, sizeof *s);
    if (!s)
        return PERCH_ENOMEM;
    err = run_pass(s, opt, NULL, 1, NULL);
    if (!err) {
        fill_logfile(&lf, opt, s->w.last_ts, s->w.buffers, s);
        perch__synth_writer_free(&s->w);
        err = run_pass(s, opt, out, 2, &lf);
    }
    if (!err && (s->w.buffers != lf.buffers_written ||
                 s->w.last_ts + lf.start_time != lf.end_time + lf.start_raw))
        err = PERCH_ESTATE; /* the two passes diverged: a bug, never a silent wrong header */
    if (!err && stats)
        finish_stats(s, &lf, stats);
    perch__synth_writer_free(&s->w);
    perch__free(s);
    return err;
}
