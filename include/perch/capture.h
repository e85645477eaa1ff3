/*
 * The Perch capture file: everything the model produced, small, self-describing and safe to
 * read after a crash halfway through writing it. docs/capture-format.md describes every byte.
 *
 * A capture is a 64-byte file header followed by self-delimiting chunks (type, length,
 * CRC-32C, payload). The writer is a perch_sink: each callback appends its record to the open
 * chunk of that record's type, and whole chunks are appended to a perch_output. The reader
 * replays a capture into any perch_sink, one chunk at a time, and says where and why it
 * stopped. So `model -> writer -> file -> replay -> sink` gives the sink the same records the
 * model produced.
 *
 * Version 2 (this writer) stores an entity's first record in full and its changes as small
 * update records, and places every entity before the first record that names it, so any
 * prefix of a capture is self-describing; the reader still reads version 1.
 *
 * Order on replay: records of one type come back in the order they were written; across
 * types the writer keeps the order the sink contract promises (trace_info first, every string,
 * entity and stack before the first record that uses it, ledger and stat entries then finish
 * last). Records of different types that were open in chunks at the same time are replayed
 * chunk by chunk, not interleaved one by one.
 */
#ifndef PERCH_CAPTURE_H
#define PERCH_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/io.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format versions this build writes and reads. A reader accepts [MIN, MAX]. */
#define PERCH_CAPTURE_VERSION     2u
#define PERCH_CAPTURE_VERSION_MIN 1u
#define PERCH_CAPTURE_VERSION_MAX 2u

/* Feature bits this build knows. Versions 1 and 2 define none: the masks exist so a later writer
 * can mark what an older reader must refuse (required) or may ignore (optional). */
#define PERCH_CAPTURE_REQUIRED_KNOWN 0x0ull
#define PERCH_CAPTURE_OPTIONAL_KNOWN 0x0ull

/* Hard limits (bytes): a reader refuses anything larger, a writer never produces it. */
#define PERCH_CAPTURE_HEADER_SIZE      64u
#define PERCH_CAPTURE_MAX_HEADER       4096u
#define PERCH_CAPTURE_MAX_CHUNK        (1u << 20)   /* payload bytes of one chunk */
#define PERCH_CAPTURE_MAX_STRING       (128u << 10) /* bytes of one string */
#define PERCH_CAPTURE_MAX_STRTAB_BYTES (8u << 20)   /* string table, between resets */
#define PERCH_CAPTURE_MAX_STRTAB_COUNT (256u << 10) /* strings, between resets */
#define PERCH_CAPTURE_MAX_FRAMES       16384u       /* frames of one stack */
#define PERCH_CAPTURE_MAX_BRANCHES     4096u        /* branches of one LBR record */
#define PERCH_CAPTURE_MAX_COUNTERS     256u         /* names in one counters record */
#define PERCH_CAPTURE_MAX_NAMES        4096u        /* distinct ledger (or stat) names */
#define PERCH_CAPTURE_MAX_NAME_BYTES   (1u << 20)   /* bytes of those names, per type */
/* Entities of one type (process, thread, module) whose state a version 2 writer or reader
 * keeps for coding updates; past it new keys are coded in full (both sides alike). */
#define PERCH_CAPTURE_MAX_ENTITIES     (1u << 20)

/* Chunk types. Values are on disk: never renumber. */
typedef enum perch_capture_chunk_type {
    PERCH_CHUNK_TRACE_INFO = 1,
    PERCH_CHUNK_STRINGS = 2,
    PERCH_CHUNK_PROCESS = 3,
    PERCH_CHUNK_THREAD = 4,
    PERCH_CHUNK_MODULE = 5,
    PERCH_CHUNK_COUNTERS = 6,
    PERCH_CHUNK_STACK = 7,
    PERCH_CHUNK_SLICE = 8,
    PERCH_CHUNK_SAMPLE = 9,
    PERCH_CHUNK_LBR = 10,
    PERCH_CHUNK_LEDGER = 11,
    PERCH_CHUNK_STAT = 12,
    PERCH_CHUNK_END = 13,
    PERCH_CHUNK_SYMBOL = 14, /* function names (perch symbolize, perchd): docs/symbols.md */
} perch_capture_chunk_type;

#define PERCH_CHUNK_TYPE_LIMIT 15 /* one past the highest known type */

/* The lower-case name of a chunk type ("sample"), or NULL for an unknown type. */
const char *perch_capture_chunk_name(unsigned type);

/* ---- writing ---------------------------------------------------------------------------- */

/* Writer options. Start from perch_capture_writer_opts_default(); `size` must be
 * sizeof(perch_capture_writer_opts) so fields can be added later. */
