/*
 * The exporters' keyed varint logs (export/vlog.c) past their memory cap: every log reads
 * back the bytes put into it, spilled or not, including when a spill stops half-way (the
 * budget full while the segment table grows: PERCH_ELIMIT, which the gecko slice log survives
 * by dropping the slice and exporting on), and a store whose staged bytes could not be written
 * fails its reads instead of reading what never came.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "perch/scratch.h"

#define FIRST 40  /* logs spilled by the first spill: 40 segments, a table of 64 */
#define SECOND 32 /* logs of the second spill: the table grows to 128 at its 25th */

/* The values of log i's one entry. */
static void entry_of(size_t i, uint64_t e[3])
{
    e[0] = 1000 + i;
    e[1] = 7 * i;
    e[2] = 300 + i;
}

static void put_log(perch__vlogs *s, perch__budget *b, size_t i)
{
    perch__vlog *l;
    uint64_t e[3];
    entry_of(i, e);
    assert_int_equal(perch__vlogs_get(s, b, i + 1, 0, true, &l), 0);
    assert_int_equal(perch__vlogs_put(s, b, l, e, 3), 0);
}

/* Every log of 0 .. n reads back its one entry. */
static void check_logs(perch__vlogs *s, perch__budget *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        perch__vlog *l;
        const uint8_t *data;
        uint8_t want[30];
        uint64_t e[3];
        size_t len;
        entry_of(i, e);
        assert_int_equal(perch__vlogs_get(s, b, i + 1, 0, false, &l), 0);
        assert_non_null(l);
        assert_int_equal(perch__vlogs_read(s, b, l, &data, &len), 0);
        assert_int_equal(len, perch__put_varints(want, e, 3));
        assert_memory_equal(data, want, len);
    }
}

/* A spill that fails half-way (the segment table cannot grow) leaves every log readable:
 * the logs staged before the failure were released, so their bytes must reach the store
 * (before the fix they were dropped with the stage: their segments named bytes never written,
 * read back as PERCH_ETRUNC or as the zeroes of a hole). */
static void test_spill_fails_half_way(void **state)
{
    perch__budget b = {UINT64_MAX, 0};
    perch__vlogs s;
    perch__vlog *l;
    uint64_t e[3];
    (void)state;
    perch__vlogs_init(&s, 0, perch_scratch_open_memory, NULL);
    for (size_t i = 0; i < FIRST; i++)
        put_log(&s, &b, i);
    s.memory = 1; /* a put that grows a log spills every log first */
    put_log(&s, &b, FIRST);
    assert_int_equal(s.spills, 1);
    assert_int_equal(s.seg_count, FIRST);
    s.memory = 0;
    for (size_t i = FIRST + 1; i < FIRST + SECOND; i++)
        put_log(&s, &b, i);
    /* the second spill: the table grows from 64 to 128 segments (1 KiB) at its 25th log,
     * when the 24 logs released so far gave back 768 bytes */
    b.limit = atomic_load(&b.used);
    s.memory = 1;
    assert_int_equal(perch__vlogs_get(&s, &b, 2, 0, false, &l), 0); /* log 1: spilled */
    entry_of(1, e);
    assert_int_equal(perch__vlogs_put(&s, &b, l, e, 3), PERCH_ELIMIT);
    assert_int_equal(s.seg_count, 64);
    b.limit = UINT64_MAX;
    s.memory = 0;
    check_logs(&s, &b, FIRST + SECOND); /* log 1's second put failed: one entry */
    perch__vlogs_free(&s, &b);
    assert_int_equal(atomic_load(&b.used), 0);
}

/* A spill whose staged bytes cannot be written (a memory store at its cap: PERCH_ELIMIT)
 * lost the logs it released: every later read of a spilled log fails with that error, where
 * it read back the zeroes of a hole once a later spill wrote past them. */
static void test_stage_write_fails(void **state)
{
    perch__budget b = {UINT64_MAX, 0};
    size_t cap = 300; /* the first spill's 40 logs fit, the second's 32 more do not */
    perch__vlogs s;
    perch__vlog *l;
    const uint8_t *data;
    size_t len;
    (void)state;
    perch__vlogs_init(&s, 0, perch_scratch_open_memory, &cap);
    for (size_t i = 0; i < FIRST; i++)
        put_log(&s, &b, i);
    s.memory = 1;
    put_log(&s, &b, FIRST);
    s.memory = 0;
    for (size_t i = FIRST + 1; i < FIRST + SECOND; i++)
        put_log(&s, &b, i);
    s.memory = 1;
    assert_int_equal(perch__vlogs_get(&s, &b, 2, 0, false, &l), 0);
    assert_int_equal(perch__vlogs_put(&s, &b, l, (const uint64_t[3]){1, 2, 3}, 3), PERCH_ELIMIT);
    s.memory = 0;
    assert_int_equal(perch__vlogs_get(&s, &b, FIRST + 1, 0, false, &l), 0);
    assert_int_equal(perch__vlogs_read(&s, &b, l, &data, &len), PERCH_ELIMIT);
    assert_int_equal(perch__vlogs_get(&s, &b, 1, 0, false, &l), 0);
    assert_int_equal(perch__vlogs_read(&s, &b, l, &data, &len), PERCH_ELIMIT);
    perch__vlogs_free(&s, &b);
    assert_int_equal(atomic_load(&b.used), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_fails_half_way),
        cmocka_unit_test(test_stage_write_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
