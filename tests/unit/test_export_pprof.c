/*
 * pprof export over the synthetic stream, decoded back by a small test-side protobuf reader
 * (field numbers of google/pprof proto/profile.proto): sample types, per-sample values and
 * leaf-first locations, mappings per module, function names, labels, period and times. When
 * `go` is installed, `go tool pprof -top` must read the file and agree on the top entries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export_extreme.h"
#include "export_fixture.h"

/* ---- a tiny protobuf reader: enough of profile.proto for the assertions ---------------- */
struct pb_in {
    const uint8_t *p, *end;
};

static uint64_t rd_varint(struct pb_in *in)
{
    uint64_t v = 0;
    for (int shift = 0; in->p < in->end && shift < 64; shift += 7) {
        uint8_t b = *in->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("truncated varint");
    return 0;
}

/* Next field: returns false at the end; varint value in *v, or sub-message in *sub. */
static bool rd_field(struct pb_in *in, uint32_t *field, uint64_t *v, struct pb_in *sub)
{
    uint64_t key, len;
    if (in->p >= in->end)
        return false;
    key = rd_varint(in);
    *field = (uint32_t)(key >> 3);
    if ((key & 7) == 0) {
        *v = rd_varint(in);
        return true;
    }
    assert_int_equal(key & 7, 2); /* the writer uses only varint and length-delimited */
    len = rd_varint(in);
    assert_true(len <= (uint64_t)(in->end - in->p));
    sub->p = in->p;
    sub->end = in->p + len;
    in->p += len;
    return true;
}

#define MAXN 64
struct label {
    uint64_t key, str, num;
};

struct sample {
    uint64_t locs[8];
    size_t nlocs;
    uint64_t values[3];
    struct label labels[8];
    size_t nlabels;
};

struct decoded {
    const char *strings[MAXN];
    size_t str_len[MAXN];
    size_t nstrings;
    uint64_t sample_type[3][2];
    size_t ntypes;
    struct sample samples[MAXN];
    size_t nsamples;
    uint64_t locs[MAXN][4]; /* id, mapping, address, function */
    size_t nlocs;
    uint64_t funcs[MAXN][3]; /* id, name, system_name */
    size_t nfuncs;
    uint64_t maps[MAXN][7]; /* id, start, limit, offset, filename, build_id, has_functions */
    size_t nmaps;
    uint64_t period, period_type[2], time_nanos, duration_nanos, default_type;
};

static void rd_packed(struct pb_in sub, uint64_t *out, size_t *n, size_t cap)
{
    while (sub.p < sub.end) {
        assert_true(*n < cap);
        out[(*n)++] = rd_varint(&sub);
    }
}

/* Reads the varint fields 1..n of a message into out[0..n-1] (0 when absent). */
static void rd_fields(struct pb_in sub, uint64_t *out, uint32_t n)
{
    uint32_t f;
    uint64_t v = 0;
    struct pb_in x;
    memset(out, 0, n * sizeof *out);
    while (rd_field(&sub, &f, &v, &x))
        if (f >= 1 && f <= n)
            out[f - 1] = v;
}

static void rd_sample(struct sample *s, struct pb_in sub)
{
    uint32_t f;
    uint64_t v = 0;
    size_t nv = 0;
    struct pb_in x;
    memset(s, 0, sizeof *s);
    while (rd_field(&sub, &f, &v, &x)) {
        if (f == 1) {
            rd_packed(x, s->locs, &s->nlocs, 8);
        } else if (f == 2) {
            rd_packed(x, s->values, &nv, 3);
        } else if (f == 3) {
            uint64_t l[3];
            assert_true(s->nlabels < 8);
            rd_fields(x, l, 3);
            s->labels[s->nlabels++] = (struct label){l[0], l[1], l[2]};
        }
    }
    assert_int_equal(nv, 3);
}

static void rd_location(struct decoded *d, struct pb_in sub)
{
    uint32_t f;
    uint64_t v = 0, *l = d->locs[d->nlocs++];
    struct pb_in x;
    memset(l, 0, 4 * sizeof *l);
    while (rd_field(&sub, &f, &v, &x)) {
        if (f >= 1 && f <= 3)
            l[f - 1] = v;
        else if (f == 4)
            rd_fields(x, &l[3], 1); /* Line.function_id */
    }
}

static void decode(struct decoded *d, const uint8_t *data, size_t len)
{
    struct pb_in in = {data, data + len}, x;
    uint32_t f;
    uint64_t v = 0;
    memset(d, 0, sizeof *d);
    while (rd_field(&in, &f, &v, &x)) {
        assert_true(d->nsamples < MAXN && d->nlocs < MAXN && d->nfuncs < MAXN && d->nmaps < MAXN &&
                    d->nstrings < MAXN && d->ntypes <= 3);
        switch (f) {
        case 1:
            rd_fields(x, d->sample_type[d->ntypes++], 2);
            break;
        case 2:
            rd_sample(&d->samples[d->nsamples++], x);
            break;
        case 3:
            rd_fields(x, d->maps[d->nmaps++], 7);
            break;
        case 4:
            rd_location(d, x);
            break;
        case 5:
            rd_fields(x, d->funcs[d->nfuncs++], 3);
            break;
        case 6:
            d->strings[d->nstrings] = (const char *)x.p;
            d->str_len[d->nstrings++] = (size_t)(x.end - x.p);
            break;
        case 9:
            d->time_nanos = v;
            break;
        case 10:
            d->duration_nanos = v;
            break;
        case 11:
            rd_fields(x, d->period_type, 2);
            break;
        case 12:
            d->period = v;
            break;
        case 14:
            d->default_type = v;
            break;
        default:
            fail_msg("unexpected field %u", f);
        }
    }
}

static bool str_is(const struct decoded *d, uint64_t idx, const char *s)
{
    return idx < d->nstrings && d->str_len[idx] == strlen(s) &&
           memcmp(d->strings[idx], s, d->str_len[idx]) == 0;
}

/* The function name of location id (1-based) as a NUL-terminated copy. */
static const char *loc_name(const struct decoded *d, uint64_t id, char *buf)
{
    uint64_t fn, name;
    assert_true(id >= 1 && id <= d->nlocs);
    assert_int_equal(d->locs[id - 1][0], id);
    fn = d->locs[id - 1][3];
    assert_true(fn >= 1 && fn <= d->nfuncs);
    assert_int_equal(d->funcs[fn - 1][0], fn);
    name = d->funcs[fn - 1][1];
    assert_true(name < d->nstrings);
    memcpy(buf, d->strings[name], d->str_len[name]);
    buf[d->str_len[name]] = 0;
    return buf;
}

static const struct label *find_label(const struct decoded *d, const struct sample *s,
                                      const char *key)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (str_is(d, s->labels[i].key, key))
            return &s->labels[i];
    return NULL;
}

