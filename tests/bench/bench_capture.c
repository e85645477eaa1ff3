/*
 * Capture benchmark: size and speed of the capture writer and reader on the trace-shaped
 * synthetic stream of tests/unit/capture_synth.h, measured side by side in one run with the
 * floors (memcpy and CRC-32C over the same capture bytes).
 *
 *   bench_capture [samples]     (default 400000)
 *
 * Size is compared with an estimate of the raw kernel events behind the same records
 * (docs/etw-layouts.md): per sample a SampledProfile event (32 bytes) and a StackWalk event
 * (16-byte header + 16 bytes + 8 per frame); per slice a CSwitch (16 + 24) and a ReadyThread
 * (16 + 8). Real traces carry much more (rundown, images, other providers), so the ratio on a
 * real trace is lower than this one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/capture_synth.h"
#include "capture/crc32c.h"
#include "perch/platform.h"

enum { REPS = 5 };

static double seconds_since(uint64_t t0)
{
    return (double)(perch_monotonic_ns() - t0) / 1e9;
}

static uint64_t raw_estimate(const synth_rec *r)
{
    uint64_t bytes = 0;
    uint32_t *frames = NULL, nstacks = 0;
    for (size_t i = 0; i < r->count; i++)
        if (r->ev[i].type == PERCH_CHUNK_STACK && r->ev[i].u.stack.id > nstacks)
            nstacks = r->ev[i].u.stack.id;
    frames = calloc((size_t)nstacks + 1, sizeof *frames);
    if (!frames)
        abort();
    for (size_t i = 0; i < r->count; i++) {
        const synth_ev *e = &r->ev[i];
        if (e->type == PERCH_CHUNK_STACK)
            frames[e->u.stack.id] = e->u.stack.frame_count;
        else if (e->type == PERCH_CHUNK_SAMPLE)
            bytes +=
                32 + 32 + 8ull * frames[e->u.sample.stack_id <= nstacks ? e->u.sample.stack_id : 0];
        else if (e->type == PERCH_CHUNK_SLICE)
            bytes += 40 + 24;
    }
    free(frames);
    return bytes;
}

static double time_write(const synth_rec *r, size_t *len)
{
    double best = 1e9;
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t t0 = perch_monotonic_ns();
        uint8_t *data = synth_capture(r, 0, len, NULL);
        double t = seconds_since(t0);
        if (!data)
            abort();
        free(data);
        best = t < best ? t : best;
    }
    return best;
}

static double time_replay(const uint8_t *data, size_t len)
{
    static const perch_sink none;
    perch_capture_status st;
    double best = 1e9;
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t t0 = perch_monotonic_ns();
        if (perch_capture_replay_memory(data, len, &none, &st) != 0)
            abort();
        double t = seconds_since(t0);
        best = t < best ? t : best;
    }
    return best;
}

static double time_floor(const uint8_t *data, size_t len, bool crc, uint32_t *sink)
{
    uint8_t *copy = malloc(len);
    double best = 1e9;
    if (!copy)
        abort();
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t t0 = perch_monotonic_ns();
        if (crc)
            *sink ^= perch__crc32c(0, data, len);
        else
            memcpy(copy, data, len);
        double t = seconds_since(t0);
        best = t < best ? t : best;
    }
    *sink ^= copy[len / 2];
    free(copy);
    return best;
}

int main(int argc, char **argv)
{
    size_t samples = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 400000;
    synth_rec r = {0};
    size_t len = 0;
    uint32_t keep = 0;
    synth_random(&r, 1, samples);
    uint64_t raw = raw_estimate(&r);
    double tw = time_write(&r, &len);
    uint8_t *data = synth_capture(&r, 0, &len, NULL);
    if (!data)
        return 1;
    double tr = time_replay(data, len);
    double tm = time_floor(data, len, false, &keep);
    double tc = time_floor(data, len, true, &keep);
    double mb = (double)len / 1e6;
    printf("records %zu (samples %zu), capture %zu bytes = %.2f bytes/sample\n", r.count, samples,
           len, (double)len / (double)samples);
    printf("raw kernel events (estimate) %llu bytes; capture = %.1f%% of it\n",
           (unsigned long long)raw, 100.0 * (double)len / (double)raw);
    printf("write  %8.1f MB/s %7.2f Mrec/s\n", mb / tw, (double)r.count / tw / 1e6);
    printf("replay %8.1f MB/s %7.2f Mrec/s\n", mb / tr, (double)r.count / tr / 1e6);
    printf("floor: memcpy %8.1f MB/s, crc32c %8.1f MB/s\n", mb / tm, mb / tc);
    printf("ratios: write/memcpy %.1fx slower, replay/memcpy %.1fx, replay/crc32c %.1fx\n", tw / tm,
           tr / tm, tr / tc);
    printf("peak rss %.1f MB (includes the recorded stream)  [%u]\n",
           (double)perch_peak_rss_bytes() / 1e6, keep & 1);
    free(data);
    synth_free(&r);
    return 0;
}
