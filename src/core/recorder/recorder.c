/*
 * The flight recorder's model-thread side (include/perch/recorder.h): entity, stack, trace
 * info and counter records update the store; data records go into the open segment through a
 * capture writer; a segment is sealed at its size or time span and joins the ring, which drops
 * its oldest segments past the time window or the memory cap. The mutex is taken for one
 * store update, one record's time bookkeeping, one chunk appended to the open segment, or one
 * segment hand-off; memory of dropped segments is freed after it is released.
 */
#include <string.h>

#include "capture/entity.h"
#include "perch/error.h"
#include "recorder/recorder_internal.h"
#include "util/mem.h"
#include "util/ticks.h"

void perch_recorder_opts_default(perch_recorder_opts *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->window_ms = 60000;
    o->max_bytes = 256ull << 20;
    o->segment_bytes = 256u << 10;
    o->segment_ms = 1000;
    o->max_stack_frames = 1u << 22;
    o->max_entities = 1u << 20;
}

void perch__rec_segment_free(rec_segment *s)
{
    if (s) {
        perch__free(s->data);
        perch__free(s);
    }
}

rec_segment *perch__rec_unref(rec_segment *s)
{
    return --s->refs == 0 ? s : NULL;
}

static uint64_t ticks_per_ms(const perch_recorder *r)
{
    uint64_t f = perch__clock_hz(r->store.has_info ? r->store.info.perf_freq : 0);
    return f / 1000 ? f / 1000 : 1;
}

/* Under the mutex: drops the oldest segment; returns it when its memory is to be freed. */
static rec_segment *drop_oldest(perch_recorder *r, bool by_cap)
{
    rec_segment *s = r->ring[0];
    memmove(r->ring, r->ring + 1, (r->ring_len - 1) * sizeof *r->ring);
    r->ring_len--;
    r->bytes -= s->len;
    r->drops[r->drop_next++ % REC_DROP_LOG] = (rec_drop){s->last_ts, s->records};
    r->stats.segments_dropped++;
    r->stats.records_dropped += s->records;
    r->stats.dropped_by_cap += by_cap;
    return perch__rec_unref(s);
}

/* Under the mutex: applies the window and the memory cap; segments to free go to out[]. */
static uint32_t enforce(perch_recorder *r, rec_segment **out, uint32_t max)
{
    uint64_t window = (uint64_t)r->opts.window_ms * ticks_per_ms(r);
    uint32_t n = 0;
    while (r->ring_len > 0 && n < max) {
        rec_segment *s = r->ring[0];
        bool old = r->newest_ts > s->last_ts && r->newest_ts - s->last_ts > window;
        bool full = r->bytes + perch__cap_store_bytes(&r->store) > r->opts.max_bytes;
        if (!old && !full)
            break;
        rec_segment *f = drop_oldest(r, !old);
        if (f)
            out[n++] = f;
    }
    return n;
}

static void free_all(rec_segment **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        perch__rec_segment_free(v[i]);
}

/* The open segment's output: appends one whole chunk (or the header) under the mutex. */
static int seg_write(void *ctx, const void *buf, size_t len)
{
    perch_recorder *r = ctx;
    int err = 0;
    perch_mutex_lock(r->mu);
    rec_segment *s = r->open;
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 64u << 10;
        while (cap < s->len + len)
            cap *= 2;
        uint8_t *p = perch__realloc(s->data, cap);
        if (p) {
            s->data = p;
            s->cap = cap;
        } else {
            err = PERCH_ENOMEM;
        }
    }
    if (err == 0) {
        memcpy(s->data + s->len, buf, len);
        s->len += len;
        r->bytes += len;
    }
    perch_mutex_unlock(r->mu);
    return err;
}

static int open_segment(perch_recorder *r)
{
    perch_capture_writer_opts wo;
    rec_segment *s = perch__calloc(1, sizeof *s);
    if (!s)
        return PERCH_ENOMEM;
    s->refs = 1;
    perch_mutex_lock(r->mu);
    r->open = s;
    perch_mutex_unlock(r->mu);
    perch_capture_writer_opts_default(&wo);
    wo.chunk_bytes = r->opts.segment_bytes / 4 < 4096 ? 4096 : r->opts.segment_bytes / 4;
    wo.sync_every_chunks = 0;
    wo.stacks_elsewhere = true; /* the model's stack ids: the stacks are in the store */
    memset(&r->wout, 0, sizeof r->wout);
    r->wout.write = seg_write;
    r->wout.ctx = r;
    int err = perch_capture_writer_create(&r->wout, &wo, &r->w);
    if (err == 0)
        perch_capture_writer_sink(r->w, &r->wsink);
    return err;
}

