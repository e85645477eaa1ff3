/*
 * The synthetic kernel trace generator: writes a realistic .etl file (NT kernel logger layout,
 * 64-bit pointers, QPC clock) from a seeded scenario, so Perch can demo import/report/export
 * with no Windows data at hand, benchmark at any size, and exercise events no public trace
 * holds (CSwitch, ReadyThread, PMC samples and counters, LBR).
 *
 * It is NOT ground truth: it is written from the documented layouts (docs/synth.md), so a
 * reader and this writer can share a misunderstanding. Real traces are the ground truth.
 *
 * The output is deterministic for a given options struct (same seed, size, cpus -> same
 * bytes on every platform: integer arithmetic only). Memory use is flat: one buffer per CPU
 * plus the scenario state; the trace is never held in memory. The generator runs the scenario
 * twice (a planning pass that writes nothing, to learn the header's EndTime and
 * BuffersWritten, then the writing pass), because perch_output only appends.
 */
#ifndef PERCH_SYNTH_H
#define PERCH_SYNTH_H

#include <stdint.h>

#include "perch/event.h"
#include "perch/io.h"
#include "perch/kind.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PERCH_SYNTH_MAX_CPUS     64
#define PERCH_SYNTH_BUFFER_SIZE  65536u
#define PERCH_SYNTH_DEFAULT_SIZE (8u * 1024u * 1024u)
#define PERCH_SYNTH_DEFAULT_CPUS 8

/* Called after every flushed buffer. pass is 1 (planning) or 2 (writing); bytes_done counts
 * the bytes the pass has produced, bytes_total is the size budget (0 when only a duration
 * limits the trace). */
typedef void (*perch_synth_progress_fn)(void *ctx, int pass, uint64_t bytes_done,
                                        uint64_t bytes_total);

/* A real image placed in the trace (perch synth --module): it stands in for the game process's
 * executable (demo.exe). Its image events carry this path, size, TimeDateStamp and PDB
 * identity, and every user frame the scenario puts in the executable lands inside one of
 * these functions (the function picked as for demo.exe's own, modulo function_count; the
 * offset kept inside the function's size), so a profile of the trace hits the image's real
 * functions. Everything is copied by perch_synth_write; the bytes stay deterministic. */
typedef struct perch_synth_image {
    const char *path;     /* as the image events log it (a Windows path: ASCII only) */
    const char *pdb_name; /* the RSDS record's PDB path (ASCII; "" or NULL: the image's name) */
    perch_guid pdb_guid;
    uint32_t pdb_age;
    uint32_t size_of_image, time_date_stamp;
    uint32_t function_count;       /* 1 or more */
    const uint32_t *function_rva;  /* function starts (RVAs inside size_of_image) */
    const uint32_t *function_size; /* their sizes in bytes (1 or more) */
} perch_synth_image;

typedef struct perch_synth_options {
    uint32_t struct_size;  /* sizeof(perch_synth_options): set by perch_synth_options_init */
    uint32_t cpus;         /* 1..PERCH_SYNTH_MAX_CPUS */
    uint64_t seed;         /* any value; same seed, same bytes */
    uint64_t target_bytes; /* stop at about this file size; 0 = no size limit */
    uint64_t duration_ms;  /* stop at this trace duration; 0 = no time limit */
    perch_synth_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    const perch_synth_image *image; /* NULL: the catalog's demo.exe */
} perch_synth_options;

#define PERCH_SYNTH_TOP 10

/* A row of a top list: samples per process (pid, image name) or per module (name, pid 0). */
typedef struct perch_synth_top_row {
    uint32_t pid;
    char name[32];
    uint64_t samples;
} perch_synth_top_row;

/* What the generator wrote: the figures an ideal reader and model must reproduce. Stack
 * figures follow shared/docs/report-reference.md rules S1-S5 (a part matches the sample with the
 * same thread and raw timestamp; every part here matches exactly one sample). */
typedef struct perch_synth_stats {
    uint64_t bytes;                     /* file size */
    uint64_t buffers;                   /* including the header buffer (= BuffersWritten) */
    uint64_t records;                   /* every record, the logfile header included */
    uint64_t by_kind[PERCH_KIND_COUNT]; /* records per perch_kind (Image Load as ImageLoad) */
    uint64_t samples;                   /* SampledProfile records */
    uint64_t samples_with_stack;        /* samples with at least one StackWalk part */
    uint64_t stacks_merged;             /* kernel part + deferred user part */
    uint64_t stacks_kernel_only;        /* kernel part whose user part never came, or none due */
    uint64_t stacks_user_only;          /* user-mode samples: one user part */
    uint64_t user_parts_deferred;       /* StackWalks logged on return to user mode */
    uint64_t frames_total;              /* frames over all StackWalk records */
    uint64_t cswitches;                 /* CSwitch records (each carries 2 PMC counters) */
    uint64_t slices;                    /* completed [switch-in, switch-out) slices, idle incl. */
    uint64_t idle_slices;               /* of which on the idle thread (tid 0) */
    uint64_t processes;                 /* distinct processes (rundown + started), Idle incl. */
    uint64_t processes_started;
    uint64_t processes_ended;
    uint64_t threads; /* distinct threads, one idle thread per CPU incl. */
    uint64_t threads_started;
    uint64_t threads_ended;
    uint64_t images;       /* Image DCStart + Load records */
    uint64_t rsds_records; /* DbgID_RSDS records */
    uint64_t pdb_ids;      /* distinct (PDB name, GUID, age) among them (report rule M6) */
    uint64_t lbr_records;
    uint64_t pmc_samples;     /* PmcCounterProf records */
    uint64_t perf_freq;       /* QPC frequency of the trace (Hz) */
    uint64_t first_timestamp; /* raw clock of the logfile header record */
    uint64_t last_timestamp;  /* raw clock of the last record */
    uint64_t start_time;      /* FILETIME of StartTime */
    uint64_t end_time;        /* FILETIME of EndTime */
    uint32_t cpus;
    /* shared/docs/report-reference.md M3 and M5: the 10 processes (pid, ImageFileName) and modules
     * (lower-cased file name, looked up by the sample's IP) with the most samples, by samples
     * descending, then pid / name. */
    perch_synth_top_row top_processes[PERCH_SYNTH_TOP];
    uint32_t top_process_count;
    perch_synth_top_row top_modules[PERCH_SYNTH_TOP];
    uint32_t top_module_count;
} perch_synth_stats;

/* Fills opt with defaults (8 MiB, 8 CPUs, seed 1, no duration limit, no progress). */
void perch_synth_options_init(perch_synth_options *opt);

/* Writes a synthetic trace to out (which the caller opened and still owns; it is not closed).
 * Returns 0, PERCH_EINVAL for bad options (cpus out of range, a size below the minimum of
 * (cpus + 2) buffers, both limits 0, opt->struct_size too small), PERCH_ENOMEM, or the output's
 * error. On success *stats (may be NULL) receives the figures; on failure it is untouched and out
 * may hold a partial file. */
int perch_synth_write(const perch_synth_options *opt, perch_output *out, perch_synth_stats *stats);

/* The smallest target_bytes accepted for cpus CPUs. */
uint64_t perch_synth_min_bytes(uint32_t cpus);

#ifdef __cplusplus
}
#endif

#endif
