/*
 * Rotating capture files (include/perch/capture_rotate.h) on a synthetic trace: every file is
 * a complete capture that names every key it uses and holds every stack it uses (ids dense
 * from 1), the files together hold every sample, the disk cap deletes the oldest files, the
 * age cap rotates by the clock, the sequence continues after files already there, a file
 * left open by a crash (or cut anywhere) still reports with names, and a named rotation starts
 * with <prefix>.perch and refuses to start over files of its name; a rotation that failed at
 * its start (a full disk) is discarded with the one file it created, and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs_fixture.h"
#include "capture/rotate_names.h"
#include "model/hmap.h"
#include "perch/capture.h"
#include "perch/capture_rotate.h"
#include "perch/error.h"
#include "perch/fs.h"
#include "perch/pipeline.h"
#include "perch/synth.h"
#include "testdata.h"

static uint8_t *etl;
static size_t etl_len;
static uint64_t trace_samples;

/* ---- a checking sink: keys named before use, stacks dense, samples counted ------------- */

typedef struct check {
    perch__hmap keys[3];
    uint32_t stacks;
    uint64_t samples, missing, bad_stack, names;
} check;

static void note(check *k, int kind, uint64_t key)
{
    assert_int_equal(perch__hmap_put(&k->keys[kind], key, 1), 0);
}
static void need(check *k, int kind, uint64_t key)
{
    uint32_t v;
    k->missing += key != 0 && !perch__hmap_get(&k->keys[kind], key, &v);
}
static int k_process(void *ctx, const perch_process_rec *r)
{
    check *k = ctx;
    note(k, 0, r->key);
    k->names += r->image_name && r->image_name[0];
    return 0;
}
static int k_thread(void *ctx, const perch_thread_rec *r)
{
    need(ctx, 0, r->process_key);
    note(ctx, 1, r->key);
    return 0;
}
static int k_module(void *ctx, const perch_module_rec *r)
{
    need(ctx, 0, r->process_key);
    note(ctx, 2, r->key);
    return 0;
}
static int k_stack(void *ctx, const perch_stack_rec *r)
{
    check *k = ctx;
    k->bad_stack += r->id != k->stacks + 1;
    k->stacks++;
    return 0;
}
static int k_sample(void *ctx, const perch_sample_rec *r)
{
    check *k = ctx;
    need(k, 1, r->thread_key);
    need(k, 2, r->module_key);
    k->bad_stack += r->stack_id > k->stacks;
    if (r->kind == PERCH_SAMPLE_TIMER)
        k->samples++;
    return 0;
}
static int k_slice(void *ctx, const perch_slice_rec *r)
{
    need(ctx, 1, r->thread_key);
    return 0;
}

static int check_file(const char *path, check *k, size_t cut)
{
    size_t len;
    perch_capture_status st;
    uint8_t *data = perch_test_read_file(path, &len);
    perch_sink s = {k,        NULL, k_process, k_thread, k_module, NULL, k_stack, k_slice,
                    k_sample, NULL, NULL,      NULL,     NULL,     NULL, false,   false};
    memset(k, 0, sizeof *k);
    perch_capture_replay_memory(data, cut && cut < len ? cut : len, &s, &st);
    for (int t = 0; t < 3; t++)
        perch__hmap_free(&k->keys[t]);
    free(data);
    return st.stop;
}

/* ---- helpers -------------------------------------------------------------------------- */

/* The prefix's files in dir, oldest first (free with perch_fs_list_free). */
static perch_fs_entry *files_of(const char *dir, const char *prefix, size_t *n)
{
    perch_fs_entry *e = NULL;
    assert_int_equal(perch_fs_list(dir, 10000, &e, n), 0);
    *n = perch__rotate_keep_ours(prefix, e, *n);
    return e;
}

typedef struct clock {
    uint64_t now, step;
} clock;

static uint64_t tick(void *ctx)
{
    clock *c = ctx;
    c->now += c->step;
    return c->now;
}

static void run(const char *dir, perch_capture_rotate_opts *o, bool finish,
                perch_capture_rotate_stats *st)
{
    perch_capture_rotate *r = NULL;
    perch_sink sink;
    perch_input in;
    assert_int_equal(perch_capture_rotate_create(o, &r), 0);
    perch_capture_rotate_sink(r, &sink);
    if (!finish)
        sink.finish = NULL; /* the process dies before the end */
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), 0);
    perch_capture_rotate_get_stats(r, st);
    perch_capture_rotate_destroy(r);
    (void)dir;
}

