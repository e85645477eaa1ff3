/*
 * The .etl file reader: turns a Windows event trace log into one time-ordered stream of
 * normalized event records (include/perch/event.h).
 *
 * An .etl file is a sequence of buffers, each written by one CPU; buffers may be XPRESS
 * compressed and are not in time order across the file. The reader first indexes the buffer
 * headers (a pass that reads 0x48 bytes per buffer), then merges the per-CPU streams by event
 * timestamp (ties: lower cpu first, then file order). It holds at most one buffer per CPU in
 * memory, whatever the file length. Damaged input never stops it: a record or buffer that
 * fails to parse is counted under a reason (with the byte offset of the last such failure)
 * and reading goes on with the next record or buffer. The layout is documented in
 * docs/etl-format.md.
 */
#ifndef PERCH_ETL_H
#define PERCH_ETL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/error.h"
#include "perch/event.h"
#include "perch/io.h"
#include "perch/kind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a part of the file could not be read: X(enum suffix, stable name, English text). */
#define PERCH_ETL_REASON_MAP(X)                                                                    \
    X(IO, "io", "the file could not be read")                                                      \
    X(BUFFER_HEADER, "buffer_header", "a buffer header has impossible sizes")                      \
    X(BUFFER_TRUNCATED, "buffer_truncated", "the file is truncated inside a buffer")               \
    X(BUFFER_LIMIT, "buffer_limit", "a buffer exceeds the size or memory caps")                    \
    X(DECOMPRESS, "decompress", "a compressed buffer has an invalid XPRESS stream")                \
    X(DECOMPRESSED_SIZE, "decompressed_size", "a buffer decompressed to the wrong size")           \
    X(RECORD_MARKER, "record_marker", "a record has an unknown header type")                       \
    X(RECORD_SIZE, "record_size", "a record size is below its header or runs past its buffer")     \
    X(RECORD_EXT, "record_ext", "a record's PMC/PEBS or extended data exceeds its size")           \
    X(INDEX_LIMIT, "index_limit", "the file has more buffers than the index may hold")             \
    X(TIME_ORDER, "time_order", "a CPU's events go back in time")

typedef enum perch_etl_reason {
#define PERCH_ETL_REASON_ENUM(name, text, desc) PERCH_ETL_R_##name,
    PERCH_ETL_REASON_MAP(PERCH_ETL_REASON_ENUM)
#undef PERCH_ETL_REASON_ENUM
        PERCH_ETL_REASON_COUNT
} perch_etl_reason;

/* "io", "buffer_header", ...; NULL for an out-of-range value. */
const char *perch_etl_reason_name(perch_etl_reason reason);

/* An English sentence fragment for the reason ("the file is truncated inside a buffer");
 * NULL for an out-of-range value. */
const char *perch_etl_reason_text(perch_etl_reason reason);

#define PERCH_ETL_NAME_MAX 256 /* bytes of UTF-8 kept of each logfile-header name, with NUL */

/* TRACE_LOGFILE_HEADER, from the payload of the first record of the file. */
typedef struct perch_etl_header {
    uint32_t buffer_size;      /* session buffer size in bytes */
    uint32_t version;          /* Major, Minor, Sub, SubMinor bytes */
    uint32_t build;            /* ProviderVersion: the OS build number */
    uint32_t cpus;             /* NumberOfProcessors */
    uint64_t end_time;         /* FILETIME */
    uint32_t timer_resolution; /* 100 ns units */
    uint32_t max_file_size;
    uint32_t log_file_mode;
    uint32_t buffers_written;
    uint32_t pointer_size; /* 4 or 8 */
    uint32_t events_lost;
    uint32_t cpu_speed_mhz;
    int32_t tz_bias;     /* minutes */
    uint64_t boot_time;  /* FILETIME */
    uint64_t perf_freq;  /* ticks per second of the QPC clock */
    uint64_t start_time; /* FILETIME */
    uint32_t clock_type; /* ReservedFlags: 1 QPC, 2 system time, 3 CPU cycles */
    uint32_t buffers_lost;
    uint64_t ref_raw; /* raw timestamp of the logfile header record (section 2.5) */
    char logger_name[PERCH_ETL_NAME_MAX];
    char log_file_name[PERCH_ETL_NAME_MAX];
} perch_etl_header;

