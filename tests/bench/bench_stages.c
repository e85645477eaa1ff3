/*
 * The stages of an import, each alone on one thread, for tests/bench/run-bench.sh: the script
 * times whole processes, so each mode runs one more stage than the one before and the
 * differences add up to the end-to-end import.
 *   read FILE     the .etl reader: every record in time order, its payload touched
 *   decode FILE   + perch_decode of every record
 *   model FILE    + the model (decoding inside), into a sink that keeps nothing
 *   xpress FILE [MB]   the XPRESS decoder alone over FILE's compressed buffers, repeated
 *                 until MB (default 512) of output; prints GB/s of output (CPU time)
 *   host          the host's speed: HOST_ADDS dependent additions, one a cycle on the x86-64
 *                 and arm64 cores of today, so their rate is the core's clock as this process
 *                 sees it (on a VM, what the host gives it); the script times the process
 * Each mode prints one line "records N" (or the xpress or host figure) so the script can check
 * it ran.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etl/le.h"
#include "etl/xpress.h"
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/model.h"
#include "perch/pipeline.h"

static int fail(const char *what, int err)
{
    fprintf(stderr, "bench_stages: %s: %s\n", what, perch_strerror(err));
    return 1;
}

static int run_reader(const char *path, int decode)
{
    perch_etl_reader *r = NULL;
    perch_event ev;
    perch_decoded d;
    uint64_t n = 0, sum = 0;
    int err = perch_etl_open_file(path, NULL, &r, NULL);
    if (err < 0)
        return fail(path, err);
    while ((err = perch_etl_next(r, &ev)) == 0) {
        n++;
        sum += ev.payload_len ? ev.payload[0] + ev.payload[ev.payload_len - 1] : 0;
        if (decode)
            sum += (uint64_t)perch_decode(&ev, &d, NULL);
    }
    perch_etl_destroy(r);
    printf("records %llu (checksum %llu)\n", (unsigned long long)n, (unsigned long long)sum);
    return err == PERCH_EOF ? 0 : fail(path, err);
}

static int run_model(const char *path)
{
    perch_input in;
    perch_sink sink;
    perch_pipeline_options o = {.sz = sizeof o, .threads = 1};
    memset(&sink, 0, sizeof sink);
    int err = perch_input_open_file(&in, path);
    if (err < 0)
        return fail(path, err);
    err = perch_pipeline_etl(&in, "etl:bench", &sink, &o, NULL);
    if (err < 0)
        return fail(path, err);
    printf("records modelled\n");
    return 0;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_xpress(const char *path, uint64_t target)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data, *out = malloc(1u << 24);
    long len;
    uint64_t produced = 0;
    if (f == NULL || out == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0)
        return fail(path, PERCH_EIO);
    data = malloc((size_t)len);
    rewind(f);
    if (data == NULL || fread(data, 1, (size_t)len, f) != (size_t)len)
        return fail(path, PERCH_EIO);
    fclose(f);
    double t0 = cpu_seconds();
    while (produced < target) {
        uint64_t before = produced;
        for (long off = 0; off + 0x48 <= len;) {
            uint32_t size = perch__le32(data + off), used = perch__le32(data + off + 0x30);
            size_t n = 0;
            if (size < 0x48 || size > len - off)
                break;
            if ((perch__le16(data + off + 0x34) & 0x40) && used >= 0x48 &&
                perch__xpress_decompress(data + off + 0x48, size - 0x48, out, used - 0x48, &n) == 0)
                produced += n;
            off += size;
        }
        if (produced == before)
            return fail("no compressed buffer in the file", PERCH_EFORMAT);
    }
    double t = cpu_seconds() - t0;
    printf("xpress %.2f GB/s of output (%.0f MB in %.3f s CPU)\n", (double)produced / t / 1e9,
           (double)produced / 1e6, t);
    free(data);
    free(out);
    return 0;
}

#define HOST_ADDS 400000000u

static int run_host(void)
{
    uint64_t x = 1;
    for (uint32_t i = 0; i < HOST_ADDS; i++) {
        x += 1;
        __asm__ volatile("" : "+r"(x)); /* one add each: no unrolling into fewer, no folding */
    }
    printf("host %" PRIu64 " additions\n", x - 1);
    return x - 1 == HOST_ADDS ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "host") == 0)
        return run_host();
    if (argc < 3) {
        fprintf(stderr, "usage: bench_stages read|decode|model|xpress FILE [MB] | host\n");
        return 2;
    }
    if (strcmp(argv[1], "read") == 0)
        return run_reader(argv[2], 0);
    if (strcmp(argv[1], "decode") == 0)
        return run_reader(argv[2], 1);
    if (strcmp(argv[1], "model") == 0)
        return run_model(argv[2]);
    if (strcmp(argv[1], "xpress") == 0)
        return run_xpress(argv[2], (uint64_t)(argc > 3 ? atol(argv[3]) : 512) << 20);
    fprintf(stderr, "bench_stages: unknown mode '%s'\n", argv[1]);
    return 2;
}
