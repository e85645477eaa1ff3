/*
 * The capture reader's split walk (src/core/capture/read_split.c) against the one-thread walk:
 * a sink with a touch callback (the way chrome's first pass takes samples and slices) gets
 * its sample and slice chunks decoded ahead on a second thread and played as lists of distinct
 * touches. Replayed into the exporters' entity store (perch__entities_touch_thread, which
 * chrome's first pass uses), both walks must create the same threads in the same order with
 * the same tid and cpu and mark the same threads sliced, and stop at the same byte with the
 * same error, reason and record counts: for good captures, cut ones, damaged ones (CRC made
 * valid again) and a sink that refuses its n-th new thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/crc32c.h"
#include "capture/reader.h"
#include "capture_synth.h"
#include "export/export_internal.h"
#include "perch/error.h"

/* The entity store a replay fills; refuse: the new thread that is refused (0: none). */
typedef struct touched {
    perch__budget budget;
    perch__entities ents;
    perch__map sliced;
    uint64_t touches; /* calls of sample, slice or touch */
    size_t refuse;
    perch_capture_status st;
    int err;
} touched;

static int touch(touched *t, uint64_t key, uint32_t tid, uint16_t cpu, bool sliced)
{
    uint32_t idx;
    t->touches++;
    if (t->refuse && t->ents.thread_count + 1 == t->refuse &&
        !perch__map_get(&t->ents.thread_map, key, &idx))
        return PERCH_ELIMIT;
    int err = perch__entities_touch_thread(&t->ents, key, tid, cpu, &idx);
    if (!err && sliced && idx != UINT32_MAX)
        err = perch__map_put(&t->sliced, &t->budget, key, 1);
    return err;
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, false);
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, true);
}

static int on_touch(void *ctx, const perch_touch_rec *t)
{
    return touch(ctx, t->thread_key, t->tid, t->cpu, t->sliced != 0);
}

static void replay(const uint8_t *data, size_t len, bool split, size_t refuse, touched *t)
{
    perch_sink sink = {.ctx = t, .sample = on_sample, .slice = on_slice};
    perch_input in;
    memset(t, 0, sizeof *t);
    t->budget.limit = UINT64_MAX;
    perch__entities_init(&t->ents, &t->budget);
    t->refuse = refuse;
    sink.touch = split ? on_touch : NULL;
    perch_input_memory(&in, data, len);
    memset(&t->st, 0xff, sizeof t->st);
    t->err = perch_capture_replay_ex(&in, &sink, NULL, &t->st);
    perch_input_close(&in);
}

static void touched_free(touched *t)
{
    perch__map_free(&t->sliced, &t->budget);
    perch__entities_free(&t->ents);
}

static void check_same(const touched *a, const touched *b)
{
    const char *why = synth_status_diff(&a->st, &b->st);
    assert_int_equal(a->err, b->err);
    if (why)
        fail_msg("the stops differ in %s: %s / %s", why, a->st.reason, b->st.reason);
    assert_int_equal(a->ents.thread_count, b->ents.thread_count);
    for (size_t i = 0; i < a->ents.thread_count; i++) {
        const perch__thread *x = &a->ents.threads[i], *y = &b->ents.threads[i];
        uint32_t sx = 0, sy = 0;
        assert_int_equal(x->key, y->key);
        assert_int_equal(x->tid, y->tid);
        assert_int_equal(x->cpu, y->cpu);
        assert_int_equal(perch__map_get(&a->sliced, x->key, &sx),
                         perch__map_get(&b->sliced, y->key, &sy));
    }
}

/* Replays data both ways and compares; returns the one-thread replay's stop reason. */
static int both_ways(const uint8_t *data, size_t len, size_t refuse)
{
    touched one, two;
    replay(data, len, false, refuse, &one);
    replay(data, len, true, refuse, &two);
    check_same(&one, &two);
    int stop = one.st.stop;
    touched_free(&one);
    touched_free(&two);
    return stop;
}

