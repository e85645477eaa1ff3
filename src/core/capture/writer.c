/*
 * The capture writer's container side: the file header, one open chunk per record type,
 * flushing whole chunks in dependency order (strings before anything that names them,
 * entities before the records naming them, stacks before samples, ledger and stat last), the CRC of
 * each chunk and the sync policy. Record encoding is in encode.c.
 *
 * Crash safety comes from two rules: the output only ever receives whole chunks, each in one
 * write call, and sync is called only between chunks. A file cut anywhere therefore holds a
 * prefix of whole chunks plus at most one partial chunk, which the reader detects.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/crc32c.h"
#include "capture/writer.h"
#include "util/mem.h"

int perch__cap_buf_reserve(perch__cap_buf *b, size_t more, size_t limit)
{
    if (more > limit || b->len > limit - more)
        return PERCH_ELIMIT;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap = cap > limit / 2 ? limit : cap * 2;
    uint8_t *p = perch__realloc(b->data, cap);
    if (!p)
        return PERCH_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

void perch__cap_buf_free(perch__cap_buf *b)
{
    perch__free(b->data);
    memset(b, 0, sizeof *b);
}

void perch_capture_writer_opts_default(perch_capture_writer_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->size = sizeof *opts;
    opts->chunk_bytes = 64u << 10;
    opts->sync_every_chunks = 16;
    opts->sync_interval_ms = 1000;
    opts->flush_interval_ms = 2000;
}

static uint64_t now(const perch_capture_writer *w)
{
    return w->opts.now_ns ? w->opts.now_ns(w->opts.clock_ctx) : 0;
}

static int fail(perch_capture_writer *w, int err)
{
    if (!w->error)
        w->error = err;
    return w->error;
}

static int sync_output(perch_capture_writer *w)
{
    int err = w->out->sync ? w->out->sync(w->out->ctx) : 0;
    if (err)
        return fail(w, err);
    w->since_sync = 0;
    w->last_sync_ns = now(w);
    w->stats.syncs++;
    return 0;
}

static int maybe_sync(perch_capture_writer *w)
{
    const perch_capture_writer_opts *o = &w->opts;
    w->since_sync++;
    if (o->sync_every_chunks && w->since_sync >= o->sync_every_chunks)
        return sync_output(w);
    if (o->sync_interval_ms && o->now_ns &&
        now(w) - w->last_sync_ns >= (uint64_t)o->sync_interval_ms * 1000000u)
        return sync_output(w);
    return 0;
}

/* The payload prefix of a chunk, known only at flush time. */
static size_t chunk_prefix(const perch_capture_writer *w, unsigned type, uint64_t records,
                           uint8_t *out)
{
    perch__cap_buf b = {out, 0, 3 * CAP_VARINT_MAX};
    if (type == PERCH_CHUNK_END)
        return 0;
    if (type == PERCH_CHUNK_STRINGS) {
        cap_put_varint(&b, w->strings_reset ? CAP_STRINGS_RESET : 0);
        cap_put_varint(&b, w->strings_first_id);
    }
    cap_put_varint(&b, records);
    return b.len;
}

/* Writes the open chunk of `type` as one whole chunk and empties it. */
static int write_chunk(perch_capture_writer *w, unsigned type)
{
    perch__cap_open_chunk *c = &w->chunk[type];
    uint8_t prefix[3 * CAP_VARINT_MAX];
    size_t plen = chunk_prefix(w, type, c->records, prefix);
    size_t body = c->buf.len - CAP_RESERVE;
    uint8_t *payload = c->buf.data + CAP_RESERVE - plen;
    uint8_t *hdr = payload - CAP_CHUNK_HEADER;
    uint32_t len = (uint32_t)(plen + body);
    memcpy(payload, prefix, plen);
    cap_store_le(hdr, type, 2);
    cap_store_le(hdr + 2, 0, 2);
    cap_store_le(hdr + 4, len, 4);
    cap_store_le(hdr + 8, perch__crc32c(perch__crc32c(0, hdr, 8), payload, len), 4);
    int err = w->out->write(w->out->ctx, hdr, CAP_CHUNK_HEADER + len);
    if (err)
        return fail(w, err);
    if (type == PERCH_CHUNK_TRACE_INFO && !w->info_off)
        w->info_off = w->stats.bytes; /* for the refusal of a second one (encode.c) */
    w->stats.bytes += CAP_CHUNK_HEADER + len;
    w->stats.chunks++;
    c->buf.len = CAP_RESERVE;
    c->records = 0;
    perch__cap_state_reset(&c->state);
    if (type == PERCH_CHUNK_STACK)
        perch__cap_ring_reset(&w->ring);
    if (type == PERCH_CHUNK_STRINGS) {
        w->strings_first_id = w->strings.count + 1;
        w->strings_reset = false;
    }
    return maybe_sync(w);
}

