/*
 * The capture reader: checks the file header, then walks the chunks one at a time (read the
 * 12-byte chunk header, bound the length, read the payload, check the CRC, decode into the
 * sink) and stops at the first chunk it cannot trust, saying where and why. Unknown chunk
 * types are skipped. Memory: one payload buffer (at most PERCH_CAPTURE_MAX_CHUNK), the string
 * table (capped), a frame buffer and two branch buffers of fixed size. A sink with
 * decode_ahead gets its sample and slice chunks decoded ahead on a second thread
 * (read_split.c), with the same stops; one with skip_events gets its stack, slice, sample and
 * LBR chunks' headers checked (type, length within the input) and their payloads passed over
 * unread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/crc32c.h"
#include "capture/read_split.h"
#include "capture/reader.h"
#include "perch/error.h"
#include "util/mem.h"

/* Records where and why reading stopped; returns err. */
static int set_stop(perch_capture_status *s, int why, int err, uint64_t off)
{
    s->stop = why;
    s->error = err;
    s->offset = off;
    return err;
}

/* set_stop with a reason formatted at the call site (so the compiler checks each format). */
#define STOP(s, why, err, off, ...)                                                                \
    (snprintf((s)->reason, sizeof(s)->reason, __VA_ARGS__), set_stop(s, why, err, off))

static int read_at(const perch_input *in, uint64_t off, void *buf, size_t len,
                   perch_capture_status *s)
{
    int err = perch_input_read_exact(in, off, buf, len);
    if (err)
        return STOP(s, err == PERCH_ETRUNC ? PERCH_CAPTURE_STOP_TRUNCATED : PERCH_CAPTURE_STOP_IO,
                    err, off, "cannot read %zu bytes at offset %" PRIu64 ": %s", len, off,
                    perch_strerror(err));
    return 0;
}

static int bad_header(perch_capture_status *s, int err, const char *why)
{
    char copy[sizeof s->reason];
    snprintf(copy, sizeof copy, "%s", why);
    return STOP(s, PERCH_CAPTURE_STOP_BAD_HEADER, err, 0, "%s", copy);
}

static int read_header(perch__cap_reader *r)
{
    uint8_t fixed[PERCH_CAPTURE_HEADER_SIZE], extra[PERCH_CAPTURE_MAX_HEADER];
    perch__cap_header_fields h;
    perch_capture_status *s = r->status;
    uint64_t size = r->in->size;
    size_t n = size < sizeof fixed ? (size_t)size : sizeof fixed;
    int err = read_at(r->in, 0, fixed, n, s);
    if (err) /* the input failed (I/O, memory): not a verdict on the header */
        return err;
    if (n < CAP_MAGIC_LEN || memcmp(fixed, CAP_MAGIC, CAP_MAGIC_LEN) != 0)
        return bad_header(s, PERCH_EFORMAT, "not a Perch capture (bad magic)");
    if (n < sizeof fixed) {
        snprintf(s->reason, sizeof s->reason, "file header cut short: %zu of %u bytes", n,
                 PERCH_CAPTURE_HEADER_SIZE);
        return bad_header(s, PERCH_ETRUNC, s->reason);
    }
    uint32_t hsize = perch__cap_header_size(fixed);
    if (hsize > size) {
        snprintf(s->reason, sizeof s->reason, "file header cut short: %" PRIu64 " of %u bytes",
                 size, (unsigned)hsize);
        return bad_header(s, PERCH_ETRUNC, s->reason);
    }
    if (hsize > sizeof fixed &&
        (err = read_at(r->in, sizeof fixed, extra, hsize - sizeof fixed, s)) != 0)
        return err;
    err = perch__cap_header_check(fixed, extra, &h, s->reason, sizeof s->reason);
    if (err)
        return bad_header(s, err, s->reason);
    s->version = h.version;
    s->header_size = h.header_size;
    s->required_features = h.required_features;
    s->optional_features = h.optional_features;
    return 0;
}

static const char *type_name(unsigned type, char buf[16])
{
    const char *name = perch_capture_chunk_name(type);
    if (name)
        return name;
    snprintf(buf, 16, "type-%u", type);
    return buf;
}

