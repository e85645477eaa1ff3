/*
 * Model: processes, threads and modules from synthesized records. Id reuse after End, a
 * provisional thread completed by a later rundown (M1), names and command lines, time-aware
 * module maps (load/unload, kernel vs process map, M5 overlap rule; the lookup's caches against
 * a plain scan of the rule), PDB identities logged
 * before their image, and the ledger/statistics (decode errors by reason, losses, kinds).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "model/mem.h"
#include "model_synth.h"

#define K(x) (0xfffff80000000000ull + (x))

static void feed(perch_model *m, perch_event *ev)
{
    assert_int_equal(perch_model_feed(m, ev), 0);
}

static const rec_module *module_by_key(const recorder *r, uint64_t key)
{
    for (int i = 0; i < r->nmods; i++)
        if (r->mods[i].r.key == key)
            return &r->mods[i];
    return NULL;
}

static void test_thread_id_reuse(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 1, 5, 10, 4, "a.exe", "a.exe -x"));
    feed(m, ev_process(&s, 1, 6, 11, 4, "b.exe", "b.exe"));
    feed(m, ev_thread(&s, 1, 10, 10, 5, NULL));
    feed(m, ev_sample(&s, 15, 0, 0x1000, 5));
    feed(m, ev_thread(&s, 2, 20, 10, 5, NULL));
    assert_int_equal(r.nthreads, 1); /* emitted when it ends */
    feed(m, ev_thread(&s, 1, 30, 11, 5, "second"));
    feed(m, ev_sample(&s, 35, 0, 0x1000, 5));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nthreads, 2);
    const rec_thread *t1 = &r.threads[0], *t2 = &r.threads[1];
    assert_int_not_equal(t1->r.key, t2->r.key);
    assert_int_equal(t1->r.pid, 10);
    assert_int_equal(t1->r.start_ts, 10);
    assert_int_equal(t1->r.end_ts, 20);
    assert_true(t1->r.flags & PERCH_ENTITY_ENDED);
    assert_int_equal(t2->r.pid, 11);
    assert_string_equal(t2->name, "second");
    assert_false(t2->r.flags & PERCH_ENTITY_ENDED);
    int found = 0;
    for (int i = 0; i < r.nsamples; i++) {
        if (r.samples[i].ts == 15)
            found += r.samples[i].thread_key == t1->r.key;
        if (r.samples[i].ts == 35)
            found += r.samples[i].thread_key == t2->r.key;
    }
    assert_int_equal(found, 2);
    const rec_process *pa = NULL;
    for (int i = 0; i < r.nprocs; i++)
        if (r.procs[i].r.pid == 10)
            pa = &r.procs[i];
    assert_non_null(pa);
    assert_string_equal(pa->name, "a.exe");
    assert_string_equal(pa->cmd, "a.exe -x");
    assert_int_equal(pa->r.parent_pid, 4);
    assert_int_equal(t1->r.process_key, pa->r.key);
    perch_model_destroy(m);
}

/* M1: a busy thread's rundown can come after its first samples. */
static void test_provisional_thread_completed_by_rundown(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 1, 300, 4, "busy.exe", ""));
    feed(m, ev_image(&s, 3, 2, 300, 0x400000, 0x10000, "\\Device\\X\\busy.exe"));
    feed(m, ev_sample(&s, 10, 0, 0x401234, 77)); /* before any Thread event of 77 */
    feed(m, ev_thread(&s, 3, 20, 300, 77, NULL));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nsamples, 1);
    const rec_thread *t = find_thread(&r, r.samples[0].thread_key);
    assert_non_null(t);
    assert_int_equal(t->r.pid, 300);
    assert_true(t->r.flags & PERCH_ENTITY_RUNDOWN);
    assert_false(t->r.flags & PERCH_ENTITY_PROVISIONAL);
    /* the module of a user IP is looked up once the pid is known */
    const rec_module *md = module_by_key(&r, r.samples[0].module_key);
    assert_non_null(md);
    assert_string_equal(md->path, "\\Device\\X\\busy.exe");
    assert_int_equal(LEDGER(&r, "thread.unknown_pid"), 0);
    perch_model_destroy(m);
}

