/*
 * Exports: turn the model's record stream (include/perch/records.h) into files other tools
 * open: Chrome Trace Event JSON (Perfetto UI, chrome://tracing), the Firefox Profiler's
 * processed profile (profiler.firefox.com), pprof's profile.proto (go tool pprof), speedscope
 * JSON (speedscope.app) and folded stacks (flamegraph.pl, inferno).
 *
 * An exporter is a perch_sink. Most formats log every sample in a few bytes (moved to scratch
 * stores past log_memory), then aggregate each thread's samples by stack at finish and write
 * everything; memory is bounded by the distinct stacks, threads and modules and by the largest
 * thread, and those formats need one pass over the stream. Chrome writes one event per slice and
 * sample, so it needs two passes: the first collects the entities (threads, processes, modules,
 * which arrive late in the stream), the second streams the events out. A driver asks
 * perch_export_passes() and replays the input that many times, binding the sink of pass i
 * before replay i. perch_export_run() does exactly that over a perch_record_source.
 *
 * Frames are named `module!+0xoffset` (module = lower-case file name of the module path) or
 * `?!0xaddress` when no module contains the address, until symbolization exists.
 */
#ifndef PERCH_EXPORT_H
#define PERCH_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/io.h"
#include "perch/records.h"
#include "perch/scratch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum perch_export_format {
    PERCH_EXPORT_CHROME = 0,
    PERCH_EXPORT_GECKO = 1,
    PERCH_EXPORT_PPROF = 2,
    PERCH_EXPORT_SPEEDSCOPE = 3,
    PERCH_EXPORT_FOLDED = 4,
    PERCH_EXPORT_FORMAT_COUNT
} perch_export_format;

typedef struct perch_export_options {
    size_t size;                 /* sizeof(perch_export_options): the caller's version */
    uint64_t sample_interval_ns; /* CPU time one sample stands for; 0 = 1 ms */
    uint64_t memory_limit;       /* bytes the exporter may hold; 0 = 1 GiB */
    bool cpu_tracks;             /* chrome: also one track per CPU with the slices */
    bool folded_process;         /* folded: prefix each stack with "process (pid)" */
    bool folded_thread;          /* folded: prefix each stack with "thread (tid)" */
    uint64_t gecko_max_markers;  /* gecko: most slices kept as markers; 0 = 1,000,000 */
    uint64_t gecko_max_samples;  /* gecko: most samples kept at their own times; past it
                                    one sample per distinct stack; 0 = 20,000,000 */
    bool folded_pmc;             /* folded: the PMC samples of folded_pmc_source instead of
                                    the timer samples (the default) */
    uint16_t folded_pmc_source;  /* folded: the PMC profile source with folded_pmc */
    /* Bytes of the sample log (and gecko's slice log) held in memory before the rest goes to
     * scratch stores, so memory does not grow with the trace; 0: 8 MiB each. */
    uint64_t log_memory;
    /* Opens the scratch stores; NULL: temporary files in the system's temp folder
     * (perch_scratch_open_temp). */
    perch_scratch_open_fn scratch_open;
    void *scratch_ctx;
    /* 1: everything on the calling thread; 0 (the default) or 2: pprof, speedscope and
     * folded build each thread's rows at finish on a helper thread while the previous
     * thread's are written. The output is the same either way. */
    unsigned threads;
} perch_export_options;

/* Fills opt with the defaults (and opt->size). */
void perch_export_options_init(perch_export_options *opt);

/* Format by its command-line name ("chrome", "gecko", "pprof", "speedscope", "folded").
 * PERCH_EINVAL for an unknown name (*fmt untouched). */
int perch_export_format_parse(const char *name, perch_export_format *fmt);

/* The command-line name, and a one-line description of what opens the output. NULL for an
 * out-of-range format. */
const char *perch_export_format_name(perch_export_format fmt);
const char *perch_export_format_opens(perch_export_format fmt);

/* How many times the record stream must be replayed into the exporter (1 or 2); 0 for an
 * out-of-range format. */
unsigned perch_export_passes(perch_export_format fmt);

/* Whether a driver with a second core should run the exporter's sink on a thread of its own
 * behind a relay (perch_sink_relay_start) while it replays; false for a format whose sink does
 * less per record than the relay's copy of it (gecko), and for an out-of-range format. */
bool perch_export_relay_pays(perch_export_format fmt);

typedef struct perch_exporter perch_exporter;

/* Creates an exporter of fmt writing to out (borrowed: it must outlive the exporter, which
 * never closes it). opt may be NULL for the defaults. On error *exp is untouched. */
int perch_exporter_create(perch_export_format fmt, const perch_export_options *opt,
                          perch_output *out, perch_exporter **exp);

/* Fills *sink with the callbacks of pass `pass` (0-based, passes taken in order). The output
 * is written by the finish callback of the last pass; an earlier finish only ends its pass.
 * PERCH_EINVAL for a pass out of range or out of order. */
int perch_exporter_sink(perch_exporter *exp, unsigned pass, perch_sink *sink);

/* Releases the exporter. Accepts NULL. */
void perch_exporter_destroy(perch_exporter *exp);

/* The seam between an export and its input: replay() plays the whole record stream into sink
 * (trace_info first, finish last) and may be called more than once, each time from the start.
 * Returns 0, the first error a sink callback returned, or an input error. close() releases
 * ctx (may be NULL). A capture file or an .etl run through the model provide one. */
typedef struct perch_record_source {
    void *ctx;
    int (*replay)(void *ctx, const perch_sink *sink);
    void (*close)(void *ctx);
} perch_record_source;

/* Exports src to out as fmt: creates the exporter, replays src once per pass, destroys the
 * exporter. Does not close src or out. */
int perch_export_run(perch_export_format fmt, const perch_export_options *opt,
                     const perch_record_source *src, perch_output *out);

#ifdef __cplusplus
}
#endif

#endif
