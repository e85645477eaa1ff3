/*
 * Firefox Profiler writer: the "processed profile" JSON (meta.preprocessedProfileVersion 48,
 * Gecko meta.version 29), opened by https://profiler.firefox.com (which upgrades older
 * processed versions itself). Field lists follow the profiler's docs-developer
 * (processed-profile-format.md, CHANGELOG-formats.md): one flat thread list, each thread with
 * its own samples, stackTable, frameTable, funcTable, resourceTable, nativeSymbols, markers
 * and stringArray; libs shared at the top (v41+); pid a string (v47+).
 *
 * One thread per (thread, PMC source) group of the sample log (groups.c), so PMC samples never
 * mix with CPU samples. Each sample is written at its own time, its stack interned once per
 * distinct stack of the thread; past gecko_max_samples, each distinct stack is one sample at
 * its first timestamp with weight = its sample count ("weightType": "samples"), so the call
 * tree, flame graph and inverted views stay exact while the timeline shows one entry per
 * stack. Frames are `module!+0xoffset` with category Kernel or User.
 * Slices become "CSwitch" interval markers of their thread (gecko_markers.c), up to a cap.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/gecko_internal.h"
#include "perch/error.h"
#include "util/mem.h"

#define MAX_FRAMES          4096
#define FRAME_CACHE         (1u << 14)
#define FILETIME_UNIX_EPOCH 116444736000000000ull
/* The writer's slots: the builder runs ahead through small groups (a handover per group costs
 * more than a small group's work), holding at most SLOT_AHEAD samples beyond the next group;
 * a slot's sample arrays past SLOT_KEEP samples are released once written. */
#define SLOTS      8
#define SLOT_AHEAD (1u << 16)
#define SLOT_KEEP  (1u << 16)
/* The whole seconds of a time whose nanoseconds (and a fraction) still fit in 64 bits. */
#define MAX_SECONDS 18446744072ull
enum { CAT_USER = 0, CAT_KERNEL = 1, CAT_OTHER = 2, CAT_IDLE = 3 };

/* The exporter's state: the common base (first, so the base's callbacks get it as ctx) and
 * the bounded slice log. */
struct gecko_state {
    perch__collect base;
    perch__slice_log log;
    uint64_t max_samples; /* past it, one sample per distinct stack */
};

/* What the writer needs of one group (a profile thread), prepared by the builder
 * (perch__samplelog_each_prepared: slot i % SLOTS for group i): its samples compactly, its
 * tables and its marks. */
struct gslot {
    const perch__thread *thread; /* NULL when the thread has no entry */
    uint16_t kind, source;
    bool idle; /* an idle thread */
    size_t n;  /* samples (or rows, one per distinct stack, past max_samples) */
    uint32_t *stack; /* per sample: its stack index */
    size_t stack_cap;
    uint64_t *count; /* per sample: its count (a row's sum past max_samples); unused when ones */
    size_t count_cap;
    bool ones;      /* every count is 1 */
    int64_t lead;   /* ticks from the trace start of the empty sample before the first */
    uint8_t *times; /* the samples' times as varints of their (non-negative) deltas */
    size_t times_len, times_cap;
    perch__interner strings;
    perch__loctab frames;                 /* extra = resource index + 1 */
    uint32_t *stack_frame, *stack_prefix; /* prefix UINT32_MAX = none */
    size_t stack_count, stack_frame_cap, stack_prefix_cap;
    uint32_t *func_name; /* per frame: its name's string index */
    size_t func_name_cap;
    uint32_t *res_module, *res_lib, *res_name; /* per resource: module, lib, name string */
    size_t res_count, res_cap, res_lib_cap, res_name_cap;
    perch__mark_stream marks;
    uint8_t *mark_buf; /* the marks when not the log's own bytes */
    size_t mark_buf_cap;
    uint32_t mark_name; /* string index of "Running" */
};

