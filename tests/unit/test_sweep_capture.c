/*
 * Allocation-failure sweeps (tests/support/failalloc.h) of the capture writer and the capture
 * reader: with the N-th allocation failing, for every N, the writer ends with PERCH_ENOMEM
 * and what it wrote so far replays cleanly up to its last whole chunk without claiming to be
 * complete; the reader ends with PERCH_ENOMEM (status: the sink or its own allocation) or
 * gives the reference records; nothing stays allocated. Streams: the model's output for a
 * real trace slice and for a small synthetic trace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "sweep_inputs.h"

struct writer_run {
    synth_rec stream;
    uint8_t *ref;
    size_t ref_len;
    perch_memory_out mem;
    uint64_t partial_runs;
};

static int writer_run(void *ctx)
{
    struct writer_run *r = ctx;
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_output_memory(&out, &r->mem, 256u << 20);
    int err = perch_capture_writer_create(&out, NULL, &w);
    if (err < 0)
        return err;
    perch_capture_writer_sink(w, &sink);
    err = synth_play(&r->stream, &sink);
    perch_capture_writer_destroy(w);
    return err;
}

static perch_sweep_outcome writer_verify(void *ctx, int err, uint64_t fail_at)
{
    struct writer_run *r = ctx;
    size_t len = 0;
    uint8_t *data = sweep_take(&r->mem, &len);
    perch_sweep_outcome o = PERCH_SWEEP_OUTCOMES;
    if (err < 0) {
        size_t records;
        assert_true(sweep_replays_partial(data, len, &records));
        r->partial_runs += len > PERCH_CAPTURE_HEADER_SIZE;
    } else if (len == r->ref_len && memcmp(data, r->ref, len) == 0) {
        o = PERCH_SWEEP_BENIGN;
    }
    free(data);
    return o;
}

static void sweep_writer(sweep_input in)
{
    struct writer_run r;
    char name[64];
    memset(&r, 0, sizeof r);
    sweep_record(&in, &r.stream);
    r.ref = synth_capture(&r.stream, 0, &r.ref_len, NULL);
    assert_non_null(r.ref);
    snprintf(name, sizeof name, "capture writer (%s)", in.name);
    perch_sweep s = {name, writer_run, writer_verify, &r, true, 1};
    perch_sweep_alloc(&s);
    free(r.ref);
    synth_free(&r.stream);
    sweep_input_free(&in);
}

static void test_writer_x64(void **state)
{
    sweep_writer(sweep_x64_slice());
}

static void test_writer_synth(void **state)
{
    sweep_writer(sweep_synth(2));
}

struct reader_run {
    uint8_t *capture;
    size_t len;
    synth_rec got, ref;
};

static int reader_run(void *ctx)
{
    struct reader_run *r = ctx;
    perch_sink sink;
    perch_capture_status st;
    synth_free(&r->got);
    synth_recorder(&r->got, &sink);
    int err = perch_capture_replay_memory(r->capture, r->len, &sink, &st);
    if (err == PERCH_ENOMEM)
        assert_true(st.stop == PERCH_CAPTURE_STOP_IO || st.stop == PERCH_CAPTURE_STOP_LIMIT ||
                    st.stop == PERCH_CAPTURE_STOP_SINK || st.stop == PERCH_CAPTURE_STOP_BAD_CHUNK);
    return err;
}

static perch_sweep_outcome reader_verify(void *ctx, int err, uint64_t fail_at)
{
    struct reader_run *r = ctx;
    if (err == 0 && fail_at == 0 && r->ref.count == 0) {
        r->ref = r->got;
        memset(&r->got, 0, sizeof r->got);
        return PERCH_SWEEP_BENIGN;
    }
    return err == 0 && sweep_same_stream(&r->got, &r->ref) ? PERCH_SWEEP_BENIGN
                                                           : PERCH_SWEEP_OUTCOMES;
}

static void sweep_reader(sweep_input in)
{
    struct reader_run r;
    char name[64];
    memset(&r, 0, sizeof r);
    r.capture = sweep_capture(&in, &r.len);
    snprintf(name, sizeof name, "capture reader (%s)", in.name);
    perch_sweep s = {name, reader_run, reader_verify, &r, true, 1};
    perch_sweep_alloc(&s);
    assert_true(r.ref.count > 0);
    synth_free(&r.got);
    synth_free(&r.ref);
    free(r.capture);
    sweep_input_free(&in);
}

static void test_reader_x64(void **state)
{
    sweep_reader(sweep_x64_slice());
}

static void test_reader_synth(void **state)
{
    sweep_reader(sweep_synth(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_x64),
        cmocka_unit_test(test_writer_synth),
        cmocka_unit_test(test_reader_x64),
        cmocka_unit_test(test_reader_synth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
