/*
 * The flight recorder (include/perch/recorder.h) on a synthetic trace:
 * - a snapshot of the last S seconds equals, by report --json, the import of the same trace
 *   filtered by the header's range rule (samples and LBR with ts >= now - S, slices with
 *   end_ts >= now - S, now = the newest data record; the entities and stacks they use, stack
 *   ids renumbered in first-use order), for several S;
 * - snapshots taken from another thread while the model thread feeds are complete captures
 *   that name every key they use;
 * - a snapshot taken while the model thread idles holds every sample it fed (the open segment
 *   sealed on request), and misses some without that; one that makes its idle call only
 *   when the recorder's wake hook asks still seals;
 * - the memory cap holds (within one open segment) and drops are counted and reported in the
 *   snapshot's ledger; the time window drops old segments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/hmap.h"
#include "perch/capture.h"
#include "perch/json.h"
#include "perch/pipeline.h"
#include "perch/platform.h"
#include "perch/recorder.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "perch/thread.h"
#include "testdata.h"

static uint8_t *etl, *full;
static size_t etl_len, full_len;

static uint8_t *make_etl(uint64_t seed, uint64_t bytes, size_t *len)
{
    perch_synth_options so;
    perch_output out;
    perch_memory_out mem;
    perch_synth_options_init(&so);
    so.seed = seed;
    so.cpus = 4;
    so.target_bytes = bytes;
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_synth_write(&so, &out, NULL), 0);
    return perch_output_memory_take(&mem, len);
}

static int feed(const uint8_t *data, size_t len, const perch_sink *sink)
{
    perch_input in;
    perch_input_memory(&in, data, len);
    return perch_pipeline_etl(&in, "synth", sink, NULL, NULL);
}

static int setup(void **state)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    (void)state;
    etl = make_etl(21, 3u << 20, &etl_len);
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    perch_capture_writer_sink(w, &sink);
    assert_int_equal(feed(etl, etl_len, &sink), 0);
    perch_capture_writer_destroy(w);
    full = perch_output_memory_take(&mem, &full_len);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    perch_free(etl);
    perch_free(full);
    return 0;
}

static char *report_capture(const uint8_t *data, size_t len)
{
    perch_report *r = NULL;
    perch_sink sink;
    perch_capture_status st;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &sink);
    assert_int_equal(perch_capture_replay_memory(data, len, &sink, &st), 0);
    char *j = perch_test_report_json(r);
    perch_report_destroy(r);
    return j;
}

/* ---- the reference: the full import filtered by the range rule ------------------------ */

typedef struct ref {
    int pass; /* 0: newest time; 1: what the range uses; 2: write */
    uint64_t newest, cutoff;
    perch__hmap used[3];  /* process, thread, module keys */
    perch__hmap proc_of;  /* thread or module key -> process key (last record) */
    perch__hmap stack_at; /* model stack id -> index into frames */
    perch__hmap renum;    /* model stack id -> id in the output */
    uint32_t next_id;
    uint64_t *pool;
    uint32_t pool_len, pool_cap;
    uint32_t *off, *cnt, *ker, nstacks, cap_stacks;
    const perch_sink *out;
} ref;