typedef struct perch_capture_writer_opts {
    size_t size;
    uint32_t chunk_bytes;       /* target payload per chunk: 4 KiB .. PERCH_CAPTURE_MAX_CHUNK */
    uint32_t sync_every_chunks; /* sync after this many chunks (0: not by count) */
    uint32_t sync_interval_ms;  /* sync when this long has passed since the last (0: not by time) */
    uint32_t flush_interval_ms; /* flush every open chunk once the oldest has waited this long */
    /* Monotonic clock in ns for the two time-based policies (NULL disables them). */
    uint64_t (*now_ns)(void *clock_ctx);
    void *clock_ctx;
    /* The samples' stack ids name stacks kept outside this capture (the flight recorder's
     * segments, read back with perch_capture_read_opts.stacks_elsewhere): the writer does not
     * refuse stack ids that are not dense from 1 or a sample naming one not written. Default
     * false. */
    bool stacks_elsewhere;
} perch_capture_writer_opts;

/* Defaults: 64 KiB chunks, sync every 16 chunks or 1000 ms, flush open chunks after 2000 ms
 * (the time-based ones only when now_ns is set). */
void perch_capture_writer_opts_default(perch_capture_writer_opts *opts);

typedef struct perch_capture_writer perch_capture_writer;

/* Creates a writer on out (borrowed: it must outlive the writer; the writer never closes it)
 * and writes the file header. opts may be NULL for the defaults. PERCH_EINVAL for bad options,
 * PERCH_ENOMEM, or the output's error; *out_writer is untouched on error. */
int perch_capture_writer_create(perch_output *out, const perch_capture_writer_opts *opts,
                                perch_capture_writer **out_writer);

/* Fills *sink with callbacks that append to the capture (ctx is the writer). Each returns 0 or
 * the first error of the writer, which is sticky. The finish callback flushes every open
 * chunk, appends the end chunk and syncs; records after it are PERCH_ESTATE.
 *
 * The writer refuses a record the reader would refuse (perch_capture_replay: the rules across
 * records), before writing any byte of it: a second trace_info record; a stack whose id is
 * not the next of 1, 2, 3, ... or a sample naming a stack id not yet written (0, no stack, is
 * fine; neither with opts->stacks_elsewhere); a ledger or stat name already written, or one
 * that is not UTF-8 (PERCH_EINVAL for each), or one past 4096 names or 1 MiB of them
 * (PERCH_CAPTURE_MAX_NAMES, PERCH_CAPTURE_MAX_NAME_BYTES, each name counted with a NUL byte;
 * PERCH_ELIMIT). A refusal is not sticky: the record is left out and counted (stats.refused),
 * perch_capture_writer_refusal says why, and the capture written so far and every later
 * record and finish are unaffected, so the file stays readable to its end. Names are checked
 * as the reader sees them: after the cut of a name longer than PERCH_CAPTURE_MAX_STRING, a
 * NULL name as "". */
void perch_capture_writer_sink(perch_capture_writer *w, perch_sink *sink);

/* Why the writer refused the last record it refused, in the words the reader would stop with
 * ("stack id 5 out of order: the next is 3 (ids are dense from 1)"), or "" when it refused
 * none. The text is the writer's: it changes with the next refusal and ends with the writer. */
const char *perch_capture_writer_refusal(const perch_capture_writer *w);

/* Same as the sink's finish callback. */
int perch_capture_writer_finish(perch_capture_writer *w);

/* Frees the writer. Records still in open chunks are dropped (as in a crash): call finish
 * first to keep them. Accepts NULL. */
void perch_capture_writer_destroy(perch_capture_writer *w);

/* What the writer did so far. */
typedef struct perch_capture_writer_stats {
    uint64_t bytes; /* written to the output, header included */
    uint64_t chunks;
    uint64_t syncs;
    uint64_t records[PERCH_CHUNK_TYPE_LIMIT]; /* by chunk type; strings count interned strings */
    uint64_t strtab_resets;
    uint64_t truncated; /* strings, stacks or LBR records cut to the hard limits */
    uint64_t refused;   /* records left out for breaking a rule across records (see the sink) */
} perch_capture_writer_stats;

void perch_capture_writer_get_stats(const perch_capture_writer *w,
                                    perch_capture_writer_stats *stats);

/* ---- reading ---------------------------------------------------------------------------- */