static void test_time_aware_modules(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 1, 300, 4, "p.exe", ""));
    feed(m, ev_thread(&s, 3, 1, 300, 7, NULL));
    feed(m, ev_image(&s, 3, 2, 0, K(0x100000), 0x800000, "\\SystemRoot\\ntoskrnl.exe"));
    feed(m, ev_image(&s, 10, 3, 300, 0x10000000, 0x100000, "C:\\big.dll"));
    feed(m, ev_image(&s, 10, 4, 300, 0x10040000, 0x1000, "C:\\inner.dll")); /* overlaps */
    feed(m, ev_sample(&s, 10, 0, 0x10040010, 7));   /* inner (highest base) */
    feed(m, ev_sample(&s, 11, 0, 0x10000010, 7));   /* big */
    feed(m, ev_sample(&s, 12, 0, K(0x100010), 7));  /* kernel map */
    feed(m, ev_image(&s, 2, 20, 300, 0x10040000, 0x1000, "C:\\inner.dll"));
    feed(m, ev_sample(&s, 30, 0, 0x10040010, 7));   /* inner unloaded: big again */
    feed(m, ev_image(&s, 2, 40, 300, 0x10000000, 0x100000, "C:\\big.dll"));
    feed(m, ev_sample(&s, 50, 0, 0x10040010, 7));   /* nothing there any more */
    feed(m, ev_image(&s, 2, 60, 300, 0x20000000, 0x1000, "C:\\never.dll"));
    assert_int_equal(perch_model_finish(m), 0);
    const char *want[] = {"C:\\inner.dll", "C:\\big.dll", "\\SystemRoot\\ntoskrnl.exe",
                          "C:\\big.dll", NULL};
    uint64_t ts[] = {10, 11, 12, 30, 50};
    for (int k = 0; k < 5; k++) {
        const perch_sample_rec *x = NULL;
        for (int i = 0; i < r.nsamples; i++)
            if (r.samples[i].ts == ts[k])
                x = &r.samples[i];
        assert_non_null(x);
        const rec_module *md = module_by_key(&r, x->module_key);
        if (want[k] == NULL) {
            assert_int_equal(x->module_key, 0);
            continue;
        }
        assert_non_null(md);
        assert_string_equal(md->path, want[k]);
    }
    const rec_module *inner = NULL, *kern = NULL;
    for (int i = 0; i < r.nmods; i++) {
        if (strcmp(r.mods[i].path, "C:\\inner.dll") == 0)
            inner = &r.mods[i];
        if (strcmp(r.mods[i].path, "\\SystemRoot\\ntoskrnl.exe") == 0)
            kern = &r.mods[i];
    }
    assert_int_equal(inner->r.load_ts, 4);
    assert_int_equal(inner->r.unload_ts, 20);
    assert_int_equal(inner->r.pid, 300);
    assert_int_equal(kern->r.process_key, 0);
    assert_int_equal(kern->r.load_ts, 0);
    assert_int_equal(kern->r.unload_ts, 0);
    assert_int_equal(LEDGER(&r, "module.unload_unknown"), 1);
    perch_model_destroy(m);
}

/* A module of the oracle below: loaded now or not. */
typedef struct oracle_mod {
    uint32_t pid; /* 0: the kernel map */
    uint64_t base, size;
    const char *path;
    bool loaded;
} oracle_mod;

/* The rule itself (M5), by a plain scan of what is loaded: among the modules of the map
 * containing ip, the highest base, then the smallest size, then the first path. */
static const char *oracle_lookup(const oracle_mod *mods, int n, uint32_t pid, uint64_t ip)
{
    const oracle_mod *best = NULL;
    bool kernel = ip >= 0xFFFF800000000000ull;
    for (int i = 0; i < n; i++) {
        const oracle_mod *o = &mods[i];
        if (!o->loaded || (kernel ? o->pid != 0 : o->pid != pid) || ip - o->base >= o->size)
            continue;
        if (best == NULL || o->base > best->base ||
            (o->base == best->base &&
             (o->size < best->size || (o->size == best->size && strcmp(o->path, best->path) < 0))))
            best = o;
    }
    return best ? best->path : NULL;
}

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Each recorded sample (found by its timestamp in sample_ts) names the module the oracle
 * named for it (want: its path, NULL for none). */
