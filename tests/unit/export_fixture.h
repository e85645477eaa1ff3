/*
 * A synthetic record stream for the export tests (and tests/bench/bench_export.c): two
 * processes with the same user module base, kernel modules that overlap, four threads (one
 * that never gets a record), kernel+user, user-only, kernel-only and unresolvable stacks,
 * samples with and without stacks, PMC samples, slices with PMC deltas. As in the model's real
 * output, process, thread and module records arrive LATE (after the samples that use them).
 *
 * Header-only (static inline) so each test executable and the benchmark include it directly.
 * The expected numbers the tests assert are derived in the comments next to the data.
 */
#ifndef PERCH_TEST_EXPORT_FIXTURE_H
#define PERCH_TEST_EXPORT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/export.h"
#include "perch/io.h"
#include "perch/records.h"

/* Clock: 10 MHz, trace starts at raw 1000000: 10 ticks = 1 us. */
#define FX_FREQ 10000000u
#define FX_START 1000000u
#define FX_US(us) (FX_START + (uint64_t)(us) * 10u)

#define FX_NTOS 0xfffff80000000000ull /* ntoskrnl.exe, 16 MiB */
#define FX_HAL 0xfffff80000800000ull  /* hal.dll inside ntoskrnl's range: higher base wins */
#define FX_APP 0x140000000ull         /* app.exe in process 100, svc.exe in process 200 */
#define FX_NTDLL 0x7ff800000000ull

enum { FX_KEY_P1 = 100, FX_KEY_P2 = 200 };
enum { FX_KEY_T1 = 11, FX_KEY_T2 = 12, FX_KEY_T3 = 21, FX_KEY_T4 = 31 };
enum { FX_KEY_IDLE0 = 41, FX_KEY_IDLE1 = 42 }; /* the idle thread (tid 0) has a key per CPU */
enum { FX_KEY_M_NTOS = 501, FX_KEY_M_HAL = 502, FX_KEY_M_APP = 503, FX_KEY_M_NTDLL1 = 504,
       FX_KEY_M_SVC = 505, FX_KEY_M_NTDLL2 = 506 };

/* Stacks, innermost first. */
static const uint64_t fx_s1[] = {FX_NTOS + 0x1000, FX_NTOS + 0x2000, FX_APP + 0x100,
                                 FX_NTDLL + 0x50};                   /* kernel 2 + user 2 */
static const uint64_t fx_s2[] = {FX_APP + 0x200, FX_NTDLL + 0x50};   /* user only */
static const uint64_t fx_s3[] = {FX_HAL + 0x10, FX_NTOS + 0x3000};   /* kernel only */
static const uint64_t fx_s4[] = {FX_APP + 0x300, FX_NTDLL + 0x60};   /* svc.exe in P2 */
static const uint64_t fx_s5[] = {0x12345678};                        /* in no module */

struct fx_sample {
    uint64_t thread_key;
    uint32_t tid;
    uint32_t stack_id;
    uint64_t ip;
    uint32_t count;
    uint8_t kind;
    uint16_t source;
    uint64_t module_key;
};

/* Timer samples: 16 in total (T3's second S4 sample has Count 2).
 *   T1: S1 x3, S2 x2          T2: S1 x1, S3 x2, no stack at app+0x400 x1
 *   T3: S4 x4 (count 5), S5 x1   T4 (no thread record): no stack at ntoskrnl+0x5000 x1
 * PMC samples (source 2): T1 S2 x2. */
