/*
 * Crafted captures for the reader's tests of rules across records (test_capture_hostile.c,
 * test_capture_hostile_fast.c): a capture writer into memory, chunks written by hand, where a
 * chunk or record lies, captures of ledger and stat names or of stacks and samples in a given
 * order, a copy of a capture with one chunk damaged, and the replay that checks a capture
 * stops where it should through every path of the
 * reader (the fast loops, the checked decoders, both walks of a sink with decode_ahead).
 *
 * Header-only (static inline): shared by those two tests; include cmocka.h first.
 */
#ifndef PERCH_TEST_CAPTURE_HOSTILE_H
#define PERCH_TEST_CAPTURE_HOSTILE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ahead_replay.h"
#include "capture/crc32c.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "capture_synth.h"
#include "perch/capture.h"
#include "perch/error.h"

typedef struct cap {
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink s;
} cap;

static inline void cap_open(cap *c)
{
    perch_output_memory(&c->out, &c->mem, 16 << 20);
    assert_int_equal(perch_capture_writer_create(&c->out, NULL, &c->w), 0);
    perch__cap_writer_unchecked(c->w); /* the captures break the rules on purpose */
    perch_capture_writer_sink(c->w, &c->s);
}

/* Finishes the capture and takes its bytes (free them). */
static inline uint8_t *cap_take(cap *c, size_t *len)
{
    assert_int_equal(perch_capture_writer_finish(c->w), 0);
    perch_capture_writer_destroy(c->w);
    return perch_output_memory_take(&c->mem, len);
}

/* The 64-byte file header of this writer into out (for captures crafted by hand). */
static inline void header_into(uint8_t *out)
{
    cap c;
    size_t len;
    cap_open(&c);
    uint8_t *data = cap_take(&c, &len);
    memcpy(out, data, PERCH_CAPTURE_HEADER_SIZE);
    free(data);
}

static inline void info_of(perch_trace_info *t, const char *source, uint64_t freq)
{
    memset(t, 0, sizeof *t);
    t->source = source;
    t->pointer_size = 8;
    t->cpu_count = 4;
    t->perf_freq = freq;
}

static inline int replay(const uint8_t *data, size_t len, synth_rec *out, perch_capture_status *st)
{
    perch_sink rec;
    synth_recorder(out, &rec);
    memset(st, 0xff, sizeof *st);
    return perch_capture_replay_memory(data, len, &rec, st);
}

/* The offset of the n-th chunk (0 first) of type `type`, walking the chunk headers; 0 when
 * there is none. */
static inline uint64_t chunk_at_or_0(const uint8_t *data, size_t len, unsigned type, unsigned n)
{
    for (size_t off = PERCH_CAPTURE_HEADER_SIZE; off + 12 <= len;) {
        unsigned t = data[off] | (unsigned)data[off + 1] << 8;
        uint32_t plen = (uint32_t)data[off + 4] | (uint32_t)data[off + 5] << 8 |
                        (uint32_t)data[off + 6] << 16 | (uint32_t)data[off + 7] << 24;
        if (t == type && n-- == 0)
            return off;
        off += 12 + (size_t)plen;
    }
    return 0;
}

/* The same, failing the test when there is none. */
static inline uint64_t chunk_at(const uint8_t *data, size_t len, unsigned type, unsigned n)
{
    uint64_t off = chunk_at_or_0(data, len, type, n);
    if (off == 0)
        fail_msg("no chunk %u of type %u", n, type);
    return off;
}

static inline size_t count_type(const synth_rec *r, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < r->count; i++)
        n += r->ev[i].type == type;
    return n;
}

static inline void assert_reason(const perch_capture_status *st, const char *want)
{
    if (strcmp(st->reason, want) != 0)
        fail_msg("reason\n  \"%s\"\nwanted\n  \"%s\"", st->reason, want);
}

static inline void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes a chunk of `type` with payload p[0..n) at out; returns its size. */
static inline size_t put_chunk(uint8_t *out, unsigned type, const uint8_t *p, uint32_t n)
{
    put_le(out, type, 2);
    put_le(out + 2, 0, 2);
    put_le(out + 4, n, 4);
    memcpy(out + 12, p, n);
    put_le(out + 8, perch__crc32c(perch__crc32c(0, out, 8), out + 12, n), 4);
    return 12 + (size_t)n;
}

/* A capture whose trace info and one process precede ledger entries `reasons` (count i + 1
 * each) and stats `names` (value 100 + i). */
static inline uint8_t *named_capture(const char *const *reasons, size_t nr,
                                     const char *const *names, size_t ns, size_t *len)
{
    cap c;
    perch_trace_info t;
    perch_process_rec p = {100, 1234, 4, 1, 0, 0, 0, 0, "game.exe", ""};
    info_of(&t, "named", 10000000);
    cap_open(&c);
    assert_int_equal(c.s.trace_info(c.s.ctx, &t), 0);
    assert_int_equal(c.s.process(c.s.ctx, &p), 0);
    for (size_t i = 0; i < nr; i++) {
        perch_ledger_rec l = {reasons[i], i + 1};
        assert_int_equal(c.s.ledger(c.s.ctx, &l), 0);
    }
    for (size_t i = 0; i < ns; i++) {
        perch_stat_rec st = {names[i], 100 + i};
        assert_int_equal(c.s.stat(c.s.ctx, &st), 0);
    }
    return cap_take(&c, len);
}

/* The byte where record `index` of the only chunk of `type` starts, each record being two
 * one-byte varints (small string ids and values) after a one-byte count. */