/* Under the mutex: every seal asked for so far is served (the open segment is sealed, or
 * there is none). */
static void serve_seals(perch_recorder *r)
{
    if (r->seal_done != r->seal_asked) {
        r->seal_done = r->seal_asked;
        perch_cond_broadcast(r->sealed);
    }
}

/* Finishes the open segment and hands it to the ring. */
static int seal(perch_recorder *r)
{
    rec_segment *f[64], *lost = NULL;
    int err = perch_capture_writer_finish(r->w);
    perch_capture_writer_destroy(r->w);
    r->w = NULL;
    perch_mutex_lock(r->mu);
    rec_segment *s = r->open;
    r->open = NULL;
    s->sealed = true;
    if (r->ring_len == r->ring_cap) {
        uint32_t nc = r->ring_cap ? r->ring_cap * 2 : 64;
        rec_segment **p = perch__realloc(r->ring, nc * sizeof *p);
        if (p) {
            r->ring = p;
            r->ring_cap = nc;
        }
    }
    if (r->ring_len < r->ring_cap) {
        r->ring[r->ring_len++] = s;
    } else {
        r->bytes -= s->len; /* no room to hold it: dropped at once */
        r->stats.segments_dropped++;
        r->stats.records_dropped += s->records;
        lost = perch__rec_unref(s);
        err = err ? err : PERCH_ENOMEM;
    }
    uint32_t n = enforce(r, f, 64);
    serve_seals(r);
    perch_mutex_unlock(r->mu);
    free_all(f, n);
    perch__rec_segment_free(lost);
    return err;
}

static int fail(perch_recorder *r, int err)
{
    if (!r->error)
        r->error = err;
    return r->error;
}

/* Bookkeeping of one data record at time ts, then the open segment to write it into. */
static int before_data(perch_recorder *r, uint64_t ts)
{
    if (r->error)
        return r->error;
    if (!r->open && fail(r, open_segment(r)) != 0)
        return r->error;
    perch_mutex_lock(r->mu);
    rec_segment *s = r->open;
    if (s->records == 0 || ts < s->first_ts)
        s->first_ts = ts;
    if (ts > s->last_ts)
        s->last_ts = ts;
    if (ts > r->newest_ts)
        r->newest_ts = ts;
    if (s->records == 0)
        s->opened_at = r->newest_ts;
    s->records++;
    r->stats.records++;
    r->seal_wanted = r->seal_done != r->seal_asked;
    perch_mutex_unlock(r->mu);
    return 0;
}

static bool seal_asked(perch_recorder *r)
{
    perch_mutex_lock(r->mu);
    bool asked = r->seal_done != r->seal_asked;
    perch_mutex_unlock(r->mu);
    return asked;
}

/* After a data record: seal at the segment's size, when a snapshot asked for it, or once the
 * recorder's time has moved segment_ms past the segment's opening (records arrive in time order,
 * give or take the model's stack wait, so a segment's own first..last span is not used). */
static int after_data(perch_recorder *r, int err)
{
    rec_segment *s = r->open;
    if (err)
        return fail(r, err);
    if (s->len >= r->opts.segment_bytes || r->seal_wanted ||
        r->newest_ts - s->opened_at >= (uint64_t)r->opts.segment_ms * ticks_per_ms(r))
        return fail(r, seal(r));
    return 0;
}

static int on_sample(void *ctx, const perch_sample_rec *rec)
{
    perch_recorder *r = ctx;
    int err = before_data(r, rec->ts);
    return err ? err : after_data(r, r->wsink.sample(r->wsink.ctx, rec));
}

static int on_slice(void *ctx, const perch_slice_rec *rec)
{
    perch_recorder *r = ctx;
    int err = before_data(r, rec->end_ts);
    return err ? err : after_data(r, r->wsink.slice(r->wsink.ctx, rec));
}

static int on_lbr(void *ctx, const perch_lbr_rec *rec)
{
    perch_recorder *r = ctx;
    int err = before_data(r, rec->ts);
    return err ? err : after_data(r, r->wsink.lbr(r->wsink.ctx, rec));
}

/* Store updates, each under the mutex; then the caps (the store counts against memory). */
static int stored(perch_recorder *r, int err)
{
    rec_segment *f[64];
    uint32_t n = enforce(r, f, 64);
    perch_mutex_unlock(r->mu);
    free_all(f, n);
    return err ? fail(r, err) : 0;
}

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_recorder *r = ctx;
    perch_mutex_lock(r->mu);
    return stored(r, perch__cap_store_info(&r->store, info));
}

