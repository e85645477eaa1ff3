/*
 * The symbol worker with the portable backend (a resolver finding the fixture image and its
 * PDB beside it): a record stream fed to the worker's sink while a tap sits in front of a
 * capture writer; pumps queue each new (identity, RVA) once, the worker names them off the
 * model thread, the tap writes the records into the capture (and its finish waits for the
 * worker), and the capture read back names the frames as Perch's own resolver does. A queue
 * of one address, while the worker is held in its first load, drops the rest and counts them;
 * a wait for a busy worker ends at its time limit however often it is woken; an idle pump
 * that fails at any of its allocations is counted and retried by the next; a stop waits for
 * the lookup in progress, at most its time limit.
 * A tap made late writes the names for the module keys it saw. The bounds for a long run
 * (stacks, the address set, records) hold and are counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "perch/sym.h"
#include "perch/thread.h"
#include "sym/hits_internal.h"
#include "util/mem.h"
#include "sym/worker_internal.h"
#include "sym_fixture.h"

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    return perch_symnames_symbol(ctx, rec);
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    return perch_symnames_module(ctx, rec);
}

struct keys_seen {
    uint64_t key[8];
    int n;
};

static int count_symbol(void *ctx, const perch_symbol_rec *rec)
{
    struct keys_seen *k = ctx;
    if (k->n < 8)
        k->key[k->n] = rec->module_key;
    k->n++;
    return 0;
}

/* A tap made late that sees only another process's copy of the image (module key 21) gets
 * the names under that key; one that saw no module of it gets none. */
static void late_taps(perch_symworker *w, const perch_sink *ws, const char *path,
                      const perch_pe_info *pi)
{
    struct keys_seen late = {{0}, 0}, blind = {{0}, 0};
    perch_sink a, b, ta, tb;
    perch_symworker_tap *t1 = NULL, *t2 = NULL;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.ctx = &late, a.symbol = count_symbol;
    b.ctx = &blind, b.symbol = count_symbol;
    assert_int_equal(perch_symworker_tap_create(w, &a, &t1), 0);
    assert_int_equal(perch_symworker_tap_create(w, &b, &t2), 0);
    perch_symworker_tap_sink(t1, &ta);
    perch_symworker_tap_sink(t2, &tb);
    perch_module_rec m = {
        21,   2,    2000,         SYM_FIXTURE_BASE, pi->size_of_image, 0, 0, 0, pi->time_date_stamp,
        path, true, pi->pdb_guid, pi->pdb_age,      pi->pdb_path};
    assert_int_equal(ws->module(ws->ctx, &m), 0);
    assert_int_equal(ta.module(ta.ctx, &m), 0);
    assert_int_equal(perch_symworker_tap_flush(t1), 0);
    assert_int_equal(perch_symworker_tap_flush(t2), 0);
    assert_int_equal(perch_symworker_tap_flush(t1), 0); /* each once */
    assert_int_equal(late.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(late.key[i], 21);
    assert_int_equal(blind.n, 0);
    perch_symworker_tap_destroy(t1);
    perch_symworker_tap_destroy(t2);
}

static void test_worker(void **state)
{
    (void)state;
    const char *path = sym_fixture_path("x86_64/app.exe");
    perch_input in;
    perch_pe *pe = sym_fixture_pe(path);
    const char *why;
    const perch_pe_info *pi = perch_pe_get_info(pe);
    uint32_t rva[3] = {pi->functions[0].begin + 2, pi->functions[1].begin + 3,
                       pi->functions[2].begin};

    perch_resolver *r = NULL, *ref = NULL;
    perch_symbackend be;
    perch_symworker *w = NULL;
    perch_symworker_options o = {.size = sizeof o};
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_symbackend_resolver_create(r, &be), 0);
    o.backend = be;
    assert_int_equal(perch_symworker_create(&o, &w), 0);

    perch_memory_out mem;
    perch_output out;
    perch_capture_writer_opts wo;
    perch_capture_writer *cw = NULL;
    perch_sink writer, tapped, ws;
    perch_symworker_tap *tap = NULL;
    perch_output_memory(&out, &mem, 1u << 24);
    perch_capture_writer_opts_default(&wo);
    assert_int_equal(perch_capture_writer_create(&out, &wo, &cw), 0);
    perch_capture_writer_sink(cw, &writer);
    assert_int_equal(perch_symworker_tap_create(w, &writer, &tap), 0);
    perch_symworker_tap_sink(tap, &tapped);
    perch_symworker_sink(w, &ws);
    sym_fixture_feed(&ws, &tapped, path, pi, rva);
    assert_int_equal(perch_symworker_pump(w), 0);
    assert_int_equal(perch_symworker_pump(w), 0); /* nothing new the second time */
    assert_int_equal(perch_symworker_wait(w, 10000), 0);
    perch_symworker_stats st;
    perch_symworker_get_stats(w, &st);
    assert_int_equal(st.queued, 3);
    assert_int_equal(st.named, 3);
    assert_int_equal(st.records, 3);
    assert_int_equal(st.modules_loaded, 1);
    assert_int_equal(perch_symworker_tap_flush(tap), 0);
    assert_int_equal(tapped.finish(tapped.ctx), 0);
    perch_capture_writer_destroy(cw);
    assert_int_equal(out.close(out.ctx), 0);
    size_t len;
    uint8_t *bytes = perch_output_memory_take(&mem, &len);

    /* read back: names as the resolver gives them */
    perch_symnames *n = NULL;
    perch_sink rs;
    perch_capture_status cs;
    assert_int_equal(perch_symnames_create(&n), 0);
    memset(&rs, 0, sizeof rs);
    rs.ctx = n, rs.module = on_module, rs.symbol = on_symbol;
    perch_input_memory(&in, bytes, len);
    assert_int_equal(perch_capture_replay(&in, &rs, &cs), 0);
    perch_input_close(&in);
    const perch_symtab *tab;
    const perch_sym_report *rep;
    assert_int_equal(perch_resolver_create(NULL, true, &ref), 0);
    assert_int_equal(perch_resolver_file(ref, path, &tab, &rep, &why), 0);
    for (int i = 0; i < 3; i++) {
        perch_sym_func got, want;
        int64_t o1, o2;
        assert_true(perch_symtab_lookup(tab, rva[i], &want, &o2));
        assert_true(perch_symnames_lookup(n, 20, rva[i], &got, &o1));
        assert_string_equal(got.name, want.name);
        assert_int_equal(o1, o2);
    }
    perch_symnames_destroy(n);
    perch_free(bytes);
    late_taps(w, &ws, path, pi);
    perch_resolver_destroy(ref);
    perch_symworker_tap_destroy(tap);
    perch_symworker_destroy(w);
    perch_symbackend_resolver_destroy(&be);
    perch_resolver_destroy(r);
    perch_pe_destroy(pe);
}

