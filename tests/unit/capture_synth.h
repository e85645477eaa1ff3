/*
 * Test support for the capture format: a recording perch_sink that deep-copies every callback
 * (so streams can be compared after the fact), a player that sends a recorded stream into
 * any sink, and two synthetic streams: one that exercises every record type and every field
 * at its extremes, and a larger pseudo-random one shaped like a real trace (samples on a few
 * CPUs and threads, stacks sharing their outer frames, slices, PMC deltas).
 *
 * Header-only (static inline) because it is shared by unit tests, the CLI fixture tool and
 * nothing else; it uses no cmocka so the tool can include it.
 */
#ifndef PERCH_TEST_CAPTURE_SYNTH_H
#define PERCH_TEST_CAPTURE_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/records.h"

typedef struct synth_ev {
    int type; /* PERCH_CHUNK_*; PERCH_CHUNK_END stands for finish */
    union {
        perch_trace_info info;
        perch_process_rec process;
        perch_thread_rec thread;
        perch_module_rec module;
        perch_counters_rec counters;
        perch_stack_rec stack;
        perch_slice_rec slice;
        perch_sample_rec sample;
        perch_lbr_rec lbr;
        perch_ledger_rec ledger;
        perch_stat_rec stat;
    } u;
} synth_ev;

typedef struct synth_rec {
    synth_ev *ev;
    size_t count;
    size_t cap;
    int fail_at_type; /* make the callback of this type fail (tests of sink errors); 0 = never */
} synth_rec;

static inline char *synth_dup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        abort();
    memcpy(d, s, n);
    return d;
}

static inline uint64_t *synth_dup_u64(const uint64_t *p, size_t n)
{
    uint64_t *d = malloc(n ? n * sizeof *d : 1);
    if (!d)
        abort();
    if (n)
        memcpy(d, p, n * sizeof *d);
    return d;
}

static inline synth_ev *synth_push(synth_rec *r, int type)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->ev = realloc(r->ev, r->cap * sizeof *r->ev);
        if (!r->ev)
            abort();
    }
    synth_ev *e = &r->ev[r->count++];
    memset(e, 0, sizeof *e);
    e->type = type;
    return e;
}

static inline int synth_on_info(void *ctx, const perch_trace_info *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_TRACE_INFO);
    e->u.info = *v;
    e->u.info.source = synth_dup(v->source);
    e->u.info.session_config = synth_dup(v->session_config);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_process(void *ctx, const perch_process_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_PROCESS);
    e->u.process = *v;
    e->u.process.image_name = synth_dup(v->image_name);
    e->u.process.command_line = synth_dup(v->command_line);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_thread(void *ctx, const perch_thread_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_THREAD);
    e->u.thread = *v;
    e->u.thread.name = synth_dup(v->name);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_module(void *ctx, const perch_module_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_MODULE);
    e->u.module = *v;
    e->u.module.path = synth_dup(v->path);
    e->u.module.pdb_name = synth_dup(v->pdb_name);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_counters(void *ctx, const perch_counters_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_COUNTERS);
    char **names = malloc((v->count ? v->count : 1) * sizeof *names);
    if (!names)
        abort();
    for (uint32_t i = 0; i < v->count; i++)
        names[i] = synth_dup(v->names[i]);
    e->u.counters.count = v->count;
    e->u.counters.names = (const char *const *)names;
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_stack(void *ctx, const perch_stack_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_STACK);
    e->u.stack = *v;
    e->u.stack.frames = synth_dup_u64(v->frames, v->frame_count);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_slice(void *ctx, const perch_slice_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_SLICE);
    e->u.slice = *v;
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_sample(void *ctx, const perch_sample_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_SAMPLE);
    e->u.sample = *v;
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_lbr(void *ctx, const perch_lbr_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_LBR);
    e->u.lbr = *v;
    e->u.lbr.from = synth_dup_u64(v->from, v->branch_count);
    e->u.lbr.to = synth_dup_u64(v->to, v->branch_count);
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_ledger(void *ctx, const perch_ledger_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_LEDGER);
    e->u.ledger.reason = synth_dup(v->reason);
    e->u.ledger.count = v->count;
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_stat(void *ctx, const perch_stat_rec *v)
{
    synth_ev *e = synth_push(ctx, PERCH_CHUNK_STAT);
    e->u.stat.name = synth_dup(v->name);
    e->u.stat.value = v->value;
    return ((synth_rec *)ctx)->fail_at_type == e->type ? PERCH_ECANCELED : 0;
}