struct gecko {
    perch__collect *c;
    perch__slice_log *log;
    bool overflow; /* more samples than max_samples: one per distinct stack */
    perch_json *w;
    struct gslot slot[SLOTS];
    uint64_t *mark_times; /* the writer's: the marks' times of the thread being written */
    size_t mark_times_cap;
    /* the builder's */
    uint32_t *lib_of; /* per module index: lib index + 1, 0 = none yet */
    size_t lib_of_cap;
    uint32_t *lib_modules; /* per lib: module index */
    size_t lib_count, lib_cap;
    perch__map stack_map; /* (prefix + 1) << 32 | frame, + 1 -> stack index */
    perch__map res_map;   /* module index + 1 -> resource index */
    uint32_t *sample_stack; /* per row of the group */
    size_t sample_cap;
    perch__resolve_cache rc;
    /* A direct-mapped cache of the thread's stack frames: address -> frame index, valid when
     * its tag is the thread's (frame_tag). Exact: within one thread (one process) a stack
     * frame's module, so its frame, is a function of the address. */
    struct frame_slot {
        uint64_t addr;
        uint32_t tag, frame;
    } fc[FRAME_CACHE];
    uint32_t frame_tag; /* the tag of the thread being written; slots of others are stale */
    /* the previous row's stack from the root: addresses and their stack indices */
    uint64_t path_addr[MAX_FRAMES];
    uint32_t path_stack[MAX_FRAMES];
    uint32_t path_len;
};

static int lib_for(struct gecko *g, uint32_t mi)
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

static int resource_for(struct gecko *g, struct gslot *s, uint32_t mi, uint32_t *res)
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