static void put(perch__hmap *m, uint64_t k, uint32_t v)
{
    assert_int_equal(perch__hmap_put(m, k, v), 0);
}
static bool has(const perch__hmap *m, uint64_t k)
{
    uint32_t v;
    return perch__hmap_get(m, k, &v);
}
static void use_key(ref *f, int kind, uint64_t key)
{
    if (key)
        put(&f->used[kind], key, 1);
}
static bool in_range(ref *f, uint64_t ts)
{
    if (f->pass == 0 && ts > f->newest)
        f->newest = ts;
    return f->pass > 0 && ts >= f->cutoff;
}
static int r_info(void *c, const perch_trace_info *i)
{
    ref *f = c;
    return f->pass == 2 ? f->out->trace_info(f->out->ctx, i) : 0;
}
static int r_process(void *c, const perch_process_rec *p)
{
    ref *f = c;
    return f->pass == 2 && has(&f->used[0], p->key) ? f->out->process(f->out->ctx, p) : 0;
}
static int r_thread(void *c, const perch_thread_rec *t)
{
    ref *f = c;
    put(&f->proc_of, t->key, (uint32_t)t->process_key);
    return f->pass == 2 && has(&f->used[1], t->key) ? f->out->thread(f->out->ctx, t) : 0;
}
static int r_module(void *c, const perch_module_rec *m)
{
    ref *f = c;
    put(&f->proc_of, m->key, (uint32_t)m->process_key);
    return f->pass == 2 && has(&f->used[2], m->key) ? f->out->module(f->out->ctx, m) : 0;
}
static int r_stack(void *c, const perch_stack_rec *s)
{
    ref *f = c;
    if (f->pass != 1)
        return 0;
    if (f->nstacks == f->cap_stacks) {
        f->cap_stacks = f->cap_stacks ? f->cap_stacks * 2 : 1024;
        f->off = realloc(f->off, f->cap_stacks * sizeof *f->off);
        f->cnt = realloc(f->cnt, f->cap_stacks * sizeof *f->cnt);
        f->ker = realloc(f->ker, f->cap_stacks * sizeof *f->ker);
    }
    while (f->pool_len + s->frame_count > f->pool_cap) {
        f->pool_cap = f->pool_cap ? f->pool_cap * 2 : 1u << 16;
        f->pool = realloc(f->pool, f->pool_cap * sizeof *f->pool);
    }
    memcpy(f->pool + f->pool_len, s->frames, s->frame_count * sizeof *f->pool);
    f->off[f->nstacks] = f->pool_len;
    f->cnt[f->nstacks] = s->frame_count;
    f->ker[f->nstacks] = s->kernel_frames;
    f->pool_len += s->frame_count;
    put(&f->stack_at, s->id, f->nstacks++);
    return 0;
}
static int r_sample(void *c, const perch_sample_rec *s)
{
    ref *f = c;
    uint32_t at, id = 0;
    if (!in_range(f, s->ts))
        return 0;
    if (f->pass == 1) {
        use_key(f, 1, s->thread_key);
        use_key(f, 2, s->module_key);
        return 0;
    }
    if (s->stack_id && !perch__hmap_get(&f->renum, s->stack_id, &id)) {
        assert_true(perch__hmap_get(&f->stack_at, s->stack_id, &at));
        id = ++f->next_id;
        put(&f->renum, s->stack_id, id);
        perch_stack_rec st = {id, f->cnt[at], f->ker[at], f->pool + f->off[at]};
        f->out->stack(f->out->ctx, &st);
    }
    perch_sample_rec copy = *s;
    copy.stack_id = id;
    return f->out->sample(f->out->ctx, &copy);
}
static int r_slice(void *c, const perch_slice_rec *s)
{
    ref *f = c;
    if (!in_range(f, s->end_ts))
        return 0;
    if (f->pass == 1)
        use_key(f, 1, s->thread_key);
    return f->pass == 2 ? f->out->slice(f->out->ctx, s) : 0;
}
static int r_lbr(void *c, const perch_lbr_rec *l)
{
    ref *f = c;
    if (!in_range(f, l->ts))
        return 0;
    if (f->pass == 1)
        use_key(f, 1, l->thread_key);
    return f->pass == 2 ? f->out->lbr(f->out->ctx, l) : 0;
}

/* The processes of the threads and modules the range uses. */
static void add_processes(ref *f)
{
    for (int kind = 1; kind <= 2; kind++)
        for (uint32_t i = 0; i < f->used[kind].cap; i++) {
            uint32_t p;
            if (f->used[kind].vals[i] != UINT32_MAX &&
                perch__hmap_get(&f->proc_of, f->used[kind].keys[i], &p) && p)
                put(&f->used[0], p, 1);
        }
}

static char *reference(double seconds)
{
    static ref f;
    perch_report *r = NULL;
    perch_sink out, sink = {&f,       r_info, r_process, r_thread, r_module, NULL, r_stack, r_slice,
                            r_sample, r_lbr,  NULL,      NULL,     NULL,     NULL, false,   false};
    perch_capture_status st;
    memset(&f, 0, sizeof f);
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &out);
    f.out = &out;
    for (f.pass = 0; f.pass < 3; f.pass++) {
        if (f.pass == 1) {
            uint64_t span = (uint64_t)(seconds * 10000000.0); /* the synthetic clock: 10 MHz */
            f.cutoff = seconds > 0 && span < f.newest ? f.newest - span : 0;
        }
        if (f.pass == 2)
            add_processes(&f);
        assert_int_equal(perch_capture_replay_memory(full, full_len, &sink, &st), 0);
    }
    char *j = perch_test_report_json(r);
    perch_report_destroy(r);
    for (int k = 0; k < 3; k++)
        perch__hmap_free(&f.used[k]);
    perch__hmap_free(&f.proc_of);
    perch__hmap_free(&f.stack_at);
    perch__hmap_free(&f.renum);
    free(f.pool);
    free(f.off);
    free(f.cnt);
    free(f.ker);
    return j;
}