static uint8_t *export_pprof(size_t *len)
{
    int err;
    char *data = fx_export(PERCH_EXPORT_PPROF, NULL, len, &err);
    assert_int_equal(err, 0);
    assert_non_null(data);
    return (uint8_t *)data;
}

static void test_header(void **state)
{
    static struct decoded d;
    size_t len;
    uint8_t *data = export_pprof(&len);
    (void)state;
    decode(&d, data, len);
    assert_true(str_is(&d, 0, ""));
    assert_int_equal(d.ntypes, 3);
    assert_true(str_is(&d, d.sample_type[0][0], "samples"));
    assert_true(str_is(&d, d.sample_type[0][1], "count"));
    assert_true(str_is(&d, d.sample_type[1][0], "cpu"));
    assert_true(str_is(&d, d.sample_type[1][1], "nanoseconds"));
    assert_true(str_is(&d, d.sample_type[2][0], "pmc"));
    assert_true(str_is(&d, d.default_type, "cpu"));
    assert_true(str_is(&d, d.period_type[0], "cpu"));
    assert_int_equal(d.period, 1000000);
    /* start_filetime 133000000000000000 -> unix ns */
    assert_int_equal(d.time_nanos, (133000000000000000ull - 116444736000000000ull) * 100);
    /* last sample at 100 + 50*16 = 900 us */
    assert_int_equal(d.duration_nanos, 900000);
    free(data);
}

