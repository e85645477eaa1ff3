/*
 * Inputs for the allocation- and write-failure sweeps (test_sweep_*.c): small enough that a
 * run per allocation finishes in seconds, rich enough to reach every path of a component.
 *
 * - a real trace slice: the first bytes of the x64 PerfView trace (XPRESS-compressed buffers,
 *   timer samples, stack keys, rundown entities), cut mid-file so the reader also takes its
 *   truncation path;
 * - a slice of the PerfDiag logger trace (uncompressed; process, thread and image events);
 * - a small synthetic trace (perch synth, 2 CPUs, the minimum size: context switches,
 *   ready-thread, PMC counters and samples, LBR, deferred user stacks).
 *
 * Each input is produced once per test program (before any sweep), with the default allocator,
 * and freed with sweep_input_free. Header-only: every sweep program includes it.
 */
#ifndef PERCH_TEST_SWEEP_INPUTS_H
#define PERCH_TEST_SWEEP_INPUTS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture_synth.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/pipeline.h"
#include "perch/synth.h"
#include "testdata.h"

typedef struct sweep_input {
    const char *name;
    uint8_t *data; /* malloc'd */
    size_t len;
} sweep_input;

/* The first len bytes of the real trace rel (skips or fails the test when it is missing). */
static inline sweep_input sweep_real_slice(const char *name, const char *rel, size_t len)
{
    sweep_input in = {name, NULL, 0};
    size_t full = 0;
    in.data = perch_test_read_file(perch_test_require_data(rel), &full);
    in.len = len < full ? len : full;
    return in;
}

static inline sweep_input sweep_x64_slice(void)
{
    return sweep_real_slice("x64 slice", "etl/perfview_net.4.5.2.x64.etl", 96u << 10);
}

static inline sweep_input sweep_perfdiag_slice(void)
{
    return sweep_real_slice("perfdiag slice", "etl/airbus_ShutdownPerfDiagLogger.etl", 192u << 10);
}

/* A deterministic synthetic trace of cpus CPUs at the minimum size for them. */
static inline sweep_input sweep_synth(uint32_t cpus)
{
    sweep_input in = {"synth", NULL, 0};
    perch_synth_options o;
    perch_memory_out mem;
    perch_output out;
    perch_synth_options_init(&o);
    o.cpus = cpus;
    o.target_bytes = perch_synth_min_bytes(cpus);
    perch_output_memory(&out, &mem, 64u << 20);
    if (perch_synth_write(&o, &out, NULL) != 0)
        abort();
    uint8_t *p = perch_output_memory_take(&mem, &in.len);
    in.data = malloc(in.len);
    if (in.data == NULL)
        abort();
    memcpy(in.data, p, in.len);
    perch_free(p);
    return in;
}

static inline void sweep_input_free(sweep_input *in)
{
    free(in->data);
    in->data = NULL;
}

/* Runs the .etl in `in` through the reader and the model into sink. 0 or an error. */
static inline int sweep_pipeline(const sweep_input *in, const perch_sink *sink)
{
    perch_input io;
    perch_input_memory(&io, in->data, in->len);
    return perch_pipeline_etl(&io, "etl:sweep", sink, NULL, NULL);
}

/* The record stream of `in` (the model's output), recorded with the default allocator. */
static inline void sweep_record(const sweep_input *in, synth_rec *rec)
{
    perch_sink sink;
    memset(rec, 0, sizeof *rec);
    synth_recorder(rec, &sink);
    if (sweep_pipeline(in, &sink) != 0)
        abort();
}

/* The capture of `in` (malloc'd bytes), written with the default allocator. */
static inline uint8_t *sweep_capture(const sweep_input *in, size_t *len)
{
    perch_memory_out mem;
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_output_memory(&out, &mem, 256u << 20);
    if (perch_capture_writer_create(&out, NULL, &w) != 0)
        abort();
    perch_capture_writer_sink(w, &sink);
    if (sweep_pipeline(in, &sink) != 0)
        abort();
    perch_capture_writer_destroy(w);
    uint8_t *p = perch_output_memory_take(&mem, len);
    uint8_t *copy = malloc(*len ? *len : 1);
    if (copy == NULL)
        abort();
    memcpy(copy, p, *len);
    perch_free(p);
    return copy;
}

/* perch_record_source.replay over a recorded stream (ctx: the synth_rec). */
/* True when sink has the callback for records of type (PERCH_CHUNK_*; END: finish). */
static inline bool sweep_has_callback(const perch_sink *s, int type)
{
    switch (type) {
    case PERCH_CHUNK_TRACE_INFO:
        return s->trace_info != NULL;
    case PERCH_CHUNK_PROCESS:
        return s->process != NULL;
    case PERCH_CHUNK_THREAD:
        return s->thread != NULL;
    case PERCH_CHUNK_MODULE:
        return s->module != NULL;
    case PERCH_CHUNK_COUNTERS:
        return s->counters != NULL;
    case PERCH_CHUNK_STACK:
        return s->stack != NULL;
    case PERCH_CHUNK_SLICE:
        return s->slice != NULL;
    case PERCH_CHUNK_SAMPLE:
        return s->sample != NULL;
    case PERCH_CHUNK_LBR:
        return s->lbr != NULL;
    case PERCH_CHUNK_LEDGER:
        return s->ledger != NULL;
    case PERCH_CHUNK_STAT:
        return s->stat != NULL;
    case PERCH_CHUNK_END:
        return s->finish != NULL;
    default:
        return false;
    }
}

/* perch_record_source.replay over a recorded stream (ctx: the synth_rec); callbacks the sink
 * leaves NULL are skipped, as the model does. */
static inline int sweep_replay_rec(void *ctx, const perch_sink *sink)
{
    const synth_rec *r = ctx;
    for (size_t i = 0; i < r->count; i++) {
        if (!sweep_has_callback(sink, r->ev[i].type))
            continue;
        int err = synth_play_one(&r->ev[i], sink);
        if (err)
            return err;
    }
    return 0;
}

/* Bytes written to a perch_memory_out, copied to malloc'd memory; the output is released. */
static inline uint8_t *sweep_take(perch_memory_out *mem, size_t *len)
{
    uint8_t *p = perch_output_memory_take(mem, len);
    uint8_t *copy = malloc(*len ? *len : 1);
    if (copy == NULL)
        abort();
    if (*len)
        memcpy(copy, p, *len);
    perch_free(p);
    return copy;
}

/* Replays the first len bytes of a capture cut short by an error (a failed allocation or
 * write): true when that reads as a partial capture (an error, and for anything past the
 * header: no end chunk or the last chunk cut short); *records: the records it gave. */
static inline bool sweep_replays_partial(const uint8_t *data, size_t len, size_t *records)
{
    synth_rec got;
    perch_sink sink;
    perch_capture_status st;
    memset(&got, 0, sizeof got);
    synth_recorder(&got, &sink);
    int err = perch_capture_replay_memory(data, len, &sink, &st);
    *records = got.count;
    synth_free(&got);
    return err < 0 && (len < PERCH_CAPTURE_HEADER_SIZE || st.stop == PERCH_CAPTURE_STOP_NO_END ||
                       st.stop == PERCH_CAPTURE_STOP_TRUNCATED);
}

/* True when two recorded streams are the same records in the same order. */
static inline bool sweep_same_stream(const synth_rec *a, const synth_rec *b)
{
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (synth_diff(&a->ev[i], &b->ev[i]) != NULL)
            return false;
    return true;
}

#endif