static void check_sample_modules(const recorder *r, uint64_t seed, const char *const *want,
                                 const uint64_t *sample_ts, int nsamples)
{
    assert_int_equal(r->nsamples, nsamples);
    for (int i = 0; i < r->nsamples; i++) {
        int k = 0;
        while (k < nsamples && sample_ts[k] != r->samples[i].ts)
            k++;
        assert_true(k < nsamples);
        const rec_module *md = module_by_key(r, r->samples[i].module_key);
        bool same = want[k] == NULL ? r->samples[i].module_key == 0
                                    : md != NULL && strcmp(md->path, want[k]) == 0;
        if (!same)
            fail_msg("seed %llx: sample %d at 0x%llx: %s, the oracle %s", (unsigned long long)seed,
                     k, (unsigned long long)r->samples[i].ip, md ? md->path : "none",
                     want[k] ? want[k] : "none");
    }
}

/* One model fed samples of two processes' threads and kernel addresses, near and between
 * modules (some nested, two at one base), with loads and unloads between them; every sample's
 * module is the oracle's at its time. Pids 300 and 364 share a slot of the pid cache. */
static void module_cache_round(uint64_t seed)
{
    oracle_mod mods[] = {
        {300, 0x10000000, 0x100000, "C:\\a0.dll", false},
        {300, 0x10040000, 0x1000, "C:\\a1.dll", false},
        {300, 0x10040000, 0x2000, "C:\\a2.dll", false},
        {300, 0x20000000, 0x10000, "C:\\a3.dll", false},
        {300, 0x20008000, 0x10000, "C:\\a4.dll", false},
        {364, 0x10000000, 0x8000, "C:\\b0.dll", false},
        {364, 0x10004000, 0x8000, "C:\\b1.dll", false},
        {364, 0x30000000, 0x4000, "C:\\b2.dll", false},
        {0, K(0x100000), 0x800000, "\\SystemRoot\\nt.exe", false},
        {0, K(0x900000), 0x1000, "\\SystemRoot\\hal.dll", false},
        {0, K(0x400000), 0x1000, "\\SystemRoot\\in_nt.sys", false},
    };
    const int nmods = (int)(sizeof mods / sizeof mods[0]);
    const char *want[REC_MAX];
    uint64_t sample_ts[REC_MAX];
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t x = seed, ts = 2;
    int nsamples = 0, loads = 0;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 1, 300, 4, "a.exe", ""));
    feed(m, ev_process(&s, 3, 1, 364, 4, "b.exe", ""));
    feed(m, ev_thread(&s, 3, 1, 300, 7, NULL));
    feed(m, ev_thread(&s, 3, 1, 364, 11, NULL));
    while (nsamples < 200) {
        const oracle_mod *o = &mods[next_rand(&x) % (uint64_t)nmods];
        uint64_t r100 = next_rand(&x) % 100;
        if (r100 < 12 && loads < 40) { /* flip one module */
            oracle_mod *f = &mods[next_rand(&x) % (uint64_t)nmods];
            f->loaded = !f->loaded;
            loads++;
            feed(m, ev_image(&s, f->loaded ? 10 : 2, ts++, f->pid, f->base, f->size, f->path));
            continue;
        }
        /* near o, sometimes just outside it; the thread of o's process, or either */
        uint64_t ip = o->base - 0x40 + next_rand(&x) % (o->size + 0x80);
        uint32_t pid = o->pid != 0 ? o->pid : (next_rand(&x) & 1 ? 300 : 364);
        if (r100 >= 90)
            pid = pid == 300 ? 364 : 300;
        want[nsamples] = oracle_lookup(mods, nmods, pid, ip);
        sample_ts[nsamples++] = ts;
        feed(m, ev_sample(&s, ts++, (uint16_t)(r100 & 3), ip, pid == 300 ? 7 : 11));
    }
    assert_int_equal(perch_model_finish(m), 0);
    check_sample_modules(&r, seed, want, sample_ts, nsamples);
    perch_model_destroy(m);
}

static void test_module_lookup_caches(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++)
        module_cache_round(seed * 0x9E3779B97F4A7C15ull);
}

