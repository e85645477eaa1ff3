/*
 * The symbol worker's names in outputs that stand on their own (perch_symworker_names): a
 * flight recorder (snapshots on the test's thread) and a capture rotation (files on the model
 * thread) get the names wrapper; a record stream that hits three functions of the fixture
 * image, then, 10 s later, one of them again from another stack, is fed to the worker's sink,
 * the recorder and the rotation. Each snapshot and each rotated file read back must name
 * exactly the functions its own samples and stacks hit, as Perch's resolver names them, for
 * its own module key: a snapshot of everything and the first file name three functions, a
 * snapshot of the last second and the second file only the one the late sample hit. Without
 * the wrapper a snapshot has no names, as before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs_fixture.h"
#include "perch/capture.h"
#include "perch/capture_rotate.h"
#include "perch/error.h"
#include "perch/fs.h"
#include "perch/recorder.h"
#include "perch/sym.h"
#include "sym_fixture.h"

/* What an output read back holds: its symbol records, by module key and function. */
typedef struct read_back {
    perch_symnames *names;
    int records;
    uint64_t keys; /* OR of the records' module keys */
} read_back;

static int rb_module(void *ctx, const perch_module_rec *rec)
{
    return perch_symnames_module(((read_back *)ctx)->names, rec);
}

static int rb_symbol(void *ctx, const perch_symbol_rec *rec)
{
    read_back *rb = ctx;
    rb->records++;
    rb->keys |= rec->module_key;
    return perch_symnames_symbol(rb->names, rec);
}

static void read_capture(const uint8_t *data, size_t len, read_back *rb)
{
    perch_sink s;
    perch_capture_status st;
    memset(&s, 0, sizeof s);
    memset(rb, 0, sizeof *rb);
    assert_int_equal(perch_symnames_create(&rb->names), 0);
    s.ctx = rb, s.module = rb_module, s.symbol = rb_symbol;
    assert_int_equal(perch_capture_replay_memory(data, len, &s, &st), 0);
    assert_int_equal(st.stop, PERCH_CAPTURE_STOP_END);
}

/* rb names rva[i] as the reference table does when want[i], and not at all otherwise. */
static void expect_names(read_back *rb, const perch_symtab *ref, const uint32_t rva[3],
                         const bool want[3])
{
    for (int i = 0; i < 3; i++) {
        perch_sym_func got, exp;
        int64_t o1, o2;
        bool named = perch_symnames_lookup(rb->names, 20, rva[i], &got, &o1);
        assert_int_equal(named, want[i]);
        if (named) {
            assert_true(perch_symtab_lookup(ref, rva[i], &exp, &o2));
            assert_string_equal(got.name, exp.name);
            assert_int_equal(o1, o2);
        }
    }
    perch_symnames_destroy(rb->names);
}

static void snapshot(perch_recorder *rec, double seconds, read_back *rb)
{
    perch_memory_out mem;
    perch_output out;
    size_t len;
    perch_output_memory(&out, &mem, 1u << 24);
    assert_int_equal(perch_recorder_snapshot(rec, seconds, &out), 0);
    assert_int_equal(out.close(out.ctx), 0);
    uint8_t *bytes = perch_output_memory_take(&mem, &len);
    read_capture(bytes, len, rb);
    perch_free(bytes);
}

static void read_file(const char *dir, const char *name, read_back *rb)
{
    char *p = perch_fs_join(dir, name);
    size_t len;
    uint8_t *bytes = perch_test_read_file(p, &len);
    assert_non_null(bytes);
    read_capture(bytes, len, rb);
    free(bytes);
    perch_free(p);
}

/* A sink feeding two. */
typedef struct pair {
    perch_sink a, b;
} pair;

#define TWO(name, type)                                                                            \
    static int two_##name(void *ctx, const type *rec)                                              \
    {                                                                                              \
        pair *p = ctx;                                                                             \
        int err = p->a.name(p->a.ctx, rec);                                                        \
        return err ? err : p->b.name(p->b.ctx, rec);                                               \
    }
TWO(trace_info, perch_trace_info)
TWO(thread, perch_thread_rec)
TWO(module, perch_module_rec)
TWO(stack, perch_stack_rec)
TWO(sample, perch_sample_rec)

static int two_finish(void *ctx)
{
    pair *p = ctx;
    int err = p->a.finish(p->a.ctx);
    return err ? err : p->b.finish(p->b.ctx);
}

/* 10 s after the fixture's samples: one at rva[2] from a new stack of that one frame. */
static void feed_late(const perch_sink *ws, const perch_sink *s, const uint32_t rva[3])
{
    uint64_t frame = SYM_FIXTURE_BASE + rva[2];
    perch_stack_rec st = {2, 1, 0, &frame};
    perch_sample_rec sm;
    memset(&sm, 0, sizeof sm);
    sm.thread_key = 10, sm.ts = 100000000, sm.ip = frame;
    sm.module_key = 20, sm.stack_id = 2, sm.count = 1;
    const perch_sink *both[2] = {ws, s};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(both[k]->stack(both[k]->ctx, &st), 0);
        assert_int_equal(both[k]->sample(both[k]->ctx, &sm), 0);
    }
}