static int frame_for(struct gecko *g, struct gslot *s, const perch__agg_row *r, uint64_t pk,
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

static int stack_for(struct gecko *g, struct gslot *s, uint32_t prefix, uint32_t frame,
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
static int frame_of(struct gecko *g, struct gslot *s, const perch__agg_row *r, uint64_t pk,
                    uint64_t addr, uint32_t *frame)
{
    struct frame_slot *fs = &g->fc[perch__hash64(addr) & (FRAME_CACHE - 1)];
    int err;
    if (r->stack_id != 0 && fs->tag == g->frame_tag && fs->addr == addr) {
        *frame = fs->frame;
        return 0;
    }
    err = frame_for(g, s, r, pk, addr, r->stack_id == 0, frame);
    if (!err && r->stack_id != 0)
        *fs = (struct frame_slot){addr, g->frame_tag, *frame};
    return err;
}

/* The stack index of a row: frames interned root first, each stack = (prefix, frame). The
 * root part a stack shares with the previous row's (the same addresses from the root) has the
 * same stack indices: taken from the path kept, without a lookup. */
static int row_stack(struct gecko *g, struct gslot *s, const perch__agg_row *r, uint32_t *stack)
{
    uint32_t count, prefix = UINT32_MAX, frame, d = 0;
    const uint64_t *frames = perch__agg_frames(&g->c->stacks, r, &count);
    uint64_t pk = perch__row_process(&g->c->ents, r);
    int err = 0;
    if (count > MAX_FRAMES)
        count = MAX_FRAMES;
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
static void reset_thread(struct gecko *g, struct gslot *s)
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

static void free_slot(perch__budget *b, struct gslot *s)
{
    perch__interner_free(&s->strings, b);
    perch__loctab_free(&s->frames, b);
    perch__release(b, (void **)&s->stack, &s->stack_cap, sizeof *s->stack);
    perch__release(b, (void **)&s->count, &s->count_cap, sizeof *s->count);
    perch__release(b, (void **)&s->times, &s->times_cap, 1);
    perch__release(b, (void **)&s->stack_frame, &s->stack_frame_cap, sizeof *s->stack_frame);
    perch__release(b, (void **)&s->stack_prefix, &s->stack_prefix_cap, sizeof *s->stack_prefix);
    perch__release(b, (void **)&s->func_name, &s->func_name_cap, sizeof *s->func_name);
    perch__release(b, (void **)&s->res_module, &s->res_cap, sizeof *s->res_module);
    perch__release(b, (void **)&s->res_lib, &s->res_lib_cap, sizeof *s->res_lib);
    perch__release(b, (void **)&s->res_name, &s->res_name_cap, sizeof *s->res_name);
    perch__release(b, (void **)&s->mark_buf, &s->mark_buf_cap, 1);
}

static void free_all(struct gecko *g)
{
    perch__budget *b = &g->c->budget;
    for (size_t i = 0; i < SLOTS; i++)
        free_slot(b, &g->slot[i]);
    perch__map_free(&g->stack_map, b);
    perch__map_free(&g->res_map, b);
    perch__release(b, (void **)&g->lib_of, &g->lib_of_cap, sizeof *g->lib_of);
    perch__release(b, (void **)&g->lib_modules, &g->lib_cap, sizeof *g->lib_modules);
    perch__release(b, (void **)&g->sample_stack, &g->sample_cap, sizeof *g->sample_stack);
    perch__release(b, (void **)&g->mark_times, &g->mark_times_cap, sizeof *g->mark_times);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void key_uints(perch_json *w, const char *key, const uint32_t *v, size_t n)
{
    perch__run r = {w, 0, {0}};
    perch_json_key(w, key);
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == UINT32_MAX)
            perch__run_raw(&r, "null", 4);
        else
            perch__run_uint(&r, v[i]);
    }
    perch__run_flush(&r);
    perch_json_end_array(w);
}

/* n values, each the raw JSON value text, into the current array. */
static void repeat_values(perch_json *w, const char *text, size_t n)
{
    char chunk[4096];
    size_t len = strlen(text), per = 0, used = 0;
    /* "text,text,...,text" once (doubled while it fits), then written as a value run as many
     * times as it fits in n */
    if (n && len + 1 <= sizeof chunk) {
        memcpy(chunk, text, len);
        used = len;
        per = 1;
    }
    while (per > 0 && per * 2 <= n && used * 2 + 1 <= sizeof chunk) {
        chunk[used] = ',';
        memcpy(chunk + used + 1, chunk, used);
        used = used * 2 + 1;
        per *= 2;
    }
    for (size_t i = 0; per == 0 && i < n; i++) /* a text longer than the chunk */
        perch_json_raw_n(w, text, len);
    for (size_t left = per ? n : 0; left > 0;) {
        size_t k = left < per ? left : per;
        perch_json_raw_n(w, chunk, k * (len + 1) - 1);
        left -= k;
    }
}

/* An array of n copies of the raw JSON value text. */
static void key_repeat(perch_json *w, const char *key, const char *text, size_t n)
{
    perch_json_key(w, key);
    perch_json_begin_array(w);
    repeat_values(w, text, n);
    perch_json_end_array(w);
}

static void key_length(perch_json *w, size_t n)
{
    perch_json_key(w, "length");
    perch_json_uint(w, n);
}

static void category(perch_json *w, const char *name, const char *color)
{
    perch_json_begin_object(w);
    perch_json_key(w, "name");
    perch_json_string(w, name);
    perch_json_key(w, "color");
    perch_json_string(w, color);
    perch_json_key(w, "subcategories");
    perch_json_begin_array(w);
    perch_json_string(w, "Other");
    perch_json_end_array(w);
    perch_json_end_object(w);
}

/* meta.oscpu as Firefox writes it ("Windows NT 10.0; Win64; x64"), from the build number:
 * the profiler turns it into the OS line ("Windows 10"). */
static void oscpu_of(const perch_trace_info *info, char *buf, size_t cap)
{
    static const struct {
        uint32_t build;
        const char *nt;
    } versions[] = {
        {10240, "10.0"}, {9600, "6.3"}, {9200, "6.2"}, {7600, "6.1"}, {6000, "6.0"}, {2600, "5.1"},
    };
    const char *nt = NULL;
    for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !nt; i++)
        if (info->os_build >= versions[i].build)
            nt = versions[i].nt;
    snprintf(buf, cap, "Windows NT %s%s", nt ? nt : "",
             info->pointer_size == 8 ? "; Win64; x64" : "");
    if (!nt)
        snprintf(buf, cap, "Windows");
}

/* meta.extra: what a reader of the profile should know about how it was made. */
static void extra_json(struct gecko *g)
{
    perch_json *w = g->w;
    perch_json_begin_array(w);
    perch_json_begin_object(w);
    perch_json_key(w, "label");
    perch_json_string(w, "Perch");
    perch_json_key(w, "entries");
    perch_json_begin_array(w);
    perch_json_begin_object(w);
    perch_json_key(w, "label");
    perch_json_string(w, "Samples");
    perch_json_key(w, "format");
    perch_json_string(w, "string");
    perch_json_key(w, "value");
    perch_json_string(w, g->overflow
                             ? "one sample per distinct stack at its first time, weighted by "
                               "its count (more samples than --gecko-max-samples or the memory "
                               "limit): totals are exact, the timeline is not"
                             : "every sample at its own time; CPU time = samples x interval");
    perch_json_end_object(w);
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_json_end_array(w);
}

static void gecko_meta_json(struct gecko *g)
{
    const perch_trace_info *info = &g->c->ents.info;
    perch_json *w = g->w;
    char oscpu[64];
    double start = 0;
    oscpu_of(info, oscpu, sizeof oscpu);
    if (info->start_filetime > FILETIME_UNIX_EPOCH)
        start = (double)((info->start_filetime - FILETIME_UNIX_EPOCH) / 10000u);
    perch_json_key(w, "meta");
    perch_json_begin_object(w);
    perch_json_key(w, "interval");
    perch_json_double(w, (double)perch__interval_ns(&g->c->opt) / 1e6);
    perch_json_key(w, "startTime");
    perch_json_double(w, start);
    perch_json_key(w, "processType");
    perch_json_uint(w, 0);
    perch_json_key(w, "product");
    perch_json_string(w, "perch");
    perch_json_key(w, "importedFrom");
    perch_json_string(w, "perch");
    perch_json_key(w, "stackwalk");
    perch_json_uint(w, 1);
    perch_json_key(w, "version");
    perch_json_uint(w, 29);
    perch_json_key(w, "preprocessedProfileVersion");
    perch_json_uint(w, 48);
    perch_json_key(w, "symbolicated");
    perch_json_bool(w, true);
    perch_json_key(w, "platform");
    perch_json_string(w, "Windows");
    perch_json_key(w, "oscpu");
    perch_json_string(w, oscpu);
    perch_json_key(w, "sampleUnits");
    perch_json_raw(w, "{\"time\":\"ms\",\"eventDelay\":\"ms\",\"threadCPUDelta\":\"\u00b5s\"}");
    perch_json_key(w, "extra");
    extra_json(g);
    perch_json_key(w, "logicalCPUs");
    perch_json_uint(w, info->cpu_count);
    perch_json_key(w, "markerSchema");
    perch__gecko_marker_schema(w, g->log, &g->c->ents);
    perch_json_key(w, "perchMarkersDropped");
    perch_json_uint(w, g->log->dropped);
    perch_json_key(w, "extensions");
    perch_json_raw(w, "{\"id\":[],\"name\":[],\"baseURL\":[],\"length\":0}");
    perch_json_key(w, "categories");
    perch_json_begin_array(w);
    category(w, "User", "yellow");      /* CAT_USER */
    category(w, "Kernel", "orange");    /* CAT_KERNEL */
    category(w, "Other", "grey");       /* CAT_OTHER */
    category(w, "Idle", "transparent"); /* CAT_IDLE: the profiler's name for not running */
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_json_key(w, "pages");
    perch_json_raw(w, "[]");
    perch_json_key(w, "counters");
    perch_json_raw(w, "[]");
}

static void gecko_libs_json(struct gecko *g)
{
    const perch__entities *e = &g->c->ents;
    perch_json *w = g->w;
    perch_json_key(w, "libs");
    perch_json_begin_array(w);
    for (size_t i = 0; i < g->lib_count; i++) {
        const perch__module *m = &e->modules[g->lib_modules[i]];
        perch_json_begin_object(w);
        perch_json_key(w, "arch");
        perch_json_string(w, e->info.pointer_size == 4 ? "x86" : "x86_64");
        perch_json_key(w, "name");
        perch_json_string(w, perch__str(&e->strings, m->name));
        perch_json_key(w, "path");
        perch_json_string(w, perch__str(&e->strings, m->path));
        perch_json_key(w, "debugName");
        perch_json_string(w, perch__str(&e->strings, m->name));
        perch_json_key(w, "debugPath");
        perch_json_string(w, perch__str(&e->strings, m->path));
        perch_json_key(w, "breakpadId");
        perch_json_string(w, "");
        perch_json_key(w, "codeId");
        perch_json_null(w);
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
}

/* ---- the builder: one group into a slot ---------------------------------------------- */

/* Sample i's count k (not 1, or after one that was not): the counts array from here on. */
static int set_count(struct gecko *g, struct gslot *s, size_t i, size_t n, uint64_t k)
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

/* Ticks of one sampling interval of ns nanoseconds, exactly: floor(ns x freq / 1e9), without
 * the product wrapping; UINT64_MAX when the ticks themselves pass 64 bits. */
static uint64_t interval_ticks(uint64_t ns, uint64_t freq)
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
static int check_sample(struct gecko *g, struct gslot *s, size_t i, uint64_t ts, uint64_t k)
{
    const perch_trace_info *info = &g->c->ents.info;
    uint64_t ns = perch__interval_ns(&g->c->opt), cpu = 0;
    int64_t t;
    if (!ticks_from_start(info, ts, 0, &t))
        return PERCH_ERANGE;
    if (i == 0 && !ticks_from_start(info, ts, interval_ticks(ns, info->perf_freq), &s->lead))
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

static struct sample_bounds sample_bounds(const struct gecko *g, const struct gslot *s)
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
static int prepare_samples(struct gecko *g, struct gslot *s, const perch__group *grp)
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
static int prepare_libs(struct gecko *g, struct gslot *s)
{
    int err = perch__grow(&g->c->budget, (void **)&s->res_lib, &s->res_lib_cap, s->res_count,
                          sizeof *s->res_lib);
    for (size_t i = 0; i < s->res_count && !err; i++)
        s->res_lib[i] = g->lib_of[s->res_module[i]] - 1;
    return err;
}

/* The writer's first step for slot s: the thread's strings, "Running" (when it has marks),
 * each frame's function name (the module is the function's resource, shown as
 * "module!function": not twice; ?!0xaddress outside every module), each resource's module
 * name. On the writer's thread, which has time to spare while the builder prepares the next
 * groups (and every symbol lookup stays on that one thread). */
static int name_strings(struct gecko *g, struct gslot *s)
{
    char name[PERCH_FRAME_NAME_MAX];
    const perch__entities *e = &g->c->ents;
    perch__budget *b = &g->c->budget;
    size_t n = s->frames.count;
    int err = 0;
    if (s->marks.count > 0)
        err = perch__intern_str(&s->strings, b, "Running", &s->mark_name);
    if (!err)
        err = perch__grow(b, (void **)&s->func_name, &s->func_name_cap, n, sizeof *s->func_name);
    for (size_t i = 0; i < n && !err; i++) {
        const perch__loc *l = &s->frames.locs[i];
        const perch__module *m = l->owner ? &e->modules[l->owner - 1] : NULL;
        size_t len = m ? perch__frame_func(e, m, l->addr, name, sizeof name)
                       : perch__frame_name(e, m, l->addr, name, sizeof name);
        err = perch__intern(&s->strings, b, name, len, &s->func_name[i]);
    }
    if (!err)
        err = perch__grow(b, (void **)&s->res_name, &s->res_name_cap, s->res_count,
                          sizeof *s->res_name);
    for (size_t i = 0; i < s->res_count && !err; i++) {
        const perch__module *m = &e->modules[s->res_module[i]];
        err = perch__intern_str(&s->strings, b, perch__str(&e->strings, m->name), &s->res_name[i]);
    }
    return err;
}

/* perch__samplelog_each_prepared's prepare (the builder's thread): the group's stacks,
 * samples, marks and libs into slot (the names are the writer's: name_strings). */
static int prepare_group(void *ctx, const perch__group *grp, size_t slot)
{
    struct gecko *g = ctx;
    struct gslot *s = &g->slot[slot];
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

/* ---- the writer: a slot as a profile thread -------------------------------------------- */

/* The samples' times: a leading empty sample (no stack, weight 0) one interval before the
 * first (the profiler reads threadCPUDelta[i] as the CPU used since sample i - 1, so the first
 * real sample's CPU time counts only with a sample before it), then each sample's (every time
 * checked by check_sample). With a clock whose tick is a whole number of nanoseconds (the
 * 10 MHz QPC clock, 1 GHz) they are the profiler's timeDeltas column, each time less the one
 * before (the first from the profile's zero, the trace start), which it adds up as it loads:
 * a delta is mostly a few milliseconds, fewer bytes than the time itself (at 512 MB the file
 * is 269 -> 237 MB, with the trimmed fractions), and the sums are the times exactly. With
 * another clock each delta would be cut to whole nanoseconds and the cuts would add up, so the
 * times are written themselves (the time column). */
static void times_json(struct gecko *g, const struct gslot *s)
{
    const perch_trace_info *info = &g->c->ents.info;
    uint64_t freq = info->perf_freq, ts = 0;
    bool deltas = 1000000000u % perch__clock_hz(freq) == 0;
    perch__run run = {g->w, 0, {0}};
    size_t off = 0;
    perch__ms_text c = {0};
    perch_json_key(g->w, deltas ? "timeDeltas" : "time");
    perch_json_begin_array(g->w);
    perch__gecko_time(&run, &c, s->lead, freq);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t prev = ts;
        ts += (uint64_t)perch__unzigzag(perch__vnext(s->times, s->times_len, &off));
        if (!deltas)
            perch__gecko_time(&run, &c, (int64_t)(ts - info->start_raw), freq);
        else if (i == 0) /* the lead is the first's time less an interval, exactly */
            perch__gecko_time_since(&run, &c, interval_ticks(perch__interval_ns(&g->c->opt), freq),
                                    0, freq);
        else if (ts >= prev && ts - prev <= (uint64_t)INT64_MAX) /* a thread's times: sorted */
            perch__gecko_time(&run, &c, (int64_t)(ts - prev), freq);
        else
            perch__gecko_time_since(&run, &c, ts, prev, freq);
    }
    perch__run_flush(&run);
    perch_json_end_array(g->w);
}

/* A column of the leading 0 and then v(count) per sample; one text repeated when every count
 * is 1 (or every value is zero). */
static void count_column(struct gecko *g, const struct gslot *s, const char *key, uint64_t mul)
{
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    char text[24];
    perch_json_key(w, key);
    perch_json_begin_array(w);
    perch_json_raw_n(w, "0", 1);
    if (s->ones || mul == 0) {
        text[perch__put_uint(text, mul)] = 0;
        repeat_values(w, text, s->n);
    } else {
        for (size_t i = 0; i < s->n; i++)
            perch__run_uint(&run, s->count[i] * mul);
        perch__run_flush(&run);
    }
    perch_json_end_array(w);
}

/* The thread's samples at their own times (the log), or one per distinct stack. */
static void samples_json(struct gecko *g, const struct gslot *s)
{
    uint64_t cpu_us = perch__interval_ns(&g->c->opt) / 1000;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "samples");
    perch_json_begin_object(w);
    perch_json_key(w, "weightType");
    perch_json_string(w, "samples");
    perch_json_key(w, "stack");
    perch_json_begin_array(w);
    perch__run_raw(&run, "null", 4);
    for (size_t i = 0; i < s->n; i++)
        perch__run_uint(&run, s->stack[i]);
    perch__run_flush(&run);
    perch_json_end_array(w);
    times_json(g, s);
    count_column(g, s, "weight", 1);
    /* us of CPU each sample stands for */
    count_column(g, s, "threadCPUDelta", s->kind == PERCH_SAMPLE_PMC || s->idle ? 0 : cpu_us);
    key_length(w, s->n + 1);
    perch_json_end_object(w);
}

static uint32_t frame_category(const struct gecko *g, const struct gslot *s, size_t frame)
{
    if (s->idle) /* the profiler does not count Idle samples as running */
        return CAT_IDLE;
    return perch__is_kernel_address(&g->c->ents, s->frames.locs[frame].addr) ? CAT_KERNEL
                                                                             : CAT_USER;
}

static void stack_table_json(struct gecko *g, const struct gslot *s)
{
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "stackTable");
    perch_json_begin_object(w);
    key_uints(w, "frame", s->stack_frame, s->stack_count);
    key_uints(w, "prefix", s->stack_prefix, s->stack_count);
    perch_json_key(w, "category");
    perch_json_begin_array(w);
    for (size_t i = 0; i < s->stack_count; i++)
        perch__run_uint(&run, frame_category(g, s, s->stack_frame[i]));
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "subcategory", "0", s->stack_count);
    key_length(w, s->stack_count);
    perch_json_end_object(w);
}

