/*
 * The capture reader's split walk, for a sink that lets its records be decoded ahead
 * (perch_sink.decode_ahead: gecko, pprof, speedscope, the report). Sample and slice chunks
 * decode on their own (docs/capture-format.md 3, "Per-chunk state"), so a second thread and
 * the reader's own thread each decode such chunks, ahead of the walk, into an array of the
 * chunk's records. The walk then plays the chunks in file order: every other chunk as reader.c
 * plays it, a decoded chunk as its records. Stack and LBR chunks of a sink with no callback
 * for them are decoded ahead the same way (checked, nothing kept). So the sink sees exactly
 * the one-thread walk's records.
 *
 * Anything out of the ordinary in a chunk decoded ahead -- a read error, a CRC mismatch, a
 * malformed record (more records than the chunk's count says included), no memory, stack ids
 * that do not follow the walk's (checked when the walk plays the chunk: only it knows the
 * stacks before) -- sends that chunk back to the walk's ordinary path (reader.c), which reads,
 * checks and decodes it again and stops exactly as the one-thread walk does. A chunk whose
 * records need more than the whole ring (below) goes the ordinary way at once, decoded once. A
 * record the sink refuses is reported by playing the chunk again into a sink that refuses the
 * same record with the same error, so the stop, its offset and its reason are the ordinary
 * path's too.
 *
 * Memory: one ring of RING_BYTES that the slots' record arrays share: the scan reads each
 * chunk's record count with its header and reserves count times the record's size (records
 * are kept whole, 56 bytes a sample and 112 a slice) in file order, and the walk frees them in
 * the same order as it plays the chunks; a scan that finds no room waits for the walk to
 * release a slot. A 64 KiB chunk's records take 0.4-1 MiB on the synthetic and real traces
 * (the ring holds four to eight of them), a 256 KiB chunk's up to about 3.5 MiB; only chunks
 * whose records pass 4 MiB (most chunks of 1 MiB) are not decoded ahead. And, per decoding
 * thread, a payload buffer.
 */
#include <string.h>

#include "capture/crc32c.h"
#include "capture/read_split.h"
#include "perch/error.h"
#include "perch/thread.h"
#include "util/mem.h"

#define SLOTS      8u         /* chunks decoded ahead of the walk at most */
#define RING_BYTES (4u << 20) /* the records of the chunks ahead, at most */

enum { FREE, BUSY, DONE, REDO };

struct slot {
    uint64_t off;
    uint32_t type, flags, len;
    int state;        /* FREE, BUSY (a thread decodes it), DONE or REDO (the ordinary path) */
    uint64_t records; /* DONE: the chunk's records */
    /* DONE: the chunk's stack ids, checked against the walk's stacks when it is played:
     * the first and how many (stack chunks; gap when they do not count up by one) and the
     * highest a sample names */
    uint64_t stack_first, stack_count, stack_top;
    bool stack_gap;
    uint32_t n; /* records in rec */
    /* the chunk's samples or slices (by type), every record in chunk order, in rec_cap bytes
     * of the ring reserved when the chunk was scanned, up to ring position rec_end */
    unsigned char *rec;
    size_t rec_cap;
    uint64_t rec_end;
};

/* One decoding thread's tools: a reader whose sink stores records, a payload buffer. */
struct dec {
    perch__cap_reader *r;
    perch_capture_status st;
    perch__cap_buf buf;
    perch_sink sink;
    struct slot *cur;
};

struct perch__cap_split {
    perch__cap_reader *r; /* the walk's */
    /* the walk's sink, as the scan (on either thread) looks at it: r->sink itself is swapped
     * by the walk's thread while it plays a refused chunk again (reader.c's play_chunk) */
    const perch_sink *sink;
    perch_mutex *mu;
    perch_cond *cv;
    perch_thread *thread;
    uint64_t scan_off; /* the next chunk header to look at */
    bool scan_end, stop;
    unsigned char *ring;           /* RING_BYTES shared by the slots, reserved in file order */
    uint64_t ring_head, ring_tail; /* positions: released up to head, reserved up to tail */
    /* the header at scan_off and its payload's first bytes, read by a scan that then waited for
     * room in the ring (held: the next scan takes them instead of reading them again) */
    uint8_t held_hdr[CAP_CHUNK_HEADER + CAP_VARINT_MAX];
    bool held;
    unsigned head, count; /* the slots in file order, from head */
    struct slot slots[SLOTS];
    struct dec *dec[2]; /* [0] the second thread's, [1] the walk's */
};

