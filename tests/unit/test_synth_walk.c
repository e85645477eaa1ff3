/*
 * Structural tests of perch synth output through a minimal walk written here from the
 * layouts (independent of the generator's code and of the ETL reader): buffer headers,
 * record markers, sizes, alignment and time order, the logfile header, CSwitch chains per
 * CPU, PMC counters, ReadyThread before switch-in, stacks matching samples; and the stats
 * the generator reports must equal what the walk counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/kind.h"
#include "perch/synth.h"
#include "testdata.h"

#define BUF        65536u
#define KERNEL_MIN 0xFFFF800000000000ull
#define MAX_CPUS   64

static uint16_t u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)u16(p) | (uint32_t)u16(p + 2) << 16;
}
static uint64_t u64(const uint8_t *p)
{
    return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32;
}

struct sample {
    uint64_t ts;
    uint64_t ip;
    uint32_t tid;
    uint8_t kernel_parts, user_parts;
};

struct part {
    uint64_t event_ts;
    uint64_t first;
    uint32_t tid;
    uint32_t frames;
};

/* One entry of the global sched order check: ready (0), switch-out waiting (1), switch-in (2). */
struct sched_ev {
    uint64_t ts;
    uint64_t order; /* walk order: breaks ties between records of one CPU */
    uint32_t tid;
    uint32_t what;
};

struct image {
    uint64_t base, size;
    uint32_t pid;
    char name[32]; /* lower-cased base name of FileName */
};

/* A (pid, name) with its sample count: processes, and modules with pid 0. */
struct tally {
    uint32_t pid;
    char name[32];
    uint64_t samples;
};

#define TID_SLOTS (1u << 16)

struct walk {
    struct image images[256];
    size_t nimages;
    uint32_t tid_pid[TID_SLOTS];  /* tid / 4 -> pid + 1 */
    struct tally proc_names[256]; /* pid -> ImageFileName, samples */
    size_t nproc_names;
    struct tally modules[64];
    size_t nmodules;
    uint64_t prev_first_ts, out_of_order;
    bool real; /* walking a real trace: only the framing rules apply */
    const uint8_t *d;
    size_t len;
    uint32_t cpus;
    uint64_t buffers, records, by_kind[PERCH_KIND_COUNT];
    uint64_t cswitches, slices, idle_slices, rsds, header_ts, last_ts, last_seq;
    uint8_t pdb[64][20]; /* distinct (GUID, age) of the DbgID_RSDS records */
    size_t npdb;
    uint32_t prev_new[MAX_CPUS];
    bool switched[MAX_CPUS];
    uint64_t pmc[MAX_CPUS][2];
    uint64_t cpu_ts[MAX_CPUS]; /* last timestamp of each CPU's stream */
    struct sample *samples;
    size_t nsamples;
    struct part *parts;
    size_t nparts;
    struct sched_ev *sched;
    size_t nsched;
};

/* Room for element n: the capacity doubles at powers of two, starting at 64. */
static void *grow(void *p, size_t n, size_t size)
{
    if (n != 0 && (n < 64 || (n & (n - 1))))
        return p;
    p = realloc(p, (n < 64 ? 64 : 2 * n) * size);
    assert_non_null(p);
    return p;
}

static uint8_t *synth_to_memory(const perch_synth_options *opt, size_t *len, perch_synth_stats *st)
{
    perch_output out;
    perch_memory_out mem;
    perch_output_memory(&out, &mem, (size_t)256 << 20);
    assert_int_equal(perch_synth_write(opt, &out, st), 0);
    return perch_output_memory_take(&mem, len);
}

