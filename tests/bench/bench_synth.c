/*
 * Benchmark of perch synth: generation speed into a sink that discards the bytes, side by side
 * with the floor (filling and handing over the same number of 64 KiB buffers), and peak memory
 * after a small and a large run (flat memory: the two peaks should be about equal).
 *
 * Usage: bench_synth [MiB] (default 256). Prints MB/s of both and their ratio.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perch/platform.h"
#include "perch/synth.h"

struct sink {
    uint64_t bytes;
    uint8_t check;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *s = ctx;
    s->bytes += len;
    s->check ^= ((const uint8_t *)buf)[len / 2]; /* touch the data so nothing is skipped */
    return 0;
}

static int sink_close(void *ctx)
{
    (void)ctx;
    return 0;
}

static double run_synth(uint64_t bytes, perch_synth_stats *st, double *cpu_secs)
{
    struct sink s = {0, 0};
    perch_output out = {sink_write, NULL, sink_close, &s};
    perch_synth_options opt;
    perch_synth_options_init(&opt);
    opt.target_bytes = bytes;
    uint64_t t0 = perch_monotonic_ns();
    clock_t c0 = clock();
    if (perch_synth_write(&opt, &out, st) != 0) {
        fprintf(stderr, "bench_synth: perch_synth_write failed\n");
        exit(1);
    }
    *cpu_secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    return (double)(perch_monotonic_ns() - t0) / 1e9;
}

/* The floor: produce the same buffers with memset and hand them to the same sink. */
static double run_floor(uint64_t bytes)
{
    struct sink s = {0, 0};
    uint8_t *buf = malloc(PERCH_SYNTH_BUFFER_SIZE);
    if (!buf)
        exit(1);
    int (*volatile write)(void *, const void *, size_t) = sink_write; /* not inlined away */
    uint64_t t0 = perch_monotonic_ns();
    for (uint64_t done = 0; done < bytes; done += PERCH_SYNTH_BUFFER_SIZE) {
        memset(buf, (int)(done >> 16), PERCH_SYNTH_BUFFER_SIZE);
        write(&s, buf, PERCH_SYNTH_BUFFER_SIZE);
    }
    double secs = (double)(perch_monotonic_ns() - t0) / 1e9;
    free(buf);
    return secs;
}

int main(int argc, char **argv)
{
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
    perch_synth_stats small, big;
    double cpu;
    if (mib < 16)
        mib = 16;
    run_synth(16u << 20, &small, &cpu);
    uint64_t rss_small = perch_peak_rss_bytes();
    double t = run_synth(mib << 20, &big, &cpu);
    uint64_t rss_big = perch_peak_rss_bytes();
    double f = run_floor(big.bytes);
    double mbs = (double)big.bytes / 1e6 / t, floor_mbs = (double)big.bytes / 1e6 / f;
    printf("synth %" PRIu64 " MiB: %.2f s wall (%.2f s CPU), %.0f MB/s wall, %.0f MB/s per CPU "
           "second (both passes); floor %.0f MB/s; floor/synth %.1fx\n",
           big.bytes >> 20, t, cpu, mbs, (double)big.bytes / 1e6 / cpu, floor_mbs, floor_mbs / mbs);
    printf("records %" PRIu64 " (%.1f M/s), samples %" PRIu64 ", cswitches %" PRIu64 "\n",
           big.records, (double)big.records / 1e6 / t, big.samples, big.cswitches);
    printf("peak RSS after 16 MiB: %" PRIu64 " KiB, after %" PRIu64 " MiB: %" PRIu64
           " KiB (ratio %.2f)\n",
           rss_small >> 10, mib, rss_big >> 10,
           rss_small ? (double)rss_big / (double)rss_small : 0.0);
    return 0;
}