static const struct fx_sample fx_samples[] = {
    {FX_KEY_T1, 1001, 1, FX_NTOS + 0x1000, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_NTOS},
    {FX_KEY_T2, 1002, 1, FX_NTOS + 0x1000, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_NTOS},
    {FX_KEY_T1, 1001, 2, FX_APP + 0x200, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_APP},
    {FX_KEY_T3, 2001, 4, FX_APP + 0x300, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_SVC},
    {FX_KEY_T2, 1002, 3, FX_HAL + 0x10, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_HAL},
    {FX_KEY_T1, 1001, 1, FX_NTOS + 0x1000, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_NTOS},
    {FX_KEY_T3, 2001, 4, FX_APP + 0x300, 2, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_SVC},
    {FX_KEY_T2, 1002, 0, FX_APP + 0x400, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_APP},
    {FX_KEY_T1, 1001, 2, FX_APP + 0x200, 1, PERCH_SAMPLE_PMC, 2, FX_KEY_M_APP},
    {FX_KEY_T3, 2001, 5, 0x12345678, 1, PERCH_SAMPLE_TIMER, 0, 0},
    {FX_KEY_T1, 1001, 1, FX_NTOS + 0x1000, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_NTOS},
    {FX_KEY_T2, 1002, 3, FX_HAL + 0x10, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_HAL},
    {FX_KEY_T3, 2001, 4, FX_APP + 0x300, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_SVC},
    {FX_KEY_T4, 3001, 0, FX_NTOS + 0x5000, 1, PERCH_SAMPLE_TIMER, 0, 0},
    {FX_KEY_T1, 1001, 2, FX_APP + 0x200, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_APP},
    {FX_KEY_T1, 1001, 2, FX_APP + 0x200, 1, PERCH_SAMPLE_PMC, 2, FX_KEY_M_APP},
    {FX_KEY_T3, 2001, 4, FX_APP + 0x300, 1, PERCH_SAMPLE_TIMER, 0, FX_KEY_M_SVC},
};
#define FX_SAMPLE_COUNT (sizeof fx_samples / sizeof fx_samples[0])
#define FX_SAMPLE_US(i) (100u + 50u * (uint64_t)(i)) /* sample i at 100 + 50 i us */

/* Slices: T1 on CPU 0 [200, 1200) us ready at 150 us, PMC deltas {1000, 500};
 *         T3 on CPU 1 [300, 550) us, no ready time, PMC deltas {7, 3};
 *         the idle thread (tid 0) on CPU 0 [0, 200) and on CPU 1 [0, 300) at the same time. */
static const struct {
    uint64_t thread_key;
    uint32_t tid;
    uint16_t cpu;
    uint64_t start_us, end_us, ready_us;
    int8_t priority, wait_reason;
    uint64_t pmc[2];
} fx_slices[] = {
    {FX_KEY_T1, 1001, 0, 200, 1200, 150, 8, 5, {1000, 500}},
    {FX_KEY_T3, 2001, 1, 300, 550, 0, 10, -1, {7, 3}},
    {FX_KEY_IDLE0, 0, 0, 0, 200, 0, 0, -1, {1, 1}},
    {FX_KEY_IDLE1, 0, 1, 0, 300, 0, 0, -1, {2, 2}},
};
#define FX_SLICE_COUNT (sizeof fx_slices / sizeof fx_slices[0])

static inline int fx_module(const perch_sink *s, uint64_t key, uint64_t pk, uint32_t pid,
                            uint64_t base, uint64_t size, const char *path)
{
    perch_module_rec m;
    memset(&m, 0, sizeof m);
    m.key = key;
    m.process_key = pk;
    m.pid = pid;
    m.base = base;
    m.size = size;
    m.path = path;
    m.pdb_name = "";
    return s->module ? s->module(s->ctx, &m) : 0;
}

static inline int fx_thread(const perch_sink *s, uint64_t key, uint64_t pk, uint32_t tid,
                            uint32_t pid, const char *name)
{
    perch_thread_rec t;
    memset(&t, 0, sizeof t);
    t.key = key;
    t.process_key = pk;
    t.tid = tid;
    t.pid = pid;
    t.name = name;
    return s->thread ? s->thread(s->ctx, &t) : 0;
}

static inline int fx_process(const perch_sink *s, uint64_t key, uint32_t pid, const char *image)
{
    perch_process_rec p;
    memset(&p, 0, sizeof p);
    p.key = key;
    p.pid = pid;
    p.image_name = image;
    p.command_line = "";
    return s->process ? s->process(s->ctx, &p) : 0;
}