static void check_logfile(struct walk *w, const perch_synth_stats *st)
{
    const uint8_t *b = w->d;
    assert_int_equal(u16(b + 0x36), 4); /* BufferType HEADER */
    const uint8_t *r = b + 0x48;
    assert_int_equal(u32(r) >> 16, 0xC002); /* SYSTEM64 marker */
    assert_int_equal(u16(r + 6), 0x0000);   /* HookId: logfile header */
    w->header_ts = u64(r + 16);
    const uint8_t *h = r + 0x20;
    assert_int_equal(u32(h + 0), BUF);
    assert_int_equal(u32(h + 12), w->cpus);
    assert_int_equal(u32(h + 36), w->len / BUF); /* BuffersWritten */
    assert_int_equal(u32(h + 44), 8);            /* PointerSize */
    assert_int_equal(u64(h + 256), st->perf_freq);
    assert_int_equal(u64(h + 264), st->start_time);
    assert_int_equal(u64(h + 16), st->end_time);
    assert_int_equal(u32(h + 272), 1);   /* QPC */
    assert_int_equal(u16(h + 280), 'N'); /* "NT Kernel Logger" right after the fixed part */
    w->records++;
    w->by_kind[PERCH_KIND_OTHER_KERNEL]++;
}

static perch_kind kind_of_hook(uint16_t hook)
{
    if (hook == 0x030A)
        return perch_kind_of(0x14, 10);
    return perch_kind_of(hook >> 8, (uint8_t)hook);
}

static void on_cswitch(struct walk *w, uint16_t cpu, uint64_t ts, const uint8_t *p)
{
    uint32_t new_tid = u32(p + 16), old_tid = u32(p + 20);
    uint64_t cycles = u64(p), instr = u64(p + 8);
    if (w->switched[cpu]) {
        assert_int_equal(old_tid, w->prev_new[cpu]);
        assert_true(cycles > w->pmc[cpu][0]);
        assert_true(instr > w->pmc[cpu][1]);
        w->slices++;
        w->idle_slices += old_tid == 0;
    }
    assert_int_not_equal(new_tid, old_tid);
    w->switched[cpu] = true;
    w->prev_new[cpu] = new_tid;
    w->pmc[cpu][0] = cycles;
    w->pmc[cpu][1] = instr;
    w->cswitches++;
    w->sched = grow(w->sched, w->nsched, sizeof *w->sched);
    w->sched[w->nsched++] = (struct sched_ev){ts, w->records, old_tid, p[16 + 14] == 5 ? 1u : 3u};
    w->sched = grow(w->sched, w->nsched, sizeof *w->sched);
    w->sched[w->nsched++] = (struct sched_ev){ts, w->records, new_tid, 2};
}

static void on_sample(struct walk *w, uint64_t ts, const uint8_t *p)
{
    w->samples = grow(w->samples, w->nsamples, sizeof *w->samples);
    w->samples[w->nsamples++] = (struct sample){ts, u64(p), u32(p + 8), 0, 0};
}

static void on_stack(struct walk *w, const uint8_t *p, uint32_t len)
{
    assert_int_equal((len - 16) % 8, 0);
    assert_true(len > 16);
    w->parts = grow(w->parts, w->nparts, sizeof *w->parts);
    w->parts[w->nparts++] = (struct part){u64(p), u64(p + 16), u32(p + 12), (len - 16) / 8};
}

/* A PDB id: 16-byte GUID + age after ImageBase and ProcessId; names follow from the GUID here. */
static void note_pdb(struct walk *w, const uint8_t *guid_age)
{
    for (size_t i = 0; i < w->npdb; i++)
        if (memcmp(w->pdb[i], guid_age, 20) == 0)
            return;
    assert_true(w->npdb < sizeof w->pdb / sizeof w->pdb[0]);
    memcpy(w->pdb[w->npdb++], guid_age, 20);
}

