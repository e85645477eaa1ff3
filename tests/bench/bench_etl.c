/*
 * Benchmark of the .etl reader, measured side by side with the floor in one run.
 *
 * For an uncompressed trace (airbus ShutdownPerfDiagLogger) and a compressed one (PerfView
 * x64), the real file is replicated in memory to at least the target size: its header buffer
 * once, then its data buffers again and again (sequence numbers shifted per copy so each CPU's
 * buffers stay in copy order). The image is written to a temporary file, and the program
 * times, on the same bytes: `cat FILE > /dev/null`, the reader from memory and the reader
 * from the file (every record, time-ordered). It also times the XPRESS decoder alone over
 * every compressed buffer of the file, repeated to the target output size. Each figure is
 * the best of three rounds taken in turn (the machine is shared; the best is the least
 * disturbed).
 *
 * Usage: bench_etl [target_mb] [temp_dir]   (data from PERCH_DATA_DIR, default ../shared/data)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etl/buffer.h"
#include "etl/le.h"
#include "etl/xpress.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/platform.h"

struct blob {
    uint8_t *p;
    size_t len;
};

static struct blob read_all(const char *path)
{
    struct blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        fprintf(stderr, "bench_etl: cannot read %s\n", path);
        exit(1);
    }
    b.p = malloc((size_t)n);
    if (b.p == NULL || fread(b.p, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    b.len = (size_t)n;
    fclose(f);
    return b;
}

/* Header buffer once, then the data buffers until the image reaches target bytes. */
static struct blob replicate(const struct blob *src, size_t target)
{
    size_t first = perch__le32(src->p), body = src->len - first, copies, at;
    uint64_t max_seq = 0;
    struct blob img;
    for (size_t off = first; off + 0x48 <= src->len; off += perch__le32(src->p + off)) {
        uint64_t s = perch__le64(src->p + off + 0x18);
        max_seq = s > max_seq ? s : max_seq;
        if (perch__le32(src->p + off) < 0x48)
            break;
    }
    copies = (target + body - 1) / body;
    img.len = first + copies * body;
    img.p = malloc(img.len);
    if (img.p == NULL)
        exit(1);
    memcpy(img.p, src->p, first);
    at = first;
    for (size_t c = 0; c < copies; c++, at += body) {
        memcpy(img.p + at, src->p + first, body);
        for (size_t off = at; off < at + body; off += perch__le32(img.p + off)) {
            uint64_t s = perch__le64(img.p + off + 0x18) + c * (max_seq + 1);
            for (int i = 0; i < 8; i++)
                img.p[off + 0x18 + i] = (uint8_t)(s >> (8 * i));
        }
    }
    return img;
}

static double seconds_since(uint64_t t0)
{
    return (double)(perch_monotonic_ns() - t0) / 1e9;
}

static uint64_t drain(perch_etl_reader *r)
{
    perch_event ev;
    uint64_t n = 0, acc = 0;
    while (perch_etl_next(r, &ev) == 0) {
        n++;
        acc += ev.payload_len;
    }
    if (acc == 0)
        fprintf(stderr, "bench_etl: no payload bytes?\n");
    return n;
}

static double time_cat(const char *path)
{
    char cmd[4200];
    uint64_t t0;
    snprintf(cmd, sizeof cmd, "cat '%s' > /dev/null", path);
    t0 = perch_monotonic_ns();
    if (system(cmd) != 0)
        exit(1);
    return seconds_since(t0);
}

enum { ROUNDS = 3 }; /* each measurement is the best of ROUNDS, taken in turn */

static double time_reader(const struct blob *img, const char *tmp, bool from_file, uint64_t *n)
{
    perch_etl_reader *r = NULL;
    uint64_t t0 = perch_monotonic_ns();
    int err = from_file ? perch_etl_open_file(tmp, NULL, &r, NULL)
                        : perch_etl_open_memory(img->p, img->len, NULL, &r, NULL);
    if (err != 0)
        exit(1);
    *n = drain(r);
    perch_etl_destroy(r);
    return seconds_since(t0);
}