static void frame_table_json(struct gecko *g, const struct gslot *s)
{
    const perch__entities *e = &g->c->ents;
    size_t n = s->frames.count;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "frameTable");
    perch_json_begin_object(w);
    perch_json_key(w, "address");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++) {
        const perch__loc *l = &s->frames.locs[i];
        if (l->owner)
            perch__run_uint(&run, l->addr - e->modules[l->owner - 1].base);
        else
            perch__run_raw(&run, "-1", 2);
    }
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "inlineDepth", "0", n);
    perch_json_key(w, "category");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch__run_uint(&run, frame_category(g, s, i));
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "subcategory", "0", n);
    perch_json_key(w, "func"); /* one function per frame */
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch__run_uint(&run, i);
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "nativeSymbol", "null", n);
    key_repeat(w, "innerWindowID", "0", n);
    key_repeat(w, "implementation", "null", n);
    key_repeat(w, "line", "null", n);
    key_repeat(w, "column", "null", n);
    key_length(w, n);
    perch_json_end_object(w);
}

/* funcTable: one function per frame, named by its offset in its module (the resource) or
 * ?!0xaddress outside every module (names in the stringArray, prepare_names). */
static void func_table_json(struct gecko *g, const struct gslot *s)
{
    size_t n = s->frames.count;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "funcTable");
    perch_json_begin_object(w);
    key_uints(w, "name", s->func_name, n);
    key_repeat(w, "isJS", "false", n);
    key_repeat(w, "relevantForJS", "false", n);
    perch_json_key(w, "resource");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch__run_int(&run, (int64_t)s->frames.locs[i].extra - 1);
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "fileName", "null", n);
    key_repeat(w, "lineNumber", "null", n);
    key_repeat(w, "columnNumber", "null", n);
    key_length(w, n);
    perch_json_end_object(w);
}

