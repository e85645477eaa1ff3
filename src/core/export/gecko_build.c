/*
 * Gecko's builder (perch__samplelog_each_prepared's prepare, on its own thread): one group of
 * the sample log, a (thread, PMC source), into the writer's slot. Its rows' stacks become the
 * profile thread's stack table (frames interned root first, each stack a (prefix, frame); the
 * root part shared with the previous row taken from the path kept), its frames the frame table
 * with a resource per module and a lib per module across the profile; its samples become each
 * sample's stack index, count and time (every time and CPU time checked: PERCH_ERANGE,
 * PERCH_ELIMIT); its thread's slices become the mark stream. The names and the JSON are the
 * writer's (gecko.c).
 */
#include <stdint.h>
#include <string.h>

#include "export/gecko_internal.h"
#include "perch/error.h"
#include "util/mem.h"

/* The whole seconds of a time whose nanoseconds (and a fraction) still fit in 64 bits. */
#define MAX_SECONDS 18446744072ull

static int lib_for(perch__gecko *g, uint32_t mi)
{
    int err = perch__grow_zeroed(&g->c->budget, (void **)&g->lib_of, &g->lib_of_cap,
                                 g->c->ents.module_count, sizeof *g->lib_of);
    if (err)
        return err;
    if (g->lib_of[mi])
        return 0;
    err = perch__grow(&g->c->budget, (void **)&g->lib_modules, &g->lib_cap, g->lib_count + 1,
                      sizeof *g->lib_modules);
    if (err)
        return err;
    g->lib_modules[g->lib_count++] = mi;
    g->lib_of[mi] = (uint32_t)g->lib_count;
    return 0;
}

static int resource_for(perch__gecko *g, perch__gslot *s, uint32_t mi, uint32_t *res)
{
    int err;
    if (perch__map_get(&g->res_map, (uint64_t)mi + 1, res))
        return 0;
    err = perch__grow(&g->c->budget, (void **)&s->res_module, &s->res_cap, s->res_count + 1,
                      sizeof *s->res_module);
    if (!err)
        err = perch__map_put(&g->res_map, &g->c->budget, (uint64_t)mi + 1, (uint32_t)s->res_count);
    if (!err)
        err = lib_for(g, mi);
    if (err)
        return err;
    s->res_module[s->res_count] = mi;
    *res = (uint32_t)s->res_count++;
    return 0;
}

static int frame_for(perch__gecko *g, perch__gslot *s, const perch__agg_row *r, uint64_t pk,
                     uint64_t addr, bool is_ip, uint32_t *frame)
{
    const perch__module *m = perch__row_frame_module(&g->rc, &g->c->ents, r, pk, addr, is_ip);
    uint32_t mi = m ? (uint32_t)(m - g->c->ents.modules) : 0, res = 0;
    bool is_new;
    int err = perch__loctab_get(&s->frames, &g->c->budget, m ? mi + 1 : 0, addr, frame, &is_new);
    if (err || !is_new || !m)
        return err;
    err = resource_for(g, s, mi, &res);
    s->frames.locs[*frame].extra = res + 1;
    return err;
}

static int stack_for(perch__gecko *g, perch__gslot *s, uint32_t prefix, uint32_t frame,
                     uint32_t *stack)
{
    uint64_t key = (((uint64_t)prefix + 1) << 32 | frame) + 1;
    int err;
    if (perch__map_get(&g->stack_map, key, stack))
        return 0;
    err = perch__grow(&g->c->budget, (void **)&s->stack_frame, &s->stack_frame_cap,
                      s->stack_count + 1, sizeof *s->stack_frame);
    if (!err)
        err = perch__grow(&g->c->budget, (void **)&s->stack_prefix, &s->stack_prefix_cap,
                          s->stack_count + 1, sizeof *s->stack_prefix);
    if (!err)
        err = perch__map_put(&g->stack_map, &g->c->budget, key, (uint32_t)s->stack_count);
    if (err)
        return err;
    s->stack_frame[s->stack_count] = frame;
    s->stack_prefix[s->stack_count] = prefix;
    *stack = (uint32_t)s->stack_count++;
    return 0;
}

