/*
 * The report names frames through a sorted index of the modules (report_modmap.c), not a scan
 * of every module for every frame. Random module maps (overlapping ranges, equal bases and
 * names, empty and huge ranges, several processes, kernel modules, a module recorded twice)
 * name every frame of a stack as a brute-force M5 does here; a module recorded after the
 * report was written is seen by the next write; an index that cannot be built (out of memory)
 * names the same; a range that would wrap past 2^64 holds no address below its base (as in
 * the exports' resolver); and a crafted map of 200,000 modules, one spanning them all, names
 * 81,920 frames in well under the time the scan took (20 s).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "failalloc.h"
#include "perch/report.h"

#define KBASE UINT64_C(0xfffff80000000000)

struct mod {
    uint64_t key, pk, base, size;
    char name[16];
};

/* A report with top 1 (the one stack), process keys 2 and 3, and thread 10 of process 2. */
static perch_report *report_new(perch_sink *s)
{
    perch_report *r = NULL;
    perch_report_options o = {.sz = sizeof o, .top = 1};
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "modmap";
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    assert_int_equal(perch_report_create(&o, &r), 0);
    perch_report_sink(r, s);
    assert_int_equal(s->trace_info(s->ctx, &info), 0);
    perch_process_rec p2 = {2, 100, 4, 1, 0, 0, 0, 0, "a.exe", ""};
    perch_process_rec p3 = {3, 101, 4, 1, 0, 0, 0, 0, "b.exe", ""};
    perch_thread_rec t = {10, 2, 8, 100, 0, 0, 0, "main"};
    assert_int_equal(s->process(s->ctx, &p2), 0);
    assert_int_equal(s->process(s->ctx, &p3), 0);
    assert_int_equal(s->thread(s->ctx, &t), 0);
    return r;
}

static void add_module(perch_sink *s, const struct mod *m)
{
    char path[64];
    perch_module_rec rec;
    memset(&rec, 0, sizeof rec);
    snprintf(path, sizeof path, "C:\\dir\\%s", m->name);
    rec.key = m->key;
    rec.process_key = m->pk;
    rec.pid = m->pk ? 100 : 0;
    rec.base = m->base;
    rec.size = m->size;
    rec.path = path;
    rec.pdb_name = "";
    assert_int_equal(s->module(s->ctx, &rec), 0);
}

/* One stack of the frames and a timer sample of it on thread 10. */
static void add_stack(perch_sink *s, const uint64_t *frames, uint32_t n)
{
    perch_stack_rec st = {1, n, 0, frames};
    perch_sample_rec sm;
    assert_int_equal(s->stack(s->ctx, &st), 0);
    memset(&sm, 0, sizeof sm);
    sm.thread_key = 10;
    sm.tid = 8;
    sm.kind = PERCH_SAMPLE_TIMER;
    sm.ip = frames[0];
    sm.stack_id = 1;
    sm.count = 1;
    assert_int_equal(s->sample(s->ctx, &sm), 0);
}

/* r's text form (malloc'd), or NULL when the write failed, with the write's result in *err.
 * (Returned, not stored through a pointer to the caller's local: mingw's gcc 12 then saw a
 * dangling pointer in every assertion on it.) */
static char *try_text(perch_report *r, int *err)
{
    /* A named file in the working directory: tmpfile() needs a writable drive root on Windows. */
    FILE *f = fopen("test_report_modmap.txt", "w+b");
    char *text = NULL;
    assert_non_null(f);
    *err = perch_report_write_text(r, f);
    long n = ftell(f);
    if (*err == 0) {
        text = malloc((size_t)n + 1);
        assert_non_null(text);
        rewind(f);
        assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
        text[n] = '\0';
    }
    fclose(f);
    remove("test_report_modmap.txt");
    return text;
}

static char *text_of(perch_report *r)
{
    int err;
    char *text = try_text(r, &err);
    assert_int_equal(err, 0);
    return text;
}

/* M5 the slow, plain way: the module of the frame's process (0 for kernel addresses) whose
 * range [base, base + size) holds addr, the highest base, then the smallest size, then the
 * smaller name, then the one recorded first (mods holds the latest record of each key, in the
 * order the keys first came). */
static const struct mod *oracle(const struct mod *mods, size_t n, uint64_t addr)
{
    const struct mod *best = NULL;
    uint64_t want = addr >= UINT64_C(0xFFFF800000000000) ? 0 : 2;
    for (size_t i = 0; i < n; i++) {
        const struct mod *m = &mods[i];
        if (m->pk != want || addr < m->base || addr - m->base >= m->size)
            continue;
        if (best == NULL || m->base > best->base ||
            (m->base == best->base &&
             (m->size < best->size || (m->size == best->size && strcmp(m->name, best->name) < 0))))
            best = m;
    }
    return best;
}

