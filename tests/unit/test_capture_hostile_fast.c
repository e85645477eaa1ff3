/*
 * The capture reader's rules across records (docs/capture-format.md 2) on crafted captures
 * that reach the paths test_capture_hostile.c's short captures do not: the fast record loops
 * (src/core/capture/read_fast.c), which take a stack or sample record only with room for its
 * largest encoding left in the chunk and a frame buffer already grown by an earlier stack, so
 * the bad record here has a dozen records after it; the split walk (read_split.c), which
 * decodes stack and sample chunks ahead with the stack ids unchecked, notes each chunk's ids in
 * a slot reused every eighth chunk, and has the walk compare them with the stacks before it,
 * here with the bad chunk the second stack chunk or one past the first reuse of its slot; and
 * the cap of 1 MiB of ledger or stat names per type. Each replay stops where the checked
 * decoders alone stop, with the same reason, and a good capture of many chunks goes through
 * the split walk without a chunk sent back to the ordinary path.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_hostile.h"

/* read_fast.c's largest encodings: a stack record's head (id, frame count, kernel frames, ring
 * ref, shared frames) and a sample record (mask, two bytes of attributes and nine varints). */
#define STACK_ROOM  (5 * CAP_VARINT_MAX)
#define SAMPLE_ROOM (1 + 2 + 9 * CAP_VARINT_MAX)

/* Where the checked decoders alone stop on data (the reference the fast loops keep to). */
static uint64_t checked_stop(const uint8_t *data, size_t len)
{
    perch_capture_status st;
    perch_input in;
    perch_input_memory(&in, data, len);
    assert_int_equal(perch__cap_replay_checked(&in, NULL, NULL, &st), PERCH_EFORMAT);
    perch_input_close(&in);
    return st.offset;
}

/* The end of the payload of the chunk at off. */
static uint64_t chunk_end(const uint8_t *data, uint64_t off)
{
    return off + CAP_CHUNK_HEADER + cap_load_le(data + off + 4, 4);
}

/* ---- the fast loops ---------------------------------------------------------------------- */

/* Stacks `ids` (a flush where an id is ~0u) then `after` more ids counting up from the last:
 * the steps of stack_capture. */
static size_t stack_steps(step *out, const uint32_t *ids, size_t n, size_t after)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        out[k++] = ids[i] == ~0u ? (step){'f', 0} : (step){'s', ids[i]};
    for (size_t i = 1; i <= after; i++)
        out[k++] = (step){'s', ids[n - 1] + (uint32_t)i};
    return k;
}

/* A stack id skipped, repeated or 0 with a dozen stacks after it in its chunk, so the fast loop
 * (not the checked decoder near the chunk's end) reads it: refused there as the checked
 * decoder refuses it, at the same byte. The stacks before it grew the frame buffer (the fast
 * loop leaves the first stack of a reader to the checked decoder). */