static void opts_for(perch_capture_rotate_opts *o, const char *dir, clock *c)
{
    perch_capture_rotate_opts_default(o);
    o->dir = dir;
    o->prefix = "t";
    o->max_file_bytes = 64u << 10;
    o->max_total_bytes = 0;
    o->writer.chunk_bytes = 4096;
    o->wall_ms = tick;
    o->clock_ctx = c;
}

static int setup(void **state)
{
    perch_synth_options so;
    perch_output out;
    perch_memory_out mem;
    perch_synth_stats st;
    (void)state;
    perch_synth_options_init(&so);
    so.seed = 12;
    so.cpus = 4;
    so.target_bytes = 3u << 20;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    assert_int_equal(perch_synth_write(&so, &out, &st), 0);
    etl = perch_output_memory_take(&mem, &etl_len);
    trace_samples = st.samples;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    perch_free(etl);
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_every_file_stands_alone(void **state)
{
    const char *dir = "rotate_alone";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    clock c = {1764547200000ull, 1}; /* 2025-12-01T00:00:00Z */
    size_t n;
    uint64_t samples = 0;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    run(dir, &o, true, &st);
    perch_fs_entry *e = files_of(dir, "t", &n);
    printf("  %zu files, %llu bytes\n", n, (unsigned long long)st.bytes_written);
    assert_true(n >= 4);
    assert_int_equal(st.files_created, n);
    assert_int_equal(st.files_deleted, 0);
    assert_string_equal(e[0].name, "t-20251201-000000-000001.perch");
    for (size_t i = 0; i < n; i++) {
        check k;
        char *p = perch_fs_join(dir, e[i].name);
        assert_int_equal(check_file(p, &k, 0), PERCH_CAPTURE_STOP_END);
        assert_int_equal(k.missing, 0);
        assert_int_equal(k.bad_stack, 0);
        assert_true(i + 1 == n || e[i].size >= o.max_file_bytes);
        samples += k.samples;
        perch_free(p);
    }
    assert_int_equal(samples, trace_samples);
    perch_fs_list_free(e, n);
}

static void test_disk_cap_deletes_oldest(void **state)
{
    const char *dir = "rotate_cap";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    clock c = {1764547200000ull, 1};
    size_t n;
    uint64_t total = 0;
    uint32_t first;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.max_total_bytes = 200u << 10;
    run(dir, &o, true, &st);
    perch_fs_entry *e = files_of(dir, "t", &n);
    for (size_t i = 0; i < n; i++)
        total += e[i].size;
    assert_true(st.files_deleted > 0);
    assert_int_equal(st.files_created, n + st.files_deleted);
    assert_true(total <= o.max_total_bytes);
    assert_true(perch__rotate_parse("t", e[0].name, &first));
    assert_int_equal(first, st.files_deleted + 1); /* the oldest went first */
    perch_fs_list_free(e, n);
}

static int refuse_first_file(const char *path)
{
    return strstr(path, "-000001.perch") != NULL ? PERCH_EBUSY : perch_fs_remove(path);
}

/* A file the cap cannot delete (open in another program) is kept and counted, newer ones go
 * in its place, and the recording goes on to its end. */
static void test_disk_cap_keeps_what_it_cannot_delete(void **state)
{
    const char *dir = "rotate_cap_busy";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    clock c = {1764547200000ull, 1};
    size_t n;
    uint64_t total = 0, kept = 0;
    uint32_t seq;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.max_total_bytes = 200u << 10;
    o.remove = refuse_first_file;
    run(dir, &o, true, &st); /* the run itself asserts the import succeeded */
    perch_fs_entry *e = files_of(dir, "t", &n);
    assert_true(st.deletes_failed > 0);
    assert_true(st.files_deleted > 0);
    assert_int_equal(st.files_created, n + st.files_deleted);
    assert_true(perch__rotate_parse("t", e[0].name, &seq));
    assert_int_equal(seq, 1); /* the refused one stayed */
    for (size_t i = 0; i < n; i++)
        total += e[i].size;
    kept = e[0].size;
    assert_true(total - kept <= o.max_total_bytes);
    assert_true(perch__rotate_parse("t", e[1].name, &seq));
    assert_int_equal(seq, st.files_deleted + 2); /* the next oldest went instead */
    check k;
    char *last = perch_fs_join(dir, e[n - 1].name);
    assert_int_equal(check_file(last, &k, 0), PERCH_CAPTURE_STOP_END); /* finished */
    perch_free(last);
    perch_fs_list_free(e, n);
}

static void test_age_and_sequence(void **state)
{
    const char *dir = "rotate_age";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    clock c = {1764547200000ull, 1000}; /* one second per look at the clock */
    size_t n;
    uint32_t seq;
    perch_output out;
    (void)state;
    fx_empty_dir(dir);
    char *old = perch_fs_join(dir, "t-20200101-000000-000041.perch");
    assert_int_equal(perch_output_open_file(&out, old), 0); /* a file of an earlier run */
    assert_int_equal(out.close(out.ctx), 0);
    opts_for(&o, dir, &c);
    o.max_file_bytes = 1ull << 30; /* never by size */
    o.max_file_age_ms = 20000;
    run(dir, &o, true, &st);
    perch_fs_entry *e = files_of(dir, "t", &n);
    assert_true(st.files_created >= 3);
    assert_int_equal(n, st.files_created + 1);
    assert_true(perch__rotate_parse("t", e[1].name, &seq));
    assert_int_equal(seq, 42);
    perch_fs_list_free(e, n);
    perch_free(old);
}

/* A stream that goes quiet: with no record to look at the clock, the tick rotates by age, so
 * the file is finished (end chunk, every sample) instead of staying open; a tick before the
 * age, a second tick and one after finish change nothing. */
static void test_age_between_records(void **state)
{
    const char *dir = "rotate_quiet";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    perch_capture_rotate *r = NULL;
    perch_sink sink;
    perch_input in;
    clock c = {1764547200000ull, 0}; /* time stands still until the test moves it */
    size_t n;
    check k;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.max_file_bytes = 1ull << 30;
    o.max_file_age_ms = 60000;
    assert_int_equal(perch_capture_rotate_create(&o, &r), 0);
    perch_capture_rotate_sink(r, &sink);
    sink.finish = NULL; /* the stream stops, the recording goes on */
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), 0);
    c.now += 59999;
    assert_int_equal(perch_capture_rotate_tick(r), 0);
    perch_capture_rotate_get_stats(r, &st);
    assert_string_not_equal(st.current_path, ""); /* not old enough yet */
    c.now += 1;
    assert_int_equal(perch_capture_rotate_tick(r), 0);
    perch_capture_rotate_get_stats(r, &st);
    assert_string_equal(st.current_path, "");
    assert_int_equal(st.files_created, 1);
    assert_int_equal(perch_capture_rotate_tick(r), 0);
    assert_int_equal(perch_capture_rotate_finish(r), 0);
    assert_int_equal(perch_capture_rotate_tick(r), 0);
    perch_capture_rotate_get_stats(r, &st);
    assert_int_equal(st.files_created, 1);
    perch_capture_rotate_destroy(r);
    perch_fs_entry *e = files_of(dir, "t", &n);
    assert_int_equal(n, 1);
    char *p = perch_fs_join(dir, e[0].name);
    assert_int_equal(check_file(p, &k, 0), PERCH_CAPTURE_STOP_END);
    assert_int_equal(k.samples, trace_samples);
    assert_int_equal(k.missing, 0);
    perch_free(p);
    perch_fs_list_free(e, n);
}