/* The frame of a row's address (through the thread's frame cache for a stack's frames). */
static int frame_of(perch__gecko *g, perch__gslot *s, const perch__agg_row *r, uint64_t pk,
                    uint64_t addr, uint32_t *frame)
{
    struct perch__gecko_frame_slot *fs =
        &g->fc[perch__hash64(addr) & (PERCH_GECKO_FRAME_CACHE - 1)];
    int err;
    if (r->stack_id != 0 && fs->tag == g->frame_tag && fs->addr == addr) {
        *frame = fs->frame;
        return 0;
    }
    err = frame_for(g, s, r, pk, addr, r->stack_id == 0, frame);
    if (!err && r->stack_id != 0)
        *fs = (struct perch__gecko_frame_slot){addr, g->frame_tag, *frame};
    return err;
}

/* The stack index of a row: frames interned root first, each stack = (prefix, frame). The
 * root part a stack shares with the previous row's (the same addresses from the root) has the
 * same stack indices: taken from the path kept, without a lookup. */
static int row_stack(perch__gecko *g, perch__gslot *s, const perch__agg_row *r, uint32_t *stack)
{
    uint32_t count, prefix = UINT32_MAX, frame, d = 0;
    const uint64_t *frames = perch__agg_frames(&g->c->stacks, r, &count);
    uint64_t pk = perch__row_process(&g->c->ents, r);
    int err = 0;
    if (count > PERCH_GECKO_MAX_FRAMES)
        count = PERCH_GECKO_MAX_FRAMES;
    if (r->stack_id == 0) /* an ip's frame follows the sample's module: not a path's */
        g->path_len = 0;
    for (; d < g->path_len && d < count && g->path_addr[d] == frames[count - 1 - d]; d++)
        prefix = g->path_stack[d];
    for (; d < count && !err; d++) {
        uint64_t addr = frames[count - 1 - d];
        err = frame_of(g, s, r, pk, addr, &frame);
        if (!err)
            err = stack_for(g, s, prefix, frame, &prefix);
        g->path_addr[d] = addr;
        g->path_stack[d] = prefix;
    }
    g->path_len = err || r->stack_id == 0 ? 0 : count;
    *stack = prefix;
    return err;
}

/* Empties slot s and the builder's per-thread maps for the next group. */
static void reset_thread(perch__gecko *g, perch__gslot *s)
{
    perch__budget *b = &g->c->budget;
    perch__interner_free(&s->strings, b);
    perch__loctab_free(&s->frames, b);
    perch__map_free(&g->stack_map, b);
    perch__map_free(&g->res_map, b);
    s->stack_count = 0;
    s->res_count = 0;
    s->n = s->times_len = 0;
    s->lead = 0;
    s->marks = (perch__mark_stream){NULL, 0, 0};
    s->mark_name = 0;
    g->path_len = 0;
    if (++g->frame_tag == 0) { /* the tags wrapped: forget every slot */
        memset(g->fc, 0, sizeof g->fc);
        g->frame_tag = 1;
    }
}

/* Sample i's count k (not 1, or after one that was not): the counts array from here on. */
static int set_count(perch__gecko *g, perch__gslot *s, size_t i, size_t n, uint64_t k)
{
    if (s->ones) {
        int err =
            perch__grow(&g->c->budget, (void **)&s->count, &s->count_cap, n, sizeof *s->count);
        if (err)
            return err;
        for (size_t j = 0; j < i; j++)
            s->count[j] = 1;
        s->ones = false;
    }
    s->count[i] = k;
    return 0;
}