static void test_samples(void **state)
{
    static struct decoded d;
    uint64_t total[3] = {0, 0, 0};
    char name[256];
    size_t len, pmc = 0, kernel_user = 0;
    uint8_t *data = export_pprof(&len);
    (void)state;
    decode(&d, data, len);
    /* one sample per (thread, stack) row: T1 3, T2 3, T3 2, T4 1 */
    assert_int_equal(d.nsamples, 9);
    for (size_t i = 0; i < d.nsamples; i++) {
        const struct sample *s = &d.samples[i];
        const struct label *tid = find_label(&d, s, "tid");
        for (int k = 0; k < 3; k++)
            total[k] += s->values[k];
        assert_int_equal(s->values[1], s->values[0] * 1000000);
        assert_non_null(tid);
        if (s->values[2]) {
            const struct label *src = find_label(&d, s, "pmc_source");
            assert_non_null(src);
            assert_int_equal(src->num, 2);
            assert_true(str_is(&d, tid->str, "1001"));
            pmc++;
        }
        if (s->nlocs == 4) { /* S1: leaf first */
            assert_string_equal(loc_name(&d, s->locs[0], name), "ntoskrnl.exe!+0x1000");
            assert_string_equal(loc_name(&d, s->locs[2], name), "app.exe!+0x100");
            assert_string_equal(loc_name(&d, s->locs[3], name), "ntdll.dll!+0x50");
            assert_true(str_is(&d, tid->str, "1001") || str_is(&d, tid->str, "1002"));
            assert_true(str_is(&d, find_label(&d, s, "process")->str, "app.exe"));
            assert_true(str_is(&d, find_label(&d, s, "pid")->str, "1234"));
            kernel_user += s->values[0];
        }
        /* pid and tid are string labels on every sample: pprof drops a numeric label of
         * value 0, which the idle thread's are */
        assert_non_null(find_label(&d, s, "pid"));
        if (str_is(&d, tid->str, "2001") && s->nlocs == 2) {
            assert_string_equal(loc_name(&d, s->locs[0], name), "svc.exe!+0x300");
            assert_int_equal(s->values[0], 5);
            assert_true(str_is(&d, find_label(&d, s, "thread")->str, "thread 2001"));
        }
        if (str_is(&d, tid->str, "3001")) {
            assert_string_equal(loc_name(&d, s->locs[0], name), "ntoskrnl.exe!+0x5000");
            assert_true(str_is(&d, find_label(&d, s, "pid")->str, "?"));
        }
    }
    assert_int_equal(total[0], 16);
    assert_int_equal(total[1], 16000000);
    assert_int_equal(total[2], 2);
    assert_int_equal(pmc, 1);
    assert_int_equal(kernel_user, 4);
    free(data);
}

static void test_mappings_and_locations(void **state)
{
    static struct decoded d;
    char name[256];
    size_t len, unresolved = 0;
    uint8_t *data = export_pprof(&len);
    (void)state;
    decode(&d, data, len);
    /* modules used: ntoskrnl, hal, app (P1), ntdll (P1), svc (P2), ntdll (P2) */
    assert_int_equal(d.nmaps, 6);
    for (size_t i = 0; i < d.nmaps; i++) {
        assert_int_equal(d.maps[i][0], i + 1);
        assert_true(d.maps[i][2] > d.maps[i][1]);
        assert_int_equal(d.maps[i][6], 1);
        assert_true(d.maps[i][4] > 0 && d.maps[i][4] < d.nstrings); /* path */
    }
    /* pprof's "File:" is the first mapping: the main image of the busiest process (P1,
     * 9 timer samples against P2's 6), not the kernel */
    assert_int_equal(d.maps[0][1], FX_APP);
    assert_int_equal(d.maps[0][2], FX_APP + 0x10000);
    /* every location's address lies in its mapping; the unresolved one has none */
    for (size_t i = 0; i < d.nlocs; i++) {
        uint64_t m = d.locs[i][1];
        if (m == 0) {
            assert_string_equal(loc_name(&d, i + 1, name), "?!0x12345678");
            unresolved++;
            continue;
        }
        assert_true(d.locs[i][2] >= d.maps[m - 1][1] && d.locs[i][2] < d.maps[m - 1][2]);
    }
    assert_int_equal(unresolved, 1);
    /* distinct (module, address): S1 4 + S2 1 new (ntdll+0x50 shared) + S3 2 + app+0x400 +
     * S4 2 (P2 modules) + S5 1 + ntoskrnl+0x5000 = 12 */
    assert_int_equal(d.nlocs, 12);
    free(data);
}