/* The fixture image, the starts of its first three functions, and the portable backend over
 * a resolver of its own. */
struct fx {
    const char *path;
    perch_pe *pe;
    const perch_pe_info *pi;
    uint32_t rva[3];
    perch_resolver *r;
    perch_symbackend be;
};

static void fx_open(struct fx *f)
{
    f->path = sym_fixture_path("x86_64/app.exe");
    f->pe = sym_fixture_pe(f->path);
    f->pi = perch_pe_get_info(f->pe);
    for (int i = 0; i < 3; i++)
        f->rva[i] = f->pi->functions[i].begin;
    f->r = NULL;
    assert_int_equal(perch_resolver_create(NULL, true, &f->r), 0);
    assert_int_equal(perch_symbackend_resolver_create(f->r, &f->be), 0);
}

static void fx_close(struct fx *f)
{
    perch_symbackend_resolver_destroy(&f->be);
    perch_resolver_destroy(f->r);
    perch_pe_destroy(f->pe);
}

/* A backend that holds the worker in load until released. */
struct held_backend {
    perch_symbackend inner;
    perch_mutex *m;
    perch_cond *c;
    bool go;
    bool entered; /* the worker is in load */
};

static int held_load(void *ctx, uint32_t ident, const perch_module_rec *rec)
{
    struct held_backend *h = ctx;
    perch_mutex_lock(h->m);
    h->entered = true;
    perch_cond_broadcast(h->c);
    while (!h->go)
        perch_cond_wait(h->c, h->m, UINT32_MAX);
    perch_mutex_unlock(h->m);
    return h->inner.load(h->inner.ctx, ident, rec);
}

