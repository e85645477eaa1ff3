/*
 * The public face of the .etl reader: open (from an I/O backend, memory or a file), iterate
 * in time order, stats, close. Iteration keeps the stream whose record was returned last at
 * the top of the merge and advances it only on the next call, so the returned payload stays
 * valid until then.
 * The unordered reading (perch_etl_next_unordered) is in unordered.c.
 */
#include <stdlib.h>
#include <string.h>

#include "etl/reader.h"
#include "perch/error.h"
#include "util/mem.h"

static const char *const reason_names[PERCH_ETL_REASON_COUNT] = {
#define PERCH_ETL_REASON_NAME(name, text, desc) text,
    PERCH_ETL_REASON_MAP(PERCH_ETL_REASON_NAME)
#undef PERCH_ETL_REASON_NAME
};

static const char *const reason_texts[PERCH_ETL_REASON_COUNT] = {
#define PERCH_ETL_REASON_TEXT(name, text, desc) desc,
    PERCH_ETL_REASON_MAP(PERCH_ETL_REASON_TEXT)
#undef PERCH_ETL_REASON_TEXT
};

const char *perch_etl_reason_name(perch_etl_reason reason)
{
    if ((unsigned)reason >= PERCH_ETL_REASON_COUNT)
        return NULL;
    return reason_names[reason];
}

const char *perch_etl_reason_text(perch_etl_reason reason)
{
    if ((unsigned)reason >= PERCH_ETL_REASON_COUNT)
        return NULL;
    return reason_texts[reason];
}

void perch__etl_error(struct perch_etl_reader *r, perch_etl_reason reason, uint64_t offset,
                      uint32_t record)
{
    if (r->mode == PERCH__ETL_MODE_STREAMS)
        perch__etl_unordered_error(r, reason);
    r->stats.errors[reason]++;
    r->stats.error_offset[reason] = offset;
    r->stats.error_record[reason] = record;
}

static struct perch__etl_merge_key head_of(const struct perch_etl_reader *r, uint32_t i)
{
    return perch__etl_merge_key(r->streams[i].rec.ts, r->streams[i].cpu, i);
}

static int prime_streams(struct perch_etl_reader *r)
{
    for (uint32_t i = 0; i < r->nstreams; i++) {
        int got = perch__etl_stream_advance(r, &r->streams[i]);
        if (got < 0)
            return got;
        r->work[r->nstreams + i] = got > 0 ? head_of(r, i) : perch__etl_merge_done(i);
    }
    if (r->nstreams > 0) {
        perch__etl_merge_build(r->tree, r->work, r->nstreams);
        perch__etl_merge_narrow(r);
    }
    return 0;
}

static void apply_options(struct perch_etl_reader *r, const perch_etl_options *opts)
{
    r->max_buffer = PERCH__ETL_DEFAULT_MAX_BUFFER;
    r->max_memory = PERCH__ETL_DEFAULT_MAX_MEMORY;
    if (opts == NULL || opts->sz < sizeof *opts)
        return;
    if (opts->max_buffer_bytes >= 0x1000 && opts->max_buffer_bytes < r->max_buffer)
        r->max_buffer = opts->max_buffer_bytes;
    if (opts->max_memory != 0)
        r->max_memory = opts->max_memory;
}

static int open_common(struct perch_etl_reader *r, const perch_etl_options *opts,
                       perch_etl_open_error *diag)
{
    int err;
    apply_options(r, opts);
    r->pending = -1;
    r->last_stream = -1;
    memset(r->kind_cache, 0xFF, sizeof r->kind_cache);
    for (unsigned g = 0; g < 256; g++)
        r->group_guids[g] = perch_kernel_group_guid((uint16_t)g);
    err = perch__etl_build_index(r, diag);
    if (err < 0)
        return err;
    err = perch__etl_make_streams(r);
    if (err == 0)
        err = prime_streams(r);
    if (err < 0 && diag != NULL) {
        diag->err = err;
        diag->offset = 0;
        diag->what = "out of memory";
    }
    return err;
}

/* Opens r (already holding its input) or destroys it. */
static int finish_open(struct perch_etl_reader *r, const perch_etl_options *opts,
                       perch_etl_reader **out, perch_etl_open_error *diag)
{
    int err = open_common(r, opts, diag);
    if (err < 0) {
        perch_etl_destroy(r);
        return err;
    }
    *out = r;
    return 0;
}

