/*
 * perch_symhits + perch_symbolize + perch_symnames on a synthetic record stream whose user
 * module is a real fixture image (tests/fixtures/sym, found beside itself): the frames of a
 * sampled stack and the sample's IP are credited to the module holding them, resolved once
 * per module identity (the same image in a second process shares the names), written as one
 * record per run of addresses, read back by perch_symnames under either module key; a module
 * nobody has files for is reported not found; a second pass over a stream that already has
 * the names asks for nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym_fixture.h"

#define BASE  0x7ff600000000ull
#define BASE2 0x7ff700000000ull
#define KBASE 0xfffff80000000000ull

struct got {
    perch_symbol_rec rec[64];
    char names[64][128];
    int n;
    perch_symbolize_module mod[8];
    int pdb_status[8];
    int nmod;
};

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    struct got *g = ctx;
    assert_true(g->n < 64);
    g->rec[g->n] = *rec;
    snprintf(g->names[g->n], sizeof g->names[0], "%s", rec->name);
    g->rec[g->n].name = g->names[g->n];
    g->n++;
    return 0;
}

static int on_module(void *ctx, const perch_symbolize_module *m)
{
    struct got *g = ctx;
    assert_true(g->nmod < 8);
    g->mod[g->nmod] = *m;
    g->pdb_status[g->nmod] = m->rep ? m->rep->pdb_status : -1;
    g->nmod++;
    return 0;
}

/* Two procedures of the image, from Perch's own reader of it. */
static void two_procs(const char *path, perch_sym_func out[2], perch_sym_module *id)
{
    perch_resolver *r = NULL;
    const perch_symtab *tab;
    const perch_sym_report *rep;
    const char *why;
    perch_input in;
    perch_pe *pe = NULL;
    int k = 0;
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_resolver_file(r, path, &tab, &rep, &why), 0);
    for (size_t i = 0; i < perch_symtab_count(tab) && k < 2; i++) {
        perch_symtab_get(tab, i, &out[k]);
        if (out[k].source == PERCH_SYM_PROC && out[k].size > 0x10)
            k++;
    }
    assert_int_equal(k, 2);
    static char names[2][128];
    for (int i = 0; i < 2; i++) {
        snprintf(names[i], sizeof names[i], "%s", out[i].name);
        out[i].name = names[i];
    }
    perch_resolver_destroy(r);
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_pe_read(&in, &pe, &why), 0);
    perch_input_close(&in);
    const perch_pe_info *pi = perch_pe_get_info(pe);
    static char pdb[512];
    snprintf(pdb, sizeof pdb, "%s", pi->pdb_path);
    *id = (perch_sym_module){
        path, pi->size_of_image, pi->time_date_stamp, true, pi->pdb_guid, pi->pdb_age, pdb};
    perch_pe_destroy(pe);
}

static void feed(const perch_sink *s, const perch_sym_module *id, const uint64_t *frames,
                 const struct got *existing)
{
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.pointer_size = 8;
    assert_int_equal(s->trace_info(s->ctx, &info), 0);
    perch_thread_rec t = {10, 1, 100, 1000, 0, 0, 0, "main"};
    assert_int_equal(s->thread(s->ctx, &t), 0);
    perch_module_rec m = {
        20,       1,    1000,         BASE,        id->size_of_image, 0, 0, 0, id->time_date_stamp,
        id->path, true, id->pdb_guid, id->pdb_age, id->pdb_name};
    assert_int_equal(s->module(s->ctx, &m), 0);
    m.key = 21, m.process_key = 2, m.pid = 2000, m.base = BASE2;
    assert_int_equal(s->module(s->ctx, &m), 0);
    perch_module_rec k = {30,       0,
                          0,        KBASE,
                          0x100000, 0,
                          0,        0,
                          0x1234,   "\\SystemRoot\\system32\\ntoskrnl.exe",
                          true,     id->pdb_guid,
                          9,        "ntkrnlmp.pdb"};
    assert_int_equal(s->module(s->ctx, &k), 0);
    perch_stack_rec st = {1, 4, 1, frames};
    assert_int_equal(s->stack(s->ctx, &st), 0);
    for (int i = 0; i < 3; i++) {
        perch_sample_rec sm;
        memset(&sm, 0, sizeof sm);
        sm.thread_key = 10, sm.ts = 100 + (uint64_t)i, sm.ip = frames[1], sm.module_key = 20;
        sm.stack_id = 1, sm.count = 1;
        assert_int_equal(s->sample(s->ctx, &sm), 0);
    }
    for (int i = 0; existing && i < existing->n; i++)
        assert_int_equal(s->symbol(s->ctx, &existing->rec[i]), 0);
}

