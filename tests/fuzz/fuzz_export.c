/*
 * Fuzz target for the exporters: the input bytes script a record stream (any order, any
 * values: unknown keys, stack ids out of range, zero or huge sizes, time running backwards,
 * odd pointer sizes and clock rates), which is exported in every format, two passes where the
 * format needs them, and into the report with its HTML page. Each export must finish or fail
 * with an error, never crash or read out of bounds; the memory budget and the output cap keep
 * a run small.
 *
 * Each record starts with an op byte: its low three bits pick the record, bit 3 (OP_WIDE)
 * reads the record's numbers at their full width (times, counts, clock rates, keys and ids as
 * 8 bytes, 32-bit fields as 4), so the exports' overflow checks (a time 2^63 ticks from the
 * start, a count times the interval past 64 bits, a clock rate whose interval in ticks wraps)
 * are reachable; without it they are a few bytes, as in the first seeds. Bits 4 and 5 of the
 * first byte pick the sample interval of the exports (one sample's CPU time) from 1 ms, 1 ns,
 * 2^40 ns and 2^64 - 1 ns. The other bits are free.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/export.h"
#include "perch/io.h"
#include "perch/report.h"

struct script {
    const uint8_t *data;
    size_t size;
};

struct cursor {
    const uint8_t *p, *end;
};

#define OP_WIDE 0x08u

static const uint64_t intervals[4] = {0, 1, 1ull << 40, UINT64_MAX};

static uint64_t take(struct cursor *c, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes && c->p < c->end; i++)
        v |= (uint64_t)*c->p++ << (8 * i);
    return v;
}

/* A number of `bytes` bytes, or of `wide` bytes in a wide record. */
static uint64_t num(struct cursor *c, unsigned bytes, unsigned wide, bool w)
{
    return take(c, w ? wide : bytes);
}

static int play_info(struct cursor *c, const perch_sink *k, bool w)
{
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "fuzz";
    info.pointer_size = (uint32_t)take(c, 1);
    info.cpu_count = (uint32_t)num(c, 1, 4, w);
    info.perf_freq = num(c, 4, 8, w);
    info.start_raw = num(c, 2, 8, w);
    info.start_filetime = take(c, 8);
    return k->trace_info ? k->trace_info(k->ctx, &info) : 0;
}

/* Every play_* reads all of its fields whether or not the sink has the callback, so each
 * pass (and each format) sees the same stream. */
static int play_entity(struct cursor *c, const perch_sink *k, uint8_t op, bool w)
{
    char name[24];
    size_t n = (size_t)take(c, 1) % sizeof name;
    uint64_t key, pk, a, b;
    for (size_t i = 0; i < n; i++)
        name[i] = (char)take(c, 1);
    name[n] = 0;
    key = num(c, 1, 8, w);
    pk = num(c, 1, 8, w);
    a = num(c, op == 3 ? 8 : 2, 8, w);
    b = num(c, op == 3 ? 4 : 1, 8, w);
    if (op == 1 && k->process) {
        perch_process_rec p = {key, (uint32_t)a, 0, 0, 0, 0, 0, 0, name, ""};
        return k->process(k->ctx, &p);
    }
    if (op == 2 && k->thread) {
        perch_thread_rec t = {key, pk, (uint32_t)a, b ? (uint32_t)a + 4 : UINT32_MAX,
                              0,   0,  0,           name};
        return k->thread(k->ctx, &t);
    }
    if (op == 3 && k->module) {
        perch_module_rec m;
        memset(&m, 0, sizeof m);
        m.key = key;
        m.process_key = pk;
        m.base = a;
        m.size = b;
        m.path = name;
        m.pdb_name = "";
        return k->module(k->ctx, &m);
    }
    return 0;
}

static int play_stack(struct cursor *c, const perch_sink *k, bool w)
{
    uint64_t frames[64];
    perch_stack_rec s;
    s.id = (uint32_t)num(c, 2, 4, w);
    s.frame_count = (uint32_t)take(c, 1) % 64;
    s.kernel_frames = (uint32_t)num(c, 1, 4, w);
    for (uint32_t i = 0; i < s.frame_count; i++)
        frames[i] = take(c, 8);
    s.frames = frames;
    return k->stack ? k->stack(k->ctx, &s) : 0;
}