/* The chunk types a sink with skip_events leaves unread. */
static bool skipped_type(uint32_t type)
{
    return type == PERCH_CHUNK_STACK || type == PERCH_CHUNK_SLICE || type == PERCH_CHUNK_SAMPLE ||
           type == PERCH_CHUNK_LBR;
}

/* Reads and checks the chunk at off into buf; fills *ci. */
static int next_chunk(perch__cap_reader *r, perch__cap_buf *buf, uint64_t off,
                      perch_capture_chunk_info *ci)
{
    perch_capture_status *s = r->status;
    uint64_t left = r->in->size - off;
    uint8_t hdr[CAP_CHUNK_HEADER];
    char tn[16];
    if (left == 0)
        return STOP(s, PERCH_CAPTURE_STOP_NO_END, PERCH_ETRUNC, off,
                    "input ends after %" PRIu64 " chunks without an end chunk "
                    "(the writer did not finish)",
                    s->chunks);
    if (left < CAP_CHUNK_HEADER)
        return STOP(s, PERCH_CAPTURE_STOP_TRUNCATED, PERCH_ETRUNC, off,
                    "chunk header at offset %" PRIu64 " cut short: %" PRIu64 " of %u bytes", off,
                    left, CAP_CHUNK_HEADER);
    int err = read_at(r->in, off, hdr, sizeof hdr, s);
    if (err)
        return err;
    ci->offset = off;
    ci->type = (uint32_t)cap_load_le(hdr, 2);
    ci->flags = (uint32_t)cap_load_le(hdr + 2, 2);
    ci->payload_len = (uint32_t)cap_load_le(hdr + 4, 4);
    ci->records = 0;
    const char *name = type_name(ci->type, tn);
    if (ci->payload_len > PERCH_CAPTURE_MAX_CHUNK)
        return STOP(s, PERCH_CAPTURE_STOP_BAD_CHUNK, PERCH_EFORMAT, off,
                    "%s chunk at offset %" PRIu64 " declares %u payload bytes, over the %u limit",
                    name, off, ci->payload_len, PERCH_CAPTURE_MAX_CHUNK);
    if (left - CAP_CHUNK_HEADER < ci->payload_len)
        return STOP(s, PERCH_CAPTURE_STOP_TRUNCATED, PERCH_ETRUNC, off,
                    "%s chunk at offset %" PRIu64 " cut short: %" PRIu64 " of %u payload bytes",
                    name, off, left - CAP_CHUNK_HEADER, ci->payload_len);
    if (r->sink->skip_events && skipped_type(ci->type))
        return 0; /* neither read nor checked: the next replay does both (records.h) */
    buf->len = 0;
    if ((err = perch__cap_buf_reserve(buf, ci->payload_len, PERCH_CAPTURE_MAX_CHUNK)) != 0)
        return STOP(s, PERCH_CAPTURE_STOP_IO, err, off, "no memory for a chunk payload");
    if ((err = read_at(r->in, off + CAP_CHUNK_HEADER, buf->data, ci->payload_len, s)) != 0)
        return err;
    uint32_t want = (uint32_t)cap_load_le(hdr + 8, 4);
    uint32_t got = perch__crc32c(perch__crc32c(0, hdr, 8), buf->data, ci->payload_len);
    if (want != got)
        return STOP(s, PERCH_CAPTURE_STOP_CRC, PERCH_ECRC, off,
                    "%s chunk at offset %" PRIu64
                    ": checksum mismatch (stored %08x, computed %08x)",
                    name, off, (unsigned)want, (unsigned)got);
    return 0;
}

