/*
 * Export throughput: each format exports a synthetic record stream of 1,000,000 samples
 * (64 threads in 8 processes, 20,000 distinct kernel+user stacks of 8-40 frames, 250,000
 * slices with PMC deltas, 40 kernel and 240 user modules arriving late) and is compared with
 * the floor: fwrite of the same number of bytes to the same kind of file, measured side by
 * side in this run. The generator's own cost (replaying into an empty sink) is reported too,
 * so the ratio can be read as "export work + generator" over "writing the bytes".
 *
 *   bench_export [samples] [output dir] [format]   (defaults: 1000000, /tmp, all)
 *
 * Times are process CPU time (user + system, CLOCK_PROCESS_CPUTIME_ID), so other load on a
 * shared machine does not skew the ratios. Also prints the peak resident set after each format (getrusage, monotonic over the run):
 * the aggregate formats hold distinct stacks, not samples.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "perch/error.h"
#include "perch/export.h"
#include "perch/io.h"
#include "perch/records.h"

#define THREADS 64
#define PROCESSES 8
#define STACKS 20000
#define KMODS 40
#define UMODS 30
#define MAX_DEPTH 40
#define KBASE 0xfffff80000000000ull
#define UBASE 0x7ff000000000ull

struct gen {
    uint64_t samples;
    uint64_t frames[STACKS][MAX_DEPTH];
    uint32_t depth[STACKS], kdepth[STACKS];
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void gen_init(struct gen *g, uint64_t samples)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    g->samples = samples;
    for (uint32_t i = 0; i < STACKS; i++) {
        g->depth[i] = 8 + (uint32_t)(rng_next(&s) % (MAX_DEPTH - 7));
        g->kdepth[i] = (uint32_t)(rng_next(&s) % 11);
        if (g->kdepth[i] > g->depth[i])
            g->kdepth[i] = g->depth[i];
        for (uint32_t f = 0; f < g->depth[i]; f++) {
            uint64_t r = rng_next(&s);
            g->frames[i][f] = f < g->kdepth[i]
                                  ? KBASE + (r % KMODS) * 0x100000 + (r >> 20) % 0x80000
                                  : UBASE + (r % UMODS) * 0x1000000 + (r >> 20) % 0x800000;
        }
    }
}

static int emit_header(const struct gen *g, const perch_sink *k)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    perch_counters_rec counters = {2, names};
    perch_trace_info info;
    int err;
    memset(&info, 0, sizeof info);
    info.source = "bench";
    info.cpu_count = 8;
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    info.start_raw = 1000;
    info.start_filetime = 133000000000000000ull;
    err = k->trace_info ? k->trace_info(k->ctx, &info) : 0;
    if (!err && k->counters)
        err = k->counters(k->ctx, &counters);
    for (uint32_t i = 0; i < STACKS && !err && k->stack; i++) {
        perch_stack_rec st = {i + 1, g->depth[i], g->kdepth[i], g->frames[i]};
        err = k->stack(k->ctx, &st);
    }
    return err;
}

static int emit_events(const struct gen *g, const perch_sink *k)
{
    uint64_t s = 12345;
    int err = 0;
    for (uint64_t j = 0; j < g->samples && !err; j++) {
        uint64_t r = rng_next(&s);
        uint32_t t = (uint32_t)(r % THREADS), p = t % PROCESSES;
        uint32_t pick = (uint32_t)((r >> 8) % ((r >> 24) % (STACKS / PROCESSES) + 1));
        perch_sample_rec sm;
        memset(&sm, 0, sizeof sm);
        sm.thread_key = 1000 + t;
        sm.tid = 4000 + t * 4;
        sm.cpu = (uint16_t)(j % 8);
        sm.ts = 1000 + j * 1000;
        sm.stack_id = pick * PROCESSES + p + 1;
        sm.ip = g->frames[sm.stack_id - 1][0];
        sm.count = 1;
        err = k->sample ? k->sample(k->ctx, &sm) : 0;
        if (!err && j % 4 == 3 && k->slice) {
            perch_slice_rec sl;
            memset(&sl, 0, sizeof sl);
            sl.thread_key = sm.thread_key;
            sl.tid = sm.tid;
            sl.cpu = sm.cpu;
            sl.start_ts = sm.ts - 3000;
            sl.end_ts = sm.ts;
            sl.priority = 8;
            sl.wait_reason = (int8_t)(r % 30);
            sl.pmc_count = 2;
            sl.pmc_delta[0] = r % 100000;
            sl.pmc_delta[1] = r % 70000;
            err = k->slice(k->ctx, &sl);
        }
    }
    return err;
}

static int emit_entities(const perch_sink *k)
{
    char path[64], name[32];
    int err = 0;
    for (uint32_t m = 0; m < KMODS + PROCESSES * UMODS && !err && k->module; m++) {
        perch_module_rec mod;
        bool kernel = m < KMODS;
        uint32_t p = kernel ? 0 : (m - KMODS) / UMODS, i = kernel ? m : (m - KMODS) % UMODS;
        memset(&mod, 0, sizeof mod);
        snprintf(path, sizeof path, "\\SystemRoot\\system32\\%s%u.%s", kernel ? "drv" : "lib",
                 i, kernel ? "sys" : "dll");
        mod.key = 10000 + m;
        mod.process_key = kernel ? 0 : 100 + p;
        mod.base = kernel ? KBASE + (uint64_t)i * 0x100000 : UBASE + (uint64_t)i * 0x1000000;
        mod.size = kernel ? 0x80000 : 0x800000;
        mod.path = path;
        mod.pdb_name = "";
        err = k->module(k->ctx, &mod);
    }
    for (uint32_t t = 0; t < THREADS && !err && k->thread; t++) {
        perch_thread_rec th = {1000 + t, 100 + t % PROCESSES, 4000 + t * 4, 1000 + t % PROCESSES * 4,
                               0, 0, 0, name};
        snprintf(name, sizeof name, "worker %u", t);
        err = k->thread(k->ctx, &th);
    }
    for (uint32_t p = 0; p < PROCESSES && !err && k->process; p++) {
        perch_process_rec pr;
        memset(&pr, 0, sizeof pr);
        snprintf(name, sizeof name, "app%u.exe", p);
        pr.key = 100 + p;
        pr.pid = 1000 + p * 4;
        pr.image_name = name;
        pr.command_line = "";
        err = k->process(k->ctx, &pr);
    }
    return err;
}

static int gen_replay(void *ctx, const perch_sink *k)
{
    const struct gen *g = ctx;
    int err = emit_header(g, k);
    if (!err)
        err = emit_events(g, k);
    if (!err)
        err = emit_entities(k);
    if (!err && k->finish)
        err = k->finish(k->ctx);
    return err;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

struct file_out {
    FILE *f;
    uint64_t bytes;
};

static int file_write(void *ctx, const void *buf, size_t len)
{
    struct file_out *o = ctx;
    o->bytes += len;
    return fwrite(buf, 1, len, o->f) == len ? 0 : PERCH_EIO;
}

/* The floor: fwrite `bytes` bytes in 32 KiB blocks to path. */
static double floor_time(const char *path, uint64_t bytes)
{
    static char block[1 << 15];
    FILE *f = fopen(path, "wb");
    double t0 = now();
    memset(block, 'x', sizeof block);
    for (uint64_t left = bytes; f && left;) {
        size_t n = left < sizeof block ? (size_t)left : sizeof block;
        fwrite(block, 1, n, f);
        left -= n;
    }
    if (f)
        fclose(f);
    return now() - t0;
}