static void resource_table_json(struct gecko *g, const struct gslot *s)
{
    perch_json *w = g->w;
    perch_json_key(w, "resourceTable");
    perch_json_begin_object(w);
    key_uints(w, "lib", s->res_lib, s->res_count);
    key_uints(w, "name", s->res_name, s->res_count);
    key_repeat(w, "host", "null", s->res_count);
    key_repeat(w, "type", "1", s->res_count); /* resourceTypes.library */
    key_length(w, s->res_count);
    perch_json_end_object(w);
}

static void thread_head_json(struct gecko *g, const struct gslot *s)
{
    const perch__entities *e = &g->c->ents;
    const perch__thread *t = s->thread;
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    const char *proc = t ? perch__thread_process_name(e, t) : "";
    char name[200], pidtxt[16] = "?";
    perch_json *w = g->w;
    size_t n = perch__thread_short_name(e, t, t ? t->tid : UINT32_MAX, name, sizeof name - 40);
    if (s->kind == PERCH_SAMPLE_PMC)
        snprintf(name + n, sizeof name - n, " pmc source %u", (unsigned)s->source);
    if (pid != UINT32_MAX)
        snprintf(pidtxt, sizeof pidtxt, "%" PRIu32, pid);
    perch_json_key(w, "processType");
    perch_json_string(w, "default");
    perch_json_key(w, "processName");
    perch_json_string(w, *proc ? proc : "?");
    perch_json_key(w, "processStartupTime");
    perch_json_uint(w, 0);
    perch_json_key(w, "processShutdownTime");
    perch_json_null(w);
    perch_json_key(w, "registerTime");
    perch_json_uint(w, 0);
    perch_json_key(w, "unregisterTime");
    perch_json_null(w);
    perch_json_key(w, "pausedRanges");
    perch_json_raw(w, "[]");
    perch_json_key(w, "name");
    perch_json_string(w, name);
    perch_json_key(w, "isMainThread");
    perch_json_bool(w, false);
    perch_json_key(w, "pid");
    perch_json_string(w, pidtxt);
    perch_json_key(w, "tid");
    perch_json_uint(w, t ? t->tid : 0);
}