static uint8_t *snapshot(perch_recorder *rec, double seconds, size_t *len)
{
    perch_output out;
    perch_memory_out mem;
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_recorder_snapshot(rec, seconds, &out), 0);
    return perch_output_memory_take(&mem, len);
}

static void test_snapshot_equals_filtered_import(void **state)
{
    perch_recorder *rec = NULL;
    perch_sink sink;
    static const double ranges[] = {0, 0.5, 0.1, 0.01};
    (void)state;
    assert_int_equal(perch_recorder_create(NULL, &rec), 0);
    perch_recorder_sink(rec, &sink);
    assert_int_equal(feed(etl, etl_len, &sink), 0);
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        size_t len;
        uint8_t *snap = snapshot(rec, ranges[i], &len);
        char *got = report_capture(snap, len), *want = reference(ranges[i]);
        printf("  last %.2f s: snapshot %zu bytes, report %zu bytes\n", ranges[i], len,
               strlen(got));
        assert_non_null(strstr(want, "\"top_processes\":[{\"name\":\""));
        assert_string_equal(got, want);
        free(got);
        free(want);
        perch_free(snap);
    }
    perch_recorder_destroy(rec);
}

/* ---- snapshots from another thread ----------------------------------------------------- */

typedef struct shooter {
    perch_recorder *rec;
    atomic_int done;
    atomic_int taken;
    int bad;
} shooter;

typedef struct keys {
    perch__hmap k[3];
    uint32_t stacks;
    int missing;
} keys;

static int s_process(void *c, const perch_process_rec *p)
{
    put(&((keys *)c)->k[0], p->key, 1);
    return 0;
}
static int s_thread(void *c, const perch_thread_rec *t)
{
    keys *k = c;
    k->missing += t->process_key && !has(&k->k[0], t->process_key);
    put(&k->k[1], t->key, 1);
    return 0;
}
static int s_module(void *c, const perch_module_rec *m)
{
    keys *k = c;
    k->missing += m->process_key && !has(&k->k[0], m->process_key);
    put(&k->k[2], m->key, 1);
    return 0;
}
static int s_stack(void *c, const perch_stack_rec *s)
{
    keys *k = c;
    k->missing += s->id != ++k->stacks;
    return 0;
}
static int s_sample(void *c, const perch_sample_rec *s)
{
    keys *k = c;
    k->missing += (s->thread_key && !has(&k->k[1], s->thread_key)) +
                  (s->module_key && !has(&k->k[2], s->module_key)) + (s->stack_id > k->stacks);
    return 0;
}
static int s_slice(void *c, const perch_slice_rec *s)
{
    keys *k = c;
    k->missing += s->thread_key && !has(&k->k[1], s->thread_key);
    return 0;
}

static int shoot(void *arg)
{
    shooter *s = arg;
    do {
        perch_output out;
        perch_memory_out mem;
        perch_capture_status st;
        keys k;
        size_t len;
        perch_sink check = {&k,       NULL, s_process, s_thread, s_module, NULL, s_stack, s_slice,
                            s_sample, NULL, NULL,      NULL,     NULL,     NULL, false,   false};
        perch_output_memory(&out, &mem, (size_t)256 << 20);
        int err = perch_recorder_snapshot(s->rec, 0.2, &out);
        uint8_t *data = perch_output_memory_take(&mem, &len);
        if (err == PERCH_ESTATE) { /* no trace info yet */
            perch_free(data);
            continue;
        }
        memset(&k, 0, sizeof k);
        err = err ? err : perch_capture_replay_memory(data, len, &check, &st);
        s->bad += err != 0 || k.missing != 0;
        atomic_fetch_add(&s->taken, 1);
        for (int i = 0; i < 3; i++)
            perch__hmap_free(&k.k[i]);
        perch_free(data);
    } while (!atomic_load(&s->done));
    return 0;
}

/* The recorder's sink, but its 2,000th sample waits (at most 20 s) until the snapshot thread
 * has taken one: on a loaded machine the whole feed could otherwise end before that thread
 * first ran (it then took none "while feeding"). */
static perch_sink gated;
static shooter *gate_for;
static int gated_sample(void *ctx, const perch_sample_rec *rec)
{
    static int seen;
    if (++seen == 2000)
        for (int i = 0; i < 20000 && atomic_load(&gate_for->taken) == 0; i++)
            perch_sleep_ms(1);
    return gated.sample(ctx, rec);
}