/* The frame lines the text form must print, innermost first. */
static char *expected_lines(const struct mod *mods, size_t n, const uint64_t *frames, uint32_t nf)
{
    char *out = malloc((size_t)nf * 64 + 1), *p = out;
    assert_non_null(out);
    *p = '\0';
    for (uint32_t i = 0; i < nf; i++) {
        const struct mod *m = oracle(mods, n, frames[i]);
        if (m != NULL)
            p += sprintf(p, "      %s!+0x%" PRIx64 "\n", m->name, frames[i] - m->base);
        else
            p += sprintf(p, "      ?!0x%" PRIx64 "\n", frames[i]);
    }
    return out;
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint64_t random_size(uint64_t *x)
{
    static const uint64_t sizes[] = {0,      1,      0x800,   0x1000,
                                     0x1000, 0x3000, 0x10000, UINT64_C(1) << 40};
    return sizes[next(x) % (sizeof sizes / sizeof sizes[0])];
}

static void check_seed(uint64_t seed)
{
    enum { NMOD = 300, NFRAME = 3000 };
    static const char *names[] = {"a.dll", "b.dll", "c.dll", "d.dll", "e.dll", "f.dll"};
    struct mod *mods = calloc(NMOD, sizeof *mods);
    uint64_t *frames = calloc(NFRAME, sizeof *frames), x = seed;
    perch_sink s;
    perch_report *r = report_new(&s);
    size_t n = 0;
    for (int i = 0; i < NMOD; i++) {
        bool kernel = next(&x) % 4 == 0;
        struct mod m = {100 + next(&x) % (NMOD - 20), 0, 0, random_size(&x), ""};
        m.pk = kernel ? 0 : 2 + next(&x) % 2;
        m.base = (kernel ? KBASE : 0x10000) + (next(&x) % 64) * 0x800;
        snprintf(m.name, sizeof m.name, "%s", names[next(&x) % 6]);
        add_module(&s, &m);
        size_t j = 0; /* a key recorded again replaces its module where it was */
        while (j < n && mods[j].key != m.key)
            j++;
        mods[j] = m;
        n += j == n;
    }
    for (int i = 0; i < NFRAME; i++)
        frames[i] = (next(&x) % 3 == 0 ? KBASE : 0x10000) + next(&x) % (70 * 0x800);
    add_stack(&s, frames, NFRAME);
    char *text = text_of(r), *want = expected_lines(mods, n, frames, NFRAME);
    if (strstr(text, want) == NULL)
        fail_msg("seed %" PRIu64 ": the frames are not named as M5 names them", seed);
    free(text);
    free(want);
    free(frames);
    free(mods);
    perch_report_destroy(r);
}

static void test_random_maps_name_as_m5(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++)
        check_seed(seed * 0x9e3779b97f4a7c15u);
}

/* A report whose sink *s has seen wide.dll (64 KiB at 0x10000) and one stack of two frames in
 * it, 0x14800 and 0x1c000; *tight is tight.dll (4 KiB at 0x14000, inside wide.dll), not added. */
static perch_report *wide_report(perch_sink *s, struct mod *tight)
{
    perch_report *r = report_new(s);
    struct mod wide = {20, 2, 0x10000, 0x10000, "wide.dll"};
    static const uint64_t frames[] = {0x14800, 0x1c000};
    *tight = (struct mod){21, 2, 0x14000, 0x1000, "tight.dll"};
    add_module(s, &wide);
    add_stack(s, frames, 2);
    return r;
}

/* The index is built when the first frame is named; a module recorded after that is in the
 * next report written. */
static void test_late_module(void **state)
{
    perch_sink s;
    struct mod tight;
    (void)state;
    perch_report *r = wide_report(&s, &tight);
    char *text = text_of(r);
    assert_non_null(strstr(text, "      wide.dll!+0x4800\n      wide.dll!+0xc000\n"));
    free(text);
    add_module(&s, &tight);
    text = text_of(r);
    assert_non_null(strstr(text, "      tight.dll!+0x800\n      wide.dll!+0xc000\n"));
    free(text);
    tight.base = 0x1c000; /* recorded again, elsewhere */
    add_module(&s, &tight);
    text = text_of(r);
    assert_non_null(strstr(text, "      wide.dll!+0x4800\n      tight.dll!+0x0\n"));
    free(text);
    perch_report_destroy(r);
}

/* Every allocation of a report's writing fails in turn: the write fails with PERCH_ENOMEM, or
 * it succeeds and names every frame as it does with memory (an index that cannot be built
 * falls back to the scan); at least one failure is absorbed so (the index's). */