/* One module spanning 200 others (pairs of them at one base, and a smaller one at the big
 * one's base), loads and unloads between the samples, samples in the small modules, in the
 * gaps only the big one holds, and past it: more than MODMAP_SCAN_STEPS (64) modules lie
 * between a gap and the big one's base, so the map's address index answers those, rebuilt
 * after each change; every answer is the oracle's. */
static void spanning_round(uint64_t seed)
{
    enum { NSMALL = 200, NMODS = NSMALL + 3, NSAMPLES = 240 };
    static char paths[NMODS][24];
    oracle_mod mods[NMODS];
    const char *want[NSAMPLES];
    uint64_t sample_ts[NSAMPLES];
    recorder r;
    perch_sink sink;
    synth_ev s;
    uint64_t x = seed, ts = 2;
    int nsamples = 0, flips = 0;
    for (int i = 0; i < NSMALL; i++) {
        snprintf(paths[i], sizeof paths[i], "C:\\s%03d.dll", i);
        mods[i] = (oracle_mod){300, 0x10100000 + (uint64_t)(i / 2 * 2) * 0x3000,
                               0x1000 + (uint64_t)(i % 3) * 0x800, paths[i], true};
    }
    mods[NSMALL] = (oracle_mod){300, 0x10000000, 0x10000000, "C:\\big.dll", true};
    mods[NSMALL + 1] = (oracle_mod){300, 0x10000000, 0x8000000, "C:\\half.dll", false};
    mods[NSMALL + 2] = (oracle_mod){300, 0x30000000, 0x1000, "C:\\far.dll", true};
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_process(&s, 3, 1, 300, 4, "a.exe", ""));
    feed(m, ev_thread(&s, 3, 1, 300, 7, NULL));
    for (int i = 0; i < NMODS; i++)
        if (mods[i].loaded)
            feed(m, ev_image(&s, 10, ts++, 300, mods[i].base, mods[i].size, mods[i].path));
    while (nsamples < NSAMPLES) {
        uint64_t r100 = next_rand(&x) % 100;
        if (r100 < 8 && flips < 40) { /* flip one module (new keys: the recorder holds 256) */
            oracle_mod *f = &mods[next_rand(&x) % NMODS];
            f->loaded = !f->loaded;
            flips++;
            feed(m, ev_image(&s, f->loaded ? 10 : 2, ts++, 300, f->base, f->size, f->path));
            continue;
        }
        uint64_t ip = r100 < 60   ? 0x10100000 + next_rand(&x) % (NSMALL * 0x3000 + 0x4000)
                      : r100 < 90 ? 0x10000000 + next_rand(&x) % 0x10000000
                                  : 0x2ff00000 + next_rand(&x) % 0x200000;
        want[nsamples] = oracle_lookup(mods, NMODS, 300, ip);
        sample_ts[nsamples++] = ts;
        feed(m, ev_sample(&s, ts++, (uint16_t)(r100 & 3), ip, 7));
    }
    assert_int_equal(perch_model_finish(m), 0);
    check_sample_modules(&r, seed, want, sample_ts, nsamples);
    perch_model_destroy(m);
}

static void test_module_spanning_many(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++)
        spanning_round(seed * 0x9E3779B97F4A7C15ull);
}

static void test_pdb_identity_before_image(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    feed(m, ev_rsds(&s, 5, 0, K(0x100000), 0x40, 3, "ntkrnlmp.pdb"));
    feed(m, ev_image(&s, 3, 5, 0, K(0x100000), 0x800000, "\\SystemRoot\\ntoskrnl.exe"));
    feed(m, ev_rsds(&s, 6, 0, K(0x900000), 0x50, 1, "orphan.pdb"));
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(r.nmods, 1);
    assert_true(r.mods[0].r.has_pdb);
    assert_string_equal(r.mods[0].pdb, "ntkrnlmp.pdb");
    assert_int_equal(r.mods[0].r.pdb_age, 3);
    assert_int_equal(r.mods[0].r.pdb_guid.data1, 0x43424140u);
    assert_int_equal(LEDGER(&r, "module.pdb_without_image"), 1);
    perch_model_destroy(m);
}