/* A rotation that dies mid-file: the open file has no end chunk, and every cut of the last
 * file still names what it holds. */
static void test_crash_leaves_readable_files(void **state)
{
    const char *dir = "rotate_crash";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    clock c = {1764547200000ull, 1};
    size_t n;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.max_file_bytes = 256u << 10;
    run(dir, &o, false, &st);
    perch_fs_entry *e = files_of(dir, "t", &n);
    assert_true(n >= 2);
    char *last = perch_fs_join(dir, e[n - 1].name);
    check k;
    assert_int_equal(check_file(last, &k, 0), PERCH_CAPTURE_STOP_NO_END);
    for (size_t cut = 2000; cut < e[n - 1].size; cut += 4999) {
        assert_int_not_equal(check_file(last, &k, cut), PERCH_CAPTURE_STOP_END);
        assert_int_equal(k.missing, 0);
        assert_int_equal(k.bad_stack, 0);
        if (cut > 20000)
            assert_true(k.names > 0);
    }
    perch_free(last);
    perch_fs_list_free(e, n);
}

/* A named rotation: the first file is <prefix>.perch, the later ones numbered from 2; the
 * disk cap counts the first one as the oldest; a second rotation of that name is a clash. */
static void test_first_name(void **state)
{
    const char *dir = "rotate_named";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    perch_capture_rotate *r = NULL;
    clock c = {1764547200000ull, 1};
    size_t n;
    uint32_t seq;
    uint64_t samples = 0;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.first_name = "t.perch";
    run(dir, &o, true, &st);
    perch_fs_entry *e = NULL;
    assert_int_equal(perch_fs_list(dir, 10000, &e, &n), 0);
    n = perch__rotate_keep_named("t", "t.perch", e, n);
    assert_true(n >= 3);
    assert_int_equal(st.files_created, n);
    assert_string_equal(e[0].name, "t.perch");
    assert_true(perch__rotate_parse("t", e[1].name, &seq));
    assert_int_equal(seq, 2);
    for (size_t i = 0; i < n; i++) {
        check k;
        char *p = perch_fs_join(dir, e[i].name);
        assert_int_equal(check_file(p, &k, 0), PERCH_CAPTURE_STOP_END);
        assert_int_equal(k.missing, 0);
        samples += k.samples;
        perch_free(p);
    }
    assert_int_equal(samples, trace_samples);
    perch_fs_list_free(e, n);
    assert_int_equal(perch_capture_rotate_create(&o, &r), PERCH_EEXIST);
    o.first_name = "u.perch"; /* not <prefix>.perch */
    assert_int_equal(perch_capture_rotate_create(&o, &r), PERCH_EINVAL);
    /* the cap deletes the named first file first */
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.first_name = "t.perch";
    o.max_total_bytes = 200u << 10;
    run(dir, &o, true, &st);
    assert_true(st.files_deleted > 0);
    uint64_t size;
    char *p = perch_fs_join(dir, "t.perch");
    assert_int_equal(perch_fs_size(p, &size), PERCH_ENOENT);
    perch_free(p);
}

