/*
 * Round trips of the capture format: a recorded record stream is written with the capture
 * writer, replayed into a recording sink, and every callback and every field is compared
 * (strings, PDB GUIDs, frames and branches included). Streams: every record type at its
 * extremes, and a larger pseudo-random one written with small chunks so chunk boundaries and
 * delta-base resets are crossed thousands of times. Also: the struct-size guard that fails
 * when a record gains a field the format does not carry yet, the writer's limits (string,
 * frame and branch caps, string table resets), its invalid-record checks, its sync policy, and
 * sink errors on replay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_synth.h"
#include "perch/capture.h"
#include "perch/error.h"

/* Data records: everything between trace_info/counters and the ledger/stat tail. */
static int is_data(int type)
{
    return type >= PERCH_CHUNK_PROCESS && type <= PERCH_CHUNK_LBR;
}

/* Records of `type` in in and out must be equal, one by one. */
static void check_type(const synth_rec *in, const synth_rec *out, int type)
{
    size_t i = 0, j = 0, k = 0;
    for (;;) {
        while (i < in->count && in->ev[i].type != type)
            i++;
        while (j < out->count && out->ev[j].type != type)
            j++;
        if (i == in->count || j == out->count)
            break;
        const char *field = synth_diff(&in->ev[i], &out->ev[j]);
        if (field)
            fail_msg("%s record #%zu differs in field %s", perch_capture_chunk_name(type), k,
                     field);
        i++, j++, k++;
    }
    if (i != in->count || j != out->count)
        fail_msg("%s records: counts differ after %zu", perch_capture_chunk_name(type), k);
}

static int seen_stack(const uint32_t *ids, size_t n, uint32_t id)
{
    for (size_t i = n; i-- > 0;)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* The cross-type order the sink contract promises. */
static void check_order(const synth_rec *out)
{
    uint32_t *ids = malloc((out->count + 1) * sizeof *ids);
    size_t n = 0, last_data = 0, first_tail = SIZE_MAX, finishes = 0;
    assert_non_null(ids);
    assert_true(out->count > 0);
    assert_int_equal(out->ev[0].type, PERCH_CHUNK_TRACE_INFO);
    assert_int_equal(out->ev[out->count - 1].type, PERCH_CHUNK_END);
    for (size_t i = 0; i < out->count; i++) {
        const synth_ev *e = &out->ev[i];
        if (e->type == PERCH_CHUNK_STACK)
            ids[n++] = e->u.stack.id;
        if (e->type == PERCH_CHUNK_SAMPLE && e->u.sample.stack_id &&
            !seen_stack(ids, n, e->u.sample.stack_id))
            fail_msg("sample #%zu uses stack %u before it was replayed", i,
                     (unsigned)e->u.sample.stack_id);
        if (is_data(e->type))
            last_data = i;
        if ((e->type == PERCH_CHUNK_LEDGER || e->type == PERCH_CHUNK_STAT) &&
            first_tail == SIZE_MAX)
            first_tail = i;
        finishes += e->type == PERCH_CHUNK_END;
    }
    assert_int_equal(finishes, 1);
    if (first_tail != SIZE_MAX)
        assert_true(first_tail > last_data);
    free(ids);
}

static void check_roundtrip(const synth_rec *in, const synth_rec *out)
{
    for (int type = PERCH_CHUNK_TRACE_INFO; type <= PERCH_CHUNK_END; type++)
        check_type(in, out, type);
    check_order(out);
}

/* Writes `in`, replays it, compares; returns the capture size. */
static size_t roundtrip(const synth_rec *in, uint32_t chunk_bytes, perch_capture_status *st)
{
    synth_rec out = {0};
    perch_sink rec;
    size_t len = 0;
    uint8_t *data = synth_capture(in, chunk_bytes, &len, NULL);
    assert_non_null(data);
    synth_recorder(&out, &rec);
    memset(st, 0xff, sizeof *st);
    assert_int_equal(perch_capture_replay_memory(data, len, &rec, st), 0);
    assert_int_equal(st->stop, PERCH_CAPTURE_STOP_END);
    assert_int_equal(st->offset, len);
    assert_int_equal(st->good_bytes, len);
    assert_int_equal(st->trailing_bytes, 0);
    check_roundtrip(in, &out);
    synth_free(&out);
    free(data);
    return len;
}

static size_t count_type(const synth_rec *r, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < r->count; i++)
        n += r->ev[i].type == type;
    return n;
}