static void test_fast_stack_ids(void **state)
{
    static const struct {
        uint32_t ids[4];
        size_t n, before; /* ids given; stacks delivered before the bad one */
        const char *why;
    } cases[] = {
        {{1, 2, 4},
         3,
         2,
         ": stack id 4 out of order: the next is 3 (ids are dense from 1) at byte"},
        {{1, 2, 2}, 3, 2, ": stack id 2 given twice at byte"},
        {{1, 2, 0}, 3, 2, ": stack id 0 (ids are dense from 1; 0 means no stack) at byte"},
        {{1, 2, ~0u, 4},
         4,
         2,
         ": stack id 4 out of order: the next is 3 (ids are dense from 1) at byte"},
        {{1, 2, ~0u, 1}, 4, 2, ": stack id 1 given twice at byte"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        step steps[20];
        size_t len, n = stack_steps(steps, cases[i].ids, cases[i].n, 12);
        uint8_t *data = stack_capture(steps, n, &len);
        uint64_t at = checked_stop(data, len);
        unsigned last = cases[i].ids[2] == ~0u ? 1 : 0;
        uint64_t chunk = chunk_at(data, len, PERCH_CHUNK_STACK, last);
        assert_true(at > chunk && at + STACK_ROOM <= chunk_end(data, chunk));
        if (last)
            assert_int_equal(at, chunk + 13); /* the first record of the second chunk */
        synth_rec out = expect_stop(data, len, PERCH_EFORMAT, at, cases[i].why);
        assert_int_equal(count_type(&out, PERCH_CHUNK_STACK), cases[i].before);
        synth_free(&out);
        free(data);
    }
}

/* A sample naming a stack not yet defined with thirty samples after it in its chunk: refused
 * by the sample chunk's fast loop at the checked decoder's byte. */
static void test_fast_sample_undefined(void **state)
{
    step steps[2 + 5 + 30];
    size_t n = 0, len;
    (void)state;
    steps[n++] = (step){'s', 1};
    steps[n++] = (step){'s', 2};
    for (uint32_t i = 0; i < 4; i++)
        steps[n++] = (step){'p', 1 + i % 2};
    steps[n++] = (step){'p', 3};
    for (uint32_t i = 0; i < 30; i++)
        steps[n++] = (step){'p', 1 + i % 2};
    uint8_t *data = stack_capture(steps, n, &len);
    uint64_t at = checked_stop(data, len);
    uint64_t chunk = chunk_at(data, len, PERCH_CHUNK_SAMPLE, 0);
    assert_true(at > chunk + 13 && at + SAMPLE_ROOM <= chunk_end(data, chunk));
    synth_rec out = expect_stop(data, len, PERCH_EFORMAT, at,
                                ": a sample names stack id 3 before it is defined (2 stacks so "
                                "far) at byte");
    assert_int_equal(count_type(&out, PERCH_CHUNK_SAMPLE), 4);
    synth_free(&out);
    free(data);
}

/* ---- the split walk ---------------------------------------------------------------------- */

#define GROUPS        12 /* 36 stack and sample chunks: each of the 8 slots used 4 or 5 times */
#define GROUP_SAMPLES 5  /* samples per sample chunk, all of one thread */

/* How group `bad` of a capture of GROUPS groups breaks the stack rule. */
enum bad { NONE, SKIP, REPEAT, GAP, SAMPLE };

/* Group g: a stack chunk of 3 stacks (ids 3g + 1 ..), a sample chunk naming them, a sample
 * chunk naming the last. So the stack and sample chunks take the split walk's slots in turn
 * (3 chunks a group, 8 slots): a slot holds a stack chunk, then a sample chunk, and so on.
 * Group `bad` breaks the rule as `how` says; every group after it counts on from its ids. */
static uint8_t *group_capture(enum bad how, unsigned bad, size_t *len)
{
    step *steps = malloc(GROUPS * (3 + 2 * GROUP_SAMPLES + 2) * sizeof *steps);
    size_t n = 0;
    uint32_t next = 1;
    assert_non_null(steps);
    for (unsigned g = 0; g < GROUPS; g++) {
        if (g == bad && how == SKIP)
            next++;
        if (g == bad && how == REPEAT)
            next--;
        for (unsigned i = 0; i < 3; i++, next++)
            steps[n++] = (step){'s', g == bad && how == GAP && i == 2 ? ++next : next};
        uint32_t last = next - 1;
        for (unsigned i = 0; i < GROUP_SAMPLES; i++)
            steps[n++] = (step){'p', last - 2 + i % 3};
        steps[n++] = (step){'f', 0};
        for (unsigned i = 0; i < GROUP_SAMPLES; i++)
            steps[n++] = (step){'p', g == bad && how == SAMPLE && i == 3 ? last + 1 : last};
        steps[n++] = (step){'f', 0};
    }
    uint8_t *data = stack_capture(steps, n, len);
    free(steps);
    return data;
}

/* A good capture of many stack and sample chunks, into a sink with decode_ahead and no stack
 * callback: both walks reach the end with the same records, and the split walk plays every
 * stack and sample chunk from its slot, none sent back to the ordinary path (told by the
 * input's reads: one more than the plain walk's per chunk header the scan looked at, two more
 * per chunk sent back). So each stack chunk's ids were noted afresh in its slot, though the
 * slot held another chunk's before, and added to the walk's stacks when it was played. */
static void test_split_carries_stack_ids(void **state)
{
    ahead_replay one, two;
    size_t len;
    (void)state;
    uint8_t *data = group_capture(NONE, 0, &len);
    assert_int_equal(chunk_at_or_0(data, len, PERCH_CHUNK_STACK, GROUPS), 0);
    assert_true(chunk_at_or_0(data, len, PERCH_CHUNK_SAMPLE, 2 * GROUPS - 1) != 0);
    ahead_replay_run(data, len, false, 0, AHEAD_SAMPLES, &one);
    ahead_replay_run(data, len, true, 0, AHEAD_SAMPLES, &two);
    assert_int_equal(one.err, 0);
    assert_int_equal(one.st.stop, PERCH_CAPTURE_STOP_END);
    assert_int_equal(two.err, 0);
    assert_int_equal(two.st.stop, PERCH_CAPTURE_STOP_END);
    assert_int_equal(two.st.offset, one.st.offset);
    assert_true(one.digest == two.digest);
    assert_int_equal(two.records, 2 * GROUPS * GROUP_SAMPLES);
    assert_int_equal(two.reads - one.reads, one.st.chunks); /* nothing sent back */
    assert_int_equal(two.st.types[PERCH_CHUNK_STACK].records, 3 * GROUPS);
    assert_int_equal(two.st.types[PERCH_CHUNK_SAMPLE].records, 2 * GROUPS * GROUP_SAMPLES);
    free(data);
}

/* The stack rule broken in the second stack chunk, and in the tenth (its slot used twice
 * before): the split walk, which decoded the chunk ahead without knowing the stacks before it,
 * stops where the one-thread walk and the checked decoders stop (expect_stop), at the first
 * record of the stack chunk, the third (a gap inside it) or the sample. */
static void test_split_later_chunk(void **state)
{
    static const struct {
        enum bad how;
        unsigned record; /* of the chunk, 0 first */
        const char *why;
    } cases[] = {
        {SKIP, 0, "out of order: the next is"},
        {REPEAT, 0, "given twice at byte"},
        {GAP, 2, "out of order: the next is"},
        {SAMPLE, 3, "before it is defined"},
    };
    static const unsigned groups[] = {1, 9};
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t k = 0; k < 2; k++) {
            size_t len;
            unsigned g = groups[k];
            uint8_t *data = group_capture(cases[i].how, g, &len);
            uint64_t at = checked_stop(data, len);
            uint64_t chunk = cases[i].how == SAMPLE
                                 ? chunk_at(data, len, PERCH_CHUNK_SAMPLE, 2 * g + 1)
                                 : chunk_at(data, len, PERCH_CHUNK_STACK, g);
            assert_true(at >= chunk + 13 && at < chunk_end(data, chunk));
            if (cases[i].record == 0)
                assert_int_equal(at, chunk + 13);
            else
                assert_true(at > chunk + 13);
            synth_rec out = expect_stop(data, len, PERCH_EFORMAT, at, cases[i].why);
            assert_int_equal(count_type(&out, PERCH_CHUNK_STACK),
                             3 * g + (cases[i].how == SAMPLE ? 3 : cases[i].record));
            synth_free(&out);
            free(data);
        }
}

