/*
 * The hand-over of the sample log's groups between the builder thread and the writer
 * (export/groups_each.c, perch__samplelog_each_prepared with two slots): while the writer
 * visits a group, the builder prepares the group after it, also when the builder got there
 * first and slept; an error of the builder comes back after the groups prepared before it
 * were visited; an error of the writer stops the builder, asleep or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "perch/thread.h"

#define GROUPS  6
#define WAIT_MS 5000 /* the most a visit waits for the builder */

struct run {
    _Atomic size_t prepared; /* groups the builder prepared */
    size_t visited;          /* the writer's */
    size_t fail_prepare;     /* prepare fails at this group (GROUPS: never) */
    size_t fail_visit;       /* visit fails at this visit (GROUPS: never) */
    bool next_ready[GROUPS]; /* visit i saw group i + 1 prepared before it returned */
};

/* One one-sample group per thread key 1 .. GROUPS. */
static void collect_groups(perch__collect *c)
{
    perch_export_options opt;
    perch_export_options_init(&opt);
    perch__collect_init(c, &opt, NULL);
    for (size_t i = 0; i < GROUPS; i++) {
        perch_sample_rec r;
        memset(&r, 0, sizeof r);
        r.kind = PERCH_SAMPLE_TIMER;
        r.thread_key = 1 + i;
        r.tid = (uint32_t)(100 + i);
        r.ts = 1000 + i;
        r.count = 1;
        r.ip = 0x1000 + i;
        assert_int_equal(perch__samplelog_add(c, &r), 0);
    }
}

static int prepare(void *ctx, const perch__group *g, size_t slot)
{
    struct run *r = ctx;
    (void)g;
    (void)slot;
    if (atomic_load(&r->prepared) == r->fail_prepare)
        return PERCH_ENOMEM;
    atomic_fetch_add(&r->prepared, 1);
    return 0;
}

/* Visit 0 lingers (the builder, done with groups 0 and 1, goes to sleep for group 2); every
 * visit then waits a while for the group after it. */
static int visit(void *ctx, size_t slot)
{
    struct run *r = ctx;
    size_t i = r->visited++;
    (void)slot;
    if (i == r->fail_visit)
        return PERCH_EIO;
    if (i == 0)
        perch_sleep_ms(200);
    for (unsigned ms = 0; i + 1 < GROUPS && ms < WAIT_MS; ms += 5) {
        if (atomic_load(&r->prepared) > i + 1 || atomic_load(&r->prepared) == r->fail_prepare)
            break;
        perch_sleep_ms(5);
    }
    r->next_ready[i] = atomic_load(&r->prepared) > i + 1;
    return 0;
}

static int each(struct run *r)
{
    perch__collect c;
    int err;
    collect_groups(&c);
    err = perch__samplelog_each_prepared(&c, 2, UINT64_MAX, prepare, visit, r);
    perch__collect_free(&c);
    return err;
}

/* Two slots: the builder may prepare group i + 1 as soon as the writer is done with i - 1,
 * so while the writer visits group i. Before (2026-12-06) a builder that slept was woken only
 * when no group was built ahead: after visit i, not during it, and the two threads took turns
 * instead of overlapping. */
static void test_next_prepared_during_visit(void **state)
{
    struct run r = {.fail_prepare = GROUPS, .fail_visit = GROUPS};
    (void)state;
    assert_int_equal(each(&r), 0);
    assert_int_equal(r.visited, GROUPS);
    assert_int_equal(atomic_load(&r.prepared), GROUPS);
    for (size_t i = 0; i + 1 < GROUPS; i++) {
        print_message("  visit %zu: group %zu %s\n", i, i + 1,
                      r.next_ready[i] ? "prepared" : "not prepared");
        assert_true(r.next_ready[i]);
    }
}

/* The builder fails at group 2 while the writer lingers in visit 0: groups 0 and 1 are
 * visited, then the error returns. */
static void test_builder_error(void **state)
{
    struct run r = {.fail_prepare = 2, .fail_visit = GROUPS};
    (void)state;
    assert_int_equal(each(&r), PERCH_ENOMEM);
    assert_int_equal(r.visited, 2);
}

/* The writer fails at visit 1 (the builder asleep or building): the builder stops. */
static void test_writer_error(void **state)
{
    struct run r = {.fail_prepare = GROUPS, .fail_visit = 1};
    (void)state;
    assert_int_equal(each(&r), PERCH_EIO);
    assert_int_equal(r.visited, 2);
    assert_true(atomic_load(&r.prepared) <= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_prepared_during_visit),
        cmocka_unit_test(test_builder_error),
        cmocka_unit_test(test_writer_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
