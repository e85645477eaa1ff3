/*
 * The capture writer's internals, shared by writer.c (chunks, flush order, sync policy) and
 * encode.c (one encoder per record type, which is also the writer's perch_sink).
 */
#ifndef PERCH_CAPTURE_WRITER_H
#define PERCH_CAPTURE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/codec.h"
#include "capture/entity.h"
#include "capture/format.h"
#include "capture/rules.h"
#include "capture/strtab.h"
#include "perch/capture.h"

/* Room kept in front of each open chunk's records for its chunk header and payload prefix
 * (record count; for strings: flags, first id, count), filled in when the chunk is flushed. */
#define CAP_RESERVE (CAP_CHUNK_HEADER + 3 * CAP_VARINT_MAX)

/* Slots of each open chunk's thread hint table (a power of two). */
#define CAP_THREAD_HINTS 64

typedef struct perch__cap_open_chunk {
    perch__cap_buf buf; /* CAP_RESERVE bytes, then the encoded records */
    uint64_t records;
    uint64_t opened_ns; /* clock when the first record went in (time-based flush) */
    perch__cap_state state;
    uint8_t thread_hint[CAP_THREAD_HINTS]; /* (key, tid) hash -> MRU slot last used; a guess */
} perch__cap_open_chunk;

struct perch_capture_writer {
    perch_output *out;
    perch_capture_writer_opts opts;
    int error; /* sticky: the first output or allocation error */
    bool finished;
    perch__strtab strings;
    uint32_t strings_first_id; /* id of the first string of the open strings chunk */
    bool strings_reset;        /* the open strings chunk starts with a reset */
    uint32_t since_sync;       /* chunks written since the last sync */
    uint64_t last_sync_ns;
    uint32_t since_clock; /* records since the last look at the clock */
    perch_capture_writer_stats stats;
    perch__cap_stack_ring ring; /* of the open stack chunk */
    perch__cap_ents ents;       /* the last state written of every entity (version 2) */
    /* The rules across records (rules.h), as far as written: a record breaking one is refused. */
    uint64_t info_off;             /* the offset of the trace_info chunk written (0: none yet) */
    uint64_t stacks;               /* stack ids 1..stacks written (unless opts.stacks_elsewhere) */
    perch__strtab named[2];        /* the ledger [0] and stat [1] names written, each once */
    char refusal[CAP_RULE_REASON]; /* why the last record was refused ("" when none was) */
    bool unchecked;                /* perch__cap_writer_unchecked: the rules are not checked */
    perch__cap_open_chunk chunk[PERCH_CHUNK_TYPE_LIMIT];
};

/* Makes room for one record of at most `bound` bytes in the open chunk of `type`, flushing
 * it first when the record would take it past the target size. Returns the chunk (its buf
 * has room) or NULL with w->error set. */
perch__cap_open_chunk *perch__cap_begin(perch_capture_writer *w, unsigned type, size_t bound);

/* perch__cap_begin for the hot encoders: the same answer, without a call when the open chunk
 * already holds records and has the room (the case of all but one record per chunk). */
static inline perch__cap_open_chunk *perch__cap_begin_fast(perch_capture_writer *w, unsigned type,
                                                           size_t bound)
{
    perch__cap_open_chunk *c = &w->chunk[type];
    if (c->records && !w->error && c->buf.len + bound <= c->buf.cap &&
        c->buf.len - CAP_RESERVE + bound <= w->opts.chunk_bytes)
        return c;
    return perch__cap_begin(w, type, bound);
}

/* Turns the writer's checks of the rules across records off, so that it writes what it is
 * given: for tests that craft captures the reader must refuse (test_capture_hostile.c); no
 * producer calls it. Call right after perch_capture_writer_create. */
static inline void perch__cap_writer_unchecked(perch_capture_writer *w)
{
    w->unchecked = true;
    w->opts.stacks_elsewhere = true; /* the stack and sample checks */
}

/* Flushes everything when the oldest open chunk has waited flush_interval_ms. */
int perch__cap_flush_by_time(perch_capture_writer *w);

/* Counts the record just encoded into the chunk of `type`; may flush on the time policy. */
static inline int perch__cap_end(perch_capture_writer *w, unsigned type)
{
    w->chunk[type].records++;
    w->stats.records[type]++;
    if (w->opts.flush_interval_ms && w->opts.now_ns && ++w->since_clock >= 64)
        return perch__cap_flush_by_time(w);
    return 0;
}

/* Interns n strings (NULL allowed: id 0) and writes their ids to ids[]. Strings longer than
 * PERCH_CAPTURE_MAX_STRING are cut at a UTF-8 boundary and counted as truncated. May reset the
 * string table (flushing every open record chunk first) so that all n fit together. */
int perch__cap_intern(perch_capture_writer *w, const char *const *strs, size_t n, uint64_t *ids);

/* Flushes the open chunk of `type` (and what it depends on) when it holds records. */
int perch__cap_flush(perch_capture_writer *w, unsigned type);

/* Flushes every open chunk in dependency order, the ledger and stat chunks last. */
int perch__cap_flush_all(perch_capture_writer *w);

/* Appends the end chunk and syncs. */
int perch__cap_write_end(perch_capture_writer *w);

/* Appends one entity record (version 2 coding, enc_entity.c). */
int perch__cap_put_entity(perch_capture_writer *w, unsigned type, const perch__cap_ent *e);

/* Appends a ledger record (the writer's own, e.g. "capture.truncated"). */
int perch__cap_enc_ledger(perch_capture_writer *w, const char *reason, uint64_t count);

#endif