static void test_split_good_and_cut(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    (void)state;
    synth_random(&in, 11, 30000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    assert_int_equal(both_ways(data, len, 0), PERCH_CAPTURE_STOP_END);
    for (size_t cut = 64; cut < len; cut += len / 97 + 1)
        both_ways(data, cut, 0);
    free(data);
    synth_free(&in);
    synth_extremes(&in); /* fields at their caps: cpu UINT16_MAX, tid 0 */
    data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    assert_int_equal(both_ways(data, len, 0), PERCH_CAPTURE_STOP_END);
    free(data);
    synth_free(&in);
}

/* Idle threads (tid 0) sampled with no cpu (UINT16_MAX): the first touch creates the thread
 * with no cpu, the second gives it UINT16_MAX, so a list keeps such a touch twice. */
static void test_split_no_cpu_twice(void **state)
{
    static const uint16_t cpus[] = {UINT16_MAX, UINT16_MAX, 3, UINT16_MAX, UINT16_MAX};
    synth_rec in = {0};
    size_t len = 0;
    touched one;
    (void)state;
    synth_random(&in, 7, 300);
    assert_int_equal(in.ev[in.count - 1].type, PERCH_CHUNK_END);
    synth_ev end = in.ev[--in.count]; /* finish stays last */
    for (unsigned k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
            perch_sample_rec *r = &synth_push(&in, PERCH_CHUNK_SAMPLE)->u.sample;
            memset(r, 0, sizeof *r);
            r->thread_key = 0x5eed00 + k;
            r->cpu = k == 1 && i == 2 ? UINT16_MAX : cpus[i];
            r->ts = 1000 + i;
        }
    *synth_push(&in, PERCH_CHUNK_END) = end;
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    assert_int_equal(both_ways(data, len, 0), PERCH_CAPTURE_STOP_END);
    replay(data, len, false, 0, &one);
    const perch__thread *t = perch__entities_thread_at(&one.ents, 0x5eed01);
    assert_non_null(t);
    assert_int_equal(t->cpu, UINT16_MAX);
    touched_free(&one);
    free(data);
    synth_free(&in);
}

/* The sink refuses its n-th new thread: both walks stop at the same record. */
static void test_split_sink_refuses(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    touched all;
    (void)state;
    synth_random(&in, 5, 20000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL);
    assert_non_null(data);
    replay(data, len, false, 0, &all);
    assert_true(all.ents.thread_count > 8);
    for (size_t n = 1; n <= all.ents.thread_count; n++)
        assert_int_equal(both_ways(data, len, n), PERCH_CAPTURE_STOP_SINK);
    touched_free(&all);
    free(data);
    synth_free(&in);
}

/* Bytes of sample, slice, stack and LBR chunks changed and their CRC made valid again. */
static void test_split_damaged(void **state)
{
    synth_rec in = {0};
    size_t len = 0;
    uint64_t rng = 0x9e3779b97f4a7c15u;
    int bad = 0;
    (void)state;
    synth_random(&in, 3, 8000);
    uint8_t *data = synth_capture(&in, 4096, &len, NULL), *copy = malloc(len);
    assert_non_null(data);
    assert_non_null(copy);
    for (int round = 0; round < 600; round++) {
        size_t off = (size_t)data[12] | (size_t)data[13] << 8, pick = synth_rand(&rng) % 40, i = 0;
        uint32_t type = 0, plen = 0;
        for (; off + CAP_CHUNK_HEADER <= len; off += CAP_CHUNK_HEADER + plen, i++) {
            type = data[off] | (uint32_t)data[off + 1] << 8;
            plen = (uint32_t)cap_load_le(data + off + 4, 4);
            if ((type == PERCH_CHUNK_SAMPLE || type == PERCH_CHUNK_SLICE ||
                 type == PERCH_CHUNK_STACK) &&
                i >= pick)
                break;
        }
        assert_true(off + CAP_CHUNK_HEADER <= len);
        memcpy(copy, data, len);
        size_t at = off + CAP_CHUNK_HEADER + synth_rand(&rng) % plen;
        copy[at] = (uint8_t)synth_rand(&rng);
        if (round % 3 == 0)
            for (size_t k = at; k < at + 12 && k < off + CAP_CHUNK_HEADER + plen; k++)
                copy[k] |= 0x80;
        uint32_t crc =
            perch__crc32c(perch__crc32c(0, copy + off, 8), copy + off + CAP_CHUNK_HEADER, plen);
        if (round % 10 != 9) /* and some with a CRC that does not match */
            cap_store_le(copy + off + 8, crc, 4);
        bad += both_ways(copy, len, 0) == PERCH_CAPTURE_STOP_BAD_CHUNK;
    }
    assert_true(bad > 100); /* the damage reached the decoders */
    free(copy);
    free(data);
    synth_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_good_and_cut),
        cmocka_unit_test(test_split_no_cpu_twice),
        cmocka_unit_test(test_split_sink_refuses),
        cmocka_unit_test(test_split_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