/* ---- a disk that fills: discard ---------------------------------------------------------- */

/* Outputs over real files whose writes fail (no space left) once full_at bytes went into
 * them all (full_written), or, with full_from_open n > 0, every write to the n-th file opened
 * (full_opens counts them) and to every later one. */
static uint64_t full_at, full_written;
static unsigned full_from_open, full_opens;

struct full_file {
    perch_output real;
    bool full;
};

static int full_write(void *ctx, const void *buf, size_t len)
{
    struct full_file *f = ctx;
    if (f->full || full_written + len > full_at)
        return PERCH_ENOSPC;
    full_written += len;
    return f->real.write(f->real.ctx, buf, len);
}

static int full_close(void *ctx)
{
    struct full_file *f = ctx;
    int err = f->real.close(f->real.ctx);
    free(f);
    return err;
}

static int open_full(perch_output *out, const char *path)
{
    struct full_file *f = calloc(1, sizeof *f);
    assert_non_null(f);
    int err = perch_output_open_file(&f->real, path);
    if (err < 0) {
        free(f);
        return err;
    }
    f->full = full_from_open > 0 && ++full_opens >= full_from_open;
    out->write = full_write;
    out->sync = NULL;
    out->close = full_close;
    out->ctx = f;
    return 0;
}

static bool present(const char *dir, const char *name)
{
    uint64_t size;
    char *p = perch_fs_join(dir, name);
    int err = perch_fs_size(p, &size);
    perch_free(p);
    return err == 0;
}

/* A file of a few bytes in dir (not one the rotation made). */
static void put_file(const char *dir, const char *name)
{
    perch_output out;
    char *p = perch_fs_join(dir, name);
    assert_int_equal(perch_output_open_file(&out, p), 0);
    assert_int_equal(out.write(out.ctx, "not ours", 8), 0);
    assert_int_equal(out.close(out.ctx), 0);
    perch_free(p);
}

/* Feeds the synthetic trace into a new named rotation "t" until its sink fails; returns r. */
static perch_capture_rotate *fill(perch_capture_rotate_opts *o, int want)
{
    perch_capture_rotate *r = NULL;
    perch_sink sink;
    perch_input in;
    full_written = 0;
    assert_int_equal(perch_capture_rotate_create(o, &r), 0);
    perch_capture_rotate_sink(r, &sink);
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), want);
    return r;
}

/* The number of the prefix's files in dir (the named first file too). */
static size_t count_t(const char *dir)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(perch_fs_list(dir, 10000, &e, &n), 0);
    n = perch__rotate_keep_named("t", "t.perch", e, n);
    perch_fs_list_free(e, n);
    return n;
}

/* A recording that fails at its start (the disk full at the file's header, or at its first
 * chunks) is discarded: the file it created goes, so the same name can be used again, and no
 * other file is touched (one of its own prefix from before included); a rotation past its
 * first file deletes nothing. Before discard the file stayed, and a second start with the same
 * name was refused (PERCH_EEXIST). */