/* The lower-cased name after the last backslash of a UTF-16 path (ASCII here). */
static void base_name(char *out, const uint8_t *utf16, uint32_t len)
{
    size_t n = 0;
    for (uint32_t i = 0; i + 1 < len && u16(utf16 + i); i += 2) {
        char ch = (char)utf16[i];
        if (ch == '\\') {
            n = 0;
            continue;
        }
        if (n + 1 < 32)
            out[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    out[n] = 0;
}

static void on_record(struct walk *w, uint16_t cpu, const uint8_t *r, uint32_t size)
{
    uint8_t type = r[2];
    uint32_t hdr = type == 0x02 ? 0x20 : type == 0x11 ? 0x10 : 0x30;
    uint16_t version = u16(r);
    uint32_t ext = type == 0x14 ? 0 : 8u * ((version >> 8) & 7u);
    uint64_t ts = type == 0x11 ? u64(r + 8) : u64(r + 16);
    const uint8_t *p = r + hdr;
    assert_true(size >= hdr + ext);
    w->records++;
    if (ts > w->last_ts)
        w->last_ts = ts;
    if (type == 0x14) {
        assert_int_equal(r[4], 36); /* DbgID_RSDS */
        w->by_kind[PERCH_KIND_NON_KERNEL]++;
        w->rsds++;
        note_pdb(w, r + 0x30 + 12);
        return;
    }
    uint16_t hook = u16(r + 6);
    perch_kind k = kind_of_hook(hook);
    w->by_kind[k]++;
    if (w->real)
        return;
    if (k == PERCH_KIND_ImageDCStart || k == PERCH_KIND_ImageLoad) {
        assert_true(w->nimages < sizeof w->images / sizeof w->images[0]);
        struct image *im = &w->images[w->nimages++];
        *im = (struct image){u64(p), u64(p + 8), u32(p + 16), {0}};
        base_name(im->name, p + 56, size - hdr - 56);
    } else if (k == PERCH_KIND_ProcessDCStart || k == PERCH_KIND_ProcessStart) {
        assert_true(w->nproc_names < sizeof w->proc_names / sizeof w->proc_names[0]);
        struct tally *t = &w->proc_names[w->nproc_names++];
        uint32_t sid = u32(p + 36) == 0 ? 4 : 16 + 8 + 4 * p[36 + 16 + 1];
        *t = (struct tally){u32(p + 8), {0}, 0};
        strncpy(t->name, (const char *)p + 36 + sid, sizeof t->name - 1);
    } else if (k == PERCH_KIND_ThreadDCStart || k == PERCH_KIND_ThreadStart) {
        w->tid_pid[(u32(p + 4) / 4) % TID_SLOTS] = u32(p) + 1;
    }
    if (k == PERCH_KIND_CSwitch) {
        assert_int_equal(version, 0x0204);
        assert_int_equal(size, hdr + 16 + 24);
        on_cswitch(w, cpu, ts, p);
    } else if (k == PERCH_KIND_SampledProfile) {
        assert_int_equal(size, hdr + 16);
        on_sample(w, ts, p);
    } else if (k == PERCH_KIND_StackWalk) {
        on_stack(w, p, size - hdr);
    } else if (k == PERCH_KIND_ReadyThread) {
        assert_int_equal(size, hdr + 8);
        w->sched = grow(w->sched, w->nsched, sizeof *w->sched);
        w->sched[w->nsched++] = (struct sched_ev){ts, w->records, u32(p), 0};
    }
}

static void walk_buffer(struct walk *w, const uint8_t *b)
{
    uint32_t offset = u32(b + 0x30);
    uint16_t cpu = u16(b + 0x28) & 0x7FF;
    uint64_t seq = u64(b + 0x18), prev_ts = 0;
    assert_int_equal(u32(b), BUF);
    assert_int_equal(u32(b + 4), offset); /* SavedOffset */
    assert_in_range(offset, 0x48 + 0x10, BUF);
    assert_true(cpu < w->cpus);
    if (!w->real) /* a CPU's buffers continue each other in time */
        prev_ts = w->cpu_ts[cpu];
    assert_int_equal(u16(b + 0x36), 0);
    assert_true(seq > w->last_seq || w->real); /* real files flush out of sequence order */
    w->last_seq = seq;
    if (offset > 0x48) {
        uint64_t first = b[0x48 + 2] == 0x11 ? u64(b + 0x48 + 8) : u64(b + 0x48 + 16);
        w->out_of_order += first < w->prev_first_ts;
        w->prev_first_ts = first;
    }
    for (uint32_t i = offset; i < BUF; i++)
        assert_int_equal(b[i], 0xFF);
    for (uint32_t pos = 0x48; pos < offset;) {
        const uint8_t *r = b + pos;
        uint32_t size = r[2] == 0x14 ? u16(r) : u16(r + 4);
        uint64_t ts = r[2] == 0x11 ? u64(r + 8) : u64(r + 16);
        assert_int_equal(pos % 8, 0);
        assert_int_equal(r[3], 0xC0);
        assert_true(r[2] == 0x02 || r[2] == 0x11 || r[2] == 0x14);
        assert_true(pos + size <= offset);
        assert_true(ts >= prev_ts);
        prev_ts = ts;
        on_record(w, cpu, r, size);
        pos += (size + 7) & ~7u;
    }
    w->cpu_ts[cpu] = prev_ts;
    w->buffers++;
}

static int cmp_sample(const void *a, const void *b)
{
    const struct sample *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_sched(const void *a, const void *b)
{
    const struct sched_ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->what == 2 ? 1 : y->what == 2 ? -1 : 0; /* one CSwitch: out before in */
}

/* Every part belongs to exactly one sample (S1); its first frame is the IP for the part that
 * holds the leaf. Returns the frame total. */
static uint64_t match_parts(struct walk *w)
{
    uint64_t frames = 0;
    qsort(w->samples, w->nsamples, sizeof *w->samples, cmp_sample);
    for (size_t i = 0; i < w->nparts; i++) {
        const struct part *pt = &w->parts[i];
        struct sample key = {pt->event_ts, 0, pt->tid, 0, 0};
        struct sample *s = bsearch(&key, w->samples, w->nsamples, sizeof key, cmp_sample);
        assert_non_null(s);
        bool kernel = pt->first >= KERNEL_MIN;
        if (kernel || s->ip < KERNEL_MIN)
            assert_true(pt->first == s->ip);
        if (kernel)
            s->kernel_parts++;
        else
            s->user_parts++;
        assert_true(s->kernel_parts <= 1 && s->user_parts <= 1);
        frames += pt->frames;
    }
    return frames;
}

static void check_ready_before_switch_in(struct walk *w)
{
    enum { RUNNABLE, WAITING };
    uint8_t *state = calloc(1u << 20, 1);
    assert_non_null(state);
    qsort(w->sched, w->nsched, sizeof *w->sched, cmp_sched);
    for (size_t i = 0; i < w->nsched; i++) {
        const struct sched_ev *e = &w->sched[i];
        uint32_t slot = (e->tid / 4) & ((1u << 20) - 1);
        if (e->tid == 0)
            continue;
        if (e->what == 0)
            state[slot] = RUNNABLE;
        else if (e->what == 1)
            state[slot] = WAITING;
        else if (e->what == 2)
            assert_int_equal(state[slot], RUNNABLE);
    }
    free(state);
}

/* Each sample's IP lies in a module: a kernel one (pid 0) or one of its thread's process. */
static void tally_add(struct tally *t, size_t *n, size_t cap, uint32_t pid, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (t[i].pid == pid && strcmp(t[i].name, name) == 0) {
            t[i].samples++;
            return;
        }
    assert_true(*n < cap);
    t[*n] = (struct tally){pid, {0}, 1};
    strncpy(t[*n].name, name, sizeof t[*n].name - 1);
    (*n)++;
}

static void check_sample_modules(struct walk *w)
{
    for (size_t i = 0; i < w->nsamples; i++) {
        const struct sample *s = &w->samples[i];
        uint32_t pid = s->ip >= KERNEL_MIN ? 0 : w->tid_pid[(s->tid / 4) % TID_SLOTS] - 1;
        bool found = false;
        if (s->ip < KERNEL_MIN)
            assert_int_not_equal(w->tid_pid[(s->tid / 4) % TID_SLOTS], 0);
        size_t m = 0;
        for (; m < w->nimages && !found; m++)
            found = w->images[m].pid == pid && s->ip >= w->images[m].base &&
                    s->ip < w->images[m].base + w->images[m].size;
        assert_true(found);
        tally_add(w->modules, &w->nmodules, 64, 0, w->images[m - 1].name);
        uint32_t tpid = w->tid_pid[(s->tid / 4) % TID_SLOTS] - 1;
        size_t p = 0;
        while (p < w->nproc_names && w->proc_names[p].pid != tpid)
            p++;
        assert_true(p < w->nproc_names);
        w->proc_names[p].samples++;
    }
}

static int cmp_tally(const void *a, const void *b)
{
    const struct tally *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The report's top-10 rules (M3, M5) applied to the walk's own counts. */
static void check_top(struct tally *t, size_t n, const perch_synth_top_row *top, uint32_t count)
{
    size_t rows = 0;
    qsort(t, n, sizeof *t, cmp_tally);
    while (rows < n && rows < PERCH_SYNTH_TOP && t[rows].samples > 0)
        rows++;
    assert_int_equal(count, rows);
    for (size_t i = 0; i < rows; i++) {
        assert_int_equal(top[i].pid, t[i].pid);
        assert_string_equal(top[i].name, t[i].name);
        assert_int_equal(top[i].samples, t[i].samples);
    }
}

static void check_stats(struct walk *w, const perch_synth_stats *st)
{
    uint64_t merged = 0, konly = 0, uonly = 0, with = 0;
    uint64_t frames = match_parts(w);
    for (size_t i = 0; i < w->nsamples; i++) {
        const struct sample *s = &w->samples[i];
        with += s->kernel_parts || s->user_parts;
        merged += s->kernel_parts && s->user_parts;
        konly += s->kernel_parts && !s->user_parts;
        uonly += !s->kernel_parts && s->user_parts;
    }
    assert_int_equal(st->bytes, w->len);
    assert_int_equal(st->buffers, w->buffers);
    assert_int_equal(st->records, w->records);
    for (int k = 0; k < PERCH_KIND_COUNT; k++)
        assert_int_equal(st->by_kind[k], w->by_kind[k]);
    assert_int_equal(st->samples, w->nsamples);
    assert_int_equal(st->samples_with_stack, with);
    assert_int_equal(st->stacks_merged, merged);
    assert_int_equal(st->stacks_kernel_only, konly);
    assert_int_equal(st->stacks_user_only, uonly);
    assert_int_equal(st->frames_total, frames);
    assert_int_equal(st->cswitches, w->cswitches);
    assert_int_equal(st->slices, w->slices);
    assert_int_equal(st->idle_slices, w->idle_slices);
    assert_int_equal(st->rsds_records, w->rsds);
    assert_int_equal(st->pdb_ids, w->npdb);
    assert_int_equal(st->last_timestamp, w->last_ts);
    assert_int_equal(st->end_time - st->start_time, w->last_ts - w->header_ts);
}

static void walk_and_check(const perch_synth_options *opt, perch_synth_stats *out)
{
    perch_synth_stats st;
    struct walk *w = calloc(1, sizeof *w); /* large: the tid map */
    assert_non_null(w);
    memset(&st, 0xff, sizeof st);
    w->d = synth_to_memory(opt, &w->len, &st);
    w->cpus = opt->cpus;
    assert_int_equal(w->len % BUF, 0);
    check_logfile(w, &st);
    w->buffers = 1;
    for (size_t off = BUF; off < w->len; off += BUF)
        walk_buffer(w, w->d + off);
    check_ready_before_switch_in(w);
    check_stats(w, &st);
    check_sample_modules(w);
    check_top(w->proc_names, w->nproc_names, st.top_processes, st.top_process_count);
    check_top(w->modules, w->nmodules, st.top_modules, st.top_module_count);
    if (opt->cpus > 1) /* buffers are flushed when full: not in time order in the file */
        assert_true(w->out_of_order > 0);
    /* every event family of the scenario is present */
    assert_true(w->nsamples > 0 && st.stacks_merged > 0 && st.stacks_user_only > 0);
    assert_true(st.by_kind[PERCH_KIND_ReadyThread] > 0 && st.lbr_records > 0);
    assert_true(st.pmc_samples > 0 && st.by_kind[PERCH_KIND_PmcCounterConfig] == 1);
    free(w->samples);
    free(w->parts);
    free(w->sched);
    free((void *)w->d);
    free(w);
    *out = st;
}

static void test_walk_small(void **state)
{
    perch_synth_options opt;
    perch_synth_stats st;
    (void)state;
    perch_synth_options_init(&opt);
    opt.cpus = 4;
    opt.seed = 3;
    opt.target_bytes = 2u << 20;
    walk_and_check(&opt, &st);
    assert_int_equal(st.buffers, 32); /* exactly the size asked for */
}

static void test_walk_long_with_bursts(void **state)
{
    perch_synth_options opt;
    perch_synth_stats st;
    (void)state;
    perch_synth_options_init(&opt);
    opt.cpus = 2;
    opt.seed = 11;
    opt.target_bytes = 12u << 20; /* long enough for compiler.exe to start and exit */
    walk_and_check(&opt, &st);
    assert_true(st.processes_started >= 2 && st.processes_ended >= 1);
    assert_true(st.threads_ended >= 4 && st.by_kind[PERCH_KIND_ImageLoad] >= 5);
    assert_int_equal(st.by_kind[PERCH_KIND_ImageUnload], 5 * st.processes_ended);
}

static void test_walk_many_cpus_by_duration(void **state)
{
    perch_synth_options opt;
    perch_synth_stats st;
    (void)state;
    perch_synth_options_init(&opt);
    opt.cpus = 64;
    opt.seed = 5;
    opt.target_bytes = 0;
    opt.duration_ms = 150;
    walk_and_check(&opt, &st);
    assert_true(st.last_timestamp - st.first_timestamp < 151 * 10000); /* clamps: a few ticks */
    assert_true(st.last_timestamp - st.first_timestamp > 149 * 10000);
}

/* Many seeds and CPU counts, small files: rare orderings get their chance to break a rule. */
static void test_walk_many_seeds(void **state)
{
    static const uint32_t cpus[] = {1, 2, 3, 5, 8, 12, 16, 33};
    unsigned runs = getenv("PERCH_SYNTH_SEEDS") ? (unsigned)atoi(getenv("PERCH_SYNTH_SEEDS")) : 8;
    perch_synth_options opt;
    perch_synth_stats st;
    (void)state;
    for (unsigned i = 0; i < runs; i++) {
        perch_synth_options_init(&opt);
        opt.seed = 1000 + i;
        opt.cpus = cpus[i % (sizeof cpus / sizeof cpus[0])];
        opt.target_bytes = perch_synth_min_bytes(opt.cpus) + (uint64_t)(i % 4) * BUF * 8;
        walk_and_check(&opt, &st);
    }
}

/* The walk's framing rules hold on a real uncompressed kernel trace too (ground truth), so
 * their holding on the synthetic file means something. */
static void test_walk_rules_hold_on_real_trace(void **state)
{
    const char *path = perch_test_require_data("etl/airbus_ShutdownPerfDiagLogger.etl");
    struct walk *w = calloc(1, sizeof *w);
    (void)state;
    assert_non_null(w);
    w->real = true;
    w->d = perch_test_read_file(path, &w->len);
    assert_int_equal(w->len % BUF, 0);
    const uint8_t *h = w->d + 0x48 + 0x20; /* TRACE_LOGFILE_HEADER */
    assert_int_equal(u16(w->d + 0x36), 4);
    assert_int_equal(u32(h + 36), w->len / BUF); /* BuffersWritten */
    assert_int_equal(u32(h + 44), 8);
    assert_int_equal(u64(h + 256), 10000000); /* PerfFreq: right after the TZ padding */
    assert_int_equal(u32(h + 272), 1);
    w->cpus = u32(h + 12);
    for (size_t off = BUF; off < w->len; off += BUF)
        walk_buffer(w, w->d + off);
    assert_int_equal(w->buffers, w->len / BUF - 1);
    assert_true(w->by_kind[PERCH_KIND_ImageDCStart] > 0 && w->by_kind[PERCH_KIND_ThreadStart] > 0);
    assert_int_equal(w->by_kind[PERCH_KIND_ImageLoad], 72); /* the layouts reference's count */
    free((void *)w->d);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_small),
        cmocka_unit_test(test_walk_long_with_bursts),
        cmocka_unit_test(test_walk_many_cpus_by_duration),
        cmocka_unit_test(test_walk_many_seeds),
        cmocka_unit_test(test_walk_rules_hold_on_real_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