static double best(double a, double b)
{
    return a < b ? a : b;
}

static void bench_reader(const char *name, const struct blob *img, const char *tmp)
{
    uint64_t n_mem = 0, n_file = 0;
    double t_mem = 1e9, t_file = 1e9, t_cat = 1e9, mb = (double)img->len / 1e6;
    FILE *f = fopen(tmp, "wb");
    if (f == NULL || fwrite(img->p, 1, img->len, f) != img->len || fclose(f) != 0)
        exit(1);
    for (int round = 0; round < ROUNDS; round++) {
        t_cat = best(t_cat, time_cat(tmp));
        t_mem = best(t_mem, time_reader(img, tmp, false, &n_mem));
        t_file = best(t_file, time_reader(img, tmp, true, &n_file));
    }
    remove(tmp);
    printf("%s: %.0f MB image, %llu records (best of %d rounds)\n", name, mb,
           (unsigned long long)n_mem, ROUNDS);
    printf("  cat > /dev/null   %7.3f s  %8.0f MB/s\n", t_cat, mb / t_cat);
    printf("  reader (memory)   %7.3f s  %8.0f MB/s  %6.2f M records/s\n", t_mem, mb / t_mem,
           (double)n_mem / t_mem / 1e6);
    printf("  reader (file)     %7.3f s  %8.0f MB/s  %6.2f M records/s  = %.2fx cat\n", t_file,
           mb / t_file, (double)n_file / t_file / 1e6, t_file / t_cat);
}

static void bench_xpress(const struct blob *src, size_t target)
{
    uint8_t *out = malloc(1 << 24);
    uint64_t t0, produced = 0, buffers = 0;
    double t = 1e9;
    for (int round = 0; round < ROUNDS; round++) {
        produced = buffers = 0;
        t0 = perch_monotonic_ns();
        while (produced < target) {
            for (size_t off = 0; off + 0x48 <= src->len;) {
                uint32_t size = perch__le32(src->p + off), used = perch__le32(src->p + off + 0x30);
                uint16_t flags = perch__le16(src->p + off + 0x34);
                size_t n = 0;
                if (size < 0x48)
                    break;
                if ((flags & PERCH__ETL_BUF_COMPRESSED) &&
                    perch__xpress_decompress(src->p + off + 0x48, size - 0x48, out, used - 0x48,
                                             &n) == 0) {
                    produced += n;
                    buffers++;
                }
                off += size;
            }
        }
        t = best(t, seconds_since(t0));
    }
    printf("xpress decoder alone: %llu buffers, %.0f MB out in %.3f s = %.2f GB/s output\n",
           (unsigned long long)buffers, (double)produced / 1e6, t, (double)produced / t / 1e9);
    free(out);
}

int main(int argc, char **argv)
{
    size_t target = (size_t)(argc > 1 ? atol(argv[1]) : 512) << 20;
    const char *tmpdir = argc > 2 ? argv[2] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    const char *data = getenv("PERCH_DATA_DIR") ? getenv("PERCH_DATA_DIR") : "../shared/data";
    static const char *const files[2][2] = {
        {"uncompressed (airbus_ShutdownPerfDiagLogger)", "etl/airbus_ShutdownPerfDiagLogger.etl"},
        {"compressed (perfview_net.4.5.2.x64)", "etl/perfview_net.4.5.2.x64.etl"},
    };
    char path[4096], tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/perch_bench_etl.%ld.etl", tmpdir, (long)perch_monotonic_ns());
    for (int i = 0; i < 2; i++) {
        struct blob src, img;
        snprintf(path, sizeof path, "%s/%s", data, files[i][1]);
        src = read_all(path);
        img = replicate(&src, target);
        bench_reader(files[i][0], &img, tmp);
        if (i == 1)
            bench_xpress(&src, target);
        free(img.p);
        free(src.p);
    }
    return 0;
}