static void test_discard_deletes_only_its_own_file(void **state)
{
    const char *dir = "rotate_discard";
    perch_capture_rotate_opts o;
    perch_capture_rotate *r = NULL;
    char path[600];
    clock c = {1764547200000ull, 1};
    const uint64_t full[] = {0, 100, 6000}; /* at the header; at the first chunks */
    (void)state;
    for (int named = 0; named < 2; named++) {
        fx_empty_dir(dir);
        opts_for(&o, dir, &c);
        o.first_name = named ? "t.perch" : NULL;
        o.open = open_full;
        put_file(dir, "other.perch");
        if (!named) /* an earlier recording's: this one's file is -000002 */
            put_file(dir, "t-20251130-000000-000001.perch");
        for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
            full_at = full[i];
            r = fill(&o, PERCH_ENOSPC);
            /* a file whose header failed is gone already; discard still names it */
            assert_int_equal(count_t(dir), (named ? 1u : 2u) - (full[i] == 0));
            assert_int_equal(perch_capture_rotate_discard(r, path, sizeof path), 0);
            assert_non_null(strstr(path, named ? "t.perch" : "-000002.perch"));
            assert_int_equal(count_t(dir), named ? 0u : 1u);
        }
        assert_true(present(dir, "other.perch"));
        assert_true(named || present(dir, "t-20251130-000000-000001.perch"));
    }
    /* the name is free again: a start with room goes through */
    perch_capture_rotate_stats st;
    o.open = NULL;
    run(dir, &o, true, &st);
    assert_true(st.files_created >= 2);
    assert_true(present(dir, "t.perch"));
    /* past its first file: nothing deleted */
    fx_empty_dir(dir);
    o.open = open_full;
    full_at = 200u << 10; /* three files of 64 KiB go in whole */
    r = fill(&o, PERCH_ENOSPC);
    assert_int_equal(perch_capture_rotate_discard(r, path, sizeof path), PERCH_ESTATE);
    assert_string_equal(path, "");
    assert_true(count_t(dir) >= 3);
    /* none created: nothing to do */
    fx_empty_dir(dir);
    assert_int_equal(perch_capture_rotate_create(&o, &r), 0);
    assert_int_equal(perch_capture_rotate_discard(r, path, sizeof path), 0);
    assert_string_equal(path, "");
    assert_int_equal(perch_capture_rotate_discard(NULL, NULL, 0), 0);
}

static int refuse_every_delete(const char *path)
{
    (void)path;
    return PERCH_EBUSY;
}

/* What the rotation told of files whose header could not be written. */
static struct {
    unsigned calls;
    int err, remove_err;
    uint64_t files_before;
    char path[600];
} told;

static void tell_headless(void *ctx, const char *path, uint64_t files_before, int err,
                          int remove_err)
{
    (void)ctx;
    told.calls++;
    told.files_before = files_before;
    told.err = err;
    told.remove_err = remove_err;
    snprintf(told.path, sizeof told.path, "%s", path);
}

/* A later file whose header cannot be written (the disk filled as the rotation began it) is
 * deleted at once, as the first file's is: it holds nothing a reader could take. The files
 * before it stay whole and readable; a delete that fails too is counted and the file stays.
 * Before, the empty file stayed behind after every rotation that failed this way. */
static void test_later_file_without_header_is_deleted(void **state)
{
    const char *dir = "rotate_headless";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    perch_capture_rotate *r;
    clock c = {1764547200000ull, 1};
    check k;
    size_t n;
    (void)state;
    for (int refuse = 0; refuse < 2; refuse++) {
        fx_empty_dir(dir);
        opts_for(&o, dir, &c);
        o.open = open_full;
        o.remove = refuse ? refuse_every_delete : NULL;
        o.headless = tell_headless;
        memset(&told, 0, sizeof told);
        full_at = UINT64_MAX;
        full_opens = 0;
        full_from_open = 3;
        r = fill(&o, PERCH_ENOSPC);
        perch_capture_rotate_get_stats(r, &st);
        perch_capture_rotate_destroy(r);
        full_from_open = 0;
        assert_int_equal(full_opens, 3);
        assert_int_equal(st.files_created, 2);
        assert_int_equal(st.headless_removed, refuse ? 0u : 1u);
        assert_int_equal(st.headless_kept, refuse ? 1u : 0u);
        assert_int_equal(st.deletes_failed, 0);
        assert_int_equal(told.calls, 1);
        assert_int_equal(told.err, PERCH_ENOSPC);
        assert_int_equal(told.files_before, 2);
        assert_int_equal(told.remove_err, refuse ? PERCH_EBUSY : 0);
        assert_non_null(strstr(told.path, "-000003.perch"));
        perch_fs_entry *e = files_of(dir, "t", &n);
        assert_int_equal(n, refuse ? 3u : 2u);
        for (size_t i = 0; i < 2; i++) { /* the two before: finished, whole */
            char *p = perch_fs_join(dir, e[i].name);
            assert_int_equal(check_file(p, &k, 0), PERCH_CAPTURE_STOP_END);
            assert_int_equal(k.bad_stack, 0);
            perch_free(p);
        }
        if (refuse)
            assert_int_equal(e[2].size, 0);
        perch_fs_list_free(e, n);
    }
}

