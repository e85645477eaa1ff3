/*
 * Reading an .etl file's records without the time-order merge, for callers that only count
 * (perch dump --summary): perch_etl_next_unordered hands out one stream's records after
 * another's, optionally only the streams of one part of the file (perch_etl_unordered_part),
 * so that several readers over the same file, each on its own thread, share the work.
 *
 * The stats must come out as time-order reading makes them, and two things could tell the
 * orders apart. The memory cap: buffers load in another order, so a cap that one order hits
 * could spare the other; unordered reading is used only when every stream's largest buffer
 * and the largest compressed one fit under the cap together (otherwise the reader reads in
 * time order, part 0 all of it). And each reason's "last error" offset: a stream's own
 * errors come in the same order either way and those found while opening come first either
 * way, so the offset is the same when one stream alone had that reason's errors after the
 * open; perch_etl_stats_of_parts says when that did not hold (read in time order then).
 */
#include <string.h>

#include "etl/reader.h"
#include "perch/error.h"

void perch__etl_unordered_error(struct perch_etl_reader *r, perch_etl_reason reason)
{
    if (r->err_stream[reason] < 0)
        r->err_stream[reason] = (int32_t)r->cur;
    else if (r->err_stream[reason] != (int32_t)r->cur)
        r->order_dependent = true;
}

int perch_etl_unordered_part(perch_etl_reader *r, unsigned part, unsigned parts)
{
    if (r == NULL || parts == 0 || part >= parts)
        return PERCH_EINVAL;
    if (r->mode != PERCH__ETL_MODE_NONE)
        return PERCH_ESTATE;
    r->part = part;
    r->parts = parts;
    return 0;
}

/* The memory the streams can hold at once whatever the order: each stream's largest buffer
 * and the largest compressed one (the scratch). Streams cover the index in runs. */
static uint64_t memory_bound(const struct perch_etl_reader *r)
{
    uint64_t total = 0, scratch = 0;
    uint32_t i = 0;
    for (uint32_t n = 0; n < r->nstreams; n++) {
        uint64_t most = 0;
        for (; i < r->streams[n].end; i++) {
            const struct perch__etl_buffer *b = &r->index[i];
            if (b->used - PERCH__ETL_BUFFER_HEADER > most)
                most = b->used - PERCH__ETL_BUFFER_HEADER;
            if ((b->flags & PERCH__ETL_BUF_COMPRESSED) &&
                b->size - PERCH__ETL_BUFFER_HEADER > scratch)
                scratch = b->size - PERCH__ETL_BUFFER_HEADER;
        }
        total += most;
    }
    return total + scratch;
}

/* The part a stream belongs to: the parts split the index (sorted by CPU) into runs of about
 * equal buffer counts, and a stream goes with the run its first buffer falls in. */
static uint32_t part_of(const struct perch_etl_reader *r, uint32_t stream)
{
    uint32_t first = stream == 0 ? 0 : r->streams[stream - 1].end;
    return (uint32_t)((uint64_t)first * r->parts / r->count);
}

/* The first perch_etl_next_unordered call: this part's streams one by one when the memory
 * cap cannot tell the orders apart, else time order. */
static void enter_unordered(struct perch_etl_reader *r)
{
    if (r->parts == 0)
        r->parts = 1;
    r->open_stats = r->stats;
    if (memory_bound(r) > r->max_memory) {
        r->mode = PERCH__ETL_MODE_FALLBACK;
        return;
    }
    for (int i = 0; i < PERCH_ETL_REASON_COUNT; i++)
        r->err_stream[i] = -1;
    r->cur = 0;
    while (r->cur < r->nstreams && part_of(r, r->cur) < r->part)
        r->cur++;
    r->part_end = r->cur;
    while (r->part_end < r->nstreams && part_of(r, r->part_end) == r->part)
        r->part_end++;
    r->mode = PERCH__ETL_MODE_STREAMS;
}

/* Advances the stream returned last time; moves on to the next stream when it is done. */
static int settle_stream(struct perch_etl_reader *r)
{
    int got = perch__etl_stream_next(r, &r->streams[r->pending]);
    r->pending = -1;
    if (got < 0)
        return got;
    if (got == 0)
        r->cur++;
    return 0;
}

int perch_etl_next_unordered(perch_etl_reader *r, perch_event *ev)
{
    if (r == NULL || ev == NULL)
        return PERCH_EINVAL;
    if (r->mode != PERCH__ETL_MODE_STREAMS) {
        if (r->mode == PERCH__ETL_MODE_NONE)
            enter_unordered(r);
        if (r->mode == PERCH__ETL_MODE_FALLBACK)
            return r->part == 0 ? perch__etl_next_in_time(r, ev) : PERCH_EOF;
        if (r->mode != PERCH__ETL_MODE_STREAMS)
            return PERCH_ESTATE;
    }
    if (r->pending >= 0) {
        int err = settle_stream(r);
        if (err < 0)
            return err;
    }
    while (r->cur < r->part_end && !r->streams[r->cur].has_ev)
        r->cur++;
    if (r->cur >= r->part_end)
        return PERCH_EOF;
    perch__etl_yield(r, r->cur, ev);
    return 0;
}

/* *out += what r counted after opening. */
static void add_counts(perch_etl_stats *out, const struct perch_etl_reader *r)
{
    const perch_etl_stats *st = &r->stats, *o = &r->open_stats;
    out->records += st->records - o->records;
    for (int k = 0; k < PERCH_KIND_COUNT; k++)
        out->by_kind[k] += st->by_kind[k] - o->by_kind[k];
    for (int h = 0; h < 8; h++)
        out->by_header[h] += st->by_header[h] - o->by_header[h];
    out->skipped_records += st->skipped_records - o->skipped_records;
    for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++)
        out->errors[e] += st->errors[e] - o->errors[e];
}

/* The last error of each reason: the open's, or the one part's that had more. False when
 * two parts had errors of one reason. */
static bool last_errors(perch_etl_stats *out, perch_etl_reader *const *parts, unsigned n)
{
    for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++) {
        unsigned from = n;
        for (unsigned i = 0; i < n; i++) {
            if (parts[i]->stats.errors[e] == parts[i]->open_stats.errors[e])
                continue;
            if (from != n)
                return false;
            from = i;
        }
        if (from != n) {
            out->error_offset[e] = parts[from]->stats.error_offset[e];
            out->error_record[e] = parts[from]->stats.error_record[e];
        }
    }
    return true;
}

bool perch_etl_stats_of_parts(perch_etl_reader *const *parts, unsigned n, perch_etl_stats *out)
{
    perch_etl_stats sum;
    if (parts == NULL || n == 0 || out == NULL)
        return false;
    if (n == 1 && parts[0]->mode == PERCH__ETL_MODE_TIME) {
        *out = parts[0]->stats;
        return true;
    }
    for (unsigned i = 0; i < n; i++)
        if (parts[i]->part != i || parts[i]->parts != n ||
            (parts[i]->mode != PERCH__ETL_MODE_STREAMS &&
             parts[i]->mode != PERCH__ETL_MODE_FALLBACK) ||
            parts[i]->mode != parts[0]->mode || parts[i]->order_dependent)
            return false;
    if (parts[0]->mode == PERCH__ETL_MODE_FALLBACK) {
        *out = parts[0]->stats; /* part 0 read everything in time order */
        return true;
    }
    sum = parts[0]->open_stats;
    for (unsigned i = 0; i < n; i++)
        add_counts(&sum, parts[i]);
    if (!last_errors(&sum, parts, n))
        return false;
    *out = sum;
    return true;
}