static inline int synth_on_finish(void *ctx)
{
    synth_push(ctx, PERCH_CHUNK_END);
    return ((synth_rec *)ctx)->fail_at_type == PERCH_CHUNK_END ? PERCH_ECANCELED : 0;
}

/* A sink recording into r (which the caller zero-initialised). */
static inline void synth_recorder(synth_rec *r, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = r;
    sink->trace_info = synth_on_info;
    sink->process = synth_on_process;
    sink->thread = synth_on_thread;
    sink->module = synth_on_module;
    sink->counters = synth_on_counters;
    sink->stack = synth_on_stack;
    sink->slice = synth_on_slice;
    sink->sample = synth_on_sample;
    sink->lbr = synth_on_lbr;
    sink->ledger = synth_on_ledger;
    sink->stat = synth_on_stat;
    sink->finish = synth_on_finish;
}

static inline void synth_free_ev(synth_ev *e)
{
    switch (e->type) {
    case PERCH_CHUNK_TRACE_INFO:
        free((char *)e->u.info.source);
        free((char *)e->u.info.session_config);
        break;
    case PERCH_CHUNK_PROCESS:
        free((char *)e->u.process.image_name);
        free((char *)e->u.process.command_line);
        break;
    case PERCH_CHUNK_THREAD:
        free((char *)e->u.thread.name);
        break;
    case PERCH_CHUNK_MODULE:
        free((char *)e->u.module.path);
        free((char *)e->u.module.pdb_name);
        break;
    case PERCH_CHUNK_COUNTERS:
        for (uint32_t i = 0; i < e->u.counters.count; i++)
            free((char *)e->u.counters.names[i]);
        free((void *)e->u.counters.names);
        break;
    case PERCH_CHUNK_STACK:
        free((void *)e->u.stack.frames);
        break;
    case PERCH_CHUNK_LBR:
        free((void *)e->u.lbr.from);
        free((void *)e->u.lbr.to);
        break;
    case PERCH_CHUNK_LEDGER:
        free((char *)e->u.ledger.reason);
        break;
    case PERCH_CHUNK_STAT:
        free((char *)e->u.stat.name);
        break;
    default:
        break;
    }
}

static inline void synth_free(synth_rec *r)
{
    for (size_t i = 0; i < r->count; i++)
        synth_free_ev(&r->ev[i]);
    free(r->ev);
    memset(r, 0, sizeof *r);
}

/* Sends one recorded event to a sink. */
static inline int synth_play_one(const synth_ev *e, const perch_sink *s)
{
    switch (e->type) {
    case PERCH_CHUNK_TRACE_INFO:
        return s->trace_info(s->ctx, &e->u.info);
    case PERCH_CHUNK_PROCESS:
        return s->process(s->ctx, &e->u.process);
    case PERCH_CHUNK_THREAD:
        return s->thread(s->ctx, &e->u.thread);
    case PERCH_CHUNK_MODULE:
        return s->module(s->ctx, &e->u.module);
    case PERCH_CHUNK_COUNTERS:
        return s->counters(s->ctx, &e->u.counters);
    case PERCH_CHUNK_STACK:
        return s->stack(s->ctx, &e->u.stack);
    case PERCH_CHUNK_SLICE:
        return s->slice(s->ctx, &e->u.slice);
    case PERCH_CHUNK_SAMPLE:
        return s->sample(s->ctx, &e->u.sample);
    case PERCH_CHUNK_LBR:
        return s->lbr(s->ctx, &e->u.lbr);
    case PERCH_CHUNK_LEDGER:
        return s->ledger(s->ctx, &e->u.ledger);
    case PERCH_CHUNK_STAT:
        return s->stat(s->ctx, &e->u.stat);
    case PERCH_CHUNK_END:
        return s->finish(s->ctx);
    default:
        return PERCH_EINVAL;
    }
}

