/*
 * Internal state of the .etl reader, shared by its parts: index.c (first pass: logfile
 * header and buffer index), stream.c (one per-CPU stream: load a buffer, peek its next
 * record), merge.c (the loser tree that orders stream heads), reader.c (the public API) and
 * unordered.c (reading the streams one after another, for counting).
 */
#ifndef PERCH_ETL_READER_H
#define PERCH_ETL_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etl/buffer.h"
#include "etl/record.h"
#include "perch/etl.h"
#include "perch/io.h"

#define PERCH__ETL_DEFAULT_MAX_BUFFER (16u << 20)
#define PERCH__ETL_DEFAULT_MAX_MEMORY ((uint64_t)1 << 30)
#define PERCH__ETL_MAX_BUFFERS        (1u << 24) /* index entries: 16 Mi buffers, 1 TiB at 64 KiB */

struct perch__etl_stream {
    uint32_t next_buf, end; /* the stream's buffers are index[next_buf, end) */
    uint16_t cpu;
    bool has_ev;          /* head is a checked record (see record.h) */
    bool compressed;      /* the current buffer was compressed */
    uint8_t *data;        /* the current buffer's records, from buffer offset 0x48 */
    size_t cap, len, pos; /* pos: past the head record */
    size_t head;          /* offset in data of the stream's next record, valid when has_ev */
    uint64_t base_off;    /* file offset of the current buffer */
    uint64_t last_ts;
    struct perch__etl_rec rec; /* what the check of the head record found */
};

/* A stream head as the merge orders it: by ts, then by tie = cpu << 32 | stream (one stream
 * per CPU, so the stream part never decides). */
struct perch__etl_merge_key {
    uint64_t ts;
    uint64_t tie;
};

static inline struct perch__etl_merge_key perch__etl_merge_key(uint64_t ts, uint32_t cpu,
                                                               uint32_t stream)
{
    struct perch__etl_merge_key key = {ts, (uint64_t)cpu << 32 | stream};
    return key;
}

/* The merge's fast form (merge.c): each node one 64-bit key, (ts - base) << shift | stream,
 * while every head's ts - base is below span (an exhausted stream: span << shift | stream).
 * Streams are in increasing CPU order, so this orders heads exactly as the wide keys do. */
struct perch__etl_narrow {
    uint64_t *node; /* nstreams nodes, laid out as the wide tree */
    uint64_t base, span;
    unsigned shift;
    bool on; /* false: the wide tree (r->tree) is the merge */
};

/* How the records are being read: the first perch_etl_next or perch_etl_next_unordered call
 * decides, and the other one is refused from then on. */
enum perch__etl_mode {
    PERCH__ETL_MODE_NONE,
    PERCH__ETL_MODE_TIME,     /* perch_etl_next: the merge */
    PERCH__ETL_MODE_STREAMS,  /* perch_etl_next_unordered: one stream after another */
    PERCH__ETL_MODE_FALLBACK, /* perch_etl_next_unordered in time order (see reader.c) */
};

struct perch_etl_reader {
    perch_input io; /* borrowed or owned (owns_io) */
    bool owns_io;
    uint8_t mode;           /* enum perch__etl_mode */
    bool order_dependent;   /* STREAMS: some stats would differ in time order (unordered.c) */
    uint32_t part, parts;   /* perch_etl_unordered_part; 0 of 1 unless set */
    uint32_t cur, part_end; /* STREAMS: the stream being read, the end of this part's run */
    int32_t err_stream[PERCH_ETL_REASON_COUNT]; /* STREAMS: stream of each reason's errors */
    perch_etl_stats open_stats; /* STREAMS, FALLBACK: the stats before the first record */
    perch_etl_header header;
    perch_etl_stats stats;
    uint64_t max_buffer, max_memory, memory;
    struct perch__etl_buffer *index;
    uint32_t count, index_cap;
    struct perch__etl_stream *streams;
    uint32_t nstreams;
    struct perch__etl_merge_key *tree; /* the merge: nstreams nodes (merge.c) */
    struct perch__etl_narrow narrow;   /* the same tree in 64-bit keys, while they fit */
    struct perch__etl_merge_key *work; /* 2 * nstreams: the leaves and winners of a build */
    int64_t pending;  /* stream whose record was returned last, advanced on the next call */
    uint8_t *scratch; /* compressed bytes of the buffer being decoded */
    size_t scratch_cap;
    int64_t last_stream; /* the stream of the record returned last (its head), or -1 */
    const perch_guid *group_guids[256]; /* perch_kernel_group_guid(g) for every g */
    uint8_t kind_cache[65536]; /* perch_kind by (group << 8 | opcode); 0xFF: not computed yet */
};

/* Counts one error of reason at file offset (and record offset inside the buffer, or 0). */
void perch__etl_error(struct perch_etl_reader *r, perch_etl_reason reason, uint64_t offset,
                      uint32_t record);

/* In STREAMS mode: notes which stream an error of reason came from (unordered.c). */
void perch__etl_unordered_error(struct perch_etl_reader *r, perch_etl_reason reason);