/* remove for the test below: the first delete goes through and another program at once makes
 * a file under the name now free; every later delete is refused, as Windows refuses a second
 * delete of a file whose delete is still pending (another program, a scanner say, holds it). */
static unsigned removes;

static int remove_then_another_comes(const char *path)
{
    perch_output out;
    if (removes++ > 0)
        return PERCH_EACCES;
    assert_int_equal(perch_fs_remove(path), 0);
    assert_int_equal(perch_output_create_file(&out, path), 0);
    assert_int_equal(out.write(out.ctx, "not ours", 8), 0);
    assert_int_equal(out.close(out.ctx), 0);
    return 0;
}

/* A first file whose header failed is deleted once, by the sink: discard then names it and
 * deletes nothing. Before, discard deleted the name a second time: a file another program had
 * made there since was deleted, and a delete still pending was reported as refused ("perchd
 * could not delete it") though the file was going. */
static void test_discard_after_headless_deletes_nothing_more(void **state)
{
    const char *dir = "rotate_headless_discard";
    perch_capture_rotate_opts o;
    perch_capture_rotate *r;
    char path[600];
    clock c = {1764547200000ull, 1};
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.first_name = "t.perch";
    o.open = open_full;
    o.remove = remove_then_another_comes;
    removes = 0;
    full_at = 0; /* at the header */
    r = fill(&o, PERCH_ENOSPC);
    assert_int_equal(removes, 1);
    assert_int_equal(perch_capture_rotate_discard(r, path, sizeof path), 0);
    assert_non_null(strstr(path, "t.perch"));
    assert_int_equal(removes, 1);
    perch_fs_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(perch_fs_list(dir, 10, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].size, 8); /* the other program's, whole */
    perch_fs_list_free(e, n);
}

/* A file that appears under the first file's name after the rotation checked for a clash (a
 * program that made it in between) is neither truncated nor deleted: the rotation's create
 * refuses it (PERCH_EEXIST), so discard has no file of its own to delete. */
static void test_discard_spares_a_file_made_in_between(void **state)
{
    const char *dir = "rotate_between";
    perch_capture_rotate_opts o;
    perch_capture_rotate *r = NULL;
    perch_sink sink;
    perch_input in;
    perch_fs_entry *e = NULL;
    size_t n = 0;
    char path[600];
    clock c = {1764547200000ull, 1};
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.first_name = "t.perch";
    assert_int_equal(perch_capture_rotate_create(&o, &r), 0); /* no clash yet */
    put_file(dir, "t.perch");
    perch_capture_rotate_sink(r, &sink);
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), PERCH_EEXIST);
    assert_int_equal(perch_capture_rotate_discard(r, path, sizeof path), 0);
    assert_string_equal(path, ""); /* none of its own */
    assert_int_equal(perch_fs_list(dir, 10, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].size, 8); /* "not ours", whole */
    perch_fs_list_free(e, n);
}

static void test_names(void **state)
{
    char name[96];
    uint32_t seq;
    (void)state;
    perch__rotate_name("perch", 951782400000ull + 3723000, 7, name, sizeof name); /* leap day */
    assert_string_equal(name, "perch-20000229-010203-000007.perch");
    perch__rotate_name("p", 0, 1234567, name, sizeof name);
    assert_string_equal(name, "p-19700101-000000-1234567.perch");
    assert_true(perch__rotate_parse("p", name, &seq));
    assert_int_equal(seq, 1234567);
    assert_false(perch__rotate_parse("q", name, &seq));
    assert_false(perch__rotate_parse("p", "p-19700101-000000-12345.perch", &seq));
    assert_false(perch__rotate_parse("p", "p-19700101-000000-000001.perch.tmp", &seq));
    assert_false(perch__rotate_prefix_ok("a/b"));
    assert_false(perch__rotate_prefix_ok(""));
}