/* The fixture's trace info, with an end time (0: none, as a live capture has). */
static inline int fx_info_ended(const perch_sink *s, uint64_t end_filetime)
{
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "synth";
    info.cpu_count = 2;
    info.pointer_size = 8;
    info.clock_type = 1;
    info.perf_freq = FX_FREQ;
    info.start_raw = FX_START;
    info.start_filetime = 133000000000000000ull;
    info.end_filetime = end_filetime;
    return s->trace_info ? s->trace_info(s->ctx, &info) : 0;
}

static inline int fx_info(const perch_sink *s)
{
    return fx_info_ended(s, 0);
}

static inline int fx_stack(const perch_sink *s, uint32_t id, const uint64_t *f, uint32_t n,
                           uint32_t kernel)
{
    perch_stack_rec st = {id, n, kernel, f};
    return s->stack ? s->stack(s->ctx, &st) : 0;
}

static inline int fx_stacks(const perch_sink *s)
{
    int err = fx_stack(s, 1, fx_s1, 4, 2);
    if (!err)
        err = fx_stack(s, 2, fx_s2, 2, 0);
    if (!err)
        err = fx_stack(s, 3, fx_s3, 2, 2);
    if (!err)
        err = fx_stack(s, 4, fx_s4, 2, 0);
    if (!err)
        err = fx_stack(s, 5, fx_s5, 1, 0);
    return err;
}

static inline int fx_sample_out(const perch_sink *s, size_t i)
{
    const struct fx_sample *x = &fx_samples[i];
    perch_sample_rec r;
    memset(&r, 0, sizeof r);
    r.thread_key = x->thread_key;
    r.tid = x->tid;
    r.cpu = (uint16_t)(i & 1);
    r.kind = x->kind;
    r.profile_source = x->source;
    r.ts = FX_US(FX_SAMPLE_US(i));
    r.ip = x->ip;
    r.module_key = x->module_key;
    r.stack_id = x->stack_id;
    r.count = x->count;
    return s->sample ? s->sample(s->ctx, &r) : 0;
}

static inline int fx_slice_out(const perch_sink *s, size_t i)
{
    perch_slice_rec r;
    memset(&r, 0, sizeof r);
    r.thread_key = fx_slices[i].thread_key;
    r.tid = fx_slices[i].tid;
    r.cpu = fx_slices[i].cpu;
    r.start_ts = FX_US(fx_slices[i].start_us);
    r.end_ts = FX_US(fx_slices[i].end_us);
    if (fx_slices[i].ready_us) {
        r.ready_ts = FX_US(fx_slices[i].ready_us);
        r.flags = PERCH_SLICE_HAS_READY;
    }
    r.priority = fx_slices[i].priority;
    r.wait_reason = fx_slices[i].wait_reason;
    r.wait_mode = -1;
    r.state = -1;
    r.pmc_count = 2;
    r.pmc_delta[0] = fx_slices[i].pmc[0];
    r.pmc_delta[1] = fx_slices[i].pmc[1];
    return s->slice ? s->slice(s->ctx, &r) : 0;
}