int perch_etl_open_io(const perch_input *io, const perch_etl_options *opts, perch_etl_reader **out,
                      perch_etl_open_error *diag)
{
    struct perch_etl_reader *r;
    if (io == NULL || io->read_at == NULL || out == NULL)
        return PERCH_EINVAL;
    r = perch__calloc(1, sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    r->io = *io;
    return finish_open(r, opts, out, diag);
}

int perch_etl_open_owned(perch_input *in, const perch_etl_options *opts, perch_etl_reader **out,
                         perch_etl_open_error *diag)
{
    struct perch_etl_reader *r;
    if (in == NULL || out == NULL)
        return PERCH_EINVAL;
    r = perch__calloc(1, sizeof *r);
    if (r == NULL) {
        perch_input_close(in);
        return PERCH_ENOMEM;
    }
    r->io = *in;
    memset(in, 0, sizeof *in);
    r->owns_io = true;
    return finish_open(r, opts, out, diag);
}

int perch_etl_open_memory(const void *data, size_t len, const perch_etl_options *opts,
                          perch_etl_reader **out, perch_etl_open_error *diag)
{
    perch_input in;
    if ((data == NULL && len > 0) || out == NULL)
        return PERCH_EINVAL;
    perch_input_memory(&in, data, len);
    return perch_etl_open_owned(&in, opts, out, diag);
}

void perch_etl_destroy(perch_etl_reader *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; i < r->nstreams; i++)
        perch__etl_stream_free(r, &r->streams[i]);
    perch__free(r->streams);
    perch__free(r->tree);
    perch__free(r->work);
    perch__free(r->narrow.node);
    perch__free(r->index);
    perch__free(r->scratch);
    if (r->owns_io)
        perch_input_close(&r->io);
    perch__free(r);
}

/* Advances the stream returned last time and restores the merge order: in the narrow form
 * while the new head fits it, else in the wide tree. */
static int settle_pending(struct perch_etl_reader *r)
{
    uint32_t i = (uint32_t)r->pending;
    struct perch__etl_narrow *nw = &r->narrow;
    struct perch__etl_merge_key key;
    int got = perch__etl_stream_next(r, &r->streams[i]);
    r->pending = -1;
    if (got < 0)
        return got;
    if (nw->on) {
        uint64_t d = got > 0 ? r->streams[i].rec.ts - nw->base : nw->span;
        if (d < nw->span || got == 0) { /* a ts below base wraps past span */
            perch__etl_narrow_replace_top(nw->node, r->nstreams, d << nw->shift | i, i);
            return 0;
        }
        perch__etl_merge_widen(r);
    }
    key = got > 0 ? head_of(r, i) : perch__etl_merge_done(i);
    perch__etl_merge_replace_top(r->tree, r->nstreams, key.ts, key.tie);
    return 0;
}

/* The stream whose head wins the merge, or -1 when every stream is exhausted. */
static int64_t merge_winner(const struct perch_etl_reader *r)
{
    const struct perch__etl_narrow *nw = &r->narrow;
    if (nw->on)
        return nw->node[0] >> nw->shift == nw->span
                   ? -1
                   : (int64_t)(nw->node[0] & ((1ull << nw->shift) - 1));
    return perch__etl_merge_empty(r->tree) ? -1 : (int64_t)perch__etl_merge_top(r->tree);
}

/* The next record in time order: the head of the stream that wins the merge. */
int perch__etl_next_in_time(struct perch_etl_reader *r, perch_event *ev)
{
    int64_t top;
    if (r->pending >= 0) {
        int err = settle_pending(r);
        if (err < 0)
            return err;
    }
    if (r->nstreams == 0 || (top = merge_winner(r)) < 0)
        return PERCH_EOF;
    perch__etl_yield(r, (uint32_t)top, ev);
    return 0;
}

int perch_etl_next(perch_etl_reader *r, perch_event *ev)
{
    if (r == NULL || ev == NULL)
        return PERCH_EINVAL;
    if (r->mode != PERCH__ETL_MODE_TIME) {
        if (r->mode != PERCH__ETL_MODE_NONE)
            return PERCH_ESTATE;
        r->mode = PERCH__ETL_MODE_TIME;
    }
    return perch__etl_next_in_time(r, ev);
}

/* A stream's head (and its buffer) change only when it moves on to yield its next record,
 * which makes it the last stream again: the last stream's head is the last record. */
perch_etl_position perch_etl_last_position(const perch_etl_reader *r)
{
    perch_etl_position pos = {0, 0, false};
    if (r->last_stream >= 0) {
        const struct perch__etl_stream *s = &r->streams[r->last_stream];
        pos.buffer = s->base_off;
        pos.record = (uint32_t)(PERCH__ETL_BUFFER_HEADER + s->head);
        pos.compressed = s->compressed;
    }
    return pos;
}

const perch_etl_header *perch_etl_header_of(const perch_etl_reader *r)
{
    return &r->header;
}

uint64_t perch_etl_input_size(const perch_etl_reader *r)
{
    return r->io.size;
}

uint64_t perch_etl_max_record_len(const perch_etl_reader *r)
{
    uint64_t max = 0;
    for (uint32_t i = 0; i < r->count; i++)
        if (r->index[i].used > max)
            max = r->index[i].used;
    return max > PERCH__ETL_BUFFER_HEADER ? max - PERCH__ETL_BUFFER_HEADER : 0;
}

const perch_etl_stats *perch_etl_stats_of(const perch_etl_reader *r)
{
    return &r->stats;
}