/* Sends the recorded stream to a sink; stops at the first error. */
static inline int synth_play(const synth_rec *r, const perch_sink *s)
{
    for (size_t i = 0; i < r->count; i++) {
        int err = synth_play_one(&r->ev[i], s);
        if (err)
            return err;
    }
    return 0;
}

/* Writes the recorded stream as a capture into a malloc'd buffer (sync after every chunk).
 * chunk_bytes 0 means the default. Returns NULL on error. */
static inline uint8_t *synth_capture(const synth_rec *r, uint32_t chunk_bytes, size_t *len,
                                     perch_capture_writer_stats *stats)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer_opts opts;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_capture_writer_opts_default(&opts);
    opts.sync_every_chunks = 1;
    if (chunk_bytes)
        opts.chunk_bytes = chunk_bytes;
    perch_output_memory(&out, &mem, (size_t)1 << 31);
    if (perch_capture_writer_create(&out, &opts, &w) != 0)
        return NULL;
    perch_capture_writer_sink(w, &sink);
    int err = synth_play(r, &sink);
    if (stats)
        perch_capture_writer_get_stats(w, stats);
    perch_capture_writer_destroy(w);
    uint8_t *data = perch_output_memory_take(&mem, len);
    if (err) {
        free(data);
        return NULL;
    }
    return data;
}

/* ---- comparison ------------------------------------------------------------------------ */