uint64_t perch__gecko_interval_ticks(uint64_t ns, uint64_t freq)
{
    const uint64_t g = 1000000000u;
    uint64_t p, a1 = ns / g, a0 = ns % g, b1 = freq / g, b0 = freq % g, t;
    if (!__builtin_mul_overflow(ns, freq, &p))
        return p / g;
    /* (a1 g + a0)(b1 g + b0) / g = a1 b1 g + a1 b0 + a0 b1 + a0 b0 / g, a0 b0 < 10^18 */
    if (__builtin_mul_overflow(a1, b1, &p) || __builtin_mul_overflow(p, g, &p) ||
        __builtin_mul_overflow(a1, b0, &t) || __builtin_add_overflow(p, t, &p) ||
        __builtin_mul_overflow(a0, b1, &t) || __builtin_add_overflow(p, t, &p) ||
        __builtin_add_overflow(p, a0 * b0 / g, &p))
        return UINT64_MAX;
    return p;
}

/* ts - back as signed ticks from the trace start into *t; false (*t untouched) when that is
 * not a time gecko writes exactly: past INT64_MAX ticks, or past 64 bits of nanoseconds
 * (about 584 years), either way. Within them it is (int64_t)(ts - start_raw) - back. */
static bool ticks_from_start(const perch_trace_info *info, uint64_t ts, uint64_t back, int64_t *t)
{
    uint64_t freq = perch__clock_hz(info->perf_freq), m, span;
    bool neg = ts < info->start_raw;
    m = neg ? info->start_raw - ts : ts - info->start_raw;
    if (neg) {
        if (__builtin_add_overflow(m, back, &m))
            return false;
    } else if (m < back) {
        neg = true;
        m = back - m;
    } else {
        m -= back;
    }
    if (m > INT64_MAX || (!__builtin_mul_overflow(MAX_SECONDS + 1, freq, &span) && m >= span))
        return false; /* (not m / freq > MAX_SECONDS: no division a sample) */
    *t = neg ? -(int64_t)m : (int64_t)m;
    return true;
}

/* Whether sample i of s (at ts, count k) can be written exactly: its time (and for the first,
 * the empty sample's an interval before, into s->lead) within ticks_from_start's range
 * (PERCH_ERANGE), its threadCPUDelta k x interval us within 64 bits (PERCH_ELIMIT). */
static int check_sample(perch__gecko *g, perch__gslot *s, size_t i, uint64_t ts, uint64_t k)
{
    const perch_trace_info *info = &g->c->ents.info;
    uint64_t ns = perch__interval_ns(&g->c->opt), cpu = 0;
    int64_t t;
    if (!ticks_from_start(info, ts, 0, &t))
        return PERCH_ERANGE;
    if (i == 0 &&
        !ticks_from_start(info, ts, perch__gecko_interval_ticks(ns, info->perf_freq), &s->lead))
        return PERCH_ERANGE;
    if (s->kind != PERCH_SAMPLE_PMC && !s->idle && __builtin_mul_overflow(k, ns / 1000, &cpu))
        return PERCH_ELIMIT;
    return 0;
}

/* What check_sample finds of a sample after the first, worked out once for the group: the raw
 * times ticks_from_start takes with nothing to step back (those at most `reach` ticks from
 * start_raw, either way), and the largest count whose CPU time fits 64 bits. */
struct sample_bounds {
    uint64_t ts_lo, ts_hi, k_max;
};

static struct sample_bounds sample_bounds(const perch__gecko *g, const perch__gslot *s)
{
    const perch_trace_info *info = &g->c->ents.info;
    uint64_t start = info->start_raw, span, reach = INT64_MAX;
    uint64_t us = perch__interval_ns(&g->c->opt) / 1000;
    struct sample_bounds b;
    if (!__builtin_mul_overflow(MAX_SECONDS + 1, perch__clock_hz(info->perf_freq), &span) &&
        span - 1 < reach)
        reach = span - 1; /* span >= 1: the clock is never 0 Hz */
    b.ts_lo = start >= reach ? start - reach : 0;
    b.ts_hi = start <= UINT64_MAX - reach ? start + reach : UINT64_MAX;
    b.k_max = s->kind == PERCH_SAMPLE_PMC || s->idle || us == 0 ? UINT64_MAX : UINT64_MAX / us;
    return b;
}