static void test_roundtrip_extremes(void **state)
{
    synth_rec in = {0};
    perch_capture_status st;
    synth_extremes(&in);
    roundtrip(&in, 0, &st);
    for (int type = PERCH_CHUNK_TRACE_INFO; type <= PERCH_CHUNK_STAT; type++)
        if (type != PERCH_CHUNK_STRINGS)
            assert_int_equal(st.types[type].records, count_type(&in, type));
    assert_true(st.types[PERCH_CHUNK_STRINGS].records > 10);
    assert_int_equal(st.types[PERCH_CHUNK_END].chunks, 1);
    assert_int_equal(st.version, PERCH_CAPTURE_VERSION);
    assert_int_equal(st.unknown_chunks, 0);
    roundtrip(&in, 4096, &st); /* every record type split over several chunks */
    assert_true(st.chunks > 10);
    synth_free(&in);
}

static void test_roundtrip_random_small_chunks(void **state)
{
    synth_rec in = {0};
    perch_capture_status st;
    synth_random(&in, 42, 20000);
    roundtrip(&in, 4096, &st);
    assert_true(st.types[PERCH_CHUNK_SAMPLE].chunks > 20);
    assert_int_equal(st.types[PERCH_CHUNK_SAMPLE].records, 20000);
    synth_free(&in);
}

/* Samples and slices are what dominates a real capture; this pins their cost on the
 * trace-shaped random stream so a regression shows (measured when written: 8.4 B/sample,
 * 12.1 B/slice, 115 B per 34-frame stack). The sizes are printed for the record. */
static void test_sample_encoding_is_compact(void **state)
{
    synth_rec in = {0};
    perch_capture_status st;
    synth_random(&in, 7, 50000);
    size_t len = roundtrip(&in, 0, &st);
    double per_sample = (double)st.types[PERCH_CHUNK_SAMPLE].bytes / 50000.0;
    double per_slice =
        (double)st.types[PERCH_CHUNK_SLICE].bytes / (double)st.types[PERCH_CHUNK_SLICE].records;
    double per_stack =
        (double)st.types[PERCH_CHUNK_STACK].bytes / (double)st.types[PERCH_CHUNK_STACK].records;
    uint64_t frames = 0;
    for (size_t i = 0; i < in.count; i++)
        frames += in.ev[i].type == PERCH_CHUNK_STACK ? in.ev[i].u.stack.frame_count : 0;
    printf("capture %zu bytes: %.2f B/sample, %.2f B/slice, %.1f B/stack (%.1f frames avg)\n", len,
           per_sample, per_slice, per_stack,
           (double)frames / (double)st.types[PERCH_CHUNK_STACK].records);
    assert_true(per_sample < 10.0);
    assert_true(per_slice < 16.0);
    synth_free(&in);
}

/* Fails when a record struct gains (or loses) a field: update the encoder, the decoder,
 * synth_diff_*() and synth_extremes() for the new field, then the size here. Sizes are for
 * 64-bit pointers (Linux x86-64 and Windows x64 agree on these structs). */
static void test_record_struct_sizes(void **state)
{
    if (sizeof(void *) != 8)
        skip();
    assert_int_equal(sizeof(perch_trace_info), 80);
    assert_int_equal(sizeof(perch_process_rec), 64);
    assert_int_equal(sizeof(perch_thread_rec), 56);
    assert_int_equal(sizeof(perch_module_rec), 104);
    assert_int_equal(sizeof(perch_counters_rec), 16);
    assert_int_equal(sizeof(perch_stack_rec), 24);
    assert_int_equal(sizeof(perch_slice_rec), 112);
    assert_int_equal(sizeof(perch_sample_rec), 56);
    assert_int_equal(sizeof(perch_lbr_rec), 48);
    assert_int_equal(sizeof(perch_ledger_rec), 16);
    assert_int_equal(sizeof(perch_stat_rec), 16);
    assert_int_equal(sizeof(perch_symbol_rec), 40);
    assert_int_equal(sizeof(perch_sink), 15 * sizeof(void *)); /* ctx, 13 callbacks, 2 flags */
    assert_int_equal(PERCH_MAX_PMC, 8);
}

static const synth_ev *find_ledger(const synth_rec *r, const char *reason)
{
    for (size_t i = 0; i < r->count; i++)
        if (r->ev[i].type == PERCH_CHUNK_LEDGER && r->ev[i].u.ledger.reason &&
            strcmp(r->ev[i].u.ledger.reason, reason) == 0)
            return &r->ev[i];
    return NULL;
}

