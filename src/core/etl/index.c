/*
 * The reader's first pass. It checks that the file starts like an .etl file (a buffer header
 * whose first record is the logfile header), parses TRACE_LOGFILE_HEADER, then walks the
 * file by BufferSize reading only the 0x48-byte buffer headers, and sorts the resulting index
 * by (cpu, SequenceNumber, file order) so each CPU's buffers form one run.
 */
#include <stdlib.h>
#include <string.h>

#include "etl/logfile.h"
#include "etl/reader.h"
#include "etl/record.h"
#include "perch/error.h"
#include "util/mem.h"

#define COMPRESSED_MODE 0x04000000u

static int fail(perch_etl_open_error *diag, int err, uint64_t off, const char *what)
{
    if (diag != NULL) {
        diag->err = err;
        diag->offset = off;
        diag->what = what;
    }
    return err;
}

/* Parses the first record of the first buffer's records at p[0, len). */
static int read_logfile_record(struct perch_etl_reader *r, const uint8_t *p, size_t len,
                               perch_etl_open_error *diag)
{
    perch_event ev;
    size_t step;
    int err = perch__etl_record(p, len, 8, 0, NULL, &ev, &step);
    if (err < 0 || ev.header_kind != PERCH_HEADER_SYSTEM || ev.hook != 0)
        return fail(diag, err == PERCH_ETRUNC ? PERCH_ETRUNC : PERCH_EFORMAT,
                    PERCH__ETL_BUFFER_HEADER,
                    "not an .etl file (the first record is not a logfile header)");
    err = perch__etl_logfile_parse(ev.payload, ev.payload_len, ev.timestamp, &r->header);
    if (err < 0)
        return fail(diag, err, PERCH__ETL_BUFFER_HEADER, "the logfile header is damaged");
    return 0;
}

static int read_first_buffer(struct perch_etl_reader *r, perch_etl_open_error *diag)
{
    uint8_t h[PERCH__ETL_BUFFER_HEADER], *p;
    struct perch__etl_buffer b;
    int err = perch_input_read_exact(&r->io, 0, h, sizeof h);
    if (err == PERCH_ETRUNC)
        return fail(diag, err, r->io.size, "shorter than one .etl buffer header");
    if (err < 0)
        return fail(diag, err, 0, "cannot read the first buffer header");
    perch__etl_buffer_parse(h, 0, &b);
    if (b.size < PERCH__ETL_BUFFER_HEADER + 0x20 || b.used < PERCH__ETL_BUFFER_HEADER + 0x20 ||
        b.used > b.size || b.size > r->max_buffer || (b.flags & PERCH__ETL_BUF_COMPRESSED))
        return fail(diag, PERCH_EFORMAT, 0, "not an .etl file (no valid first buffer header)");
    p = perch__alloc(b.used - PERCH__ETL_BUFFER_HEADER);
    if (p == NULL)
        return fail(diag, PERCH_ENOMEM, 0, "out of memory");
    err = perch_input_read_exact(&r->io, PERCH__ETL_BUFFER_HEADER, p, b.used - PERCH__ETL_BUFFER_HEADER);
    if (err == 0)
        err = read_logfile_record(r, p, b.used - PERCH__ETL_BUFFER_HEADER, diag);
    else
        err = fail(diag, err, r->io.size, "the file ends inside the first buffer");
    perch__free(p);
    return err;
}

static int append(struct perch_etl_reader *r, const struct perch__etl_buffer *b)
{
    if (r->count == r->index_cap) {
        uint32_t cap = r->index_cap ? r->index_cap * 2 : 64;
        struct perch__etl_buffer *n;
        if (cap > PERCH__ETL_MAX_BUFFERS)
            cap = PERCH__ETL_MAX_BUFFERS;
        if (r->count == cap)
            return PERCH_ELIMIT;
        n = perch__realloc(r->index, cap * sizeof *n);
        if (n == NULL)
            return PERCH_ENOMEM;
        r->index = n;
        r->index_cap = cap;
    }
    r->index[r->count] = *b;
    r->index[r->count].order = r->count;
    r->count++;
    return 0;
}