static int play_sample(struct cursor *c, const perch_sink *k, bool w)
{
    perch_sample_rec s;
    memset(&s, 0, sizeof s);
    s.thread_key = num(c, 1, 8, w);
    s.tid = (uint32_t)num(c, 2, 4, w);
    s.kind = (uint8_t)take(c, 1);
    s.profile_source = (uint16_t)num(c, 1, 2, w);
    s.ts = num(c, 4, 8, w);
    s.ip = take(c, 8);
    s.module_key = num(c, 1, 8, w);
    s.stack_id = (uint32_t)num(c, 2, 4, w);
    s.count = (uint32_t)num(c, 1, 4, w);
    return k->sample ? k->sample(k->ctx, &s) : 0;
}

static int play_slice(struct cursor *c, const perch_sink *k, bool w)
{
    perch_slice_rec s;
    memset(&s, 0, sizeof s);
    s.thread_key = num(c, 1, 8, w);
    s.tid = (uint32_t)num(c, 2, 4, w);
    s.cpu = (uint16_t)num(c, 1, 2, w);
    s.flags = (uint16_t)num(c, 1, 2, w);
    s.start_ts = num(c, 4, 8, w);
    s.end_ts = num(c, 4, 8, w);
    s.ready_ts = num(c, 4, 8, w);
    s.wait_reason = (int8_t)take(c, 1);
    s.pmc_count = (uint8_t)take(c, 1);
    for (int i = 0; i < PERCH_MAX_PMC; i++)
        s.pmc_delta[i] = num(c, 2, 8, w);
    return k->slice ? k->slice(k->ctx, &s) : 0;
}

static int play_counters(struct cursor *c, const perch_sink *k)
{
    static const char *const names[] = {"a", "b;c", "\"d\"", "", "e", "f", "g", "h", "i"};
    perch_counters_rec r = {(uint32_t)take(c, 1) % 10, names};
    return k->counters ? k->counters(k->ctx, &r) : 0;
}

static int replay(void *ctx, const perch_sink *k)
{
    const struct script *s = ctx;
    struct cursor c = {s->data, s->data + s->size};
    int err = 0;
    while (!err && c.p < c.end) {
        uint8_t byte = (uint8_t)take(&c, 1), op = byte % 8;
        bool w = (byte & OP_WIDE) != 0;
        if (op == 0)
            err = play_info(&c, k, w);
        else if (op <= 3)
            err = play_entity(&c, k, op, w);
        else if (op == 4)
            err = play_stack(&c, k, w);
        else if (op == 5)
            err = play_sample(&c, k, w);
        else if (op == 6)
            err = play_slice(&c, k, w);
        else
            err = play_counters(&c, k);
    }
    if (!err && k->finish)
        err = k->finish(k->ctx);
    return err;
}

/* The report with its HTML page over the same stream, written to nowhere. */
static void html_report(struct script *s)
{
    perch_report *r = NULL;
    perch_sink k;
    if (perch_report_create(NULL, &r) != 0 || perch_report_enable_html(r) != 0) {
        perch_report_destroy(r);
        return;
    }
    perch_report_sink(r, &k);
    if (replay(s, &k) == 0) {
        FILE *f = fopen("/dev/null", "w");
        if (f != NULL) {
            (void)perch_report_write_html(r, f);
            fclose(f);
        }
    }
    perch_report_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct script s = {data, size};
    perch_record_source src = {&s, replay, NULL};
    perch_export_options opt;
    perch_export_options_init(&opt);
    opt.memory_limit = 16u << 20;
    opt.cpu_tracks = size & 1;
    opt.folded_thread = size & 2;
    opt.folded_process = size & 4;
    opt.folded_pmc = size & 8;
    opt.gecko_max_samples = size & 16 ? 3 : 0; /* the aggregated fallback */
    opt.log_memory = size & 32 ? 64 : 0;       /* logs moved to scratch stores */
    opt.scratch_open = perch_scratch_open_memory;
    opt.sample_interval_ns = size ? intervals[(data[0] >> 4) & 3] : 0;
    for (unsigned f = 0; f < PERCH_EXPORT_FORMAT_COUNT; f++) {
        perch_memory_out mem;
        perch_output out;
        size_t len;
        perch_output_memory(&out, &mem, 16u << 20);
        (void)perch_export_run((perch_export_format)f, &opt, &src, &out);
        free(perch_output_memory_take(&mem, &len));
    }
    html_report(&s);
    return 0;
}