/* The entity records, all sent after the samples (late, as the model does). */
static inline int fx_entities(const perch_sink *s)
{
    int err = 0;
    err = err ? err : fx_thread(s, FX_KEY_T1, FX_KEY_P1, 1001, 1234, "main");
    err = err ? err : fx_thread(s, FX_KEY_T2, FX_KEY_P1, 1002, UINT32_MAX, "worker");
    err = err ? err : fx_thread(s, FX_KEY_T3, FX_KEY_P2, 2001, 5678, "");
    err = err ? err : fx_thread(s, FX_KEY_IDLE0, 0, 0, 0, "");
    err = err ? err : fx_thread(s, FX_KEY_IDLE1, 0, 0, 0, "");
    err = err ? err : fx_module(s, FX_KEY_M_APP, FX_KEY_P1, 1234, FX_APP, 0x10000,
                                "\\Device\\HarddiskVolume3\\Apps\\App.EXE");
    err = err ? err : fx_module(s, FX_KEY_M_NTDLL1, FX_KEY_P1, 1234, FX_NTDLL, 0x200000,
                                "\\Device\\HarddiskVolume3\\Windows\\System32\\ntdll.dll");
    err = err ? err : fx_module(s, FX_KEY_M_SVC, FX_KEY_P2, 5678, FX_APP, 0x20000,
                                "C:\\svc\\svc.exe");
    err = err ? err : fx_module(s, FX_KEY_M_NTDLL2, FX_KEY_P2, 5678, FX_NTDLL, 0x200000,
                                "\\SystemRoot\\System32\\ntdll.dll");
    err = err ? err : fx_module(s, FX_KEY_M_NTOS, 0, 0, FX_NTOS, 0x1000000,
                                "\\SystemRoot\\system32\\ntoskrnl.exe");
    err = err ? err : fx_module(s, FX_KEY_M_HAL, 0, 0, FX_HAL, 0x10000,
                                "\\SystemRoot\\system32\\hal.dll");
    err = err ? err : fx_process(s, FX_KEY_P1, 1234, "app.exe");
    err = err ? err : fx_process(s, FX_KEY_P2, 5678, "svc.exe");
    return err;
}

static inline int fx_tail(const perch_sink *s)
{
    perch_ledger_rec l = {"stack.orphan_user", 3};
    perch_stat_rec st = {"records.total", 1234};
    int err = 0;
    if (s->ledger)
        err = s->ledger(s->ctx, &l);
    if (!err && s->stat)
        err = s->stat(s->ctx, &st);
    if (!err && s->finish)
        err = s->finish(s->ctx);
    return err;
}

/* The head of the stream: trace info, the PMC counter names (names[0..1]), the stacks. */
static inline int fx_head(const perch_sink *s, const char *const names[2])
{
    perch_counters_rec counters = {2, names};
    int err = fx_info(s);
    if (!err && s->counters)
        err = s->counters(s->ctx, &counters);
    return err ? err : fx_stacks(s);
}

/* Replays the whole stream into sink: the perch_record_source.replay of the fixture. */
static inline int fx_replay(void *ctx, const perch_sink *s)
{
    static const char *const names[] = {"InstructionRetired", "TotalCycles"};
    size_t slice = 0;
    int err = fx_head(s, names);
    (void)ctx;
    for (size_t i = 0; !err && i < FX_SAMPLE_COUNT; i++) {
        /* slices close in time order among the samples */
        while (!err && slice < FX_SLICE_COUNT && fx_slices[slice].end_us <= FX_SAMPLE_US(i))
            err = fx_slice_out(s, slice++);
        if (!err)
            err = fx_sample_out(s, i);
    }
    while (!err && slice < FX_SLICE_COUNT)
        err = fx_slice_out(s, slice++);
    if (!err)
        err = fx_entities(s);
    return err ? err : fx_tail(s);
}

/* Exports src's stream as fmt into memory (at most limit bytes); returns the NUL-terminated
 * bytes (malloc'd, length in *len) or NULL with *err set. */
static inline char *fx_export_from(perch_export_format fmt, const perch_export_options *opt,
                                   const perch_record_source *src, size_t limit, size_t *len,
                                   int *err)
{
    perch_memory_out mem;
    perch_output out;
    uint8_t *data;
    perch_output_memory(&out, &mem, limit);
    *err = perch_export_run(fmt, opt, src, &out);
    if (!*err)
        *err = out.write(out.ctx, "", 1); /* NUL terminator for the string helpers */
    data = perch_output_memory_take(&mem, len);
    if (*err) {
        free(data);
        return NULL;
    }
    *len -= 1;
    return (char *)data;
}

/* The fixture stream, as fx_export_from. */
static inline char *fx_export(perch_export_format fmt, const perch_export_options *opt, size_t *len,
                              int *err)
{
    perch_record_source src = {NULL, fx_replay, NULL};
    return fx_export_from(fmt, opt, &src, (size_t)64 << 20, len, err);
}

/* Counts non-overlapping occurrences of needle in hay. */
static inline size_t fx_count(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle))
        n++;
    return n;
}

#endif