/* ---- 1 MiB of names per type ------------------------------------------------------------- */

#define LONG_NAME (PERCH_CAPTURE_MAX_NAME_BYTES / 8 - 1) /* bytes: with its NUL, 1/8 MiB */

/* Stat names of LONG_NAME bytes, eight of them 1 MiB with their NULs: the reader takes those,
 * and refuses one more (of 1 byte) with stop reason `limit` at its record, far under the 4,096
 * names; the ledger's 1 MiB is its own. */
static void test_name_bytes_cap(void **state)
{
    char *buf = malloc(9 * (LONG_NAME + 1));
    const char *names[9];
    synth_rec out = {0};
    perch_capture_status st;
    size_t len;
    (void)state;
    assert_non_null(buf);
    for (unsigned i = 0; i < 8; i++) {
        char *s = buf + i * (LONG_NAME + 1);
        memset(s, 'a' + i, LONG_NAME);
        s[LONG_NAME] = '\0';
        names[i] = s;
    }
    names[8] = "z";
    uint8_t *data = named_capture(names, 8, names, 8, &len);
    assert_int_equal(replay(data, len, &out, &st), 0);
    assert_int_equal(count_type(&out, PERCH_CHUNK_STAT), 8);
    synth_free(&out);
    free(data);

    data = named_capture(names, 8, names, 9, &len);
    uint64_t stat = chunk_at(data, len, PERCH_CHUNK_STAT, 0);
    assert_int_equal(replay(data, len, &out, &st), PERCH_ELIMIT);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_LIMIT);
    assert_int_equal(st.offset, record_at(data, len, PERCH_CHUNK_STAT, 8));
    char want[160];
    snprintf(want, sizeof want,
             "stat chunk at offset %" PRIu64
             ": more than 4096 stat names or 1048576 bytes of them at byte %" PRIu64,
             stat, st.offset);
    assert_reason(&st, want);
    assert_int_equal(count_type(&out, PERCH_CHUNK_LEDGER), 8);
    assert_int_equal(count_type(&out, PERCH_CHUNK_STAT), 8);
    synth_free(&out);
    free(data);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_stack_ids),
        cmocka_unit_test(test_fast_sample_undefined),
        cmocka_unit_test(test_split_carries_stack_ids),
        cmocka_unit_test(test_split_later_chunk),
        cmocka_unit_test(test_name_bytes_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