/* Runs `go tool pprof -top` on the export; skipped when go is not installed. */
static void test_go_tool_pprof(void **state)
{
    static char out[1 << 16];
    const char *path = "test_export_pprof.pb.tmp";
    size_t len, n;
    uint8_t *data;
    FILE *f;
    (void)state;
    if (system("go version > /dev/null 2>&1") != 0) {
        print_message("go not installed: skipping the `go tool pprof -top` check\n");
        skip();
    }
    data = export_pprof(&len);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    free(data);
    assert_int_equal(system("go tool pprof -top -nodecount=20 test_export_pprof.pb.tmp "
                            "> test_export_pprof.top.tmp 2>&1"),
                     0);
    f = fopen("test_export_pprof.top.tmp", "rb");
    assert_non_null(f);
    n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    remove(path);
    remove("test_export_pprof.top.tmp");
    print_message("%s", out);
    /* 16 timer samples x 1 ms; flat leaders: svc.exe!+0x300 5 ms, S1's leaf 4 ms */
    assert_non_null(strstr(out, "of 16ms total"));
    assert_non_null(strstr(out, "5ms 31.25% 31.25%        5ms 31.25%  svc.exe!+0x300"));
    assert_non_null(strstr(out, "4ms 25.00% 56.25%        4ms 25.00%  ntoskrnl.exe!+0x1000"));
    assert_non_null(strstr(out, "hal.dll!+0x10"));
    assert_non_null(strstr(out, "?!0x12345678"));
}

/* The fixture stream with, before finish, a stack {ntdll+0x50} sampled by T3 (process 2:
 * ntdll+0x50 in process 1 is in fx_s1 and fx_s2), and with `symbols` a symbol record naming
 * rva 0x40-0x7f of process 1's ntdll "RtlUserThreadStart" while process 2's ntdll gets
 * another time stamp (so another identity: its frames stay unnamed). */
static const perch_sink *named_inner;
static bool named_symbols;

static int named_finish(void *ctx)
{
    static const uint64_t frames[] = {FX_NTDLL + 0x50};
    const perch_sink *s = named_inner;
    perch_sample_rec r;
    int err = fx_stack(s, 6, frames, 1, 0);
    memset(&r, 0, sizeof r);
    r.thread_key = FX_KEY_T3;
    r.tid = 2001;
    r.ts = FX_US(5000);
    r.ip = FX_NTDLL + 0x50;
    r.module_key = FX_KEY_M_NTDLL2;
    r.stack_id = 6;
    r.count = 1;
    if (!err)
        err = s->sample(ctx, &r);
    if (!err && named_symbols) {
        perch_module_rec m;
        perch_symbol_rec sym = {FX_KEY_M_NTDLL1, 0x40, 0x40, 0x40, 0x40, 1, "RtlUserThreadStart"};
        memset(&m, 0, sizeof m);
        m.key = FX_KEY_M_NTDLL2;
        m.process_key = FX_KEY_P2;
        m.pid = 5678;
        m.base = FX_NTDLL;
        m.size = 0x200000;
        m.time_date_stamp = 7;
        m.path = "\\SystemRoot\\System32\\ntdll.dll";
        m.pdb_name = "";
        err = s->module(ctx, &m);
        if (!err)
            err = s->symbol(ctx, &sym);
    }
    return err ? err : s->finish(ctx);
}

static int named_replay(void *ctx, const perch_sink *s)
{
    perch_sink w = *s;
    named_inner = s;
    w.finish = named_finish;
    return fx_replay(ctx, &w);
}

/* The functions named name, and the locations that point at them. */
static void count_named(const struct decoded *d, const char *name, size_t *funcs, size_t *locs)
{
    *funcs = *locs = 0;
    for (size_t f = 0; f < d->nfuncs; f++) {
        const char *n = d->strings[d->funcs[f][1]];
        if (strlen(name) != d->str_len[d->funcs[f][1]] || memcmp(n, name, strlen(name)) != 0)
            continue;
        (*funcs)++;
        for (size_t l = 0; l < d->nlocs; l++)
            *locs += d->locs[l][3] == d->funcs[f][0];
    }
}

/* Without symbol records a new location's function is found by (module name, offset): the
 * two processes' ntdll at the same offset are two locations of one function. With symbol
 * records every name is formatted: the named module's frame and the unnamed one's differ. */