static inline bool synth_str_eq(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

#define SYNTH_CMP(field)                                                                           \
    do {                                                                                           \
        if (a->field != b->field)                                                                  \
            return #field;                                                                         \
    } while (0)
#define SYNTH_STR(field)                                                                           \
    do {                                                                                           \
        if (!synth_str_eq(a->field, b->field))                                                     \
            return #field;                                                                         \
    } while (0)

static inline const char *synth_diff_info(const perch_trace_info *a, const perch_trace_info *b)
{
    SYNTH_STR(source);
    SYNTH_CMP(os_build);
    SYNTH_CMP(cpu_count);
    SYNTH_CMP(pointer_size);
    SYNTH_CMP(clock_type);
    SYNTH_CMP(perf_freq);
    SYNTH_CMP(start_filetime);
    SYNTH_CMP(end_filetime);
    SYNTH_CMP(start_raw);
    SYNTH_CMP(events_lost);
    SYNTH_CMP(buffers_lost);
    SYNTH_STR(session_config);
    return NULL;
}

static inline const char *synth_diff_process(const perch_process_rec *a, const perch_process_rec *b)
{
    SYNTH_CMP(key);
    SYNTH_CMP(pid);
    SYNTH_CMP(parent_pid);
    SYNTH_CMP(session_id);
    SYNTH_CMP(exit_status);
    SYNTH_CMP(flags);
    SYNTH_CMP(start_ts);
    SYNTH_CMP(end_ts);
    SYNTH_STR(image_name);
    SYNTH_STR(command_line);
    return NULL;
}

static inline const char *synth_diff_thread(const perch_thread_rec *a, const perch_thread_rec *b)
{
    SYNTH_CMP(key);
    SYNTH_CMP(process_key);
    SYNTH_CMP(tid);
    SYNTH_CMP(pid);
    SYNTH_CMP(flags);
    SYNTH_CMP(start_ts);
    SYNTH_CMP(end_ts);
    SYNTH_STR(name);
    return NULL;
}

static inline const char *synth_diff_module(const perch_module_rec *a, const perch_module_rec *b)
{
    SYNTH_CMP(key);
    SYNTH_CMP(process_key);
    SYNTH_CMP(pid);
    SYNTH_CMP(base);
    SYNTH_CMP(size);
    SYNTH_CMP(load_ts);
    SYNTH_CMP(unload_ts);
    SYNTH_CMP(checksum);
    SYNTH_CMP(time_date_stamp);
    SYNTH_STR(path);
    SYNTH_CMP(has_pdb);
    SYNTH_CMP(pdb_age);
    SYNTH_STR(pdb_name);
    if (!perch_guid_equal(&a->pdb_guid, &b->pdb_guid))
        return "pdb_guid";
    return NULL;
}

static inline const char *synth_diff_counters(const perch_counters_rec *a,
                                              const perch_counters_rec *b)
{
    SYNTH_CMP(count);
    for (uint32_t i = 0; i < a->count; i++)
        SYNTH_STR(names[i]);
    return NULL;
}

static inline const char *synth_diff_stack(const perch_stack_rec *a, const perch_stack_rec *b)
{
    SYNTH_CMP(id);
    SYNTH_CMP(frame_count);
    SYNTH_CMP(kernel_frames);
    for (uint32_t i = 0; i < a->frame_count; i++)
        SYNTH_CMP(frames[i]);
    return NULL;
}

static inline const char *synth_diff_slice(const perch_slice_rec *a, const perch_slice_rec *b)
{
    SYNTH_CMP(thread_key);
    SYNTH_CMP(tid);
    SYNTH_CMP(cpu);
    SYNTH_CMP(flags);
    SYNTH_CMP(start_ts);
    SYNTH_CMP(end_ts);
    SYNTH_CMP(ready_ts);
    SYNTH_CMP(priority);
    SYNTH_CMP(wait_reason);
    SYNTH_CMP(wait_mode);
    SYNTH_CMP(state);
    SYNTH_CMP(pmc_count);
    for (unsigned i = 0; i < a->pmc_count && i < PERCH_MAX_PMC; i++)
        SYNTH_CMP(pmc_delta[i]);
    return NULL;
}

static inline const char *synth_diff_sample(const perch_sample_rec *a, const perch_sample_rec *b)
{
    SYNTH_CMP(thread_key);
    SYNTH_CMP(tid);
    SYNTH_CMP(cpu);
    SYNTH_CMP(kind);
    SYNTH_CMP(flags);
    SYNTH_CMP(profile_source);
    SYNTH_CMP(ts);
    SYNTH_CMP(ip);
    SYNTH_CMP(module_key);
    SYNTH_CMP(stack_id);
    SYNTH_CMP(count);
    return NULL;
}

static inline const char *synth_diff_lbr(const perch_lbr_rec *a, const perch_lbr_rec *b)
{
    SYNTH_CMP(thread_key);
    SYNTH_CMP(tid);
    SYNTH_CMP(pid);
    SYNTH_CMP(ts);
    SYNTH_CMP(filters);
    SYNTH_CMP(branch_count);
    for (uint32_t i = 0; i < a->branch_count; i++) {
        SYNTH_CMP(from[i]);
        SYNTH_CMP(to[i]);
    }
    return NULL;
}

/* The name of the first field in which two recorded events differ, or NULL when equal. */
static inline const char *synth_diff(const synth_ev *x, const synth_ev *y)
{
    if (x->type != y->type)
        return "type";
    switch (x->type) {
    case PERCH_CHUNK_TRACE_INFO:
        return synth_diff_info(&x->u.info, &y->u.info);
    case PERCH_CHUNK_PROCESS:
        return synth_diff_process(&x->u.process, &y->u.process);
    case PERCH_CHUNK_THREAD:
        return synth_diff_thread(&x->u.thread, &y->u.thread);
    case PERCH_CHUNK_MODULE:
        return synth_diff_module(&x->u.module, &y->u.module);
    case PERCH_CHUNK_COUNTERS:
        return synth_diff_counters(&x->u.counters, &y->u.counters);
    case PERCH_CHUNK_STACK:
        return synth_diff_stack(&x->u.stack, &y->u.stack);
    case PERCH_CHUNK_SLICE:
        return synth_diff_slice(&x->u.slice, &y->u.slice);
    case PERCH_CHUNK_SAMPLE:
        return synth_diff_sample(&x->u.sample, &y->u.sample);
    case PERCH_CHUNK_LBR:
        return synth_diff_lbr(&x->u.lbr, &y->u.lbr);
    case PERCH_CHUNK_LEDGER: {
        const perch_ledger_rec *a = &x->u.ledger, *b = &y->u.ledger;
        SYNTH_STR(reason);
        SYNTH_CMP(count);
        return NULL;
    }
    case PERCH_CHUNK_STAT: {
        const perch_stat_rec *a = &x->u.stat, *b = &y->u.stat;
        SYNTH_STR(name);
        SYNTH_CMP(value);
        return NULL;
    }
    default:
        return NULL;
    }
}

/* ---- synthetic streams ---------------------------------------------------------------- */

/* The first field in which two replays' stops differ (where, why, how many records of each
 * type were delivered), or NULL when they stopped alike. */
static inline const char *synth_status_diff(const perch_capture_status *a,
                                            const perch_capture_status *b)
{
    if (a->stop != b->stop || a->error != b->error)
        return "stop";
    if (a->offset != b->offset || a->good_bytes != b->good_bytes || a->chunks != b->chunks)
        return "offset";
    if (strcmp(a->reason, b->reason) != 0)
        return "reason";
    for (int t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (a->types[t].records != b->types[t].records)
            return "records";
    return NULL;
}

static inline uint64_t synth_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A string of n bytes of printable text with some multi-byte UTF-8 in it. */
static inline char *synth_text(size_t n, uint64_t seed)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (synth_rand(&seed) % 26));
    for (size_t i = 0; i + 2 <= n; i += 97) { /* U+00E9 */
        s[i] = (char)0xc3;
        s[i + 1] = (char)0xa9;
    }
    s[n] = '\0';
    return s;
}