static int on_counters(void *ctx, const perch_counters_rec *rec)
{
    perch_recorder *r = ctx;
    perch_mutex_lock(r->mu);
    return stored(r, perch__cap_store_counters(&r->store, rec));
}

static int on_entity(void *ctx, unsigned type, const perch__cap_ent *e)
{
    perch_recorder *r = ctx;
    perch_mutex_lock(r->mu);
    return stored(r, perch__cap_store_entity(&r->store, type, e));
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    perch_recorder *r = ctx;
    perch_mutex_lock(r->mu);
    return stored(r, perch__cap_store_stack(&r->store, rec));
}

void perch_recorder_idle(void *ctx)
{
    perch_recorder *r = ctx;
    if (!seal_asked(r))
        return;
    if (r->open && !r->error) {
        fail(r, seal(r));
        return;
    }
    perch_mutex_lock(r->mu);
    serve_seals(r); /* nothing open (or broken): nothing to wait for */
    perch_mutex_unlock(r->mu);
}

static int on_finish(void *ctx)
{
    perch_recorder *r = ctx;
    if (r->error)
        return r->error;
    return r->open ? fail(r, seal(r)) : 0;
}

void perch_recorder_sink(perch_recorder *r, perch_sink *sink)
{
    static const perch_sink callbacks = {
        NULL,
        on_info,
        perch__cap_ent_on_process,
        perch__cap_ent_on_thread,
        perch__cap_ent_on_module,
        on_counters,
        on_stack,
        on_slice,
        on_sample,
        on_lbr,
        NULL,
        NULL,
        on_finish,
        NULL,  /* symbol: a snapshot's names come from opts.names */
        false, /* decode_ahead */
        false, /* skip_events */
    };
    *sink = callbacks;
    sink->ctx = r;
}

static int check_opts(const perch_recorder_opts *o)
{
    if (o->size != sizeof *o || o->window_ms == 0 || o->segment_ms == 0 || o->max_entities == 0)
        return PERCH_EINVAL;
    if (o->max_bytes < (1u << 20) || o->segment_bytes < (16u << 10) ||
        o->segment_bytes > (4u << 20))
        return PERCH_EINVAL;
    return 0;
}

int perch_recorder_create(const perch_recorder_opts *opts, perch_recorder **out)
{
    perch_recorder_opts def;
    if (!opts) {
        perch_recorder_opts_default(&def);
        opts = &def;
    }
    if (!out || check_opts(opts) != 0)
        return PERCH_EINVAL;
    perch_recorder *r = perch__calloc(1, sizeof *r);
    if (!r)
        return PERCH_ENOMEM;
    r->entities.on_entity = on_entity;
    r->opts = *opts;
    /* The stack store takes at most a quarter of the memory cap, so dropping segments can
     * always bring the total under it. */
    uint64_t frames = opts->max_bytes / 4 / sizeof(uint64_t);
    perch__cap_store_init(&r->store, opts->max_entities,
                          frames < opts->max_stack_frames ? frames : opts->max_stack_frames);
    int err = perch_mutex_create(&r->mu);
    if (err == 0 && (err = perch_cond_create(&r->sealed)) != 0)
        perch_mutex_destroy(r->mu);
    if (err) {
        perch__free(r);
        return err;
    }
    *out = r;
    return 0;
}

void perch_recorder_destroy(perch_recorder *r)
{
    if (!r)
        return;
    perch_capture_writer_destroy(r->w);
    perch__rec_segment_free(r->open);
    for (uint32_t i = 0; i < r->ring_len; i++)
        perch__rec_segment_free(r->ring[i]);
    perch__free(r->ring);
    perch__cap_store_free(&r->store);
    perch_cond_destroy(r->sealed);
    perch_mutex_destroy(r->mu);
    perch__free(r);
}

void perch_recorder_get_stats(perch_recorder *r, perch_recorder_stats *st)
{
    perch_mutex_lock(r->mu);
    *st = r->stats;
    st->segments = r->ring_len + (r->open != NULL);
    st->bytes = r->bytes + perch__cap_store_bytes(&r->store);
    st->stacks_forgotten = r->store.stacks_forgotten;
    st->entities_forgotten = r->store.entities_forgotten;
    st->oldest_ts = r->ring_len ? r->ring[0]->first_ts : r->open ? r->open->first_ts : 0;
    st->newest_ts = r->newest_ts;
    perch_mutex_unlock(r->mu);
}