static bool held_lookup(void *ctx, uint32_t ident, uint32_t rva, perch_sym_func *f)
{
    struct held_backend *h = ctx;
    return h->inner.lookup(h->inner.ctx, ident, rva, f);
}

/* A worker over inner held in its first load, its sink, and a tap (over nothing) fed the
 * fixture's records. */
static void held_worker(struct held_backend *h, const struct fx *f, uint32_t queue_cap,
                        perch_symworker **w, perch_symworker_tap **tap)
{
    perch_symworker_options o = {.size = sizeof o, .queue_cap = queue_cap};
    perch_sink ws, none, tapped;
    memset(&none, 0, sizeof none);
    memset(h, 0, sizeof *h);
    h->inner = f->be;
    assert_int_equal(perch_mutex_create(&h->m), 0);
    assert_int_equal(perch_cond_create(&h->c), 0);
    o.backend = (perch_symbackend){h, held_load, held_lookup};
    assert_int_equal(perch_symworker_create(&o, w), 0);
    perch_symworker_sink(*w, &ws);
    assert_int_equal(perch_symworker_tap_create(*w, &none, tap), 0);
    perch_symworker_tap_sink(*tap, &tapped);
    sym_fixture_feed(&ws, &tapped, f->path, f->pi, f->rva);
}

static void held_release(struct held_backend *h)
{
    perch_mutex_lock(h->m);
    h->go = true;
    perch_cond_broadcast(h->c);
    perch_mutex_unlock(h->m);
}

static void held_free(struct held_backend *h, perch_symworker *w, perch_symworker_tap *tap)
{
    perch_symworker_tap_destroy(tap);
    perch_symworker_destroy(w);
    perch_cond_destroy(h->c);
    perch_mutex_destroy(h->m);
}

/* Wakes every waiter on the worker's idle condition every 20 ms (as the worker does after
 * each request it ends), for at most 10 s, while the worker is held busy. */
struct nudger {
    perch_symworker *w;
    atomic_int stop;
};

static int nudge(void *arg)
{
    struct nudger *n = arg;
    for (int i = 0; i < 500 && !atomic_load(&n->stop); i++) {
        perch_mutex_lock(n->w->lock);
        perch_cond_broadcast(n->w->idle);
        perch_mutex_unlock(n->w->lock);
        perch_sleep_ms(20);
    }
    return 0;
}

static void test_queue_cap(void **state)
{
    (void)state;
    struct fx f;
    struct held_backend held;
    perch_symworker *w = NULL;
    perch_symworker_tap *tap = NULL;
    fx_open(&f);
    held_worker(&held, &f, 1, &w, &tap);
    assert_int_equal(perch_symworker_pump(w), 0); /* at most one popped and one waiting */
    /* The wait is a deadline: wake-ups that find the worker still busy do not restart it. */
    struct nudger nd = {w, 0};
    perch_thread *nt = NULL;
    assert_int_equal(perch_thread_start(nudge, &nd, "nudger", &nt), 0);
    uint64_t t0 = perch_monotonic_ns();
    assert_int_equal(perch_symworker_wait(w, 200), PERCH_ETIMEDOUT);
    uint64_t waited = perch_monotonic_ns() - t0;
    atomic_store(&nd.stop, 1);
    assert_int_equal(perch_thread_join(nt, NULL), 0);
    assert_true(waited >= 150000000u && waited < 5000000000u);
    held_release(&held);
    assert_int_equal(perch_symworker_wait(w, 10000), 0);
    perch_symworker_stats st;
    perch_symworker_get_stats(w, &st);
    assert_int_equal(st.queued + st.dropped, 3);
    assert_true(st.dropped >= 1 && st.queued >= 1);
    assert_int_equal(st.looked_up, st.queued);
    held_free(&held, w, tap);
    fx_close(&f);
    perch_symworker_destroy(NULL);
    assert_int_equal(perch_symworker_create(NULL, &w), PERCH_EINVAL);
}

/* A stop while the worker is inside the backend times out, and returns once the backend does;
 * what was still queued is dropped, not looked up. */