static uint64_t wall(void *ctx)
{
    return ++*(uint64_t *)ctx;
}

static void rotation_opts(perch_capture_rotate_opts *o, const char *dir, uint64_t *clock)
{
    perch_capture_rotate_opts_default(o);
    o->dir = dir;
    o->prefix = "names";
    o->max_total_bytes = 0;
    o->wall_ms = wall;
    o->clock_ctx = clock;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const perch_fs_entry *)a)->name, ((const perch_fs_entry *)b)->name);
}

static void test_names_in_snapshots_and_rotated_files(void **state)
{
    (void)state;
    const char *path = sym_fixture_path("x86_64/app.exe"), *dir = "sym_names_rotate";
    perch_pe *pe = sym_fixture_pe(path);
    const char *why;
    const perch_pe_info *pi = perch_pe_get_info(pe);
    uint32_t rva[3] = {pi->functions[0].begin + 2, pi->functions[1].begin + 3,
                       pi->functions[2].begin};

    perch_resolver *r = NULL;
    perch_symbackend be;
    perch_symworker *w = NULL;
    perch_symworker_options o = {.size = sizeof o};
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_symbackend_resolver_create(r, &be), 0);
    o.backend = be;
    assert_int_equal(perch_symworker_create(&o, &w), 0);

    perch_recorder_opts ro;
    perch_recorder *rec = NULL, *bare = NULL;
    perch_recorder_opts_default(&ro);
    assert_int_equal(perch_recorder_create(&ro, &bare), 0);
    perch_symworker_names(w, false, &ro.names);
    assert_int_equal(perch_recorder_create(&ro, &rec), 0);
    perch_capture_rotate_opts rot;
    perch_capture_rotate *rt = NULL;
    uint64_t clock = 1764547200000ull;
    fx_empty_dir(dir);
    rotation_opts(&rot, dir, &clock);
    perch_symworker_names(w, true, &rot.names);
    assert_int_equal(perch_capture_rotate_create(&rot, &rt), 0);

    pair out, fan;
    perch_sink ws, both, all;
    perch_symworker_sink(w, &ws);
    perch_recorder_sink(rec, &out.a);
    perch_capture_rotate_sink(rt, &out.b);
    both = (perch_sink){&out,       two_trace_info, NULL,       two_thread, two_module, NULL,
                        two_stack,  NULL,           two_sample, NULL,       NULL,       NULL,
                        two_finish, NULL,           false,      false};
    perch_recorder_sink(bare, &fan.a);
    fan.b = both;
    all = both;
    all.ctx = &fan;
    sym_fixture_feed(&ws, &all, path, pi, rva);
    assert_int_equal(perch_capture_rotate_now(rt), 0); /* the first file ends: 3 names */
    feed_late(&ws, &all, rva);
    assert_int_equal(all.finish(all.ctx), 0); /* the recorder's open segment joins its ring */

    const perch_symtab *ref;
    const perch_sym_report *rep;
    perch_resolver *refr = NULL;
    assert_int_equal(perch_resolver_create(NULL, true, &refr), 0);
    assert_int_equal(perch_resolver_file(refr, path, &ref, &rep, &why), 0);
    read_back rb;
    snapshot(rec, 0, &rb); /* everything held: the three functions */
    assert_int_equal(rb.records, 3);
    assert_int_equal(rb.keys, 20);
    expect_names(&rb, ref, rva, (bool[3]){true, true, true});
    snapshot(rec, 1, &rb); /* the last second: the late sample's function only */
    assert_int_equal(rb.records, 1);
    expect_names(&rb, ref, rva, (bool[3]){false, false, true});
    snapshot(bare, 0, &rb); /* no wrapper: no names */
    assert_int_equal(rb.records, 0);
    perch_symnames_destroy(rb.names);

    perch_fs_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(perch_fs_list(dir, 1000, &e, &n), 0);
    assert_int_equal(n, 2);
    qsort(e, n, sizeof *e, by_name);
    read_file(dir, e[0].name, &rb);
    assert_int_equal(rb.records, 3);
    expect_names(&rb, ref, rva, (bool[3]){true, true, true});
    read_file(dir, e[1].name, &rb);
    assert_int_equal(rb.records, 1);
    expect_names(&rb, ref, rva, (bool[3]){false, false, true});
    perch_fs_list_free(e, n);

    perch_capture_rotate_destroy(rt);
    perch_recorder_destroy(rec);
    perch_recorder_destroy(bare);
    perch_symworker_destroy(w);
    perch_symbackend_resolver_destroy(&be);
    perch_resolver_destroy(r);
    perch_resolver_destroy(refr);
    perch_pe_destroy(pe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_in_snapshots_and_rotated_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
