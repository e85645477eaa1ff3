/*
 * Write-failure sweeps (tests/support/failio.h) of the capture writer: a disk that fills in
 * the middle of a capture. For every write call K of a run, and for every sync call, that call
 * fails (the failing write stores half its bytes, as write(2) on a full disk); then the writer
 * returns that error from the record that hit it and from every later call (sticky), it frees
 * everything it allocated, the bytes on the "disk" (for a failed sync: the bytes the last good
 * sync made durable) are a prefix of the complete capture, and they replay as a partial capture (no
 * end chunk, or the last chunk cut short) giving the records of every whole chunk before the
 * failure: the more writes succeeded, the more records. Streams: the model's output for a real
 * trace slice and for a small synthetic trace, in 4 KiB chunks so that a run has many writes and
 * syncs.
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
#include "failio.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "sweep_inputs.h"

struct write_sweep {
    synth_rec stream;
    perch_capture_writer_opts opts;
    uint8_t *ref; /* the complete capture */
    size_t ref_len;
    uint64_t writes, syncs; /* calls of the complete run */
};

/* Writes the stream through f (failing as set up); returns the writer's error. */
static int write_once(struct write_sweep *s, perch_failio *f, uint64_t fail_write,
                      uint64_t fail_sync)
{
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_failio_init(f, &out, fail_write, fail_sync);
    perch_failalloc_begin(0, false);
    int err = perch_capture_writer_create(&out, &s->opts, &w);
    if (err == 0) {
        perch_capture_writer_sink(w, &sink);
        err = synth_play(&s->stream, &sink);
        if (err < 0) /* sticky: a later record and finish say the same */
            assert_int_equal(sink.finish(sink.ctx), err);
        perch_capture_writer_destroy(w);
    }
    perch_failalloc_counts c = perch_failalloc_end();
    assert_int_equal(c.live, 0);
    return err;
}

/* kept: the bytes that survive (all that was written for a failed write; what the last
 * successful sync made durable for a failed sync: the rest may be lost in a crash). */
static void check_failed_run(const struct write_sweep *s, const perch_failio *f, int err,
                             size_t kept, size_t *last_count)
{
    assert_int_equal(err, PERCH_EIO);
    assert_true(kept < s->ref_len);
    assert_memory_equal(f->data, s->ref, kept);
    size_t n;
    assert_true(sweep_replays_partial(f->data, kept, &n));
    assert_true(n >= *last_count);
    *last_count = n;
}

static void sweep_writes(sweep_input in)
{
    struct write_sweep s;
    perch_failio f;
    memset(&s, 0, sizeof s);
    sweep_record(&in, &s.stream);
    perch_capture_writer_opts_default(&s.opts);
    s.opts.chunk_bytes = 4096;
    s.opts.sync_every_chunks = 4;
    assert_int_equal(write_once(&s, &f, 0, 0), 0);
    s.ref = f.data;
    s.ref_len = f.len;
    s.writes = f.writes;
    s.syncs = f.syncs;
    assert_true(s.writes > 20 && s.syncs > 4);

    size_t last = 0;
    for (uint64_t k = 1; k <= s.writes; k++) {
        int err = write_once(&s, &f, k, 0);
        check_failed_run(&s, &f, err, f.len, &last);
        perch_failio_free(&f);
    }
    assert_true(last > 0); /* the last failure kept whole chunks of records */
    last = 0;
    for (uint64_t k = 1; k <= s.syncs; k++) {
        int err = write_once(&s, &f, 0, k);
        check_failed_run(&s, &f, err, f.synced_len, &last);
        perch_failio_free(&f);
    }
    print_message("capture writer (%s): %llu writes and %llu syncs, each failed once\n", in.name,
                  (unsigned long long)s.writes, (unsigned long long)s.syncs);
    free(s.ref);
    synth_free(&s.stream);
    sweep_input_free(&in);
}

static void test_writer_x64(void **state)
{
    (void)state;
    sweep_writes(sweep_x64_slice());
}

static void test_writer_synth(void **state)
{
    (void)state;
    sweep_writes(sweep_synth(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_x64),
        cmocka_unit_test(test_writer_synth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