/* Every record type, every field, at its extremes. */
static inline void synth_extremes(synth_rec *r)
{
    perch_sink s;
    synth_recorder(r, &s);
    char *long_str = synth_text(100000, 7);
    perch_trace_info ti = {"synth", UINT32_MAX, 0, 8,          1, UINT64_MAX,
                           0,       UINT64_MAX, 1, UINT64_MAX, 0, NULL};
    s.trace_info(r, &ti);
    const char *const pmc_names[8] = {"TotalCycles", "InstructionRetired",   "",
                                      "LLCMisses",   "BranchMispredictions", "\xe2\x82\xac",
                                      "x",           "CacheMisses"};
    perch_counters_rec cr = {8, pmc_names};
    s.counters(r, &cr);
    perch_counters_rec cr0 = {0, NULL};
    s.counters(r, &cr0);

    perch_process_rec p1 = {0, 0, 0, 0, INT32_MIN, 0, 0, 0, "", ""};
    perch_process_rec p2 = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX,    INT32_MAX,
                            UINT32_MAX, UINT64_MAX, UINT64_MAX, "svchost.exe", long_str};
    perch_process_rec p3 = {7, 4, 0, 0, -1, PERCH_ENTITY_RUNDOWN, 0, 0, NULL, NULL};
    s.process(r, &p1);
    s.process(r, &p2);
    s.process(r, &p3);

    perch_thread_rec t1 = {0, 0, 0, UINT32_MAX, 0, 0, 0, ""};
    perch_thread_rec t2 = {UINT64_MAX, UINT64_MAX, UINT32_MAX, 0, UINT32_MAX, UINT64_MAX, 1, NULL};
    perch_thread_rec t3 = {
        5, 7, 1234, 4, PERCH_ENTITY_STARTED | PERCH_ENTITY_ENDED, 100, 99, "worker \xe6\x97\xa5"};
    s.thread(r, &t1);
    s.thread(r, &t2);
    s.thread(r, &t3);

    perch_module_rec m1 = {1,          0,
                           0,          0xfffff80000000000ull,
                           0x1000000,  0,
                           0,          0xdeadbeef,
                           0x5d2c3f1a, "\\SystemRoot\\system32\\ntoskrnl.exe",
                           true,       {0x12345678, 0x9abc, 0xdef0, {1, 2, 3, 4, 5, 6, 7, 8}},
                           1,          "ntkrnlmp.pdb"};
    perch_module_rec m2 = {
        UINT64_MAX, UINT64_MAX,
        UINT32_MAX, UINT64_MAX,
        UINT64_MAX, UINT64_MAX,
        UINT64_MAX, UINT32_MAX,
        UINT32_MAX, "",
        false,      {UINT32_MAX, UINT16_MAX, UINT16_MAX, {255, 255, 255, 255, 255, 255, 255, 255}},
        UINT32_MAX, ""};
    perch_module_rec m3 = {0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, true, {0, 0, 0, {0}}, 0, NULL};
    s.module(r, &m1);
    s.module(r, &m2);
    s.module(r, &m3);

    uint64_t *big = malloc(1000 * sizeof *big);
    if (!big)
        abort();
    for (unsigned i = 0; i < 1000; i++)
        big[i] = i < 10 ? 0xfffff80000001000ull + i * 0x1357 : 0x00007ff700000000ull + i * 977;
    uint64_t edge[4] = {UINT64_MAX, 0, UINT64_MAX, 1};
    perch_stack_rec st0 = {1, 0, 0, NULL};
    perch_stack_rec st1 = {2, 1000, 10, big};
    perch_stack_rec st2 = {3, 4, 4, edge};
    perch_stack_rec st3 = {4, 990, 0, big + 10}; /* shares all its frames with stack 2 */
    perch_stack_rec st4 = {5, 1, 1, edge + 1};   /* ids are dense from 1: 5 is the largest */
    s.stack(r, &st0);
    s.stack(r, &st1);
    s.stack(r, &st2);
    s.stack(r, &st3);
    s.stack(r, &st4);

    perch_slice_rec sl1 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}};
    perch_slice_rec sl2 = {UINT64_MAX,
                           UINT32_MAX,
                           UINT16_MAX,
                           UINT16_MAX,
                           UINT64_MAX,
                           0,
                           UINT64_MAX,
                           INT8_MIN,
                           INT8_MAX,
                           -1,
                           -1,
                           8,
                           {UINT64_MAX, 0, 1, UINT64_MAX, 2, 3, 4, UINT64_MAX}};
    perch_slice_rec sl3 = {5, 1234, 3, PERCH_SLICE_HAS_READY,      1000, 2000, 990, 8, 5,
                           1, 2,    3, {10, 20, 30, 0, 0, 0, 0, 0}};
    s.slice(r, &sl1);
    s.slice(r, &sl2);
    s.slice(r, &sl3);
    s.slice(r, &sl3);

    perch_sample_rec sa1 = {0, 0, 0, PERCH_SAMPLE_TIMER, 0, 0, 0, 0, 0, 0, 0};
    perch_sample_rec sa2 = {UINT64_MAX, UINT32_MAX, UINT16_MAX, PERCH_SAMPLE_PMC,
                            0xff,       UINT16_MAX, UINT64_MAX, UINT64_MAX,
                            UINT64_MAX, 5,          UINT32_MAX}; /* the last stack defined */
    perch_sample_rec sa3 = {5, 1234, 3, PERCH_SAMPLE_TIMER, 0x40, 0, 5000, 0x00007ff700001234ull,
                            9, 2,    1};
    s.sample(r, &sa1);
    s.sample(r, &sa2);
    s.sample(r, &sa3);
    s.sample(r, &sa3);
    for (unsigned i = 0; i < 40; i++) { /* more threads than the MRU holds, revisited */
        perch_sample_rec x = sa3;
        x.thread_key = 100 + (i * 7) % 23;
        x.tid = 4 * (uint32_t)x.thread_key;
        x.cpu = (uint16_t)(i % 5);
        x.ts = 5000 + i * 10;
        x.ip += i * 3;
        x.stack_id = 2 + i % 3;
        x.module_key = i % 2;
        s.sample(r, &x);
    }

    uint64_t from[32], to[32];
    for (unsigned i = 0; i < 32; i++) {
        from[i] = i == 0 ? UINT64_MAX : 0x7ff700001000ull + i * 40;
        to[i] = i == 31 ? 0 : 0x7ff700002000ull - i * 8;
    }
    perch_lbr_rec l1 = {0, 0, 0, 0, 0, 0, NULL, NULL};
    perch_lbr_rec l2 = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT32_MAX, 32, from, to};
    s.lbr(r, &l1);
    s.lbr(r, &l2);

    perch_ledger_rec lg1 = {"decode.short_payload", 3};
    perch_ledger_rec lg2 = {"", UINT64_MAX};
    perch_ledger_rec lg3 = {"stack.orphan_user", 0};
    s.ledger(r, &lg1);
    s.ledger(r, &lg2);
    s.ledger(r, &lg3);
    perch_stat_rec sr1 = {"records.total", 123456789};
    perch_stat_rec sr2 = {"kind.SampledProfile", 0};
    perch_stat_rec sr3 = {"stack.orphan_user", UINT64_MAX}; /* a ledger reason's string */
    s.stat(r, &sr1);
    s.stat(r, &sr2);
    s.stat(r, &sr3);
    s.finish(r);
    free(big);
    free(long_str);
}