static void replay_all(const uint8_t *data, size_t len, synth_rec *out)
{
    perch_sink rec;
    perch_capture_status st;
    synth_recorder(out, &rec);
    assert_int_equal(perch_capture_replay_memory(data, len, &rec, &st), 0);
}

/* Strings over the cap are cut on a UTF-8 boundary, stacks and LBR to their caps; the writer
 * says so in a ledger entry of its own. */
static void test_writer_caps(void **state)
{
    synth_rec in = {0}, out = {0};
    perch_sink s;
    size_t len;
    uint64_t *frames = calloc(PERCH_CAPTURE_MAX_FRAMES + 100, sizeof *frames);
    uint64_t *br = calloc(PERCH_CAPTURE_MAX_BRANCHES + 1, sizeof *br);
    char *big = synth_text(PERCH_CAPTURE_MAX_STRING + 10, 3);
    assert_non_null(frames);
    assert_non_null(br);
    big[PERCH_CAPTURE_MAX_STRING - 1] = (char)0xc3; /* U+00E9 straddles the cap */
    big[PERCH_CAPTURE_MAX_STRING] = (char)0xa9;
    for (unsigned i = 0; i < PERCH_CAPTURE_MAX_FRAMES + 100; i++)
        frames[i] = 0x1000 + i;
    synth_recorder(&in, &s);
    perch_trace_info ti = {big, 1, 1, 8, 1, 1, 0, 0, 0, 0, 0, NULL};
    perch_stack_rec st = {1, PERCH_CAPTURE_MAX_FRAMES + 100, PERCH_CAPTURE_MAX_FRAMES + 50, frames};
    perch_lbr_rec lbr = {1, 1, 1, 1, 0, PERCH_CAPTURE_MAX_BRANCHES + 1, br, br};
    s.trace_info(&in, &ti);
    s.stack(&in, &st);
    s.lbr(&in, &lbr);
    s.finish(&in);
    uint8_t *data = synth_capture(&in, 0, &len, NULL);
    assert_non_null(data);
    replay_all(data, len, &out);
    assert_int_equal(out.ev[0].type, PERCH_CHUNK_TRACE_INFO);
    assert_int_equal(strlen(out.ev[0].u.info.source), PERCH_CAPTURE_MAX_STRING - 1);
    assert_memory_equal(out.ev[0].u.info.source, big, PERCH_CAPTURE_MAX_STRING - 1);
    assert_int_equal(out.ev[1].u.stack.frame_count, PERCH_CAPTURE_MAX_FRAMES);
    assert_int_equal(out.ev[1].u.stack.kernel_frames, PERCH_CAPTURE_MAX_FRAMES);
    assert_memory_equal(out.ev[1].u.stack.frames, frames, PERCH_CAPTURE_MAX_FRAMES * 8);
    assert_int_equal(out.ev[2].u.lbr.branch_count, PERCH_CAPTURE_MAX_BRANCHES);
    const synth_ev *lg = find_ledger(&out, "capture.truncated");
    assert_non_null(lg);
    assert_int_equal(lg->u.ledger.count, 3);
    synth_free(&in);
    synth_free(&out);
    free(data);
    free(frames);
    free(br);
    free(big);
}

/* More distinct string bytes than the table holds: the writer resets it, and the replay
 * still gives every string back. */
static void test_string_table_reset(void **state)
{
    synth_rec in = {0};
    perch_sink s;
    perch_capture_status st;
    perch_capture_writer_stats ws;
    size_t len;
    synth_recorder(&in, &s);
    perch_trace_info ti = {"synth", 1, 1, 8, 1, 1, 0, 0, 0, 0, 0, NULL};
    s.trace_info(&in, &ti);
    for (unsigned i = 0; i < 100; i++) {
        char *cmd = synth_text(100000, i + 1);
        perch_process_rec p = {i, i, 0, 0, 0, 0, 0, 0, "same.exe", cmd};
        s.process(&in, &p);
        free(cmd);
    }
    s.finish(&in);
    uint8_t *data = synth_capture(&in, 0, &len, &ws);
    assert_non_null(data);
    assert_true(ws.strtab_resets >= 1);
    free(data);
    roundtrip(&in, 0, &st);
    synth_free(&in);
}