/* Entities precede every record naming their key: a thread or module chunk needs the open
 * process chunk written first, a slice, sample or LBR chunk the open entity chunks. */
static int flush_entities(perch_capture_writer *w, unsigned type)
{
    static const uint8_t needs[PERCH_CHUNK_TYPE_LIMIT] = {
        [PERCH_CHUNK_THREAD] = 1, [PERCH_CHUNK_MODULE] = 1, [PERCH_CHUNK_SLICE] = 3,
        [PERCH_CHUNK_SAMPLE] = 3, [PERCH_CHUNK_LBR] = 3,
    };
    int err = 0;
    if (needs[type] >= 1)
        err = perch__cap_flush(w, PERCH_CHUNK_PROCESS);
    if (!err && needs[type] >= 3)
        err = perch__cap_flush(w, PERCH_CHUNK_THREAD);
    if (!err && needs[type] >= 3)
        err = perch__cap_flush(w, PERCH_CHUNK_MODULE);
    return err;
}

int perch__cap_flush(perch_capture_writer *w, unsigned type)
{
    int err;
    if (w->error)
        return w->error;
    if (!w->chunk[type].records)
        return 0;
    if (type != PERCH_CHUNK_STRINGS && (err = perch__cap_flush(w, PERCH_CHUNK_STRINGS)) != 0)
        return err;
    if (type == PERCH_CHUNK_SAMPLE && (err = perch__cap_flush(w, PERCH_CHUNK_STACK)) != 0)
        return err;
    if ((err = flush_entities(w, type)) != 0)
        return err;
    if (type == PERCH_CHUNK_SYMBOL && (err = perch__cap_flush(w, PERCH_CHUNK_MODULE)) != 0)
        return err; /* a module before the names of its functions */
    return write_chunk(w, type);
}

/* Every record type in the order open chunks are flushed together. */
static const uint8_t flush_order[] = {
    PERCH_CHUNK_STRINGS, PERCH_CHUNK_TRACE_INFO, PERCH_CHUNK_PROCESS, PERCH_CHUNK_THREAD,
    PERCH_CHUNK_MODULE,  PERCH_CHUNK_COUNTERS,   PERCH_CHUNK_STACK,   PERCH_CHUNK_SLICE,
    PERCH_CHUNK_SAMPLE,  PERCH_CHUNK_LBR,        PERCH_CHUNK_SYMBOL,  PERCH_CHUNK_LEDGER,
    PERCH_CHUNK_STAT,
};

static int flush_until(perch_capture_writer *w, unsigned stop_type)
{
    for (size_t i = 0; i < sizeof flush_order && flush_order[i] != stop_type; i++) {
        int err = perch__cap_flush(w, flush_order[i]);
        if (err)
            return err;
    }
    return 0;
}

int perch__cap_flush_all(perch_capture_writer *w)
{
    return flush_until(w, 0);
}