/* Why a reader stopped. */
typedef enum perch_capture_stop {
    PERCH_CAPTURE_STOP_END = 0,    /* the end chunk: the writer finished */
    PERCH_CAPTURE_STOP_NO_END,     /* input ended on a chunk boundary before the end chunk */
    PERCH_CAPTURE_STOP_TRUNCATED,  /* input ended inside a chunk */
    PERCH_CAPTURE_STOP_CRC,        /* a chunk's CRC-32C does not match */
    PERCH_CAPTURE_STOP_BAD_HEADER, /* not a capture, or a version/feature this build refuses */
    PERCH_CAPTURE_STOP_BAD_CHUNK,  /* a chunk over the size cap or with a malformed payload */
    PERCH_CAPTURE_STOP_LIMIT,      /* the string table or the ledger/stat names outgrew a cap */
    PERCH_CAPTURE_STOP_SINK,       /* the sink returned an error */
    PERCH_CAPTURE_STOP_IO,         /* the input failed */
} perch_capture_stop;

/* A short name for a stop reason ("end", "truncated", ...). */
const char *perch_capture_stop_name(int stop);

typedef struct perch_capture_type_stats {
    uint64_t chunks;
    uint64_t records;
    uint64_t bytes; /* chunk headers and payloads */
} perch_capture_type_stats;

typedef struct perch_capture_status {
    int stop;            /* perch_capture_stop */
    int error;           /* 0 for STOP_END, else the PERCH_E* returned */
    uint64_t offset;     /* byte offset where reading stopped (start of the bad chunk or
                          * the offending byte); the end of the end chunk for STOP_END */
    uint64_t good_bytes; /* end of the last complete, checked chunk */
    char reason[160];    /* one line of English saying what went wrong ("" at STOP_END) */
    uint32_t version;    /* from the header (0 when the header was unreadable) */
    uint32_t header_size;
    uint64_t required_features;
    uint64_t optional_features;
    uint64_t chunks;         /* complete chunks read, unknown ones included */
    uint64_t unknown_chunks; /* skipped: a type this build does not know */
    uint64_t trailing_bytes; /* after the end chunk (ignored) */
    perch_capture_type_stats types[PERCH_CHUNK_TYPE_LIMIT];
} perch_capture_status;

/* One chunk as the reader meets it, for tools that list chunks. */
typedef struct perch_capture_chunk_info {
    uint64_t offset; /* of the chunk header */
    uint32_t type;
    uint32_t flags;
    uint32_t payload_len;
    uint64_t records; /* decoded from it (0 for unknown types) */
} perch_capture_chunk_info;

typedef struct perch_capture_read_opts {
    size_t size; /* sizeof(perch_capture_read_opts) */
    /* Called after each complete chunk (may be NULL); a non-zero return stops as a sink error. */
    int (*on_chunk)(void *ctx, const perch_capture_chunk_info *chunk);
    void *ctx;
    /* Call sink->finish when the capture stopped early (default true: a report of what was
     * read can still be made). At STOP_END finish is always called, from the end chunk. */
    bool finish_on_error;
    /* The samples' stack ids name stacks kept outside this capture (the flight recorder's
     * segments, whose stacks stay in its store): the reader does not check that stack ids are
     * dense from 1 and each defined before a sample names it. Default false: it checks. */
    bool stacks_elsewhere;
} perch_capture_read_opts;

/* Replays the capture in `in` into sink (any callback may be NULL), one chunk at a time.
 * Returns 0 when it reached the end chunk, else the error that stopped it (PERCH_ETRUNC,
 * PERCH_ECRC, PERCH_EFORMAT, PERCH_EVERSION, PERCH_EFEATURE, PERCH_ELIMIT, PERCH_ENOMEM, the
 * input's or the sink's error). Unlike most calls, *status is always filled, errors included:
 * it says where and why reading stopped, and the sink has received every record of every
 * complete chunk before that point. `in` is borrowed (not closed). With a sink that sets
 * decode_ahead (records.h) in->read_at is also called from a second thread,
 * at the same time (the file and memory inputs of io.h allow that). Besides each record's own
 * fields the reader checks what the sink contract promises across records, so no sink has to: one
 * trace_info record; stack ids dense from 1, each defined before a sample names it (unless
 * opts->stacks_elsewhere); no ledger or stat name twice (each valid UTF-8). A capture that breaks
 * one stops as a malformed chunk (STOP_BAD_CHUNK, PERCH_EFORMAT) at that record; past 4096
 * names or 1 MiB of them per type reading stops at the limit (STOP_LIMIT, PERCH_ELIMIT). */
int perch_capture_replay(const perch_input *in, const perch_sink *sink,
                         perch_capture_status *status);

/* Same with options (opts may be NULL). */
int perch_capture_replay_ex(const perch_input *in, const perch_sink *sink,
                            const perch_capture_read_opts *opts, perch_capture_status *status);

/* Replays a capture held in memory (the fuzzing entry point). */
int perch_capture_replay_memory(const void *data, size_t len, const perch_sink *sink,
                                perch_capture_status *status);

#ifdef __cplusplus
}
#endif

#endif