static void test_writer_rejects_bad_records(void **state)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w = NULL;
    perch_sink s;
    uint64_t f[2] = {1, 2};
    perch_capture_writer_opts opts;
    perch_capture_writer_opts_default(&opts);
    opts.chunk_bytes = 100; /* below the 4 KiB minimum */
    perch_output_memory(&out, &mem, 1 << 20);
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), PERCH_EINVAL);
    assert_null(w);
    perch_capture_writer_opts_default(&opts);
    opts.size = sizeof opts - 1; /* a caller built against another version of the struct */
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), PERCH_EINVAL);
    assert_null(w);
    assert_int_equal(mem.len, 0); /* nothing written on failure */
    assert_int_equal(perch_capture_writer_create(&out, NULL, &w), 0);
    perch_capture_writer_sink(w, &s);
    perch_stack_rec bad_kernel = {1, 2, 3, f};
    perch_stack_rec no_frames = {1, 2, 0, NULL};
    perch_slice_rec bad_pmc = {0};
    bad_pmc.pmc_count = PERCH_MAX_PMC + 1;
    assert_int_equal(s.stack(s.ctx, &bad_kernel), PERCH_EINVAL);
    assert_int_equal(s.stack(s.ctx, &no_frames), PERCH_EINVAL);
    assert_int_equal(s.slice(s.ctx, &bad_pmc), PERCH_EINVAL);
    perch_stack_rec good = {1, 2, 1, f};
    assert_int_equal(s.stack(s.ctx, &good), 0); /* not sticky: the writer goes on */
    assert_int_equal(s.finish(s.ctx), 0);
    assert_int_equal(s.stack(s.ctx, &good), PERCH_ESTATE);
    assert_int_equal(s.finish(s.ctx), PERCH_ESTATE);
    perch_capture_writer_destroy(w);
    size_t len;
    free(perch_output_memory_take(&mem, &len));
}

/* An output that fails after `budget` bytes and counts syncs. */
struct flaky {
    size_t budget;
    size_t written;
    unsigned syncs;
    unsigned writes;
};

static int flaky_write(void *ctx, const void *buf, size_t len)
{
    struct flaky *f = ctx;
    (void)buf;
    if (len > f->budget - f->written)
        return PERCH_EIO;
    f->written += len;
    f->writes++;
    return 0;
}

static int flaky_sync(void *ctx)
{
    ((struct flaky *)ctx)->syncs++;
    return 0;
}

static int flaky_close(void *ctx)
{
    (void)ctx;
    return 0;
}

static void test_write_error_is_sticky(void **state)
{
    synth_rec in = {0};
    struct flaky f = {5000, 0, 0, 0};
    perch_output out = {flaky_write, flaky_sync, flaky_close, &f};
    perch_capture_writer *w;
    perch_sink s;
    perch_capture_writer_opts opts;
    synth_random(&in, 1, 2000);
    perch_capture_writer_opts_default(&opts);
    opts.chunk_bytes = 4096;
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), 0);
    perch_capture_writer_sink(w, &s);
    assert_int_equal(synth_play(&in, &s), PERCH_EIO);
    perch_sample_rec sa = {0};
    assert_int_equal(s.sample(s.ctx, &sa), PERCH_EIO);
    assert_int_equal(perch_capture_writer_finish(w), PERCH_EIO);
    assert_true(f.written <= 5000);
    perch_capture_writer_destroy(w);
    synth_free(&in);
}

static uint64_t fake_clock(void *ctx)
{
    return *(uint64_t *)ctx;
}