static void test_snapshot_while_feeding(void **state)
{
    perch_recorder_opts o;
    perch_sink sink;
    perch_thread *t = NULL;
    int result = -1;
    static shooter s;
    (void)state;
    perch_recorder_opts_default(&o);
    o.segment_bytes = 16u << 10; /* many seals during the run */
    memset(&s, 0, sizeof s);
    assert_int_equal(perch_recorder_create(&o, &s.rec), 0);
    perch_recorder_sink(s.rec, &gated);
    sink = gated;
    sink.sample = gated_sample;
    gate_for = &s;
    assert_int_equal(perch_thread_start(shoot, &s, "snapshots", &t), 0);
    assert_int_equal(feed(etl, etl_len, &sink), 0);
    atomic_store(&s.done, 1);
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, 0);
    printf("  %d snapshots while feeding\n", atomic_load(&s.taken));
    assert_true(atomic_load(&s.taken) >= 1);
    assert_int_equal(s.bad, 0);
    perch_recorder_destroy(s.rec);
}

/* ---- the open segment ------------------------------------------------------------------ */

/* A model thread that feeds the whole record stream (without its end) and then idles, as the
 * live engine does, calling perch_recorder_idle until told to stop. */
typedef struct idler {
    perch_recorder *rec;
    atomic_int fed, done;
    bool on_wake;     /* idle calls only when woken (a model thread with a very long tick) */
    atomic_int wakes; /* the recorder's wake hook */
} idler;

static void wake_idler(void *ctx)
{
    atomic_fetch_add(&((idler *)ctx)->wakes, 1);
}

static int idle_model(void *arg)
{
    idler *m = arg;
    perch_capture_status st;
    perch_sink sink;
    perch_recorder_sink(m->rec, &sink);
    sink.finish = NULL; /* the session goes on */
    int err = perch_capture_replay_memory(full, full_len, &sink, &st);
    atomic_store(&m->fed, 1);
    int served = 0;
    while (!atomic_load(&m->done)) {
        if (!m->on_wake || atomic_load(&m->wakes) > served) {
            served = m->on_wake ? atomic_load(&m->wakes) : 0;
            perch_recorder_idle(m->rec);
        }
        perch_sleep_ms(1);
    }
    return err;
}

static int n_sample(void *c, const perch_sample_rec *s)
{
    (void)s;
    ++*(uint64_t *)c;
    return 0;
}

static uint64_t samples_in(const uint8_t *data, size_t len)
{
    uint64_t n = 0;
    perch_capture_status st;
    perch_sink count = {&n,       NULL, NULL, NULL, NULL, NULL, NULL,  NULL,
                        n_sample, NULL, NULL, NULL, NULL, NULL, false, false};
    assert_int_equal(perch_capture_replay_memory(data, len, &count, &st), 0);
    return n;
}

/* A snapshot while the model thread idles after feeding, with and without sealing the open
 * segment: with it, every sample the recorder received; without, the open segment's unflushed
 * chunks are missing. */
static uint64_t snapshot_after_feeding(uint32_t seal_wait_ms, bool on_wake, uint64_t *counted)
{
    perch_recorder_opts o;
    perch_thread *t = NULL;
    perch_output out;
    perch_memory_out mem;
    perch_recorder_snap_counts n;
    static idler m;
    size_t len;
    int result = -1;
    perch_recorder_opts_default(&o);
    o.seal_wait_ms = seal_wait_ms;
    memset(&m, 0, sizeof m);
    m.on_wake = on_wake;
    if (on_wake) {
        o.wake = wake_idler;
        o.wake_ctx = &m;
    }
    assert_int_equal(perch_recorder_create(&o, &m.rec), 0);
    assert_int_equal(perch_thread_start(idle_model, &m, "model", &t), 0);
    while (!atomic_load(&m.fed))
        perch_sleep_ms(1);
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_recorder_snapshot_counted(m.rec, 0, 17, &out, &n), 0);
    uint8_t *data = perch_output_memory_take(&mem, &len);
    atomic_store(&m.done, 1);
    assert_int_equal(perch_thread_join(t, &result), 0);
    assert_int_equal(result, 0);
    uint64_t got = samples_in(data, len);
    assert_int_equal(got, n.samples);
    *counted = n.samples;
    char *json = report_capture(data, len);
    assert_non_null(strstr(json, "\"recorder.samples_waiting\":17"));
    free(json);
    perch_free(data);
    perch_recorder_destroy(m.rec);
    return got;
}

static void test_snapshot_holds_the_open_segment(void **state)
{
    uint64_t counted;
    (void)state;
    uint64_t all = samples_in(full, full_len);
    uint64_t sealed = snapshot_after_feeding(20000, false, &counted); /* ends once sealed */
    uint64_t unsealed = snapshot_after_feeding(0, false, &counted);
    printf("  %llu samples fed; snapshot with the open segment sealed: %llu, without: %llu\n",
           (unsigned long long)all, (unsigned long long)sealed, (unsigned long long)unsealed);
    assert_int_equal(sealed, all);
    assert_true(unsealed < all); /* what the seal adds: this test can fail */
}