/* The name a client gives a recording: each rule refuses with its own sentence, and an
 * accepted name gives its stem. */
static void refused_name(const char *name, const char *because)
{
    char stem[64] = "x", why[256] = "";
    assert_int_equal(perch__rotate_check_name(name, stem, sizeof stem, why, sizeof why),
                     PERCH_EINVAL);
    assert_string_equal(stem, "");
    assert_non_null(strstr(why, "is not a capture name"));
    if (strstr(why, because) == NULL)
        fail_msg("'%s': '%s' does not say '%s'", name, why, because);
}

static void accepted_name(const char *name, const char *want)
{
    char stem[64], why[256] = "";
    assert_int_equal(perch__rotate_check_name(name, stem, sizeof stem, why, sizeof why), 0);
    assert_string_equal(stem, want);
    assert_string_equal(why, "");
}

/* The names a client may FETCH: what the capture directory's listing shows (any case of
 * .perch), never a directory, a wildcard or a device (on Windows 10 NUL.perch or COM1.perch
 * opens the device, and a read of COM1 can wait forever). */
static void test_fetch_names(void **state)
{
    (void)state;
    static const char *const ok[] = {"a.perch",
                                     "X.PERCH",
                                     "perch-20261206-040000-000001.perch",
                                     "My capture (1).Perch",
                                     "con1.perch",
                                     "com10.perch",
                                     "nulx.perch",
                                     "\xe2\x82\xac.perch",
                                     "a..perch",
                                     "com\xc2\xb4.perch"}; /* an acute accent, no superscript */
    static const char *const refused[] = {"",
                                          ".perch",
                                          "a.perc",
                                          "a.perch.txt",
                                          "a.perch ",
                                          "..\\a.perch",
                                          "d/a.perch",
                                          "c:a.perch",
                                          "a.perch:x.perch",
                                          "*.perch",
                                          "a?.perch",
                                          "a\".perch",
                                          "<a>.perch",
                                          "a|b.perch",
                                          "a\tb.perch",
                                          "NUL.perch",
                                          "nul .perch",
                                          "com1.perch",
                                          "LPT9.x.perch",
                                          "CONIN$.perch",
                                          "conout$.perch",
                                          "aux.perch",
                                          "prn.PERCH",
                                          "lpt0.perch",
                                          "COM\xc2\xb9.perch",
                                          "lpt\xc2\xb3 .perch"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!perch__capture_fetch_name_ok(ok[i]))
            fail_msg("'%s' was refused", ok[i]);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (perch__capture_fetch_name_ok(refused[i]))
            fail_msg("'%s' was accepted", refused[i]);
}

static void test_client_names(void **state)
{
    (void)state;
    accepted_name("build-42", "build-42");
    accepted_name("build-42.PERCH", "build-42");
    accepted_name("a.b_c", "a.b_c");
    accepted_name("perchx", "perchx");
    accepted_name("perch.1", "perch.1");
    accepted_name("console", "console");
    accepted_name("com10", "com10");
    accepted_name("com", "com");
    accepted_name("abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345");
    refused_name("..\\x", "directory or a drive");
    refused_name("c:x", "directory or a drive");
    refused_name("a/b", "directory or a drive");
    refused_name("", "1 to 32 letters");
    refused_name(".perch", "start or end with '.'");
    refused_name("abcdefghijklmnopqrstuvwxyz0123456", "1 to 32 letters");
    refused_name("a b", "1 to 32 letters");
    refused_name(".a", "start or end with '.'");
    refused_name("a..perch", "start or end with '.'");
    refused_name("CON", "reserves it for a device");
    refused_name("nul.txt", "reserves it for a device");
    refused_name("Lpt9", "reserves it for a device");
    refused_name("com1.x", "reserves it for a device");
    refused_name("com0", "reserves it for a device");
    refused_name("perch", "own recordings");
    refused_name("PERCH-1", "own recordings");
    refused_name("snapshot-x.perch", "own recordings");
    char small[4], why[8];
    assert_int_equal(perch__rotate_check_name("abcd", small, sizeof small, why, sizeof why),
                     PERCH_EINVAL); /* the stem would not fit */
    assert_string_equal(small, "");
    assert_int_equal(strlen(why), sizeof why - 1);
    assert_int_equal(perch__rotate_check_name("abc", small, sizeof small, NULL, 0), 0);
    assert_string_equal(small, "abc");
}

/* ---- names the writer refuses --------------------------------------------------------- */