/* Checks one buffer's sizes against the file and the caps; counts what is wrong. Returns
 * true when the buffer can be read (possibly shortened at the end of the file). */
static bool usable(struct perch_etl_reader *r, struct perch__etl_buffer *b)
{
    bool compressed = (b->flags & PERCH__ETL_BUF_COMPRESSED) != 0;
    uint64_t left = r->io.size - b->file_off;
    if (b->used < PERCH__ETL_BUFFER_HEADER || (!compressed && b->used > b->size)) {
        perch__etl_error(r, PERCH_ETL_R_BUFFER_HEADER, b->file_off, 0);
        return false;
    }
    if (b->used > r->max_buffer) {
        perch__etl_error(r, PERCH_ETL_R_BUFFER_LIMIT, b->file_off, 0);
        return false;
    }
    if (b->size > left) {
        perch__etl_error(r, PERCH_ETL_R_BUFFER_TRUNCATED, b->file_off, 0);
        if (compressed)
            return false;
        if (b->used > left)
            b->used = (uint32_t)left;
        b->avail = 1;
    }
    return true;
}

/* The step to the next buffer when this one's BufferSize is unusable: the session buffer
 * size of an uncompressed file (buffers all have that size), else 0 (stop). */
static uint64_t resync_step(const struct perch_etl_reader *r)
{
    uint32_t bs = r->header.buffer_size;
    if ((r->header.log_file_mode & COMPRESSED_MODE) || bs < PERCH__ETL_BUFFER_HEADER ||
        bs > r->max_buffer)
        return 0;
    return bs;
}

static int walk_buffers(struct perch_etl_reader *r)
{
    uint64_t off = 0;
    while (off < r->io.size) {
        uint8_t h[PERCH__ETL_BUFFER_HEADER];
        struct perch__etl_buffer b;
        int err = perch_input_read_exact(&r->io, off, h, sizeof h);
        if (err < 0) {
            perch__etl_error(r, err == PERCH_ETRUNC ? PERCH_ETL_R_BUFFER_TRUNCATED : PERCH_ETL_R_IO,
                             off, 0);
            return 0;
        }
        perch__etl_buffer_parse(h, off, &b);
        if (b.size < PERCH__ETL_BUFFER_HEADER || b.size > r->max_buffer) {
            uint64_t step = resync_step(r);
            perch__etl_error(r, b.size < PERCH__ETL_BUFFER_HEADER ? PERCH_ETL_R_BUFFER_HEADER
                                                                  : PERCH_ETL_R_BUFFER_LIMIT,
                             off, 0);
            if (step == 0)
                return 0;
            off += step;
            continue;
        }
        if (usable(r, &b)) {
            err = append(r, &b);
            if (err == PERCH_ELIMIT) {
                perch__etl_error(r, PERCH_ETL_R_INDEX_LIMIT, off, 0);
                return 0;
            }
            if (err < 0)
                return err;
        }
        off += b.size;
    }
    return 0;
}

static int by_cpu_seq(const void *pa, const void *pb)
{
    const struct perch__etl_buffer *a = pa, *b = pb;
    if (a->cpu != b->cpu)
        return a->cpu < b->cpu ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a->order < b->order ? -1 : (a->order > b->order);
}

static void count_buffers(struct perch_etl_reader *r)
{
    for (uint32_t i = 0; i < r->count; i++) {
        uint16_t f = r->index[i].flags;
        r->stats.buffers++;
        r->stats.compressed_buffers += (f & PERCH__ETL_BUF_COMPRESSED) != 0;
        r->stats.buffers_events_lost += (f & PERCH__ETL_BUF_EVENTS_LOST) != 0;
        r->stats.buffers_buffer_lost += (f & PERCH__ETL_BUF_BUFFER_LOST) != 0;
    }
}

int perch__etl_build_index(struct perch_etl_reader *r, perch_etl_open_error *diag)
{
    int err = read_first_buffer(r, diag);
    if (err < 0)
        return err;
    err = walk_buffers(r);
    if (err < 0)
        return fail(diag, err, 0, "out of memory while indexing buffers");
    count_buffers(r);
    qsort(r->index, r->count, sizeof *r->index, by_cpu_seq);
    return 0;
}