static void test_stop_waits_for_lookup(void **state)
{
    (void)state;
    struct fx f;
    struct held_backend held;
    perch_symworker *w = NULL;
    perch_symworker_tap *tap = NULL;
    perch_symworker_stats st;
    fx_open(&f);
    held_worker(&held, &f, 0, &w, &tap);
    assert_int_equal(perch_symworker_pump(w), 0);
    perch_mutex_lock(held.m);
    while (!held.entered)
        perch_cond_wait(held.c, held.m, UINT32_MAX);
    perch_mutex_unlock(held.m);
    uint64_t t0 = perch_monotonic_ns();
    assert_int_equal(perch_symworker_stop(w, 100), PERCH_ETIMEDOUT);
    assert_true(perch_monotonic_ns() - t0 >= 80000000u);
    held_release(&held);
    assert_int_equal(perch_symworker_stop(w, 10000), 0);
    perch_symworker_get_stats(w, &st);
    assert_int_equal(st.queued, 3);
    assert_int_equal(st.looked_up, 1); /* the one in progress; the two queued were dropped */
    assert_int_equal(perch_symworker_stop(w, 0), 0); /* again: already stopped */
    held_free(&held, w, tap);
    fx_close(&f);
    assert_int_equal(perch_symworker_stop(NULL, 0), 0);
}

/* The test thread's N-th allocation from now fails (the worker's own are left alone). */
static _Thread_local bool armed;
static _Thread_local int allocs_left;
static void *failing_realloc(void *p, size_t n)
{
    if (n != 0 && armed && allocs_left-- <= 0)
        return NULL;
    return perch__default_realloc(p, n);
}

/* Each allocation of an idle pump failing in turn: the failure is counted, and the next pump
 * queues every address the failed one did not (none is marked as queued without being so),
 * so all three are looked up. */
static void test_pump_failure_retried(void **state)
{
    (void)state;
    struct fx f;
    perch__realloc_fn saved = perch__realloc_hook;
    int failures = 0;
    fx_open(&f);
    for (int n = 0; n < 64; n++) {
        perch_symworker *w = NULL;
        perch_symworker_options o = {.size = sizeof o, .backend = f.be};
        perch_sink ws, none, tapped;
        perch_symworker_tap *tap = NULL;
        perch_symworker_stats st;
        memset(&none, 0, sizeof none);
        assert_int_equal(perch_symworker_create(&o, &w), 0);
        perch_symworker_sink(w, &ws);
        assert_int_equal(perch_symworker_tap_create(w, &none, &tap), 0);
        perch_symworker_tap_sink(tap, &tapped);
        sym_fixture_feed(&ws, &tapped, f.path, f.pi, f.rva);
        perch__realloc_hook = failing_realloc;
        armed = true;
        allocs_left = n;
        perch_symworker_idle(w);
        armed = false;
        perch__realloc_hook = saved;
        perch_symworker_get_stats(w, &st);
        bool failed = st.pump_failures == 1;
        assert_true(st.pump_failures <= 1);
        failures += failed;
        perch_symworker_idle(w); /* the retry (nothing new when the first one worked) */
        assert_int_equal(perch_symworker_wait(w, 10000), 0);
        perch_symworker_get_stats(w, &st);
        assert_int_equal(st.queued, 3);
        assert_int_equal(st.looked_up, 3);
        assert_int_equal(st.pump_failures, failed ? 1 : 0);
        perch_symworker_tap_destroy(tap);
        perch_symworker_destroy(w);
        if (!failed)
            break; /* every allocation of the pump has failed once */
    }
    assert_true(failures > 0);
    fx_close(&f);
}

#define NOP(name, type)                                                                            \
    static int nop_##name(void *ctx, const type *r)                                                \
    {                                                                                              \
        (void)ctx, (void)r;                                                                        \
        return 0;                                                                                  \
    }
NOP(info, perch_trace_info)
NOP(thread, perch_thread_rec)
NOP(module, perch_module_rec)
NOP(stack, perch_stack_rec)
NOP(sample, perch_sample_rec)

/* The bounds for a run of weeks: 200 distinct 3-frame stacks at distinct addresses of the
 * fixture's functions, pumped every 10, with a stack cap of 30 frames, an address set of 16
 * and 2 records: after each pump the collection holds no pairs and at most 30 frames, the
 * forgotten stacks, the fresh starts and the dropped records are counted, and the records
 * kept still name their functions as the resolver does. */