static bool split_type(const perch_sink *sink, uint32_t type)
{
    return type == PERCH_CHUNK_SAMPLE || type == PERCH_CHUNK_SLICE ||
           (type == PERCH_CHUNK_STACK && !sink->stack) || (type == PERCH_CHUNK_LBR && !sink->lbr);
}

/* The decoders ahead cannot check stack ids (the stacks before the chunk are the walk's), so
 * they note what the walk checks when it plays the chunk (stacks_fit): the highest id a
 * sample names. This alone is what a sample of a sink with no sample callback leaves. */
static int note_sample_id(void *ctx, const perch_sample_rec *rec)
{
    struct dec *d = ctx;
    if (rec->stack_id > d->cur->stack_top)
        d->cur->stack_top = rec->stack_id;
    return 0;
}

static int collect_stack(void *ctx, const perch_stack_rec *rec)
{
    struct slot *s = ((struct dec *)ctx)->cur;
    if (s->stack_count == 0)
        s->stack_first = rec->id;
    else if (rec->id != s->stack_first + s->stack_count)
        s->stack_gap = true;
    s->stack_count++;
    return 0;
}

/* Appends a record of size bytes to the chunk's array; past the room reserved for the count the
 * chunk declares (a chunk that holds more records than it says is malformed) the chunk goes the
 * ordinary way. */
static int store(struct dec *d, const void *rec, size_t size)
{
    struct slot *s = d->cur;
    if ((size_t)(s->n + 1) * size > s->rec_cap)
        return PERCH_ELIMIT;
    memcpy(s->rec + (size_t)s->n++ * size, rec, size);
    return 0;
}

static int store_sample(void *ctx, const perch_sample_rec *rec)
{
    note_sample_id(ctx, rec);
    return store(ctx, rec, sizeof *rec);
}

static int store_slice(void *ctx, const perch_slice_rec *rec)
{
    return store(ctx, rec, sizeof *rec);
}

/* Whether a chunk decoded ahead keeps the walk's stack ids dense from 1 and defined before a
 * sample names them: its stacks are the next ids, its samples name none past the last. If not,
 * the ordinary path decodes it again and stops at the record that breaks the rule. */
static bool stacks_fit(const perch__cap_reader *r, const struct slot *s)
{
    if (r->stacks_elsewhere)
        return true;
    if (s->stack_count)
        return !s->stack_gap && s->stack_first == r->stacks + 1;
    return s->stack_top <= r->stacks;
}

/* Reads, checks and decodes slot s's chunk; DONE, or REDO when anything is not ordinary. */
static int decode_slot(struct dec *d, struct slot *s)
{
    perch__cap_reader *r = d->r;
    uint8_t hdr[CAP_CHUNK_HEADER];
    perch__cap_cursor c;
    d->buf.len = 0;
    if (perch_input_read_exact(r->in, s->off, hdr, sizeof hdr) ||
        perch__cap_buf_reserve(&d->buf, s->len, PERCH_CAPTURE_MAX_CHUNK) ||
        perch_input_read_exact(r->in, s->off + CAP_CHUNK_HEADER, d->buf.data, s->len))
        return REDO;
    uint32_t want = (uint32_t)cap_load_le(hdr + 8, 4);
    if (want != perch__crc32c(perch__crc32c(0, hdr, 8), d->buf.data, s->len))
        return REDO;
    d->cur = s;
    s->stack_first = s->stack_count = s->stack_top = 0;
    s->stack_gap = false;
    s->n = 0;
    cap_cursor_init(&c, d->buf.data, s->len);
    r->sink_error = r->limit_error = 0;
    if (perch__cap_decode_chunk(r, s->type, &c))
        return REDO;
    s->records = r->records;
    return DONE;
}

/* The bytes a slot needs for the records of a chunk of type whose payload starts
 * with prefix (n bytes): its declared count times the record's size, 0 for a type whose
 * records are not kept (no callback, or a stack or LBR chunk), UINT64_MAX for a count that
 * cannot be read or whose records would pass the ring (the chunk goes the ordinary way). */
