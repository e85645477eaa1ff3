/*
 * The time-order merge of the .etl reader (src/core/etl/merge.c) against a reference: images
 * of 1 to 37 CPUs whose records' timestamps come from a seeded generator, read with
 * perch_etl_next, must come out in the order of a plain k-way merge that takes the smallest
 * (timestamp, cpu) head each time. Each scenario also says which form of the tree the reader
 * must end in: the narrow one (one 64-bit word a node) while every head fits it, the wide one
 * once a head does not (a jump of 2^62 ticks or more, a CPU going back below the first head,
 * timestamps near 2^64, the exact edge of the narrow range).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etl/reader.h"
#include "etl_image.h"
#include "perch/etl.h"

#define MAX_CPUS 37
#define PER_CPU  40

struct scenario {
    unsigned cpus;
    uint64_t ts[MAX_CPUS][PER_CPU];
    unsigned n[MAX_CPUS];
};

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Non-decreasing timestamps from start, steps of 0 to 3 (so CPUs tie often). */
static void fill_steady(struct scenario *sc, unsigned cpus, uint64_t start, uint64_t seed)
{
    memset(sc, 0, sizeof *sc);
    sc->cpus = cpus;
    for (unsigned c = 0; c < cpus; c++) {
        uint64_t t = start + next_rand(&seed) % 8;
        sc->n[c] = 1 + (unsigned)(next_rand(&seed) % PER_CPU);
        for (unsigned i = 0; i < sc->n[c]; i++) {
            sc->ts[c][i] = t;
            t += next_rand(&seed) % 4;
        }
    }
}

/* Writes the scenario as an image. CPU 0's first record is the logfile header record (the
 * header buffer is CPU 0's first buffer); every CPU's records then go in two buffers, written
 * last CPU first. */
static void build(const struct scenario *sc, struct img *m)
{
    static const uint8_t payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t rec[600];
    size_t len = img_logfile(rec, 8, sc->cpus, 10000000, 132000000000000000ull, sc->ts[0][0]);
    img_init(m, 1 << 20);
    img_begin(m, 0, 0, 0, 4);
    img_record(m, rec, len);
    img_end(m, 0x400);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned c = sc->cpus; c-- > 0;) {
            unsigned first = c == 0 ? 1 : 0, mid = first + (sc->n[c] - first) / 2;
            unsigned from = half == 0 ? first : mid, to = half == 0 ? mid : sc->n[c];
            if (from == to)
                continue;
            img_begin(m, (uint16_t)c, half * 1000 + c, 0, 0);
            for (unsigned i = from; i < to; i++) {
                size_t n = img_kernel(rec, 0x11, 2, 0x0F2E, 100 + c, 4, sc->ts[c][i], NULL, 0,
                                      payload, sizeof payload);
                img_record(m, rec, n);
            }
            img_end(m, 0);
        }
}

/* Reads the image and checks every record against the reference merge; returns whether the
 * reader ended in the narrow form. */
static bool check_order(const struct scenario *sc)
{
    struct img m;
    perch_etl_reader *r = NULL;
    perch_event ev;
    unsigned at[MAX_CPUS] = {0}, total = 0, seen = 0;
    bool narrow;
    build(sc, &m);
    for (unsigned c = 0; c < sc->cpus; c++)
        total += sc->n[c];
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    while (perch_etl_next(r, &ev) == 0) {
        int best = -1;
        for (unsigned c = 0; c < sc->cpus; c++)
            if (at[c] < sc->n[c] && (best < 0 || sc->ts[c][at[c]] < sc->ts[best][at[best]]))
                best = (int)c;
        assert_true(best >= 0);
        assert_int_equal(ev.cpu, best);
        assert_int_equal(ev.timestamp, sc->ts[best][at[best]]);
        at[best]++;
        seen++;
    }
    assert_int_equal(seen, total);
    assert_int_equal(perch_etl_stats_of(r)->records, total);
    narrow = r->narrow.on;
    perch_etl_destroy(r);
    free(m.p);
    return narrow;
}

