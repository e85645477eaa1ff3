/*
 * Allocation-failure sweeps (tests/support/failalloc.h) of the .etl reader and of the model
 * behind it (the offline pipeline), on a real trace slice, an uncompressed real slice and a
 * small synthetic trace: with the N-th allocation failing, for every N up to the run's total,
 * each run ends with PERCH_ENOMEM (or the reference output), leaves nothing allocated, and
 * never crashes (ASan in the asan preset).
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
#include "perch/error.h"
#include "perch/etl.h"
#include "sweep_inputs.h"

/* ---- the reader alone ------------------------------------------------------------------ */

struct reader_run {
    const sweep_input *in;
    uint64_t records, digest; /* of the last run */
    uint64_t ref_records, ref_digest;
};

static int reader_run(void *ctx)
{
    struct reader_run *r = ctx;
    perch_etl_reader *rd = NULL;
    perch_event ev;
    int err = perch_etl_open_memory(r->in->data, r->in->len, NULL, &rd, NULL);
    r->records = r->digest = 0;
    if (err < 0)
        return err;
    while ((err = perch_etl_next(rd, &ev)) == 0) {
        r->records++;
        r->digest = r->digest * 1099511628211u ^ ev.timestamp ^ ev.payload_len;
        for (uint32_t i = 0; i < ev.payload_len; i++)
            r->digest = r->digest * 31u + ev.payload[i];
    }
    perch_etl_destroy(rd);
    return err == PERCH_EOF ? 0 : err;
}

static perch_sweep_outcome reader_verify(void *ctx, int err, uint64_t fail_at)
{
    struct reader_run *r = ctx;
    if (err == 0 && fail_at == 0) {
        r->ref_records = r->records;
        r->ref_digest = r->digest;
    }
    return r->records == r->ref_records && r->digest == r->ref_digest ? PERCH_SWEEP_BENIGN
                                                                      : PERCH_SWEEP_OUTCOMES;
}

static void sweep_reader(sweep_input in)
{
    struct reader_run r = {&in, 0, 0, 0, 0};
    char name[64];
    snprintf(name, sizeof name, "etl reader (%s)", in.name);
    perch_sweep s = {name, reader_run, reader_verify, &r, true, 1};
    perch_sweep_result res = perch_sweep_alloc(&s);
    assert_true(r.ref_records > 0);
    assert_true(res.total > 0);
    sweep_input_free(&in);
}

static void test_reader_x64(void **state)
{
    sweep_reader(sweep_x64_slice());
}

static void test_reader_perfdiag(void **state)
{
    sweep_reader(sweep_perfdiag_slice());
}

static void test_reader_synth(void **state)
{
    sweep_reader(sweep_synth(2));
}

/* ---- reader + model (the pipeline) --------------------------------------------------- */

struct model_run {
    const sweep_input *in;
    synth_rec got, ref;
};

static int model_run(void *ctx)
{
    struct model_run *r = ctx;
    perch_sink sink;
    synth_free(&r->got);
    synth_recorder(&r->got, &sink);
    return sweep_pipeline(r->in, &sink);
}

static perch_sweep_outcome model_verify(void *ctx, int err, uint64_t fail_at)
{
    struct model_run *r = ctx;
    return err == 0 && sweep_same_stream(&r->got, &r->ref) ? PERCH_SWEEP_BENIGN
                                                           : PERCH_SWEEP_OUTCOMES;
}

static void sweep_model(sweep_input in, uint64_t stride)
{
    struct model_run r;
    char name[64];
    memset(&r, 0, sizeof r);
    r.in = &in;
    sweep_record(&in, &r.ref);
    snprintf(name, sizeof name, "model (%s)", in.name);
    perch_sweep s = {name, model_run, model_verify, &r, false, stride};
    perch_sweep_result res = perch_sweep_alloc(&s);
    assert_true(res.runs > 0);
    synth_free(&r.got);
    synth_free(&r.ref);
    sweep_input_free(&in);
}

static void test_model_x64(void **state)
{
    sweep_model(sweep_x64_slice(), 1);
}

static void test_model_perfdiag(void **state)
{
    sweep_model(sweep_perfdiag_slice(), 1);
}

static void test_model_synth(void **state)
{
    sweep_model(sweep_synth(2), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_x64),     cmocka_unit_test(test_reader_perfdiag),
        cmocka_unit_test(test_reader_synth),   cmocka_unit_test(test_model_x64),
        cmocka_unit_test(test_model_perfdiag), cmocka_unit_test(test_model_synth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