typedef struct perch_etl_stats {
    uint64_t records;                   /* records yielded */
    uint64_t by_kind[PERCH_KIND_COUNT]; /* records yielded, by perch_event_kind */
    uint64_t by_header[8];              /* records yielded, by perch_header_kind */
    uint64_t buffers;                   /* buffers indexed */
    uint64_t compressed_buffers;        /* of which compressed */
    uint64_t buffers_events_lost;       /* buffers flagged EVENTS_LOST (0x2) */
    uint64_t buffers_buffer_lost;       /* buffers flagged BUFFER_LOST (0x4) */
    uint64_t skipped_records;           /* WPP messages and ERROR records, stepped over */
    uint64_t errors[PERCH_ETL_REASON_COUNT];
    /* Where the last error of each reason was found: the file offset of the damaged bytes; for
     * a record inside a compressed buffer, the file offset of that buffer. */
    uint64_t error_offset[PERCH_ETL_REASON_COUNT];
    /* For record errors: the record's offset inside its decoded buffer (0x48 header included);
     * 0 for buffer-level errors. */
    uint32_t error_record[PERCH_ETL_REASON_COUNT];
} perch_etl_stats;

typedef struct perch_etl_options {
    size_t sz;                 /* sizeof(perch_etl_options): lets the struct grow */
    uint64_t max_buffer_bytes; /* cap on one buffer on disk and decoded; 0 (or more than
                                * 16 MiB, or less than 4 KiB): 16 MiB */
    uint64_t max_memory;       /* cap on all per-CPU buffers together; 0: 1 GiB */
} perch_etl_options;

/* Where opening failed: the reason and the byte offset (open only fills this on failure). */
typedef struct perch_etl_open_error {
    int err;          /* the PERCH_E* returned */
    uint64_t offset;  /* byte offset in the file where the problem was found */
    const char *what; /* static English detail, e.g. "not an .etl file (no buffer header)" */
} perch_etl_open_error;

typedef struct perch_etl_reader perch_etl_reader;

/* Opens a reader over io (borrowed: it must outlive the reader; the reader never closes it).
 * Reads the first buffer and the logfile header, then indexes every buffer header. opts and
 * diag may be NULL. Returns 0, PERCH_ETRUNC (shorter than one buffer header), PERCH_EFORMAT
 * (not an .etl file), PERCH_ELIMIT, PERCH_ENOMEM or an I/O error, filling *diag when given.
 * On failure *out is untouched. */
int perch_etl_open_io(const perch_input *io, const perch_etl_options *opts, perch_etl_reader **out,
                      perch_etl_open_error *diag);

/* Like perch_etl_open_io over len bytes at data (borrowed until perch_etl_destroy). */
int perch_etl_open_memory(const void *data, size_t len, const perch_etl_options *opts,
                          perch_etl_reader **out, perch_etl_open_error *diag);

/* Like perch_etl_open_io, but the reader takes ownership of *in (copied, then *in is
 * cleared): it is closed by perch_etl_destroy, or before returning when opening fails. */
int perch_etl_open_owned(perch_input *in, const perch_etl_options *opts, perch_etl_reader **out,
                         perch_etl_open_error *diag);

/* Like perch_etl_open_io over the file at path (UTF-8); the reader owns the file handle.
 * PERCH_ENOENT when the file does not exist. Inline so that the portable core does not
 * depend on the platform library that implements perch_input_open_file. */
static inline int perch_etl_open_file(const char *path, const perch_etl_options *opts,
                                      perch_etl_reader **out, perch_etl_open_error *diag)
{
    perch_input in;
    int err;
    if (path == NULL || out == NULL)
        return PERCH_EINVAL;
    err = perch_input_open_file(&in, path);
    if (err < 0) {
        if (diag != NULL) {
            diag->err = err;
            diag->offset = 0;
            diag->what = "cannot open the file";
        }
        return err;
    }
    return perch_etl_open_owned(&in, opts, out, diag);
}