/* A pseudo-random stream shaped like a real trace: `samples` timer samples at 1 kHz per CPU,
 * round robin over 8 CPUs; each CPU runs one of 60 threads (6 processes) and switches to
 * another with probability 1/8 per sample, when a slice ends; a thread's IPs fall in a 64 KiB
 * hot region; stacks of 8..60 frames share their outermost frames per call path, and a new
 * distinct stack appears for about one sample in eight. */
static inline void synth_random(synth_rec *r, uint64_t seed, size_t samples)
{
    perch_sink s;
    uint64_t frames[64], ts = 1000000, rng = seed | 1, cur[8], since[8];
    uint32_t stacks = 0;
    char name[64];
    synth_recorder(r, &s);
    perch_trace_info ti = {"synth:random",
                           19045,
                           8,
                           8,
                           1,
                           10000000,
                           133000000000000000ull,
                           133000000600000000ull,
                           ts,
                           0,
                           0,
                           "profile 1ms; cswitch"};
    s.trace_info(r, &ti);
    for (unsigned c = 0; c < 8; c++) {
        cur[c] = 1 + synth_rand(&rng) % 60;
        since[c] = ts;
    }
    for (uint32_t i = 0; i < samples; i++) {
        uint16_t cpu = (uint16_t)(i % 8);
        uint64_t th = cur[cpu];
        uint32_t sid = stacks ? 1 + (uint32_t)(synth_rand(&rng) % stacks) : 0;
        ts += 1250 + synth_rand(&rng) % 50;
        if (stacks == 0 || synth_rand(&rng) % 8 == 0) {
            unsigned n = 8 + (unsigned)(synth_rand(&rng) % 53), path = (unsigned)(th % 5);
            for (unsigned f = 0; f < n; f++) {
                unsigned depth = n - 1 - f; /* outer frames depend only on the call path */
                frames[f] = depth < 6 ? 0x7ff7a0000000ull + path * 0x10000 + depth * 0x123
                            : f < 5   ? 0xfffff80312340000ull + synth_rand(&rng) % 0x100000
                                      : 0x7ff7b0000000ull + synth_rand(&rng) % 0x4000000;
            }
            perch_stack_rec st = {++stacks, n, 5, frames};
            s.stack(r, &st);
            sid = stacks;
        }
        perch_sample_rec sa = {
            th,         (uint32_t)(th * 4 + 1000),
            cpu,        PERCH_SAMPLE_TIMER,
            0,          0,
            ts,         0x7ff7b0000000ull + th * 0x100000 + synth_rand(&rng) % 0x10000,
            1 + th % 9, sid,
            1};
        s.sample(r, &sa);
        if (synth_rand(&rng) % 8 == 0) {
            perch_slice_rec sl = {th,
                                  (uint32_t)(th * 4 + 1000),
                                  cpu,
                                  PERCH_SLICE_HAS_READY,
                                  since[cpu],
                                  ts,
                                  since[cpu] - 100 - synth_rand(&rng) % 1000,
                                  8,
                                  6,
                                  1,
                                  5,
                                  0,
                                  {0}};
            s.slice(r, &sl);
            cur[cpu] = 1 + synth_rand(&rng) % 60;
            since[cpu] = ts;
        }
    }
    for (uint64_t th = 1; th <= 60; th++) {
        snprintf(name, sizeof name, "thread %u", (unsigned)th);
        perch_thread_rec t = {th,
                              1 + th % 6,
                              (uint32_t)(th * 4 + 1000),
                              100 + (uint32_t)(th % 6),
                              PERCH_ENTITY_RUNDOWN,
                              0,
                              0,
                              name};
        s.thread(r, &t);
    }
    for (uint64_t p = 1; p <= 6; p++) {
        snprintf(name, sizeof name, "app%u.exe", (unsigned)p);
        perch_process_rec pr = {p,    100 + (uint32_t)p, 4, 1, 0, PERCH_ENTITY_RUNDOWN, 0, 0,
                                name, "app.exe --flag"};
        s.process(r, &pr);
    }
    perch_stat_rec total = {"records.total", samples};
    s.stat(r, &total);
    s.finish(r);
}

#endif