static void test_steady_stays_narrow(void **state)
{
    static const unsigned cpus[] = {1, 2, 3, 4, 5, 8, 17, 37};
    struct scenario *sc = malloc(sizeof *sc);
    (void)state;
    for (unsigned k = 0; k < sizeof cpus / sizeof cpus[0]; k++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            fill_steady(sc, cpus[k], (uint64_t)1 << 40, seed * 7919);
            assert_true(check_order(sc));
        }
    free(sc);
}

/* One CPU jumps 2^62 ticks ahead a third of the way in (past the narrow range with any
 * shift; with one or two records, from its first). */
static void test_jump_goes_wide(void **state)
{
    struct scenario *sc = malloc(sizeof *sc);
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        unsigned c = (unsigned)(seed % 5);
        fill_steady(sc, 5, 1000, seed);
        for (unsigned i = sc->n[c] / 3; i < sc->n[c]; i++)
            sc->ts[c][i] += (uint64_t)1 << 62;
        assert_false(check_order(sc));
    }
    free(sc);
}

/* A CPU goes back in time below every CPU's first record (the reader counts the time-order
 * error and still yields the records in the merge's order). */
static void test_back_below_base_goes_wide(void **state)
{
    struct scenario *sc = malloc(sizeof *sc);
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        fill_steady(sc, 4, 5000, seed);
        sc->n[2] = PER_CPU;
        for (unsigned i = 0; i < PER_CPU; i++)
            sc->ts[2][i] = i < 30 ? 5100 + i : 17 + i; /* back below the first heads */
        assert_false(check_order(sc));
    }
    free(sc);
}

/* Timestamps near 2^64, up to UINT64_MAX itself: the first heads are past 2^62, so the reader
 * never takes the narrow form. With some seeds a CPU then goes back to small timestamps,
 * which ts - base would wrap into the narrow range from so high a base. */
static void test_huge_timestamps_stay_wide(void **state)
{
    struct scenario *sc = malloc(sizeof *sc);
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        fill_steady(sc, 3, UINT64_MAX - 200, seed);
        for (unsigned c = 0; c < 3; c++)
            sc->ts[c][sc->n[c] - 1] = UINT64_MAX;
        if (seed % 2 == 0) {
            sc->n[1] = PER_CPU;
            for (unsigned i = 0; i < PER_CPU; i++)
                sc->ts[1][i] = i < 10 ? UINT64_MAX - 150 + i : i;
        }
        assert_false(check_order(sc));
    }
    free(sc);
}

/* The edge of the range with two streams (shift 2: ts - base must be below 2^62 - 1): a
 * head at base + 2^62 - 2 keeps the narrow form, one at base + 2^62 - 1 ends it. */
static void test_range_edge(void **state)
{
    struct scenario *sc = malloc(sizeof *sc);
    const uint64_t base = 77, span = UINT64_MAX >> 2;
    (void)state;
    for (unsigned past = 0; past < 2; past++) {
        memset(sc, 0, sizeof *sc);
        sc->cpus = 2;
        sc->n[0] = sc->n[1] = 4;
        sc->ts[0][0] = base;
        sc->ts[0][1] = base + 5;
        sc->ts[0][2] = sc->ts[0][3] = base + span - 1 + past;
        sc->ts[1][0] = base + 3;
        sc->ts[1][1] = base + span - 2;
        sc->ts[1][2] = sc->ts[1][3] = base + span - 2;
        assert_int_equal(check_order(sc), past == 0);
    }
    free(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_stays_narrow),
        cmocka_unit_test(test_jump_goes_wide),
        cmocka_unit_test(test_back_below_base_goes_wide),
        cmocka_unit_test(test_huge_timestamps_stay_wide),
        cmocka_unit_test(test_range_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