/* perch__samplelog_each_prepared's visit (the calling thread): slot as a profile thread. */
static int write_slot(void *ctx, size_t slot)
{
    struct gecko *g = ctx;
    struct gslot *s = &g->slot[slot];
    perch_json *w = g->w;
    int err = name_strings(g, s);
    if (err)
        return err;
    perch_json_begin_object(w);
    thread_head_json(g, s);
    samples_json(g, s);
    perch_json_key(w, "markers");
    err = perch__gecko_markers_json(w, g->log, &g->c->ents.info, &s->marks, s->mark_name,
                                    CAT_OTHER, &g->c->budget, &g->mark_times, &g->mark_times_cap);
    stack_table_json(g, s);
    frame_table_json(g, s);
    func_table_json(g, s);
    resource_table_json(g, s);
    perch_json_key(w, "nativeSymbols");
    perch_json_raw(w, "{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],"
                      "\"length\":0}");
    perch_json_key(w, "stringArray");
    perch_json_begin_array(w);
    for (size_t i = 0; i < s->strings.count; i++)
        perch_json_string_n(w, perch__interned(&s->strings, (uint32_t)i), s->strings.len[i]);
    perch_json_end_array(w);
    perch_json_end_object(w);
    if (s->stack_cap > SLOT_KEEP) { /* a large group's: not kept for the small ones */
        perch__budget *b = &g->c->budget;
        perch__release(b, (void **)&s->stack, &s->stack_cap, sizeof *s->stack);
        perch__release(b, (void **)&s->count, &s->count_cap, sizeof *s->count);
        perch__release(b, (void **)&s->times, &s->times_cap, 1);
        perch__release(b, (void **)&s->mark_buf, &s->mark_buf_cap, 1);
    }
    return err ? err : w->error;
}