/* The next record in time order into *ev (the merge; perch_etl_next without the mode). */
int perch__etl_next_in_time(struct perch_etl_reader *r, perch_event *ev);

/* First pass: the logfile header from the first buffer, then the buffer index sorted by
 * (cpu, sequence, file order). Returns 0 or the open error (filling *diag). */
int perch__etl_build_index(struct perch_etl_reader *r, perch_etl_open_error *diag);

/* Sets up one stream per CPU run of the sorted index. Returns 0 or PERCH_ENOMEM. */
int perch__etl_make_streams(struct perch_etl_reader *r);

/* Moves stream s to its next record, loading buffers as needed. Returns 1 when s->head is a
 * checked record, 0 when the stream is exhausted, or PERCH_ENOMEM. Damage is counted and skipped.
 */
int perch__etl_stream_advance(struct perch_etl_reader *r, struct perch__etl_stream *s);

/* perch__etl_stream_advance for the common case, inlined where records are pulled: the next
 * record of the loaded buffer passes its checks and keeps the CPU's time order. Anything
 * else (the end of the buffer, a record to skip or count) takes the full path, which checks
 * it again. */
static inline int perch__etl_stream_next(struct perch_etl_reader *r, struct perch__etl_stream *s)
{
    (void)r;
    if (s->pos < s->len) {
        size_t step = 0;
        if (perch__etl_record_check(s->data + s->pos, s->len - s->pos, &s->rec, &step) == 0 &&
            s->rec.ts >= s->last_ts) {
            s->head = s->pos;
            s->pos += step;
            s->last_ts = s->rec.ts;
            return 1;
        }
    }
    return perch__etl_stream_advance(r, s);
}

/* Fills *ev with stream s's head record (s->has_ev). */
static inline void perch__etl_stream_fill(const struct perch_etl_reader *r,
                                          const struct perch__etl_stream *s, perch_event *ev)
{
    perch__etl_record_fill(s->data + s->head, &s->rec, s->cpu, r->group_guids, ev);
}

/* perch_event_kind through a table filled on first use (the kind table is a linear scan). */
static inline perch_kind perch__etl_kind_of(struct perch_etl_reader *r, const perch_event *ev)
{
    uint16_t key;
    if (ev->group == PERCH_GROUP_NONE)
        return PERCH_KIND_NON_KERNEL;
    key = (uint16_t)(((ev->group & 0xFFu) << 8) | ev->opcode);
    if (r->kind_cache[key] == 0xFF)
        r->kind_cache[key] = (uint8_t)perch_event_kind(ev);
    return (perch_kind)r->kind_cache[key];
}

/* Fills *ev with the head of stream, counts it and makes it the record returned last (the
 * stream moves on at the next call). */
static inline void perch__etl_yield(struct perch_etl_reader *r, uint32_t stream, perch_event *ev)
{
    perch__etl_stream_fill(r, &r->streams[stream], ev);
    r->pending = stream;
    r->last_stream = stream;
    r->stats.records++;
    r->stats.by_kind[perch__etl_kind_of(r, ev)]++;
    r->stats.by_header[ev->header_kind & 7u]++;
}

/* Releases a stream's buffer. */
void perch__etl_stream_free(struct perch_etl_reader *r, struct perch__etl_stream *s);

/* The merge of k stream heads, ordered by (ts, cpu): a loser tree (merge.c). Build it from
 * work[k + i] = stream i's head (perch__etl_merge_done(i) for a stream without records);
 * tree[0] is then the smallest head, and perch__etl_merge_top its stream. After the winner's
 * stream moved on, replace_top with its new head (or perch__etl_merge_done) restores the
 * order. Empty: every stream is done. */
struct perch__etl_merge_key perch__etl_merge_done(uint32_t stream);
void perch__etl_merge_build(struct perch__etl_merge_key *tree, struct perch__etl_merge_key *work,
                            uint32_t k);
void perch__etl_merge_replace_top(struct perch__etl_merge_key *tree, uint32_t k, uint64_t ts,
                                  uint64_t tie);
bool perch__etl_merge_empty(const struct perch__etl_merge_key *tree);

/* After perch__etl_merge_build: the narrow form of r->tree when every key fits it. */
void perch__etl_merge_narrow(struct perch_etl_reader *r);

/* Back to the wide tree for good, when a head does not fit the narrow form. */
void perch__etl_merge_widen(struct perch_etl_reader *r);

/* replace_top on the narrow form, inlined where records are pulled. Each level's loser is a
 * select, not a branch (merge.c). */
static inline void perch__etl_narrow_replace_top(uint64_t *node, uint32_t k, uint64_t key,
                                                 uint32_t stream)
{
    for (uint32_t n = (k + stream) >> 1; n > 0; n >>= 1) {
        uint64_t o = node[n];
        node[n] = o < key ? key : o;
        key = o < key ? o : key;
    }
    node[0] = key;
}

static inline uint32_t perch__etl_merge_top(const struct perch__etl_merge_key *tree)
{
    return (uint32_t)tree[0].tie;
}

#endif