static void test_index_without_memory(void **state)
{
    perch_sink s;
    struct mod tight;
    uint64_t absorbed = 0;
    (void)state;
    perch_report *r = wide_report(&s, &tight);
    for (uint64_t n = 1;; n++) {
        int err;
        add_module(&s, &tight); /* the next write builds the index anew */
        perch_failalloc_begin(n, false);
        char *text = try_text(r, &err);
        perch_failalloc_counts c = perch_failalloc_end();
        if (err == 0)
            assert_non_null(strstr(text, "      tight.dll!+0x800\n      wide.dll!+0xc000\n"));
        else
            assert_int_equal(err, -2); /* PERCH_ENOMEM */
        absorbed += err == 0 && c.failed > 0;
        free(text);
        if (c.failed == 0)
            break;
    }
    assert_true(absorbed > 0);
    perch_report_destroy(r);
}

/* A module whose range would run past 2^64 holds the addresses from its base up, not the low
 * addresses of its process it would wrap to (the exports' resolver says the same; before,
 * 0x500 was named "wrap.dll!+0x1500"). */
static void test_range_does_not_wrap(void **state)
{
    perch_sink s;
    (void)state;
    perch_report *r = report_new(&s);
    struct mod wrap = {20, 2, UINT64_C(0xfffffffffffff000), 0x2000, "wrap.dll"};
    uint64_t frames[] = {0x500, UINT64_C(0xfffffffffffff800)};
    add_module(&s, &wrap);
    add_stack(&s, frames, 2);
    char *text = text_of(r);
    assert_non_null(strstr(text, "      ?!0x500\n      ?!0xfffffffffffff800\n"));
    free(text);
    perch_report_destroy(r);
}

/* 200,000 modules, one of them spanning every address of the others, and 5 stacks of 16,384
 * frames outside every small module: naming them took the scan 20 s of CPU (200,000 modules
 * per frame); the index takes milliseconds. The bound is loose (sanitizers, a loaded machine). */
static void test_many_modules_are_fast(void **state)
{
    enum { NMOD = 200000, NFRAME = 16384, NSTACK = 5 };
    perch_report *r = NULL;
    perch_report_options o = {.sz = sizeof o, .top = NSTACK};
    perch_sink s;
    (void)state;
    assert_int_equal(perch_report_create(&o, &r), 0);
    perch_report_sink(r, &s);
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.pointer_size = 8;
    assert_int_equal(s.trace_info(s.ctx, &info), 0);
    perch_thread_rec t = {10, 2, 8, 100, 0, 0, 0, "main"};
    assert_int_equal(s.thread(s.ctx, &t), 0);
    for (uint64_t i = 0; i < NMOD; i++) {
        struct mod m = {1000 + i, 2, 0x10000000 + i * 0x2000, 0x1000, "m.dll"};
        add_module(&s, &m);
    }
    struct mod huge = {999, 2, 0x1000, UINT64_C(1) << 62, "huge.dll"};
    add_module(&s, &huge);
    uint64_t *frames = malloc(sizeof *frames * NFRAME);
    assert_non_null(frames);
    for (uint32_t k = 0; k < NSTACK; k++) {
        for (uint32_t f = 0; f < NFRAME; f++)
            frames[f] = 0x10001000 + 0x2000 * ((k * NFRAME + f) % NMOD);
        perch_stack_rec st = {k + 1, NFRAME, 0, frames};
        assert_int_equal(s.stack(s.ctx, &st), 0);
        perch_sample_rec sm;
        memset(&sm, 0, sizeof sm);
        sm.thread_key = 10;
        sm.tid = 8;
        sm.ip = frames[0];
        sm.stack_id = k + 1;
        sm.count = 1;
        for (uint32_t n = 0; n <= k; n++) /* distinct sample counts: a fixed order */
            assert_int_equal(s.sample(s.ctx, &sm), 0);
    }
    free(frames);
    clock_t start = clock();
    char *text = text_of(r);
    double cpu = (double)(clock() - start) / CLOCKS_PER_SEC;
    print_message("naming %d frames among %d modules: %.3f s of CPU\n", NFRAME * NSTACK, NMOD, cpu);
    assert_non_null(strstr(text, "      huge.dll!+0x10000000\n"));
    assert_true(cpu < 3.0);
    free(text);
    perch_report_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_maps_name_as_m5), cmocka_unit_test(test_late_module),
        cmocka_unit_test(test_index_without_memory),   cmocka_unit_test(test_range_does_not_wrap),
        cmocka_unit_test(test_many_modules_are_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