static int gecko_write(perch__collect *c)
{
    struct gecko_state *st = (struct gecko_state *)c; /* c is the first member of the state */
    struct gecko *g = perch__calloc(1, sizeof *g);
    int err = 0;
    if (!g || !(g->w = perch__alloc(sizeof *g->w))) {
        perch__free(g);
        return PERCH_ENOMEM;
    }
    g->c = c;
    g->log = &st->log;
    g->overflow = c->samples.samples > st->max_samples;
    c->samples.want_samples = !g->overflow;
    perch_json_init(g->w, perch__json_output_sink, c->out);
    perch_json_begin_object(g->w);
    gecko_meta_json(g);
    perch_json_key(g->w, "threads");
    perch_json_begin_array(g->w);
    err = perch__samplelog_each_prepared(c, SLOTS, SLOT_AHEAD, prepare_group, write_slot, g);
    perch_json_end_array(g->w);
    gecko_libs_json(g); /* after the threads: only the libs they used */
    perch_json_end_object(g->w);
    perch_json_newline(g->w);
    if (!err)
        err = perch_json_flush(g->w);
    free_all(g);
    perch__free(g->w);
    perch__free(g);
    return err;
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    struct gecko_state *st = ctx;
    return perch__slice_log_add(&st->log, &st->base.budget, r);
}

