/*
 * The digest replay of ahead_replay.h: sample, slice and stack callbacks that fold each field
 * into an FNV-1a digest (fields one by one, so padding never counts), note a call made on
 * any thread but the one that started the replay, and refuse the n-th sample or slice.
 */
#include "ahead_replay.h"

#include <string.h>

#include "perch/error.h"
#include "perch/io.h"

static _Thread_local bool caller; /* true only on the thread inside ahead_replay_run */

static void mix(ahead_replay *a, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        a->digest ^= (uint8_t)(v >> (8 * i));
        a->digest *= 0x100000001b3ull;
    }
}

static int arrive(ahead_replay *a, bool data)
{
    a->strays += !caller;
    if (data && ++a->data == a->refuse)
        return PERCH_ELIMIT;
    a->records++;
    return 0;
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    ahead_replay *a = ctx;
    int err = arrive(a, true);
    const uint64_t v[] = {1,           r->thread_key,     r->tid, r->cpu, r->kind,
                          r->flags,    r->profile_source, r->ts,  r->ip,  r->module_key,
                          r->stack_id, r->count};
    for (size_t i = 0; i < sizeof v / sizeof v[0] && !err; i++)
        mix(a, v[i]);
    return err;
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    ahead_replay *a = ctx;
    int err = arrive(a, true);
    const uint64_t v[] = {2,
                          r->thread_key,
                          r->tid,
                          r->cpu,
                          r->flags,
                          r->start_ts,
                          r->end_ts,
                          r->ready_ts,
                          (uint64_t)r->priority,
                          (uint64_t)r->wait_reason,
                          (uint64_t)r->wait_mode,
                          (uint64_t)r->state,
                          r->pmc_count};
    for (size_t i = 0; i < sizeof v / sizeof v[0] && !err; i++)
        mix(a, v[i]);
    for (unsigned i = 0; i < r->pmc_count && i < PERCH_MAX_PMC && !err; i++)
        mix(a, r->pmc_delta[i]);
    return err;
}

static int on_stack(void *ctx, const perch_stack_rec *r)
{
    ahead_replay *a = ctx;
    int err = arrive(a, false);
    mix(a, 3);
    mix(a, r->id);
    mix(a, r->frame_count);
    mix(a, r->kernel_frames);
    for (uint32_t i = 0; i < r->frame_count; i++)
        mix(a, r->frames[i]);
    return err;
}

/* The memory input with its reads counted. */
struct counted {
    perch_input inner;
    uint64_t *reads;
};

void (*ahead_replay_tamper)(uint64_t off, void *buf, size_t len);

static int counted_read(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    struct counted *c = ctx;
    __atomic_fetch_add(c->reads, 1, __ATOMIC_RELAXED);
    int err = c->inner.read_at(c->inner.ctx, off, buf, len, got);
    if (!err && ahead_replay_tamper)
        ahead_replay_tamper(off, buf, *got);
    return err;
}

void ahead_replay_run(const uint8_t *data, size_t len, bool ahead, size_t refuse, unsigned takes,
                      ahead_replay *a)
{
    perch_sink sink = {.ctx = a,
                       .sample = takes & AHEAD_SAMPLES ? on_sample : NULL,
                       .slice = takes & AHEAD_SLICES ? on_slice : NULL,
                       .stack = takes & AHEAD_STACKS ? on_stack : NULL};
    struct counted c = {.reads = &a->reads};
    perch_input in;
    memset(a, 0, sizeof *a);
    a->digest = 0xcbf29ce484222325ull;
    a->refuse = refuse;
    sink.decode_ahead = ahead;
    perch_input_memory(&c.inner, data, len);
    in = (perch_input){counted_read, NULL, c.inner.size, &c};
    memset(&a->st, 0xff, sizeof a->st);
    caller = true;
    a->err = perch_capture_replay_ex(&in, &sink, NULL, &a->st);
    caller = false;
    perch_input_close(&c.inner);
}