static void test_ledger_and_stats(void **state)
{
    recorder r;
    perch_sink sink;
    synth_ev s;
    (void)state;
    perch_model *m = new_model(&r, &sink);
    assert_int_equal(r.info_calls, 1);
    assert_string_equal(r.info.source, "synth");
    perch_event *ev = ev_cswitch(&s, 10, 0, 1, 0, 8, 0, 2);
    ev->payload_len = 10; /* short */
    feed(m, ev);
    feed(m, ev_sample(&s, 5, 0, K(1), 7)); /* earlier than the last timestamp */
    feed(m, ev_ready(&s, 20, 0, 7));
    assert_int_equal(perch_model_ledger_add(m, "etl.record_size", 2), 0);
    assert_int_equal(perch_model_finish(m), 0);
    assert_int_equal(LEDGER(&r, "decode.eshort.CSwitch"), 1);
    assert_int_equal(LEDGER(&r, "trace.events_lost"), 3);
    assert_int_equal(LEDGER(&r, "etl.record_size"), 2);
    assert_int_equal(LEDGER(&r, "model.time_order"), 1);
    assert_int_equal(STAT(&r, "records.total"), 3);
    assert_int_equal(STAT(&r, "kind.CSwitch"), 1);
    assert_int_equal(STAT(&r, "kind.ReadyThread"), 1);
    assert_int_equal(STAT(&r, "kind.SampledProfile"), 1);
    assert_int_equal(STAT(&r, "decode.errors"), 1);
    assert_int_equal(r.finish_calls, 1);
    assert_int_equal(perch_model_finish(m), PERCH_ESTATE);
    assert_int_equal(perch_model_feed(m, ev_ready(&s, 30, 0, 7)), PERCH_ESTATE);
    perch_model_destroy(m);
}

static int fail_after;
static void *failing_realloc(void *p, size_t n)
{
    if (n == 0) {
        free(p);
        return NULL;
    }
    if (fail_after-- <= 0)
        return NULL;
    return realloc(p, n);
}

/* Every allocation failure surfaces as an error, never a crash or a leak (ASan build). */
static void test_allocation_failures(void **state)
{
    perch__realloc_fn saved = perch__realloc_hook;
    uint64_t kf[] = {K(1), 0x401000};
    int failures = 0, last = -1;
    (void)state;
    for (int limit = 0; limit < 120; limit++) {
        recorder r;
        perch_sink sink;
        synth_ev s;
        perch_trace_info info;
        perch_model *m = NULL;
        int err = 0;
        memset(&r, 0, sizeof r);
        memset(&info, 0, sizeof info);
        info.pointer_size = 8;
        sink = recorder_sink(&r);
        fail_after = limit;
        perch__realloc_hook = failing_realloc;
        err = perch_model_create(&sink, &info, NULL, &m);
        if (err == 0) {
            perch_event *evs[] = {ev_process(&s, 3, 1, 300, 4, "p.exe", "cmd")};
            err = perch_model_feed(m, evs[0]);
            err = err ? err : perch_model_feed(m, ev_thread(&s, 3, 2, 300, 7, "t"));
            err = err ? err : perch_model_feed(m, ev_image(&s, 3, 3, 300, 0x400000, 0x1000, "x"));
            err = err ? err : perch_model_feed(m, ev_cswitch(&s, 4, 0, 7, 0, 8, 0, 2));
            err = err ? err : perch_model_feed(m, ev_sample(&s, 5, 0, K(1), 7));
            err = err ? err : perch_model_feed(m, ev_walk(&s, 6, 5, 7, kf, 2, 8));
            err = err ? err : perch_model_finish(m);
        }
        assert_true(err == 0 || err == PERCH_ENOMEM);
        failures += err != 0;
        last = err;
        perch__realloc_hook = saved;
        perch_model_destroy(m);
    }
    assert_true(failures > 5);
    assert_int_equal(last, 0); /* with enough allocations it succeeds */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_id_reuse),
        cmocka_unit_test(test_provisional_thread_completed_by_rundown),
        cmocka_unit_test(test_time_aware_modules),
        cmocka_unit_test(test_module_lookup_caches),
        cmocka_unit_test(test_module_spanning_many),
        cmocka_unit_test(test_pdb_identity_before_image),
        cmocka_unit_test(test_ledger_and_stats),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