perch__cap_open_chunk *perch__cap_begin(perch_capture_writer *w, unsigned type, size_t bound)
{
    perch__cap_open_chunk *c = &w->chunk[type];
    int err;
    if (w->error)
        return NULL;
    /* Ledger and stat entries come after every data record (the sink contract). */
    if ((type == PERCH_CHUNK_LEDGER || type == PERCH_CHUNK_STAT) && !c->records &&
        flush_until(w, PERCH_CHUNK_LEDGER) != 0)
        return NULL;
    if (c->records && c->buf.len - CAP_RESERVE + bound > w->opts.chunk_bytes &&
        perch__cap_flush(w, type) != 0)
        return NULL;
    if (!c->buf.len && (err = perch__cap_buf_reserve(&c->buf, CAP_RESERVE,
                                                     CAP_RESERVE + PERCH_CAPTURE_MAX_CHUNK)) != 0) {
        fail(w, err);
        return NULL;
    }
    if (!c->buf.len)
        c->buf.len = CAP_RESERVE;
    err = perch__cap_buf_reserve(&c->buf, bound, CAP_RESERVE + PERCH_CAPTURE_MAX_CHUNK);
    if (err) {
        fail(w, err);
        return NULL;
    }
    if (!c->records && w->opts.now_ns)
        c->opened_ns = now(w);
    return c;
}

int perch__cap_flush_by_time(perch_capture_writer *w)
{
    uint64_t t = now(w), limit = (uint64_t)w->opts.flush_interval_ms * 1000000u;
    w->since_clock = 0;
    for (unsigned type = 1; type < PERCH_CHUNK_TYPE_LIMIT; type++)
        if (w->chunk[type].records && t - w->chunk[type].opened_ns >= limit)
            return perch__cap_flush_all(w);
    return 0;
}

int perch__cap_write_end(perch_capture_writer *w)
{
    perch__cap_open_chunk *c = perch__cap_begin(w, PERCH_CHUNK_END, 0);
    if (!c)
        return w->error;
    int err = write_chunk(w, PERCH_CHUNK_END);
    if (err)
        return err;
    return w->since_sync ? sync_output(w) : 0; /* the policy may just have synced */
}

static int check_opts(const perch_capture_writer_opts *o)
{
    if (o->size != sizeof *o)
        return PERCH_EINVAL;
    if (o->chunk_bytes < 4096 || o->chunk_bytes > PERCH_CAPTURE_MAX_CHUNK - 3 * CAP_VARINT_MAX)
        return PERCH_EINVAL;
    return 0;
}

int perch_capture_writer_create(perch_output *out, const perch_capture_writer_opts *opts,
                                perch_capture_writer **out_writer)
{
    perch_capture_writer_opts def;
    uint8_t header[PERCH_CAPTURE_HEADER_SIZE];
    perch__cap_header_fields h = {PERCH_CAPTURE_VERSION, PERCH_CAPTURE_HEADER_SIZE, 0, 0, 0};
    if (!opts) {
        perch_capture_writer_opts_default(&def);
        opts = &def;
    }
    if (!out || !out->write || !out_writer || check_opts(opts) != 0)
        return PERCH_EINVAL;
    perch_capture_writer *w = perch__calloc(1, sizeof *w);
    if (!w)
        return PERCH_ENOMEM;
    w->out = out;
    w->opts = *opts;
    w->strings_first_id = 1;
    perch__cap_ents_init(&w->ents);
    h.chunk_bytes = opts->chunk_bytes;
    perch__cap_header_encode(&h, header);
    int err = out->write(out->ctx, header, sizeof header);
    if (!err)
        err = sync_output(w);
    if (err) {
        perch_capture_writer_destroy(w);
        return err;
    }
    w->stats.bytes = sizeof header;
    *out_writer = w;
    return 0;
}

void perch_capture_writer_destroy(perch_capture_writer *w)
{
    if (!w)
        return;
    for (unsigned type = 0; type < PERCH_CHUNK_TYPE_LIMIT; type++)
        perch__cap_buf_free(&w->chunk[type].buf);
    perch__strtab_free(&w->strings);
    perch__strtab_free(&w->named[0]);
    perch__strtab_free(&w->named[1]);
    perch__cap_ents_free(&w->ents);
    perch__free(w);
}

void perch_capture_writer_get_stats(const perch_capture_writer *w,
                                    perch_capture_writer_stats *stats)
{
    *stats = w->stats;
}

const char *perch_capture_writer_refusal(const perch_capture_writer *w)
{
    return w->refusal;
}
