/*
 * Model: process, thread and module records are upserts (include/perch/records.h). Each
 * entity's record arrives before any record that names its key (provisional entities
 * included), again when it changes (name, end, exit status, PDB identity, unload), and the last
 * record of a key is the entity's final state; statistics count each entity once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model_synth.h"

#define K(x) (0xfffff80000000000ull + (x))

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static const rec_thread *thread_of(const recorder *r, uint32_t tid)
{
    for (int i = 0; i < r->nthreads; i++)
        if (r->threads[i].r.tid == tid)
            return &r->threads[i];
    return NULL;
}

/* A sample of a thread with no event yet: its provisional record comes first, then the
 * Thread event completes it (pid, process) and the End ends it. */
static void test_provisional_thread_first(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_sample(&s, 100, 0, K(0x10), 48));
    assert_int_equal(r.nthreads, 1); /* sent at once, before the sample is emitted */
    assert_true(r.threads[0].r.flags & PERCH_ENTITY_PROVISIONAL);
    assert_int_equal(r.threads[0].r.pid, UINT32_MAX);
    uint64_t key = r.threads[0].r.key;
    feed(m, ev_walk(&s, 101, 100, 48, (uint64_t[]){K(0x10)}, 1, 8));
    feed(m, ev_process(&s, 3, 150, 20, 4, "svc.exe", "svc.exe -k"));
    feed(m, ev_thread(&s, 3, 200, 20, 48, "pump"));
    const rec_thread *t = thread_of(&r, 48);
    assert_non_null(t);
    assert_int_equal(t->r.key, key);
    assert_int_equal(t->r.pid, 20);
    assert_int_not_equal(t->r.process_key, 0);
    assert_string_equal(t->name, "pump");
    int before = r.upserts;
    feed(m, ev_thread(&s, 2, 300, 20, 48, NULL));
    assert_true(r.upserts > before);
    t = thread_of(&r, 48);
    assert_true(t->r.flags & PERCH_ENTITY_ENDED);
    assert_int_equal(t->r.end_ts, 300);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.unknown_refs, 0);
    assert_int_equal(STAT(&r, "threads.total"), 1);
    assert_int_equal(r.nthreads, 1);
    perch_model_destroy(m);
}

/* A process is sent when first known and again with its end; a rename by ThreadSetName sends
 * the thread again; an unchanged rundown repeat sends nothing. */
static void test_changes_are_sent(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 1, 10, 30, 4, "app.exe", "app.exe /x"));
    assert_int_equal(r.nprocs, 1);
    assert_string_equal(r.procs[0].name, "app.exe");
    feed(m, ev_thread(&s, 1, 20, 30, 60, NULL));
    int sent = r.upserts + r.nthreads;
    feed(m, ev_thread(&s, 4, 30, 30, 60, NULL)); /* DCEnd: nothing changed */
    assert_int_equal(r.upserts + r.nthreads, sent);
    feed(m, ev_process(&s, 2, 40, 30, 4, "app.exe", "app.exe /x"));
    assert_true(r.procs[0].r.flags & PERCH_ENTITY_ENDED);
    assert_int_equal(r.procs[0].r.end_ts, 40);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.unknown_refs, 0);
    assert_int_equal(STAT(&r, "processes.total"), 1);
    perch_model_destroy(m);
}

/* A module is sent when mapped, again when its PDB identity arrives, and last at unload. */
static void test_module_updates(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 10, 30, 4, "app.exe", "app.exe"));
    feed(m, ev_image(&s, 10, 20, 30, 0x400000, 0x10000, "C:\\app.exe"));
    assert_int_equal(r.nmods, 1);
    assert_false(r.mods[0].r.has_pdb);
    feed(m, ev_rsds(&s, 21, 30, 0x400000, 0x40, 3, "app.pdb"));
    assert_true(r.mods[0].r.has_pdb);
    assert_string_equal(r.mods[0].pdb, "app.pdb");
    feed(m, ev_image(&s, 2, 30, 30, 0x400000, 0x10000, "C:\\app.exe"));
    assert_int_equal(r.mods[0].r.unload_ts, 30);
    assert_int_equal(r.nmods, 1);
    assert_true(r.upserts >= 2);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(STAT(&r, "modules.total"), 1);
    assert_int_equal(r.unknown_refs, 0);
    perch_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provisional_thread_first),
        cmocka_unit_test(test_changes_are_sent),
        cmocka_unit_test(test_module_updates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
