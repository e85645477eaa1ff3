/*
 * perch_recorder_snapshot (include/perch/recorder.h): under the mutex, have the model thread
 * seal the open segment (waiting on a condition variable, bounded), take a reference to
 * every sealed segment and copy the bytes of the open one; then, without it, replay them
 * through a time filter into a scope (capture/scope.h) that writes each entity and stack from
 * the store (a short lock per lookup) before the first record using it, into a new capture.
 */
#include <string.h>

#include "capture/scope.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "recorder/recorder_internal.h"
#include "util/mem.h"
#include "util/ticks.h"

typedef struct snap {
    perch_recorder *r;
    rec_segment **segs;
    uint32_t nsegs;
    uint8_t *open_copy;
    size_t open_len;
    uint64_t cutoff, dropped_in_range;
    perch_recorder_snap_counts counts;
    perch__cap_scope scope;
    int error;
} snap;

static void lock(void *ctx)
{
    perch_mutex_lock(ctx);
}

static void unlock(void *ctx)
{
    perch_mutex_unlock(ctx);
}

/* The oldest time in the range: newest minus last_seconds (0: everything held). */
static uint64_t cutoff_of(const perch_recorder *r, double last_seconds)
{
    uint64_t freq = perch__clock_hz(r->store.info.perf_freq);
    if (!(last_seconds > 0) || last_seconds * 1000.0 >= (double)r->opts.window_ms)
        return 0;
    double span = last_seconds * (double)freq;
    return span >= (double)r->newest_ts ? 0 : r->newest_ts - (uint64_t)span;
}

/* Under the mutex: asks the model thread to seal the open segment and waits for it, at most
 * seal_wait_ms (the mutex is released while waiting). */
static void wait_sealed(perch_recorder *r)
{
    uint64_t end = perch_monotonic_ns() + (uint64_t)r->opts.seal_wait_ms * 1000000u;
    if (r->opts.seal_wait_ms == 0 || r->open == NULL)
        return;
    uint64_t ticket = ++r->seal_asked;
    if (r->opts.wake != NULL)
        r->opts.wake(r->opts.wake_ctx); /* after the ask: the idle call it brings must see it */
    while (r->open != NULL && r->seal_done < ticket) {
        uint64_t now = perch_monotonic_ns();
        if (now >= end)
            return;
        perch_cond_wait(r->sealed, r->mu, (uint32_t)((end - now) / 1000000u) + 1);
    }
}

/* Under the mutex: references to the sealed segments, a copy of the open one. */
static int take(snap *s, double last_seconds)
{
    perch_recorder *r = s->r;
    int err = 0;
    perch_mutex_lock(r->mu);
    wait_sealed(r);
    if (!r->store.has_info) {
        perch_mutex_unlock(r->mu);
        return PERCH_ESTATE;
    }
    s->cutoff = cutoff_of(r, last_seconds);
    s->segs = perch__calloc(r->ring_len + 1u, sizeof *s->segs);
    if (r->open && r->open->len && (s->open_copy = perch__alloc(r->open->len)) != NULL) {
        memcpy(s->open_copy, r->open->data, r->open->len);
        s->open_len = r->open->len;
    }
    if (!s->segs || (r->open && r->open->len && !s->open_copy)) {
        err = PERCH_ENOMEM;
    } else {
        for (uint32_t i = 0; i < r->ring_len; i++) {
            s->segs[s->nsegs++] = r->ring[i];
            r->ring[i]->refs++;
        }
        for (uint32_t i = 0; i < REC_DROP_LOG; i++)
            if (r->drops[i].records && r->drops[i].last_ts >= s->cutoff)
                s->dropped_in_range += r->drops[i].records;
        r->stats.snapshots++;
    }
    perch_mutex_unlock(r->mu);
    return err;
}

static void release(snap *s)
{
    rec_segment *f[64];
    uint32_t n = 0;
    perch_mutex_lock(s->r->mu);
    for (uint32_t i = 0; i < s->nsegs; i++) {
        rec_segment *x = perch__rec_unref(s->segs[i]);
        if (x && n < 64)
            f[n++] = x;
        else if (x)
            perch__rec_segment_free(x); /* rare: more than 64 freed at once */
    }
    perch_mutex_unlock(s->r->mu);
    for (uint32_t i = 0; i < n; i++)
        perch__rec_segment_free(f[i]);
    perch__free(s->segs);
    perch__free(s->open_copy);
}