static inline uint64_t record_at(const uint8_t *data, size_t len, unsigned type, unsigned index)
{
    return chunk_at(data, len, type, 0) + 12 + 1 + 2 * (uint64_t)index;
}

/* A capture of steps: 's' a stack of id `id`, 'p' a timer sample naming stack `id` (0: none),
 * 'f' every open chunk flushed (so the next record starts a chunk), after the trace info, a
 * process and its thread. The writer flushes a stack chunk before a sample chunk, so a sample
 * comes before its stack only when a flush put it there. */
typedef struct step {
    char what;
    uint32_t id;
} step;

static inline uint8_t *stack_capture(const step *steps, size_t n, size_t *len)
{
    static const uint64_t frames[3] = {0xfffff80000001000ull, 0x7ff700001000ull, 0x7ff700002000ull};
    cap c;
    perch_trace_info t;
    perch_process_rec p = {100, 1234, 4, 1, 0, 0, 0, 0, "game.exe", ""};
    perch_thread_rec th = {200, 100, 5678, 1234, 0, 0, 0, "main"};
    info_of(&t, "stacks", 10000000);
    cap_open(&c);
    assert_int_equal(c.s.trace_info(c.s.ctx, &t), 0);
    assert_int_equal(c.s.process(c.s.ctx, &p), 0);
    assert_int_equal(c.s.thread(c.s.ctx, &th), 0);
    for (size_t i = 0; i < n; i++) {
        perch_stack_rec st = {steps[i].id, 3, 1, frames};
        perch_sample_rec sa = {
            200, 5678, 1, PERCH_SAMPLE_TIMER, 0, 0, 1000 + i, 0x7ff700001234ull, 0, steps[i].id, 1};
        if (steps[i].what == 's')
            assert_int_equal(c.s.stack(c.s.ctx, &st), 0);
        else if (steps[i].what == 'p')
            assert_int_equal(c.s.sample(c.s.ctx, &sa), 0);
        else
            assert_int_equal(perch__cap_flush_all(c.w), 0);
    }
    return cap_take(&c, len);
}

/* Replays data through the fast loops, the checked decoders alone and both walks of a sink
 * with decode_ahead and no stack callback (the split walk decodes stack and sample chunks
 * ahead, where the stacks before them are unknown): all must stop at `at` with `err` and the same
 * reason, which contains `why`; returns the records the first replay delivered. */
static inline synth_rec expect_stop(const uint8_t *data, size_t len, int err, uint64_t at,
                                    const char *why)
{
    synth_rec out = {0}, checked = {0};
    perch_capture_status st, cs;
    perch_sink rec;
    perch_input in;
    ahead_replay one, two;
    assert_int_equal(replay(data, len, &out, &st), err);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_BAD_CHUNK);
    assert_int_equal(st.offset, at);
    if (strstr(st.reason, why) == NULL)
        fail_msg("\"%s\" not in the reason \"%s\"", why, st.reason);
    synth_recorder(&checked, &rec);
    perch_input_memory(&in, data, len);
    assert_int_equal(perch__cap_replay_checked(&in, &rec, NULL, &cs), err);
    perch_input_close(&in);
    assert_int_equal(cs.offset, at);
    assert_string_equal(cs.reason, st.reason);
    assert_int_equal(checked.count, out.count);
    synth_free(&checked);
    /* no stack callback: the split walk decodes the stack chunks ahead as well */
    ahead_replay_run(data, len, false, 0, AHEAD_SAMPLES | AHEAD_SLICES, &one);
    ahead_replay_run(data, len, true, 0, AHEAD_SAMPLES | AHEAD_SLICES, &two);
    assert_true(one.digest == two.digest && one.records == two.records);
    assert_int_equal(one.err, err);
    assert_int_equal(two.err, err);
    assert_int_equal(one.st.offset, at);
    assert_int_equal(two.st.offset, at);
    assert_string_equal(one.st.reason, st.reason);
    assert_string_equal(two.st.reason, st.reason);
    return out;
}

/* A copy of capture `data` (len bytes) in copy with one chunk damaged: the first at or past a
 * random index below 40 whose type `target` accepts gets a random byte of its payload
 * replaced, the 12 bytes from there their top bit set when `long_runs` (over-long varints),
 * and its CRC made good again when `good_crc`. Returns the chunk's offset. */
static inline size_t damage_chunk(const uint8_t *data, size_t len, uint8_t *copy, uint64_t *rng,
                                  bool (*target)(uint32_t type), bool long_runs, bool good_crc)
{
    size_t off = (size_t)data[12] | (size_t)data[13] << 8, pick = synth_rand(rng) % 40, i = 0;
    uint32_t plen = 0;
    for (; off + CAP_CHUNK_HEADER <= len; off += CAP_CHUNK_HEADER + plen, i++) {
        uint32_t type = data[off] | (uint32_t)data[off + 1] << 8;
        plen = (uint32_t)cap_load_le(data + off + 4, 4);
        if (target(type) && i >= pick)
            break;
    }
    assert_true(off + CAP_CHUNK_HEADER <= len && plen > 0);
    memcpy(copy, data, len);
    size_t at = off + CAP_CHUNK_HEADER + synth_rand(rng) % plen;
    copy[at] = (uint8_t)synth_rand(rng);
    for (size_t k = at; long_runs && k < at + 12 && k < off + CAP_CHUNK_HEADER + plen; k++)
        copy[k] |= 0x80;
    if (good_crc)
        cap_store_le(
            copy + off + 8,
            perch__crc32c(perch__crc32c(0, copy + off, 8), copy + off + CAP_CHUNK_HEADER, plen), 4);
    return off;
}

#endif