static int bench_format(struct gen *g, perch_export_format fmt, const char *dir, double source)
{
    char path[512];
    perch_record_source src = {g, gen_replay, NULL};
    struct file_out o = {NULL, 0};
    perch_output out = {file_write, NULL, NULL, &o};
    double t0, t, fl;
    int err;
    snprintf(path, sizeof path, "%s/bench_export.%s", dir, perch_export_format_name(fmt));
    o.f = fopen(path, "wb");
    if (!o.f)
        return PERCH_EIO;
    t0 = now();
    err = perch_export_run(fmt, NULL, &src, &out);
    fclose(o.f);
    t = now() - t0;
    remove(path);
    fl = floor_time(path, o.bytes);
    remove(path);
    if (err)
        return err;
    printf("%-10s passes %u  %10" PRIu64 " bytes  export %7.3f s  floor %6.3f s  ratio %6.1f  "
           "(minus generator x%u: %6.1f)  max RSS %ld MiB\n",
           perch_export_format_name(fmt), perch_export_passes(fmt), o.bytes, t, fl, t / fl,
           perch_export_passes(fmt), (t - source * perch_export_passes(fmt)) / fl,
           max_rss_kb() / 1024);
    return 0;
}

int main(int argc, char **argv)
{
    static const perch_export_format order[] = {PERCH_EXPORT_FOLDED, PERCH_EXPORT_PPROF,
                                                PERCH_EXPORT_SPEEDSCOPE, PERCH_EXPORT_GECKO,
                                                PERCH_EXPORT_CHROME};
    uint64_t samples = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    struct gen *g = malloc(sizeof *g);
    perch_sink empty;
    double t0, source;
    if (!g)
        return 1;
    gen_init(g, samples);
    memset(&empty, 0, sizeof empty);
    t0 = now();
    gen_replay(g, &empty);
    source = now() - t0;
    printf("bench_export: %" PRIu64 " samples, %u stacks, %u threads; generator alone %.3f s; "
           "start RSS %ld MiB\n", samples, STACKS, THREADS, source, max_rss_kb() / 1024);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int err;
        if (argc > 3 && strcmp(argv[3], perch_export_format_name(order[i])) != 0)
            continue;
        err = bench_format(g, order[i], dir, source);
        if (err) {
            fprintf(stderr, "%s: %s\n", perch_export_format_name(order[i]), perch_strerror(err));
            return 1;
        }
    }
    free(g);
    return 0;
}