static uint64_t records_need(const struct perch__cap_split *sp, uint32_t type,
                             const uint8_t *prefix, size_t n)
{
    const perch_sink *sink = sp->sink;
    size_t size = type == PERCH_CHUNK_SAMPLE && sink->sample ? sizeof(perch_sample_rec)
                  : type == PERCH_CHUNK_SLICE && sink->slice ? sizeof(perch_slice_rec)
                                                             : 0;
    if (size == 0)
        return 0;
    perch__cap_cursor c;
    cap_cursor_init(&c, prefix, n);
    uint64_t count = cap_get_varint_slow(&c);
    return c.error || count > RING_BYTES / size ? UINT64_MAX : count * size;
}

/* Reserves need bytes of the ring for slot s, contiguous (a reservation that would cross the
 * ring's end starts at its beginning instead, the bytes skipped counted as used until the head
 * passes them); false when they are not free yet. need is at most RING_BYTES, and an empty
 * ring (every reservation released) starts again at its beginning, so a scan that waits for
 * room always has a slot with a reservation before it, for the walk to release. */
static bool reserve_records(struct perch__cap_split *sp, struct slot *s, uint64_t need)
{
    if (sp->ring_head == sp->ring_tail && sp->ring_tail % RING_BYTES != 0)
        sp->ring_head = sp->ring_tail += RING_BYTES - sp->ring_tail % RING_BYTES;
    uint64_t pos = sp->ring_tail, at = pos % RING_BYTES;
    if (at + need > RING_BYTES)
        pos += RING_BYTES - at;
    if (pos + need - sp->ring_head > RING_BYTES)
        return false;
    s->rec = sp->ring + pos % RING_BYTES;
    s->rec_cap = (size_t)need;
    s->rec_end = sp->ring_tail = pos + need;
    return true;
}

/* Looks at chunk headers past the last slot (under mu) while a slot is free and the ring has
 * room for the chunk's records; a header the walk would refuse, the end
 * chunk or the end of the input ends the scan. The header is read with the first bytes of the
 * payload, its record count. */
static void scan(struct perch__cap_split *sp)
{
    const perch_input *in = sp->r->in;
    while (!sp->scan_end && sp->count < SLOTS) {
        const uint8_t *hdr = sp->held_hdr;
        uint64_t left = in->size - sp->scan_off;
        size_t prefix = left < CAP_CHUNK_HEADER + CAP_VARINT_MAX
                            ? (size_t)(left < CAP_CHUNK_HEADER ? 0 : left - CAP_CHUNK_HEADER)
                            : CAP_VARINT_MAX;
        if (!sp->held &&
            (left < CAP_CHUNK_HEADER || perch_input_read_exact(in, sp->scan_off, sp->held_hdr,
                                                               CAP_CHUNK_HEADER + prefix) != 0)) {
            sp->scan_end = true;
            break;
        }
        sp->held = false;
        uint32_t type = (uint32_t)cap_load_le(hdr, 2), len = (uint32_t)cap_load_le(hdr + 4, 4);
        if (len > PERCH_CAPTURE_MAX_CHUNK || left - CAP_CHUNK_HEADER < len ||
            type == PERCH_CHUNK_END) {
            sp->scan_end = true;
            break;
        }
        if (split_type(sp->sink, type)) {
            struct slot *s = &sp->slots[(sp->head + sp->count) % SLOTS];
            uint64_t need =
                records_need(sp, type, hdr + CAP_CHUNK_HEADER, prefix < len ? prefix : len);
            s->state = FREE;
            s->rec = NULL;
            s->rec_cap = 0;
            s->rec_end = sp->ring_tail;
            if (need == UINT64_MAX)
                s->state = REDO; /* more records than the ring holds: the ordinary path */
            else if (need > 0 && !reserve_records(sp, s, need)) {
                sp->held = true; /* the ring is full: scanned again when a slot is released */
                break;
            }
            sp->count++;
            s->off = sp->scan_off;
            s->type = type;
            s->flags = (uint32_t)cap_load_le(hdr + 2, 2);
            s->len = len;
        }
        sp->scan_off += CAP_CHUNK_HEADER + (uint64_t)len;
    }
}