/* Sync per chunk, per N chunks, and by time with a fake clock; whole chunks per write. */
static void test_sync_policy(void **state)
{
    synth_rec in = {0};
    synth_random(&in, 3, 5000);
    for (unsigned every = 1; every <= 4; every += 3) {
        struct flaky f = {SIZE_MAX, 0, 0, 0};
        perch_output out = {flaky_write, flaky_sync, flaky_close, &f};
        perch_capture_writer *w;
        perch_capture_writer_stats ws;
        perch_sink s;
        perch_capture_writer_opts opts;
        perch_capture_writer_opts_default(&opts);
        opts.chunk_bytes = 4096;
        opts.sync_every_chunks = every;
        assert_int_equal(perch_capture_writer_create(&out, &opts, &w), 0);
        perch_capture_writer_sink(w, &s);
        assert_int_equal(synth_play(&in, &s), 0);
        perch_capture_writer_get_stats(w, &ws);
        /* one write for the header and one per chunk; a sync after the header, after every
         * `every` chunks, and after the end chunk unless the policy just synced */
        assert_int_equal(f.writes, ws.chunks + 1);
        assert_int_equal(f.syncs, ws.syncs);
        assert_int_equal(f.syncs, 1 + ws.chunks / every + (ws.chunks % every != 0));
        perch_capture_writer_destroy(w);
    }
    /* time: no count policy, the clock advances 1 ms per call, sync every 50 ms */
    struct flaky f = {SIZE_MAX, 0, 0, 0};
    perch_output out = {flaky_write, flaky_sync, flaky_close, &f};
    perch_capture_writer *w;
    perch_capture_writer_stats ws;
    perch_sink s;
    uint64_t clock = 0;
    perch_capture_writer_opts opts;
    perch_capture_writer_opts_default(&opts);
    opts.chunk_bytes = 4096;
    opts.sync_every_chunks = 0;
    opts.sync_interval_ms = 50;
    opts.now_ns = fake_clock;
    opts.clock_ctx = &clock;
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), 0);
    perch_capture_writer_sink(w, &s);
    for (size_t i = 0; i < in.count; i++) {
        clock += 1000000;
        assert_int_equal(synth_play_one(&in.ev[i], &s), 0);
    }
    perch_capture_writer_get_stats(w, &ws);
    assert_true(f.syncs >= 3);
    assert_true(f.syncs < ws.chunks);
    perch_capture_writer_destroy(w);
    synth_free(&in);
}

/* Records wait at most flush_interval_ms in an open chunk. */
static void test_flush_interval(void **state)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink s;
    perch_capture_status st;
    synth_rec got = {0};
    perch_sink rec;
    uint64_t clock = 0;
    size_t len;
    perch_capture_writer_opts opts;
    perch_capture_writer_opts_default(&opts);
    opts.flush_interval_ms = 10;
    opts.now_ns = fake_clock;
    opts.clock_ctx = &clock;
    perch_output_memory(&out, &mem, 1 << 20);
    assert_int_equal(perch_capture_writer_create(&out, &opts, &w), 0);
    perch_capture_writer_sink(w, &s);
    perch_thread_rec t = {1, 1, 1, 1, 0, 0, 0, "t"};
    for (unsigned i = 0; i < 200; i++) {
        clock += 1000000; /* 1 ms per record */
        t.key = i + 1;
        assert_int_equal(s.thread(s.ctx, &t), 0);
    }
    /* no finish: this is a crash; most threads must already be on "disk" */
    uint8_t *data = perch_output_memory_take(&mem, &len);
    synth_recorder(&got, &rec);
    assert_int_equal(perch_capture_replay_memory(data, len, &rec, &st), PERCH_ETRUNC);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_NO_END);
    assert_true(st.types[PERCH_CHUNK_THREAD].records >= 128);
    perch_capture_writer_destroy(w);
    synth_free(&got);
    free(data);
}

static void test_sink_error_stops_replay(void **state)
{
    synth_rec in = {0}, out = {0};
    perch_sink rec;
    perch_capture_status st;
    size_t len;
    synth_extremes(&in);
    uint8_t *data = synth_capture(&in, 0, &len, NULL);
    synth_recorder(&out, &rec);
    out.fail_at_type = PERCH_CHUNK_SAMPLE;
    assert_int_equal(perch_capture_replay_memory(data, len, &rec, &st), PERCH_ECANCELED);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_SINK);
    assert_int_equal(out.ev[out.count - 1].type, PERCH_CHUNK_SAMPLE); /* no finish after it */
    assert_int_equal(count_type(&out, PERCH_CHUNK_SAMPLE), 1);
    assert_non_null(strstr(st.reason, "sample"));
    synth_free(&in);
    synth_free(&out);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_extremes),
        cmocka_unit_test(test_roundtrip_random_small_chunks),
        cmocka_unit_test(test_sample_encoding_is_compact),
        cmocka_unit_test(test_record_struct_sizes),
        cmocka_unit_test(test_writer_caps),
        cmocka_unit_test(test_string_table_reset),
        cmocka_unit_test(test_writer_rejects_bad_records),
        cmocka_unit_test(test_write_error_is_sticky),
        cmocka_unit_test(test_sync_policy),
        cmocka_unit_test(test_flush_interval),
        cmocka_unit_test(test_sink_error_stops_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