/* The samples' stacks, counts and times into s: every sample at its own time (the log), or
 * past max_samples each row at its first time. PERCH_ERANGE or PERCH_ELIMIT for a sample
 * check_sample refuses (after the first, through sample_bounds: the same answers). */
static int prepare_samples(perch__gecko *g, perch__gslot *s, const perch__group *grp)
{
    perch__budget *b = &g->c->budget;
    const perch__gsample *v = grp->samples;
    const struct sample_bounds sb = sample_bounds(g, s);
    bool real = !g->overflow;
    size_t n = real ? grp->sample_count : grp->row_count;
    uint64_t prev = 0;
    int err = perch__grow(b, (void **)&s->stack, &s->stack_cap, n, sizeof *s->stack);
    s->ones = true;
    for (size_t i = 0; i < n && !err; i++) {
        uint64_t ts = real ? v[i].ts : grp->rows[i].first_ts;
        uint64_t k = real ? v[i].count : grp->rows[i].count, d;
        s->stack[i] = g->sample_stack[real ? v[i].row : i];
        if (i == 0)
            err = check_sample(g, s, i, ts, k);
        else if (ts < sb.ts_lo || ts > sb.ts_hi)
            err = PERCH_ERANGE;
        else if (k > sb.k_max)
            err = PERCH_ELIMIT;
        if (!err && s->times_cap - s->times_len < 10)
            err = perch__grow(b, (void **)&s->times, &s->times_cap, s->times_len + 10, 1);
        if (err)
            break;
        d = perch__zigzag((int64_t)(ts - prev));
        s->times_len += perch__put_varints(s->times + s->times_len, &d, 1);
        prev = ts;
        if (k != 1 || !s->ones)
            err = set_count(g, s, i, n, k);
    }
    s->n = n;
    return err;
}

/* Each resource's lib (the builder's: its lib table grows as it goes). */
static int prepare_libs(perch__gecko *g, perch__gslot *s)
{
    int err = perch__grow(&g->c->budget, (void **)&s->res_lib, &s->res_lib_cap, s->res_count,
                          sizeof *s->res_lib);
    for (size_t i = 0; i < s->res_count && !err; i++)
        s->res_lib[i] = g->lib_of[s->res_module[i]] - 1;
    return err;
}

int perch__gecko_prepare_group(void *ctx, const perch__group *grp, size_t slot)
{
    perch__gecko *g = ctx;
    perch__gslot *s = &g->slot[slot];
    const perch__agg_row *first = &grp->rows[0];
    int err = perch__grow(&g->c->budget, (void **)&g->sample_stack, &g->sample_cap,
                          grp->row_count + 1, sizeof *g->sample_stack);
    reset_thread(g, s);
    s->thread = grp->thread;
    s->kind = first->kind;
    s->source = first->profile_source;
    s->idle = grp->thread && grp->thread->tid == 0;
    for (size_t i = 0; i < grp->row_count && !err; i++)
        err = row_stack(g, s, &grp->rows[i], &g->sample_stack[i]);
    if (!err)
        err = prepare_samples(g, s, grp);
    /* the thread's slices as markers (CPU-sample threads only; PMC threads get none) */
    if (!err && first->kind != PERCH_SAMPLE_PMC && first->thread_key)
        err = perch__slice_log_stream(g->log, &g->c->budget, first->thread_key, &s->marks,
                                      &s->mark_buf, &s->mark_buf_cap);
    if (!err)
        err = prepare_libs(g, s);
    return err;
}