static void test_function_names(void **state)
{
    static struct decoded d;
    perch_record_source src = {NULL, named_replay, NULL};
    size_t funcs, locs;
    (void)state;
    for (int symbols = 0; symbols < 2; symbols++) {
        perch_memory_out mem;
        perch_output out;
        size_t len;
        named_symbols = symbols;
        perch_output_memory(&out, &mem, (size_t)64 << 20);
        assert_int_equal(perch_export_run(PERCH_EXPORT_PPROF, NULL, &src, &out), 0);
        uint8_t *data = perch_output_memory_take(&mem, &len);
        memset(&d, 0, sizeof d);
        decode(&d, data, len);
        count_named(&d, "ntdll.dll!+0x50", &funcs, &locs);
        assert_int_equal(funcs, 1);
        assert_int_equal(locs, symbols ? 1 : 2);
        count_named(&d, "ntdll.dll!RtlUserThreadStart+0x10", &funcs, &locs);
        assert_int_equal(funcs, symbols ? 1 : 0);
        assert_int_equal(locs, symbols ? 1 : 0);
        free(data);
    }
}

/* The formats whose groups are built on a helper thread (groups_each.c) write the same bytes
 * with options threads = 1 (one thread), with their logs in memory and spilled to scratch
 * files (the builder then reads the scratch store). */
static void test_threads_same_bytes(void **state)
{
    static const perch_export_format fmts[] = {PERCH_EXPORT_PPROF, PERCH_EXPORT_SPEEDSCOPE,
                                               PERCH_EXPORT_FOLDED};
    (void)state;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        for (int spill = 0; spill < 2; spill++) {
            perch_export_options one, two;
            size_t n1, n2;
            int e1, e2;
            perch_export_options_init(&one);
            one.log_memory = spill ? 16 : 0;
            two = one;
            one.threads = 1;
            char *a = fx_export(fmts[f], &one, &n1, &e1);
            char *b = fx_export(fmts[f], &two, &n2, &e2);
            assert_int_equal(e1, 0);
            assert_int_equal(e2, 0);
            assert_true(n1 > 16);
            assert_int_equal(n1, n2);
            assert_memory_equal(a, b, n1);
            free(a);
            free(b);
        }
    }
}

/* ---- many threads: the sample log of thousands of small groups -------------------------- */
#define MANY_SMALL 3000 /* one-sample threads (keys 1000 ..), every third without a stack */
#define MANY_BIG   2    /* threads 11 and 12, with MANY_BIG_N samples each */
#define MANY_BIG_N 2500

/* The stream: xt's head, the two large threads' samples among the small ones', xt's tail. */
static int many_replay(void *ctx, const perch_sink *k)
{
    static const struct xt_stream x = {10000000, 0, NULL, 0, 0};
    int err = xt_head(&x, k);
    (void)ctx;
    for (size_t i = 0; !err && i < MANY_SMALL + MANY_BIG * MANY_BIG_N; i++) {
        perch_sample_rec r;
        memset(&r, 0, sizeof r);
        r.kind = PERCH_SAMPLE_TIMER;
        r.ts = 1000 + i * 10;
        r.count = 1;
        r.stack_id = 1;
        r.ip = XT_APP + 0x100;
        if (i % 3 == 0 && i / 3 < MANY_SMALL) {
            r.thread_key = 1000 + i / 3;
            r.tid = (uint32_t)(5000 + i / 3);
            if (i % 2)
                r.stack_id = 0, r.ip = XT_APP + 0x40 + i, r.module_key = 503;
        } else {
            r.thread_key = 11 + i % 2;
            r.tid = (uint32_t)(1001 + i % 2);
            r.stack_id = i % 5 ? 1 : 0;
            r.ip = XT_APP + 0x80 + i % 7;
        }
        err = k->sample ? k->sample(k->ctx, &r) : 0;
    }
    return err ? err : xt_tail(k);
}

/* A memory scratch store that counts its writes and reads (system calls in a file store). */
struct counted {
    perch_scratch inner;
};
static unsigned many_writes, many_reads;

static int counted_write(void *ctx, uint64_t off, const void *buf, size_t len)
{
    struct counted *c = ctx;
    many_writes++;
    return c->inner.write_at(c->inner.ctx, off, buf, len);
}

static int counted_read(void *ctx, uint64_t off, void *buf, size_t len)
{
    struct counted *c = ctx;
    many_reads++;
    return c->inner.read_at(c->inner.ctx, off, buf, len);
}

static void counted_close(void *ctx)
{
    struct counted *c = ctx;
    perch_scratch_close(&c->inner);
    free(c);
}

static int counted_open(void *ctx, perch_scratch *s)
{
    struct counted *c = calloc(1, sizeof *c);
    int err = c ? perch_scratch_open_memory(ctx, &c->inner) : PERCH_ENOMEM;
    if (err) {
        free(c);
        return err;
    }
    *s = (perch_scratch){counted_write, counted_read, counted_close, c};
    return 0;
}