/* The first free slot, made BUSY (under mu); NULL when none. */
static struct slot *claim(struct perch__cap_split *sp)
{
    scan(sp);
    for (unsigned i = 0; i < sp->count; i++) {
        struct slot *s = &sp->slots[(sp->head + i) % SLOTS];
        if (s->state == FREE) {
            s->state = BUSY;
            return s;
        }
    }
    return NULL;
}

/* Decodes slot s outside mu and publishes it (called and returning with mu held). */
static void work(struct perch__cap_split *sp, struct dec *d, struct slot *s)
{
    perch_mutex_unlock(sp->mu);
    int state = decode_slot(d, s);
    perch_mutex_lock(sp->mu);
    s->state = state;
    perch_cond_broadcast(sp->cv);
}

static int split_main(void *arg)
{
    struct perch__cap_split *sp = arg;
    perch_mutex_lock(sp->mu);
    while (!sp->stop) {
        struct slot *s = claim(sp);
        if (s)
            work(sp, sp->dec[0], s);
        else if (sp->scan_end && sp->count == 0)
            break;
        else
            perch_cond_wait(sp->cv, sp->mu, UINT32_MAX);
    }
    perch_mutex_unlock(sp->mu);
    return 0;
}

/* The slot of the chunk at off once decoded (the walk decodes free ones meanwhile), the
 * first in the ring until release; NULL when off is not a slot's (the ordinary path). */
static struct slot *slot_at(struct perch__cap_split *sp, uint64_t off)
{
    struct slot *s = NULL;
    perch_mutex_lock(sp->mu);
    if (sp->count == 0 && !sp->scan_end && sp->scan_off <= off)
        scan(sp);
    if (sp->count && sp->slots[sp->head].off == off) {
        s = &sp->slots[sp->head];
        while (s->state == FREE || s->state == BUSY) {
            struct slot *o = claim(sp);
            if (o)
                work(sp, sp->dec[1], o);
            else
                perch_cond_wait(sp->cv, sp->mu, UINT32_MAX);
        }
    }
    perch_mutex_unlock(sp->mu);
    return s;
}

/* Frees the first slot (slot_at's, played) for the chunks after the last. */
static void release(struct perch__cap_split *sp)
{
    perch_mutex_lock(sp->mu);
    if (sp->slots[sp->head].rec_end > sp->ring_head) /* not a slot scanned before a restart */
        sp->ring_head = sp->slots[sp->head].rec_end;
    sp->head = (sp->head + 1) % SLOTS;
    sp->count--;
    scan(sp);
    perch_cond_broadcast(sp->cv);
    perch_mutex_unlock(sp->mu);
}

/* A sink that refuses record `at` of a chunk with err (and takes the records before it):
 * the ordinary path's stop for a record the sink refused. */
struct refuse {
    uint64_t seen, at;
    int err;
};

static int refuse_one(struct refuse *f)
{
    return f->seen++ == f->at ? f->err : 0;
}

static int refuse_sample(void *ctx, const perch_sample_rec *rec)
{
    (void)rec;
    return refuse_one(ctx);
}

static int refuse_slice(void *ctx, const perch_slice_rec *rec)
{
    (void)rec;
    return refuse_one(ctx);
}

/* The ordinary path's stop for record `at` of slot s's chunk, which the sink refused with err:
 * the chunk played again into a sink that takes the records before it and refuses it. */
static int refused(struct perch__cap_split *sp, struct slot *s, perch_capture_chunk_info *ci,
                   perch__cap_buf *buf, perch__cap_split_fallback fallback, uint64_t at, int err)
{
    struct refuse f = {0, at, err};
    perch_sink no = {.ctx = &f, .sample = refuse_sample, .slice = refuse_slice};
    return fallback(sp->r, buf, s->off, ci, &no);
}

/* What the ordinary path notes of slot s's chunk once played. */
static void played(struct perch__cap_split *sp, const struct slot *s, perch_capture_chunk_info *ci)
{
    perch__cap_reader *r = sp->r;
    ci->offset = s->off;
    ci->type = s->type;
    ci->flags = s->flags;
    ci->payload_len = s->len;
    ci->records = s->records;
    r->status->types[s->type].records += s->records;
    r->stacks += s->stack_count;
}