static int decode_failed(perch__cap_reader *r, const perch_capture_chunk_info *ci,
                         const perch__cap_cursor *c, int err)
{
    perch_capture_status *s = r->status;
    const char *name = perch_capture_chunk_name(ci->type);
    uint64_t at = ci->offset + CAP_CHUNK_HEADER + c->pos;
    if (r->sink_error)
        return STOP(s, PERCH_CAPTURE_STOP_SINK, err, at, "the sink refused a %s record: %s", name,
                    perch_strerror(err));
    if (r->limit_error && r->rule[0])
        return STOP(s, PERCH_CAPTURE_STOP_LIMIT, err, at,
                    "%s chunk at offset %" PRIu64 ": %s at byte %" PRIu64, name, ci->offset,
                    r->rule, at);
    if (r->limit_error)
        return STOP(s, err == PERCH_ELIMIT ? PERCH_CAPTURE_STOP_LIMIT : PERCH_CAPTURE_STOP_IO, err,
                    at, "%s chunk at offset %" PRIu64 ": %s (string table or record buffer)", name,
                    ci->offset, perch_strerror(err));
    const char *what = r->rule[0]            ? r->rule
                       : err == PERCH_ETRUNC ? "a record runs past the chunk"
                                             : "bad value";
    return STOP(s, PERCH_CAPTURE_STOP_BAD_CHUNK, PERCH_EFORMAT, at,
                "malformed %s chunk at offset %" PRIu64 ": %s at byte %" PRIu64, name, ci->offset,
                what, at);
}

/* Hands one checked chunk to the sink. */
static int deliver(perch__cap_reader *r, perch_capture_chunk_info *ci, const perch__cap_buf *buf)
{
    perch__cap_cursor c;
    int err;
    if (ci->type == PERCH_CHUNK_END) {
        err = r->sink->finish ? r->sink->finish(r->sink->ctx) : 0;
        if (err)
            return STOP(r->status, PERCH_CAPTURE_STOP_SINK, err, ci->offset,
                        "the sink's finish failed: %s", perch_strerror(err));
        return 0;
    }
    if (ci->type == 0 || ci->type >= PERCH_CHUNK_TYPE_LIMIT) {
        r->status->unknown_chunks++;
        return 0;
    }
    if (r->sink->skip_events && skipped_type(ci->type))
        return 0; /* unread: its records are left to the next replay (records.h) */
    cap_cursor_init(&c, buf->data, ci->payload_len);
    r->sink_error = r->limit_error = 0;
    r->chunk_off = ci->offset;
    r->rule[0] = '\0';
    err = perch__cap_decode_chunk(r, ci->type, &c);
    ci->records = r->records;
    r->status->types[ci->type].records += r->records;
    return err ? decode_failed(r, ci, &c, err) : 0;
}

static void account(perch_capture_status *s, const perch_capture_chunk_info *ci)
{
    uint64_t bytes = CAP_CHUNK_HEADER + (uint64_t)ci->payload_len;
    s->chunks++;
    s->good_bytes = ci->offset + bytes;
    if (ci->type < PERCH_CHUNK_TYPE_LIMIT) {
        s->types[ci->type].chunks++;
        s->types[ci->type].bytes += bytes;
    }
}

/* Reads, checks and decodes the chunk at off (with sink in place of r->sink when not NULL:
 * read_split.c's replay of a touch or record the sink refused). */
static int play_chunk(perch__cap_reader *r, perch__cap_buf *buf, uint64_t off,
                      perch_capture_chunk_info *ci, const perch_sink *sink)
{
    const perch_sink *own = r->sink;
    int err = next_chunk(r, buf, off, ci);
    if (err)
        return err;
    if (!sink)
        return deliver(r, ci, buf);
    r->sink = sink;
    err = deliver(r, ci, buf);
    r->sink = own;
    return err;
}

static int walk_chunks(perch__cap_reader *r, const perch_capture_read_opts *opts)
{
    perch__cap_buf buf = {0};
    perch_capture_chunk_info ci;
    perch_capture_status *s = r->status;
    uint64_t off = s->header_size;
    perch__cap_split *sp = NULL;
    int err;
    if (r->sink->decode_ahead && perch__cap_split_start(r, off, &sp) != 0)
        sp = NULL; /* one thread */
    for (;;) {
        err = sp ? perch__cap_split_play(sp, off, &ci, &buf, play_chunk)
                 : play_chunk(r, &buf, off, &ci, NULL);
        if (err)
            break;
        account(s, &ci);
        if (opts && opts->on_chunk && (err = opts->on_chunk(opts->ctx, &ci)) != 0) {
            STOP(s, PERCH_CAPTURE_STOP_SINK, err, off, "stopped by the chunk observer");
            break;
        }
        off += CAP_CHUNK_HEADER + (uint64_t)ci.payload_len;
        if (ci.type == PERCH_CHUNK_END) {
            s->trailing_bytes = r->in->size - off;
            STOP(s, PERCH_CAPTURE_STOP_END, 0, off, "%s", "");
            break;
        }
    }
    perch__cap_split_stop(sp);
    perch__cap_buf_free(&buf);
    return s->error;
}