/* A model thread that makes its idle call only when woken still seals for a snapshot: the
 * recorder's wake hook brings that call (without it the 20 s wait would end unsealed). */
static void test_snapshot_wakes_the_model(void **state)
{
    uint64_t counted;
    (void)state;
    uint64_t all = samples_in(full, full_len);
    uint64_t t0 = perch_monotonic_ns();
    assert_int_equal(snapshot_after_feeding(20000, true, &counted), all);
    assert_true(perch_monotonic_ns() - t0 < 15000000000ull);
}

/* ---- caps ------------------------------------------------------------------------------ */

/* The pipeline's progress callback (every 4096 records) samples the recorder's memory. */
typedef struct capped {
    perch_recorder *rec;
    uint64_t worst, looks;
} capped;

static void c_progress(void *c, uint64_t done, uint64_t total)
{
    capped *k = c;
    perch_recorder_stats st;
    (void)done;
    (void)total;
    perch_recorder_get_stats(k->rec, &st);
    k->looks++;
    if (st.bytes > k->worst)
        k->worst = st.bytes;
}

typedef struct ledger_of {
    uint64_t dropped;
} ledger_of;

static int l_ledger(void *c, const perch_ledger_rec *l)
{
    if (strcmp(l->reason, "recorder.dropped_records") == 0)
        ((ledger_of *)c)->dropped = l->count;
    return 0;
}

static void test_memory_cap(void **state)
{
    perch_recorder_opts o;
    perch_recorder_stats st;
    static capped k;
    size_t len, big_len;
    (void)state;
    uint8_t *big = make_etl(22, 24u << 20, &big_len);
    perch_recorder_opts_default(&o);
    o.max_bytes = 1u << 20;
    o.segment_bytes = 16u << 10;
    memset(&k, 0, sizeof k);
    assert_int_equal(perch_recorder_create(&o, &k.rec), 0);
    perch_sink sink;
    perch_input in;
    perch_pipeline_options po = {.sz = sizeof po, .progress = c_progress, .progress_ctx = &k};
    perch_recorder_sink(k.rec, &sink);
    perch_input_memory(&in, big, big_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, &po, NULL), 0);
    assert_true(k.looks > 20);
    perch_recorder_get_stats(k.rec, &st);
    printf("  held %llu bytes at most (cap %llu), %llu segments dropped by the cap\n",
           (unsigned long long)k.worst, (unsigned long long)o.max_bytes,
           (unsigned long long)st.dropped_by_cap);
    assert_true(k.worst > 0);
    assert_true(k.worst <= o.max_bytes + 2 * o.segment_bytes);
    assert_true(st.bytes <= o.max_bytes + 2 * o.segment_bytes);
    assert_true(st.dropped_by_cap > 0);
    assert_true(st.records_dropped > 0);
    uint8_t *snap = snapshot(k.rec, 0, &len);
    ledger_of lo = {0};
    perch_sink ls;
    perch_capture_status cs;
    memset(&ls, 0, sizeof ls);
    ls.ctx = &lo;
    ls.ledger = l_ledger;
    assert_int_equal(perch_capture_replay_memory(snap, len, &ls, &cs), 0);
    assert_true(lo.dropped > 0);
    perch_free(snap);
    perch_free(big);
    perch_recorder_destroy(k.rec);
}

static void test_window(void **state)
{
    perch_recorder_opts o;
    perch_recorder_stats st;
    perch_recorder *rec = NULL;
    perch_sink sink;
    (void)state;
    perch_recorder_opts_default(&o);
    o.window_ms = 50;
    o.segment_ms = 10;
    assert_int_equal(perch_recorder_create(&o, &rec), 0);
    perch_recorder_sink(rec, &sink);
    assert_int_equal(feed(etl, etl_len, &sink), 0);
    perch_recorder_get_stats(rec, &st);
    assert_true(st.segments_dropped > 0);
    assert_int_equal(st.dropped_by_cap, 0);
    /* what is held is the window plus at most the span of one segment (and the stack wait of
     * late samples, 4 s in the model: samples can be emitted well after their time) */
    assert_true(st.newest_ts - st.oldest_ts <= (uint64_t)(50 + 10 + 4000) * 10000);
    perch_recorder_destroy(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_equals_filtered_import),
        cmocka_unit_test(test_snapshot_while_feeding),
        cmocka_unit_test(test_snapshot_holds_the_open_segment),
        cmocka_unit_test(test_snapshot_wakes_the_model),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_window),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