static void test_bounds(void **state)
{
    (void)state;
    const char *path = sym_fixture_path("x86_64/app.exe");
    perch_pe *pe = sym_fixture_pe(path);
    const char *why;
    const perch_pe_info *pi = perch_pe_get_info(pe);
    perch_resolver *r = NULL;
    perch_symbackend be;
    perch_symworker *w = NULL;
    perch_sink ws, none = {.trace_info = nop_info,
                           .thread = nop_thread,
                           .module = nop_module,
                           .stack = nop_stack,
                           .sample = nop_sample};
    assert_int_equal(perch_resolver_create(NULL, true, &r), 0);
    assert_int_equal(perch_symbackend_resolver_create(r, &be), 0);
    perch_symworker_options o = {.size = sizeof o,
                                 .backend = be,
                                 .max_stack_frames = 30,
                                 .max_addresses = 16,
                                 .max_records = 2};
    assert_int_equal(perch_symworker_create(&o, &w), 0);
    perch_symworker_sink(w, &ws);
    uint32_t rva[3] = {pi->functions[0].begin, pi->functions[1].begin, pi->functions[2].begin};
    sym_fixture_feed(&ws, &none, path, pi, rva); /* process, thread, module, stack 1 */
    uint32_t most = 0;
    for (uint32_t i = 0; i < 200; i++) {
        uint64_t f[3];
        for (int k = 0; k < 3; k++) {
            const perch_pe_function *fn = &pi->functions[(i + (uint32_t)k) % pi->function_count];
            f[k] = SYM_FIXTURE_BASE + fn->begin + i % (fn->end - fn->begin);
        }
        perch_stack_rec st = {100 + i, 3, 0, f};
        perch_sample_rec sm;
        memset(&sm, 0, sizeof sm);
        sm.thread_key = 10, sm.ts = 1000 + i, sm.ip = f[0], sm.module_key = 20;
        sm.stack_id = st.id, sm.count = 1;
        assert_int_equal(ws.stack(ws.ctx, &st), 0);
        assert_int_equal(ws.sample(ws.ctx, &sm), 0);
        if (i % 10 == 9) {
            assert_int_equal(perch_symworker_pump(w), 0);
            assert_int_equal(w->hits->npair, 0);
            assert_int_equal(w->hits->nip, 0);
            assert_true(w->hits->nframe <= 30);
            most = w->hits->nframe > most ? w->hits->nframe : most;
        }
    }
    assert_true(most > 0);
    assert_int_equal(perch_symworker_wait(w, 10000), 0);
    perch_symworker_stats st;
    perch_symworker_get_stats(w, &st);
    print_message("forgotten %llu stacks, %llu fresh starts, %llu records dropped, %llu queued\n",
                  (unsigned long long)st.stacks_forgotten, (unsigned long long)st.address_resets,
                  (unsigned long long)st.records_dropped, (unsigned long long)st.queued);
    assert_true(st.stacks_forgotten >= 150); /* 201 stacks of 3 frames, at most 10 kept */
    assert_true(st.address_resets >= 1);
    assert_true(st.records_dropped >= 1);
    assert_int_equal(st.records, 2);
    perch_resolver *ref = NULL;
    const perch_symtab *tab;
    const perch_sym_report *rep;
    assert_int_equal(perch_resolver_create(NULL, true, &ref), 0);
    assert_int_equal(perch_resolver_file(ref, path, &tab, &rep, &why), 0);
    for (uint32_t i = 0; i < 2; i++) {
        const struct perch__sw_result *res = perch__symworker_result(w, i);
        perch_sym_func want;
        int64_t off;
        assert_non_null(res);
        assert_true(perch_symtab_lookup(tab, res->rec.span_rva, &want, &off));
        assert_string_equal(res->rec.name, want.name);
    }
    assert_null(perch__symworker_result(w, 2));
    perch_resolver_destroy(ref);
    perch_symworker_destroy(w);
    perch_symbackend_resolver_destroy(&be);
    perch_resolver_destroy(r);
    perch_pe_destroy(pe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker),
        cmocka_unit_test(test_queue_cap),
        cmocka_unit_test(test_pump_failure_retried),
        cmocka_unit_test(test_stop_waits_for_lookup),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
