/*
 * bench_import: perch import end to end on one core (.etl file -> reader -> model -> capture
 * writer -> capture file) and perch export of a capture, each beside `cat` of the same bytes
 * measured in the same run (reading the file through perch_input in 1 MiB blocks, from the
 * page cache after a warm-up read).
 *
 *   bench_import import TRACE.etl OUT.perch [N]   imports TRACE N times (default 1), each a
 *       separate import (fresh model, OUT rewritten); prints MB/s of .etl, events/s, the
 *       ratio to cat, capture size, and this process's peak RSS.
 *   bench_import export CAPTURE.perch              exports the capture to every format into a
 *       counting output (nothing kept) and prints each time as a ratio to cat of the capture.
 *
 * tests/bench/run-import.sh generates the traces, runs both modes and deletes what it made.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "perch/export.h"
#include "perch/io.h"
#include "perch/pipeline.h"
#include "perch/platform.h"

static double seconds_since(uint64_t t0)
{
    return (double)(perch_monotonic_ns() - t0) / 1e9;
}

/* `cat FILE > /dev/null`: every byte read once in 1 MiB blocks. Returns seconds. */
static double cat_file(const char *path, uint64_t *bytes)
{
    static uint8_t block[1 << 20];
    perch_input in;
    size_t got = 0;
    if (perch_input_open_file(&in, path) < 0) {
        fprintf(stderr, "bench_import: cannot open %s\n", path);
        exit(1);
    }
    uint64_t t0 = perch_monotonic_ns(), off = 0, sum = 0;
    while (in.read_at(in.ctx, off, block, sizeof block, &got) == 0 && got > 0) {
        sum += block[got - 1];
        off += got;
    }
    double s = seconds_since(t0);
    perch_input_close(&in);
    *bytes = off + (sum & 0); /* sum keeps the reads from being optimized away */
    return s;
}

static void count_events(void *ctx, uint64_t done, uint64_t total)
{
    (void)done;
    (void)total;
    *(uint64_t *)ctx += PERCH_PIPELINE_PROGRESS_RECORDS;
}

/* One import; returns seconds, adds the events read (to PERCH_PIPELINE_PROGRESS_RECORDS). */
static double import_once(const char *etl, const char *out_path, uint64_t *events,
                          perch_capture_writer_stats *ws)
{
    perch_input in;
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    const char *threads = getenv("PERCH_THREADS"); /* 1: one thread; default: two */
    perch_pipeline_options po = {.sz = sizeof po,
                                 .progress = count_events,
                                 .progress_ctx = events,
                                 .threads = threads ? (unsigned)atoi(threads) : 0};
    uint64_t t0 = perch_monotonic_ns();
    if (perch_input_open_file(&in, etl) < 0 || perch_output_open_file(&out, out_path) < 0 ||
        perch_capture_writer_create(&out, NULL, &w) < 0) {
        fprintf(stderr, "bench_import: cannot open %s or %s\n", etl, out_path);
        exit(1);
    }
    perch_capture_writer_sink(w, &sink);
    int err = perch_pipeline_etl(&in, "etl:bench", &sink, &po, NULL);
    perch_capture_writer_get_stats(w, ws);
    perch_capture_writer_destroy(w);
    if (err < 0 || out.close(out.ctx) < 0) {
        fprintf(stderr, "bench_import: import failed: %s\n", perch_strerror(err));
        exit(1);
    }
    return seconds_since(t0);
}

static int bench_import(const char *etl, const char *out_path, unsigned n)
{
    uint64_t bytes, events = 0;
    perch_capture_writer_stats ws;
    double cat = 0, imp = 0;
    cat_file(etl, &bytes); /* warm the page cache */
    for (unsigned i = 0; i < n; i++) {
        cat += cat_file(etl, &bytes);
        imp += import_once(etl, out_path, &events, &ws);
    }
    double mb = (double)bytes * n / 1e6;
    printf("import %s x%u (%u separate imports): %.1f MB of .etl, ~%" PRIu64 " events\n", etl, n, n,
           mb, events);
    printf("  cat    %8.3f s  %8.1f MB/s\n", cat, mb / cat);
    printf("  import %8.3f s  %8.1f MB/s  %10.0f events/s  = %.1fx the time of cat\n", imp,
           mb / imp, (double)events / imp, imp / cat);
    printf("  capture %.2f MB (%.2f %% of the .etl): %" PRIu64 " samples, %" PRIu64
           " slices, %" PRIu64 " stacks\n",
           (double)ws.bytes / 1e6, 100.0 * (double)ws.bytes / (double)bytes,
           ws.records[PERCH_CHUNK_SAMPLE], ws.records[PERCH_CHUNK_SLICE],
           ws.records[PERCH_CHUNK_STACK]);
    printf("  peak RSS %.1f MiB\n", (double)perch_peak_rss_bytes() / 1048576.0);
    return 0;
}

/* ---- export ---------------------------------------------------------------------------- */

static int count_write(void *ctx, const void *buf, size_t len)
{
    (void)buf;
    *(uint64_t *)ctx += len;
    return 0;
}

static int replay_file(void *ctx, const perch_sink *sink)
{
    perch_input in;
    perch_capture_status st;
    int err = perch_input_open_file(&in, ctx);
    if (err < 0)
        return err;
    err = perch_capture_replay(&in, sink, &st);
    perch_input_close(&in);
    return err;
}

static int bench_export(const char *capture)
{
    uint64_t bytes;
    perch_capture_status st;
    perch_input in;
    cat_file(capture, &bytes);
    double cat = cat_file(capture, &bytes);
    if (perch_input_open_file(&in, capture) < 0)
        return 1;
    perch_capture_replay(&in, NULL, &st); /* counts only */
    perch_input_close(&in);
    printf("export %s: %.1f MB, %" PRIu64 " samples, %" PRIu64 " slices; cat %.3f s\n", capture,
           (double)bytes / 1e6, st.types[PERCH_CHUNK_SAMPLE].records,
           st.types[PERCH_CHUNK_SLICE].records, cat);
    for (unsigned f = 0; f < PERCH_EXPORT_FORMAT_COUNT; f++) {
        perch_record_source src = {(void *)capture, replay_file, NULL};
        uint64_t written = 0;
        perch_output out = {count_write, NULL, NULL, &written};
        uint64_t t0 = perch_monotonic_ns();
        int err = perch_export_run((perch_export_format)f, NULL, &src, &out);
        double s = seconds_since(t0);
        printf("  %-10s %7.3f s  = %6.1fx cat  (%u pass%s, %.1f MB written)%s\n",
               perch_export_format_name(f), s, s / cat, perch_export_passes(f),
               perch_export_passes(f) > 1 ? "es" : "", (double)written / 1e6,
               err ? perch_strerror(err) : "");
    }
    printf("  peak RSS %.1f MiB\n", (double)perch_peak_rss_bytes() / 1048576.0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "import") == 0)
        return bench_import(argv[2], argv[3], argc > 4 ? (unsigned)atoi(argv[4]) : 1);
    if (argc == 3 && strcmp(argv[1], "export") == 0)
        return bench_export(argv[2]);
    fprintf(stderr, "usage: bench_import import TRACE.etl OUT.perch [N]\n"
                    "       bench_import export CAPTURE.perch\n");
    return 2;
}
