/*
 * One per-CPU stream of the .etl reader: the CPU's buffers in sequence order, one of them in
 * memory at a time (decompressed when flagged 0x40), and the next record parsed ahead so the
 * merge can compare timestamps. Damage is counted in the reader's stats and stepped over: a
 * bad buffer is skipped, a bad record ends its buffer unless its size is still trustworthy.
 */
#include <stdlib.h>
#include <string.h>

#include "etl/reader.h"
#include "etl/record.h"
#include "etl/xpress.h"
#include "perch/error.h"
#include "util/mem.h"

/* Makes *buf hold at least need bytes, within the reader's memory cap. */
static int reserve(struct perch_etl_reader *r, uint8_t **buf, size_t *cap, size_t need)
{
    uint8_t *n;
    if (need <= *cap)
        return 0;
    if (r->memory - *cap + need > r->max_memory)
        return PERCH_ELIMIT;
    n = perch__alloc(need ? need : 1);
    if (n == NULL)
        return PERCH_ENOMEM;
    perch__free(*buf);
    r->memory = r->memory - *cap + need;
    *buf = n;
    *cap = need;
    return 0;
}

static int load_compressed(struct perch_etl_reader *r, struct perch__etl_stream *s,
                           const struct perch__etl_buffer *b, size_t out_len)
{
    size_t in_len = b->size - PERCH__ETL_BUFFER_HEADER, produced = 0;
    int err = reserve(r, &r->scratch, &r->scratch_cap, in_len);
    if (err < 0)
        return err;
    err =
        perch_input_read_exact(&r->io, b->file_off + PERCH__ETL_BUFFER_HEADER, r->scratch, in_len);
    if (err < 0)
        return err;
    err = perch__xpress_decompress(r->scratch, in_len, s->data, out_len, &produced);
    if (err < 0) {
        perch__etl_error(r, PERCH_ETL_R_DECOMPRESS, b->file_off, 0);
        return 1;
    }
    if (produced != out_len) {
        perch__etl_error(r, PERCH_ETL_R_DECOMPRESSED_SIZE, b->file_off, 0);
        return 1;
    }
    return 0;
}

/* Loads buffer b into s. Returns 0, 1 when the buffer was skipped (counted), or ENOMEM. */
static int load(struct perch_etl_reader *r, struct perch__etl_stream *s,
                const struct perch__etl_buffer *b)
{
    size_t len = b->used - PERCH__ETL_BUFFER_HEADER;
    int err = reserve(r, &s->data, &s->cap, len);
    s->len = s->pos = 0;
    if (err == PERCH_ELIMIT) {
        perch__etl_error(r, PERCH_ETL_R_BUFFER_LIMIT, b->file_off, 0);
        return 1;
    }
    if (err < 0)
        return err;
    if (b->flags & PERCH__ETL_BUF_COMPRESSED)
        err = load_compressed(r, s, b, len);
    else
        err = perch_input_read_exact(&r->io, b->file_off + PERCH__ETL_BUFFER_HEADER, s->data, len);
    if (err == PERCH_ENOMEM)
        return err;
    if (err == PERCH_ELIMIT) {
        perch__etl_error(r, PERCH_ETL_R_BUFFER_LIMIT, b->file_off, 0);
        return 1;
    }
    if (err < 0) {
        perch__etl_error(r, err == PERCH_ETRUNC ? PERCH_ETL_R_BUFFER_TRUNCATED : PERCH_ETL_R_IO,
                         b->file_off, 0);
        return 1;
    }
    if (err > 0)
        return 1;
    s->len = len;
    s->base_off = b->file_off;
    s->compressed = (b->flags & PERCH__ETL_BUF_COMPRESSED) != 0;
    return 0;
}

static perch_etl_reason reason_of(int err)
{
    switch (err) {
    case PERCH_EFORMAT:
        return PERCH_ETL_R_RECORD_MARKER;
    case PERCH_ERANGE:
        return PERCH_ETL_R_RECORD_EXT;
    default:
        return PERCH_ETL_R_RECORD_SIZE;
    }
}

/* Checks the next record of the loaded buffer. Returns 1 with s->head and s->rec set, or 0
 * when the buffer has no more records. */
static int next_in_buffer(struct perch_etl_reader *r, struct perch__etl_stream *s)
{
    while (s->pos < s->len) {
        size_t step = 0;
        uint32_t rec = (uint32_t)(PERCH__ETL_BUFFER_HEADER + s->pos);
        int err = perch__etl_record_check(s->data + s->pos, s->len - s->pos, &s->rec, &step);
        if (err == 0) {
            s->head = s->pos;
            s->pos += step;
            return 1;
        }
        if (err == PERCH_EOF)
            break;
        if (err == PERCH_EUNKNOWN) {
            r->stats.skipped_records++;
            s->pos += step;
            continue;
        }
        perch__etl_error(r, reason_of(err), s->compressed ? s->base_off : s->base_off + rec, rec);
        if (err != PERCH_ERANGE || step == 0)
            break;
        s->pos += step;
    }
    s->pos = s->len;
    return 0;
}

int perch__etl_stream_advance(struct perch_etl_reader *r, struct perch__etl_stream *s)
{
    for (;;) {
        int err;
        if (next_in_buffer(r, s)) {
            uint32_t rec = (uint32_t)(PERCH__ETL_BUFFER_HEADER + s->head);
            if (s->rec.ts < s->last_ts)
                perch__etl_error(r, PERCH_ETL_R_TIME_ORDER,
                                 s->compressed ? s->base_off : s->base_off + rec, rec);
            s->last_ts = s->rec.ts;
            s->has_ev = true;
            return 1;
        }
        s->has_ev = false;
        if (s->next_buf >= s->end)
            return 0;
        err = load(r, s, &r->index[s->next_buf++]);
        if (err < 0)
            return err;
    }
}

void perch__etl_stream_free(struct perch_etl_reader *r, struct perch__etl_stream *s)
{
    perch__free(s->data);
    r->memory -= s->cap;
    s->data = NULL;
    s->cap = s->len = s->pos = 0;
}

int perch__etl_make_streams(struct perch_etl_reader *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->count; i++)
        n += i == 0 || r->index[i].cpu != r->index[i - 1].cpu;
    r->streams = perch__calloc(n ? n : 1, sizeof *r->streams);
    r->tree = perch__calloc(n ? n : 1, sizeof *r->tree);
    r->work = perch__calloc(n ? 2 * (size_t)n : 1, sizeof *r->work);
    r->narrow.node = perch__calloc(n ? n : 1, sizeof *r->narrow.node);
    if (r->streams == NULL || r->tree == NULL || r->work == NULL || r->narrow.node == NULL)
        return PERCH_ENOMEM;
    n = 0;
    for (uint32_t i = 0; i < r->count; i++) {
        if (i == 0 || r->index[i].cpu != r->index[i - 1].cpu) {
            r->streams[n].next_buf = i;
            r->streams[n].cpu = r->index[i].cpu;
            n++;
        }
        r->streams[n - 1].end = i + 1;
    }
    r->nstreams = n;
    return 0;
}