/* Thousands of one-sample threads beside two large ones, logs spilled (a 4 KiB log cap) or
 * not, on one thread or two (the small groups are then built on the writer's thread, the
 * large ones on the helper's): the same bytes in every format of the sample log. And the
 * spilled logs reach the scratch store in a few hundred writes and reads, not one or more per
 * thread: before (2026-12-06) every spill wrote each log on its own and every group read its
 * segments on their own, 3,000+ of each here, a system call each with a file store (a
 * capture of 4 M one-sample threads took pprof 84 s, half of it in the kernel). */
static void test_many_threads(void **state)
{
    static const perch_export_format fmts[] = {PERCH_EXPORT_PPROF, PERCH_EXPORT_SPEEDSCOPE,
                                               PERCH_EXPORT_FOLDED, PERCH_EXPORT_GECKO};
    perch_record_source src = {NULL, many_replay, NULL};
    (void)state;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        perch_export_options ref;
        size_t n0;
        int e0;
        perch_export_options_init(&ref);
        ref.log_memory = 0;
        ref.threads = 1;
        char *a = fx_export_from(fmts[f], &ref, &src, (size_t)64 << 20, &n0, &e0);
        assert_int_equal(e0, 0);
        assert_true(n0 > MANY_SMALL * 4);
        for (int v = 0; v < 3; v++) {
            perch_export_options opt = ref;
            size_t n;
            int e;
            opt.threads = v == 1 ? 1 : 0;
            opt.log_memory = v == 2 ? 0 : 4096;
            opt.scratch_open = counted_open;
            opt.scratch_ctx = NULL;
            many_writes = many_reads = 0;
            char *b = fx_export_from(fmts[f], &opt, &src, (size_t)64 << 20, &n, &e);
            print_message("  %s, %s, log cap %u: %u scratch writes, %u reads\n",
                          perch_export_format_name(fmts[f]), v == 1 ? "one thread" : "threads",
                          (unsigned)opt.log_memory, many_writes, many_reads);
            assert_int_equal(e, 0);
            assert_int_equal(n, n0);
            assert_memory_equal(a, b, n0);
            assert_true(v == 2 || many_writes >= 1);
            assert_true(many_writes < 300);
            assert_true(many_reads < 300);
            free(b);
        }
        free(a);
    }
}

/* A timer row's values are int64 in profile.proto: counts summed to n x interval ns past
 * INT64_MAX fail the export with PERCH_ELIMIT instead of wrapping (2026-12-06). The interval
 * 2^31 ns makes one sample of Count 2^32 - 1 the last that fits: 2^63 - 2^31 ns. */
static void test_weight_limit(void **state)
{
    static struct decoded d;
    static const struct xt_sample max = {10000000, UINT32_MAX};
    struct xt_stream x = {10000000, 0, &max, 1, 1};
    perch_export_options opt;
    size_t len;
    int err;
    char *data;
    (void)state;
    perch_export_options_init(&opt);
    opt.sample_interval_ns = (uint64_t)1 << 31;
    data = xt_export(PERCH_EXPORT_PPROF, &opt, &x, &len, &err);
    assert_int_equal(err, 0);
    decode(&d, (const uint8_t *)data, len);
    assert_int_equal(d.nsamples, 1);
    assert_int_equal(d.samples[0].values[0], UINT32_MAX);
    assert_int_equal(d.samples[0].values[1], ((uint64_t)UINT32_MAX) << 31);
    assert_int_equal(d.samples[0].values[2], 0);
    free(data);
    for (x.repeat = 2; x.repeat <= 3; x.repeat++) { /* past INT64_MAX; past UINT64_MAX */
        assert_null(xt_export(PERCH_EXPORT_PPROF, &opt, &x, &len, &err));
        assert_int_equal(err, PERCH_ELIMIT);
    }
    /* the review's capture: 5,000 samples of Count 2^32 - 1 at the default 1 ms */
    x.repeat = 5000;
    assert_null(xt_export(PERCH_EXPORT_PPROF, NULL, &x, &len, &err));
    assert_int_equal(err, PERCH_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_mappings_and_locations),
        cmocka_unit_test(test_go_tool_pprof),
        cmocka_unit_test(test_threads_same_bytes),
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_function_names),
        cmocka_unit_test(test_weight_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
