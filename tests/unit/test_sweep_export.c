/*
 * Allocation-failure sweeps (tests/support/failalloc.h) of every exporter (chrome, gecko,
 * pprof, speedscope, folded, each with its options) through perch_export_run, on the model's
 * output for a real trace slice and for a small synthetic trace (PMC samples, slices with
 * counters): with the N-th allocation failing, for every N, each run ends with PERCH_ENOMEM
 * or writes the reference bytes, and nothing stays allocated.
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
#include "perch/export.h"
#include "sweep_inputs.h"

struct export_run {
    synth_rec stream;
    perch_export_format fmt;
    perch_export_options opt;
    perch_memory_out mem;
    uint8_t *ref;
    size_t ref_len;
};

static int export_run(void *ctx)
{
    struct export_run *r = ctx;
    perch_record_source src = {&r->stream, sweep_replay_rec, NULL};
    perch_output out;
    perch_output_memory(&out, &r->mem, 256u << 20);
    return perch_export_run(r->fmt, &r->opt, &src, &out);
}

static perch_sweep_outcome export_verify(void *ctx, int err, uint64_t fail_at)
{
    struct export_run *r = ctx;
    size_t len = 0;
    uint8_t *data = sweep_take(&r->mem, &len);
    perch_sweep_outcome o = PERCH_SWEEP_OUTCOMES;
    if (err == 0 && fail_at == 0 && r->ref == NULL) {
        r->ref = data;
        r->ref_len = len;
        return PERCH_SWEEP_BENIGN;
    }
    if (err == 0 && len == r->ref_len && memcmp(data, r->ref, len) == 0)
        o = PERCH_SWEEP_BENIGN;
    free(data);
    return o;
}

/* One sweep per format (and per option set of the formats that have them). */
static void sweep_exports(sweep_input in)
{
    struct export_run r;
    memset(&r, 0, sizeof r);
    sweep_record(&in, &r.stream);
    for (int variant = 0; variant < PERCH_EXPORT_FORMAT_COUNT + 3; variant++) {
        char name[96];
        perch_export_options_init(&r.opt);
        r.fmt = (perch_export_format)(variant % PERCH_EXPORT_FORMAT_COUNT);
        if (variant >= PERCH_EXPORT_FORMAT_COUNT) { /* the option sets */
            r.fmt =
                variant == PERCH_EXPORT_FORMAT_COUNT ? PERCH_EXPORT_CHROME : PERCH_EXPORT_FOLDED;
            r.opt.cpu_tracks = true;
            r.opt.folded_process = r.opt.folded_thread = variant == PERCH_EXPORT_FORMAT_COUNT + 1;
            r.opt.folded_pmc = variant == PERCH_EXPORT_FORMAT_COUNT + 2;
            r.opt.gecko_max_markers = 2;
        }
        static const char *const sets[] = {"", " --cpu-tracks", " --folded-process --folded-thread",
                                           " --folded-pmc 0"};
        int set =
            variant >= PERCH_EXPORT_FORMAT_COUNT ? variant - PERCH_EXPORT_FORMAT_COUNT + 1 : 0;
        snprintf(name, sizeof name, "export %s%s (%s)", perch_export_format_name(r.fmt), sets[set],
                 in.name);
        perch_sweep s = {name, export_run, export_verify, &r, variant < PERCH_EXPORT_FORMAT_COUNT,
                         1};
        perch_sweep_alloc(&s);
        assert_non_null(r.ref);
        free(r.ref);
        r.ref = NULL;
    }
    synth_free(&r.stream);
    sweep_input_free(&in);
}

static void test_exports_x64(void **state)
{
    sweep_exports(sweep_x64_slice());
}

static void test_exports_synth(void **state)
{
    sweep_exports(sweep_synth(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exports_x64),
        cmocka_unit_test(test_exports_synth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