/* Plays the records of slot s (DONE) into the sink as the ordinary path plays the chunk. */
static int play_records(struct perch__cap_split *sp, struct slot *s, perch_capture_chunk_info *ci,
                        perch__cap_buf *buf, perch__cap_split_fallback fallback)
{
    const perch_sink *sink = sp->r->sink;
    int err = 0;
    uint32_t i = 0;
    if (s->type == PERCH_CHUNK_SAMPLE && sink->sample) {
        const perch_sample_rec *v = (const perch_sample_rec *)(const void *)s->rec;
        for (; i < s->n && !err; i++)
            err = sink->sample(sink->ctx, &v[i]);
    } else if (s->type == PERCH_CHUNK_SLICE && sink->slice) {
        const perch_slice_rec *v = (const perch_slice_rec *)(const void *)s->rec;
        for (; i < s->n && !err; i++)
            err = sink->slice(sink->ctx, &v[i]);
    }
    if (err)
        return refused(sp, s, ci, buf, fallback, i - 1, err);
    played(sp, s, ci);
    return 0;
}

int perch__cap_split_play(struct perch__cap_split *sp, uint64_t off, perch_capture_chunk_info *ci,
                          perch__cap_buf *buf, perch__cap_split_fallback fallback)
{
    struct slot *s = slot_at(sp, off);
    if (!s)
        return fallback(sp->r, buf, off, ci, NULL);
    int err = s->state != DONE || !stacks_fit(sp->r, s) ? fallback(sp->r, buf, off, ci, NULL)
                                                        : play_records(sp, s, ci, buf, fallback);
    release(sp);
    return err;
}

static void dec_free(struct dec *d)
{
    if (!d)
        return;
    if (d->r) {
        perch__free(d->r->frames);
        perch__free(d->r->from);
        perch__free(d->r->to);
        perch__free(d->r);
    }
    perch__cap_buf_free(&d->buf);
    perch__free(d);
}

static struct dec *dec_new(const perch__cap_reader *walk)
{
    struct dec *d = perch__calloc(1, sizeof *d);
    if (!d || !(d->r = perch__alloc(sizeof *d->r))) {
        dec_free(d);
        return NULL;
    }
    memset(d->r, 0, offsetof(perch__cap_reader, ring));
    perch__cap_ring_reset(&d->r->ring);
    d->r->in = walk->in;
    d->st.version = walk->status->version;
    d->r->status = &d->st;
    d->r->checked_only = walk->checked_only;
    d->r->stacks_elsewhere = true; /* noted in the slot, checked by the walk */
    d->sink.ctx = d;
    /* records of a type the walk's sink takes no callback for are checked, not kept */
    d->sink.sample = walk->sink->sample ? store_sample : note_sample_id;
    d->sink.slice = walk->sink->slice ? store_slice : NULL;
    d->sink.stack = collect_stack;
    d->r->sink = &d->sink;
    return d;
}

void perch__cap_split_stop(struct perch__cap_split *sp)
{
    if (!sp)
        return;
    if (sp->thread) {
        perch_mutex_lock(sp->mu);
        sp->stop = true;
        perch_cond_broadcast(sp->cv);
        perch_mutex_unlock(sp->mu);
        perch_thread_join(sp->thread, NULL);
    }
    perch__free(sp->ring);
    dec_free(sp->dec[0]);
    dec_free(sp->dec[1]);
    perch_cond_destroy(sp->cv);
    perch_mutex_destroy(sp->mu);
    perch__free(sp);
}

int perch__cap_split_start(perch__cap_reader *r, uint64_t first, struct perch__cap_split **out)
{
    struct perch__cap_split *sp = perch__calloc(1, sizeof *sp);
    int err = sp ? 0 : PERCH_ENOMEM;
    if (err)
        return err;
    sp->r = r;
    sp->sink = r->sink;
    sp->scan_off = first;
    err = (sp->ring = perch__alloc(RING_BYTES)) ? 0 : PERCH_ENOMEM;
    for (unsigned i = 0; i < 2 && !err; i++)
        err = (sp->dec[i] = dec_new(r)) ? 0 : PERCH_ENOMEM;
    err = err ? err : perch_mutex_create(&sp->mu);
    err = err ? err : perch_cond_create(&sp->cv);
    err = err ? err : perch_thread_start(split_main, sp, "perch-split", &sp->thread);
    if (err) {
        perch__cap_split_stop(sp);
        return err;
    }
    *out = sp;
    return 0;
}