/* Grows *p to hold n (at least 256) elements of 8 bytes. */
static int grow_u64(uint64_t **p, uint32_t *cap, uint32_t n)
{
    uint32_t want = n < 256 ? 256 : n;
    uint64_t *q = perch__realloc(*p, (size_t)want * sizeof *q);
    if (!q)
        return PERCH_ENOMEM;
    *p = q;
    *cap = want;
    return 0;
}

int perch__cap_reader_frames(perch__cap_reader *r, uint32_t n)
{
    return n <= r->frame_cap && r->frames ? 0 : grow_u64(&r->frames, &r->frame_cap, n);
}

int perch__cap_reader_branches(perch__cap_reader *r, uint32_t n)
{
    uint32_t cap = r->branch_cap;
    if (n <= cap && r->from && r->to)
        return 0;
    int err = grow_u64(&r->from, &cap, n);
    return err ? err : grow_u64(&r->to, &r->branch_cap, n);
}

static void reader_free(perch__cap_reader *r)
{
    perch__free(r->frames);
    perch__free(r->from);
    perch__free(r->to);
    perch__strtab_free(&r->strings);
    perch__strtab_free(&r->named[0]);
    perch__strtab_free(&r->named[1]);
    perch__cap_ents_free(&r->ents);
}

static int replay(const perch_input *in, const perch_sink *sink,
                  const perch_capture_read_opts *opts, perch_capture_status *status, bool checked)
{
    static const perch_sink none;
    perch__cap_reader *r;
    memset(status, 0, sizeof *status);
    if (!in || (opts && opts->size != sizeof *opts))
        return STOP(status, PERCH_CAPTURE_STOP_IO, PERCH_EINVAL, 0, "invalid arguments");
    r = perch__alloc(sizeof *r);
    if (!r)
        return STOP(status, PERCH_CAPTURE_STOP_IO, PERCH_ENOMEM, 0, "out of memory");
    memset(r, 0, offsetof(perch__cap_reader, ring));
    perch__cap_ring_reset(&r->ring);
    perch__cap_ents_init(&r->ents);
    r->in = in;
    r->sink = sink ? sink : &none;
    r->status = status;
    r->checked_only = checked;
    r->stacks_elsewhere = opts && opts->stacks_elsewhere;
    if (read_header(r) == 0) {
        status->good_bytes = status->header_size;
        walk_chunks(r, opts);
        bool finish = opts ? opts->finish_on_error : true;
        if (status->stop != PERCH_CAPTURE_STOP_END && status->stop != PERCH_CAPTURE_STOP_SINK &&
            finish && r->sink->finish)
            r->sink->finish(r->sink->ctx);
    }
    reader_free(r);
    perch__free(r);
    return status->error;
}

int perch_capture_replay_ex(const perch_input *in, const perch_sink *sink,
                            const perch_capture_read_opts *opts, perch_capture_status *status)
{
    return replay(in, sink, opts, status, false);
}

int perch__cap_replay_checked(const perch_input *in, const perch_sink *sink,
                              const perch_capture_read_opts *opts, perch_capture_status *status)
{
    return replay(in, sink, opts, status, true);
}

int perch_capture_replay(const perch_input *in, const perch_sink *sink,
                         perch_capture_status *status)
{
    return perch_capture_replay_ex(in, sink, NULL, status);
}

int perch_capture_replay_memory(const void *data, size_t len, const perch_sink *sink,
                                perch_capture_status *status)
{
    perch_input in;
    perch_input_memory(&in, data, len);
    int err = perch_capture_replay(&in, sink, status);
    perch_input_close(&in);
    return err;
}