/* Frees the reader and everything it owns. Accepts NULL. */
void perch_etl_destroy(perch_etl_reader *r);

/* Stores the next record in time order in *ev. Payload and ext pointers borrow the reader's
 * buffers and stay valid until the next call. Returns 0, PERCH_EOF at the end, or a negative
 * error only for failures that stop reading (PERCH_ENOMEM); damaged data is counted in the
 * stats and skipped. On a non-zero return *ev is untouched. */
int perch_etl_next(perch_etl_reader *r, perch_event *ev);

/* For callers that only count: the same records as perch_etl_next, in no particular order
 * (one CPU's records after another's where that cannot change the stats), without the cost
 * of the time-order merge. Otherwise like perch_etl_next (payloads valid until the next
 * call, the same returns). PERCH_ESTATE once the reader is being read with perch_etl_next,
 * and perch_etl_next returns PERCH_ESTATE once this was called. */
int perch_etl_next_unordered(perch_etl_reader *r, perch_event *ev);

/* Before the first perch_etl_next_unordered: have it yield only the records of part `part`
 * of `parts` (the CPUs split into runs of about equal size), so that parts readers over the
 * same file, each reading its part (on a thread each), read every record once. Returns 0,
 * PERCH_EINVAL (part >= parts), or PERCH_ESTATE once reading began. */
int perch_etl_unordered_part(perch_etl_reader *r, unsigned part, unsigned parts);

/* After every reader of parts[0..n) (parts[i] reading part i of n with
 * perch_etl_next_unordered, or one reader read with perch_etl_next) returned PERCH_EOF:
 * stores in *out the stats reading the file in time order gives, and returns true; or
 * returns false when the parts cannot tell (the last-error offsets of a reason whose errors
 * came from several CPUs; then read the file again in time order). */
bool perch_etl_stats_of_parts(perch_etl_reader *const *parts, unsigned n, perch_etl_stats *out);

/* Where a record sits: its buffer's file offset and its offset inside the decoded buffer
 * (0x48 header included). For an uncompressed buffer buffer + record is its file offset. */
typedef struct perch_etl_position {
    uint64_t buffer;
    uint32_t record;
    bool compressed;
} perch_etl_position;

/* The position of the record last returned by perch_etl_next (zeroes before the first). */
perch_etl_position perch_etl_last_position(const perch_etl_reader *r);

const perch_etl_header *perch_etl_header_of(const perch_etl_reader *r);

/* The size in bytes of the input the reader reads. */
uint64_t perch_etl_input_size(const perch_etl_reader *r);

/* The most bytes one record (header, extension data, payload) can take in this file: the
 * record area of its largest buffer. A bound for whoever copies records (the pipeline's
 * queue is sized so that no record of the file is refused). */
uint64_t perch_etl_max_record_len(const perch_etl_reader *r);
const perch_etl_stats *perch_etl_stats_of(const perch_etl_reader *r);

/* Converts a raw timestamp to FILETIME (100 ns since 1601) per the header's clock type. */
uint64_t perch_etl_filetime(const perch_etl_header *h, uint64_t ts_raw);

/* Parses the single record at p[0, len) (len: the bytes available, the record's own Size
 * decides how many it takes). pointer_size (4 or 8) applies when the header kind does not
 * imply one; cpu is copied to ev->cpu. On success fills every field of *ev (payload and ext
 * borrow p) and stores the aligned record length (the step to the next record, possibly past
 * len for the last record) in *step. Returns 0; PERCH_EOF for the end markers (0 or
 * 0xFFFFFFFF); PERCH_ETRUNC when fewer bytes than the header or Size; PERCH_EFORMAT for an
 * unknown header type or a size below its header; PERCH_ERANGE when extension data exceeds
 * Size; PERCH_EUNKNOWN for WPP/ERROR records, which have no normalized form (*step is set so
 * they can be skipped). On failure *ev is untouched. */
int perch_etl_parse_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                           perch_event *ev, size_t *step);

#ifdef __cplusplus
}
#endif

#endif