static int on_counters(void *ctx, const perch_counters_rec *rec)
{
    struct gecko_state *st = ctx;
    return perch__counter_names(&st->base, rec, st->log.pmc_names, &st->log.pmc_name_count);
}

static void gecko_bind(void *state, unsigned pass, perch_sink *sink)
{
    struct gecko_state *st = state;
    (void)pass;
    perch__collect_bind(&st->base, sink); /* ctx = &st->base == st */
    sink->slice = on_slice;
    sink->counters = on_counters;
}

static int gecko_create(const perch_export_options *opt, perch_output *out, void **state)
{
    struct gecko_state *st = perch__calloc(1, sizeof *st);
    if (!st)
        return PERCH_ENOMEM;
    perch__collect_init(&st->base, opt, out);
    st->base.write = gecko_write;
    st->log.limit = opt->gecko_max_markers ? opt->gecko_max_markers : 1000000;
    st->max_samples = opt->gecko_max_samples ? opt->gecko_max_samples : 20000000;
    perch__vlogs_init(&st->log.threads, perch__log_memory(opt), perch__scratch_opener(opt),
                      opt->scratch_open ? opt->scratch_ctx : NULL);
    *state = st;
    return 0;
}

static void gecko_destroy(void *state)
{
    struct gecko_state *st = state;
    if (!st)
        return;
    perch__slice_log_free(&st->log, &st->base.budget);
    perch__collect_free(&st->base);
    perch__free(st);
}

const perch__format perch__format_gecko = {
    "gecko",    "profiler.firefox.com (Firefox Profiler: load the file)",
    1,          gecko_create,
    gecko_bind, gecko_destroy,
};