static int f_sample(void *ctx, const perch_sample_rec *rec)
{
    snap *s = ctx;
    if (rec->ts < s->cutoff)
        return 0;
    s->counts.samples++;
    return perch__cap_scope_sample(&s->scope, rec);
}

static int f_slice(void *ctx, const perch_slice_rec *rec)
{
    snap *s = ctx;
    if (rec->end_ts < s->cutoff)
        return 0;
    s->counts.slices++;
    return perch__cap_scope_slice(&s->scope, rec);
}

static int f_lbr(void *ctx, const perch_lbr_rec *rec)
{
    snap *s = ctx;
    if (rec->ts < s->cutoff)
        return 0;
    s->counts.lbr++;
    return perch__cap_scope_lbr(&s->scope, rec);
}

/* Replays one segment through the filter; a segment cut at its last whole chunk (the open
 * one) is expected. Its samples name the model's stack ids, whose stacks are in the store. */
static int play(snap *s, const uint8_t *data, size_t len)
{
    perch_capture_read_opts opts = {sizeof opts, NULL, NULL, true, true};
    perch_capture_status st;
    perch_input in;
    perch_sink f;
    memset(&f, 0, sizeof f);
    f.ctx = s;
    f.sample = f_sample;
    f.slice = f_slice;
    f.lbr = f_lbr;
    perch_input_memory(&in, data, len);
    int err = perch_capture_replay_ex(&in, &f, &opts, &st);
    perch_input_close(&in);
    if (st.stop == PERCH_CAPTURE_STOP_END || st.stop == PERCH_CAPTURE_STOP_NO_END)
        return 0;
    return err ? err : PERCH_EFORMAT;
}

static int put_ledger(const perch_sink *w, const char *reason, uint64_t count)
{
    perch_ledger_rec l = {reason, count};
    return count ? w->ledger(w->ctx, &l) : 0;
}

static int write_range(snap *s, perch_sink *w, uint64_t waiting)
{
    s->scope.lock = lock;
    s->scope.unlock = unlock;
    s->scope.lock_ctx = s->r->mu;
    int err = perch__cap_scope_begin(&s->scope, &s->r->store, w);
    for (uint32_t i = 0; i < s->nsegs && err == 0; i++)
        err = play(s, s->segs[i]->data, s->segs[i]->len);
    if (err == 0 && s->open_len)
        err = play(s, s->open_copy, s->open_len);
    if (err == 0)
        err = put_ledger(w, "recorder.dropped_records", s->dropped_in_range);
    if (err == 0)
        err = put_ledger(w, "capture.entity_forgotten", s->scope.missing_entities);
    if (err == 0)
        err = put_ledger(w, "capture.stack_forgotten", s->scope.missing_stacks);
    if (err == 0)
        err = put_ledger(w, "recorder.samples_waiting", waiting);
    return err;
}

/* The snapshot's writer sink, behind the names wrapper when there is one. */
static int open_sink(snap *s, perch_capture_writer *w, perch_sink *ws, void **names)
{
    const perch_sink_wrap *nw = &s->r->opts.names;
    perch_capture_writer_sink(w, ws);
    if (nw->open == NULL)
        return 0;
    perch_sink inner = *ws;
    return nw->open(nw->ctx, &inner, ws, names);
}

int perch_recorder_snapshot(perch_recorder *r, double last_seconds, perch_output *out)
{
    return perch_recorder_snapshot_counted(r, last_seconds, 0, out, NULL);
}

int perch_recorder_snapshot_counted(perch_recorder *r, double last_seconds,
                                    uint64_t samples_waiting, perch_output *out,
                                    perch_recorder_snap_counts *counts)
{
    snap s;
    perch_capture_writer *w = NULL;
    perch_sink ws;
    void *names = NULL;
    if (!r || !out)
        return PERCH_EINVAL;
    memset(&s, 0, sizeof s);
    s.r = r;
    int err = take(&s, last_seconds);
    if (err == 0)
        err = perch_capture_writer_create(out, NULL, &w);
    if (err == 0)
        err = open_sink(&s, w, &ws, &names);
    if (err == 0) {
        err = write_range(&s, &ws, samples_waiting);
        if (err == 0)
            err = ws.finish(ws.ctx);
    }
    perch_capture_writer_destroy(w);
    if (names != NULL)
        r->opts.names.close(r->opts.names.ctx, names);
    perch__cap_scope_end(&s.scope);
    release(&s);
    if (err == 0 && counts != NULL)
        *counts = s.counts;
    return err;
}