/* A stream (the pipeline's, wrapped) that names a thread it never described, so the file's
 * scope forgets an entity, and at its end gives the rotation a ledger name twice and the name
 * of the rotation's own entry, capture.entity_forgotten: the writer refuses those records,
 * which must cost the names, not the file's end (docs/capture-format.md 2, "The writer's
 * side"). */
static perch_sink twice_inner;
static bool twice_sent, twice_ledger_sent;

static int twice_sample(void *ctx, const perch_sample_rec *r)
{
    if (!twice_sent) {
        perch_sample_rec s = *r;
        s.thread_key = 0x7e57ab1eu; /* described by no thread record */
        twice_sent = true;
        int err = twice_inner.sample(ctx, &s);
        if (err)
            return err;
    }
    return twice_inner.sample(ctx, r);
}

static int twice_ledger(void *ctx, const perch_ledger_rec *r)
{
    static const perch_ledger_rec extra[] = {
        {"capture.entity_forgotten", 7}, {"test.twice", 1}, {"test.twice", 2}};
    for (size_t i = 0; i < 3 && !twice_ledger_sent; i++) {
        int err = twice_inner.ledger(ctx, &extra[i]);
        if (err)
            return err;
    }
    twice_ledger_sent = true;
    return twice_inner.ledger(ctx, r);
}

typedef struct ledger_seen {
    uint64_t forgotten, twice, entries;
} ledger_seen;

static int seen_ledger(void *ctx, const perch_ledger_rec *r)
{
    ledger_seen *l = ctx;
    l->entries++;
    l->forgotten += strcmp(r->reason, "capture.entity_forgotten") == 0;
    l->twice += strcmp(r->reason, "test.twice") == 0;
    return 0;
}

static void test_refused_name_costs_the_name_not_the_file(void **state)
{
    const char *dir = "rotate_twice";
    perch_capture_rotate_opts o;
    perch_capture_rotate_stats st;
    perch_capture_rotate *r = NULL;
    perch_sink sink;
    perch_input in;
    clock c = {1764547200000ull, 1};
    size_t n;
    (void)state;
    fx_empty_dir(dir);
    opts_for(&o, dir, &c);
    o.max_file_bytes = 64u << 20; /* one file */
    assert_int_equal(perch_capture_rotate_create(&o, &r), 0);
    perch_capture_rotate_sink(r, &twice_inner);
    sink = twice_inner;
    sink.sample = twice_sample;
    sink.ledger = twice_ledger;
    twice_sent = twice_ledger_sent = false;
    perch_input_memory(&in, etl, etl_len);
    assert_int_equal(perch_pipeline_etl(&in, "synth", &sink, NULL, NULL), 0);
    assert_true(twice_ledger_sent);
    perch_capture_rotate_get_stats(r, &st);
    assert_int_equal(st.entities_forgotten, 1);
    perch_capture_rotate_destroy(r);
    perch_fs_entry *e = files_of(dir, "t", &n);
    assert_int_equal(n, 1);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e[0].name);
    perch_fs_list_free(e, n);
    size_t len;
    uint8_t *data = perch_test_read_file(path, &len);
    ledger_seen l = {0, 0, 0};
    perch_sink s = {0};
    perch_capture_status cs;
    s.ctx = &l;
    s.ledger = seen_ledger;
    assert_int_equal(perch_capture_replay_memory(data, len, &s, &cs), 0);
    assert_int_equal(cs.stop, PERCH_CAPTURE_STOP_END);
    assert_int_equal(l.forgotten, 1); /* the producer's; the rotation's own was refused */
    assert_int_equal(l.twice, 1);
    assert_true(l.entries > 2);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_client_names),
        cmocka_unit_test(test_fetch_names),
        cmocka_unit_test(test_every_file_stands_alone),
        cmocka_unit_test(test_disk_cap_deletes_oldest),
        cmocka_unit_test(test_disk_cap_keeps_what_it_cannot_delete),
        cmocka_unit_test(test_age_and_sequence),
        cmocka_unit_test(test_age_between_records),
        cmocka_unit_test(test_crash_leaves_readable_files),
        cmocka_unit_test(test_first_name),
        cmocka_unit_test(test_discard_deletes_only_its_own_file),
        cmocka_unit_test(test_discard_spares_a_file_made_in_between),
        cmocka_unit_test(test_later_file_without_header_is_deleted),
        cmocka_unit_test(test_discard_after_headless_deletes_nothing_more),
        cmocka_unit_test(test_refused_name_costs_the_name_not_the_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