static void run(const perch_sym_module *id, const uint64_t *frames, const struct got *existing,
                struct got *g)
{
    perch_symhits *h = NULL;
    perch_resolver *r = NULL;
    perch_sink sink;
    perch_symbolize_ops ops = {g, on_symbol, on_module};
    memset(g, 0, sizeof *g);
    assert_int_equal(perch_symhits_create(&h), 0);
    perch_symhits_sink(h, &sink);
    feed(&sink, id, frames, existing);
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_symbolize(h, r, &ops), 0);
    perch_resolver_destroy(r);
    perch_symhits_destroy(h);
}

static void test_symbolize(void **state)
{
    perch_sym_func p[2];
    perch_sym_module id;
    struct got g, again;
    (void)state;
    two_procs(sym_fixture_path("x86_64/app.exe"), p, &id);
    uint64_t frames[4] = {KBASE + 0x1234, BASE + p[0].rva + 4, BASE + p[0].rva + 8,
                          BASE + p[1].rva + 0x10};
    run(&id, frames, NULL, &g);
    assert_int_equal(g.nmod, 2); /* the image (both keys) and the kernel */
    assert_int_equal(g.mod[0].module_key, 20);
    assert_int_equal(g.mod[0].modules, 2);
    assert_int_equal(g.mod[0].addresses, 3);
    assert_int_equal(g.mod[0].named, 3);
    assert_int_equal(g.pdb_status[0], PERCH_SYMST_FOUND);
    assert_int_equal(g.mod[1].module_key, 30);
    assert_int_equal(g.mod[1].named, 0);
    assert_int_equal(g.pdb_status[1], PERCH_SYMST_NOT_FOUND);
    assert_int_equal(g.n, 2); /* two runs: p[0] (two hits) and p[1] */
    assert_string_equal(g.rec[0].name, p[0].name);
    assert_int_equal(g.rec[0].func_rva, p[0].rva);
    assert_string_equal(g.rec[1].name, p[1].name);
    assert_int_equal(g.rec[1].source, PERCH_SYM_PROC);

    /* the names, read back under the other process's key too */
    perch_symnames *n = NULL;
    perch_sym_func f;
    int64_t off;
    assert_int_equal(perch_symnames_create(&n), 0);
    perch_module_rec m = {
        21,      2,    2000,        BASE2,      id.size_of_image, 0, 0, 0, id.time_date_stamp,
        id.path, true, id.pdb_guid, id.pdb_age, id.pdb_name};
    assert_int_equal(perch_symnames_module(n, &m), 0);
    m.key = 20;
    assert_int_equal(perch_symnames_module(n, &m), 0);
    for (int i = 0; i < g.n; i++)
        assert_int_equal(perch_symnames_symbol(n, &g.rec[i]), 0);
    assert_true(perch_symnames_lookup(n, 21, p[1].rva + 0x10, &f, &off));
    assert_string_equal(f.name, p[1].name);
    assert_int_equal(off, 0x10);
    assert_false(perch_symnames_lookup(n, 99, p[1].rva, &f, &off));
    perch_symbol_rec late = g.rec[0];
    assert_int_equal(perch_symnames_symbol(n, &late), 0);
    late.module_key = 77;
    assert_int_equal(perch_symnames_symbol(n, &late), 0);
    perch_symnames_stats st;
    perch_symnames_get_stats(n, &st);
    assert_int_equal(st.names, 2);
    assert_int_equal(st.late, 1);
    assert_int_equal(st.unknown_module, 1);
    perch_symnames_destroy(n);

    /* a stream that carries the names already: nothing new, nothing searched */
    run(&id, frames, &g, &again);
    assert_int_equal(again.n, 0);
    assert_int_equal(again.mod[0].named_before, 3);
    assert_int_equal(again.pdb_status[0], -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
