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

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

#define MAX_FRAMES          4096
#define FRAME_CACHE         (1u << 14)
#define FILETIME_UNIX_EPOCH 116444736000000000ull
enum { CAT_USER = 0, CAT_KERNEL = 1, CAT_OTHER = 2, CAT_IDLE = 3 };

/* The exporter's state: the common base (first, so the base's callbacks get it as ctx) and
 * the bounded slice log. */
struct gecko_state {
    perch__collect base;
    perch__slice_log log;
    uint64_t max_samples; /* past it, one sample per distinct stack */
};

struct gecko {
    perch__collect *c;
    perch__slice_log *log;
    bool overflow; /* more samples than max_samples: one per distinct stack */
    bool idle;     /* the group being written is an idle thread */
    perch_json *w;
    uint32_t *lib_of; /* per module index: lib index + 1, 0 = none yet */
    size_t lib_of_cap;
    uint32_t *lib_modules; /* per lib: module index */
    size_t lib_count, lib_cap;
    /* per thread */
    perch__interner strings;
    perch__loctab frames;                 /* extra = resource index + 1 */
    perch__map stack_map;                 /* (prefix + 1) << 32 | frame, + 1 -> stack index */
    uint32_t *stack_frame, *stack_prefix; /* prefix UINT32_MAX = none */
    size_t stack_count, stack_frame_cap, stack_prefix_cap;
    uint32_t *res_module; /* per resource: module index */
    size_t res_count, res_cap;
    perch__map res_map;     /* module index + 1 -> resource index */
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
    uint32_t idx[MAX_FRAMES];
};

static int lib_for(struct gecko *g, uint32_t mi)
{
    size_t old = g->lib_of_cap;
    int err = perch__grow(&g->c->budget, (void **)&g->lib_of, &g->lib_of_cap,
                          g->c->ents.module_count, sizeof *g->lib_of);
    if (err)
        return err;
    if (g->lib_of_cap > old)
        memset(g->lib_of + old, 0, (g->lib_of_cap - old) * sizeof *g->lib_of);
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

static int resource_for(struct gecko *g, uint32_t mi, uint32_t *res)
{
    int err;
    if (perch__map_get(&g->res_map, (uint64_t)mi + 1, res))
        return 0;
    err = perch__grow(&g->c->budget, (void **)&g->res_module, &g->res_cap, g->res_count + 1,
                      sizeof *g->res_module);
    if (!err)
        err = perch__map_put(&g->res_map, &g->c->budget, (uint64_t)mi + 1, (uint32_t)g->res_count);
    if (!err)
        err = lib_for(g, mi);
    if (err)
        return err;
    g->res_module[g->res_count] = mi;
    *res = (uint32_t)g->res_count++;
    return 0;
}

static int frame_for(struct gecko *g, const perch__agg_row *r, uint64_t pk, uint64_t addr,
                     bool is_ip, uint32_t *frame)
{
    const perch__module *m = perch__row_frame_module(&g->rc, &g->c->ents, r, pk, addr, is_ip);
    uint32_t mi = m ? (uint32_t)(m - g->c->ents.modules) : 0, res = 0;
    bool is_new;
    int err = perch__loctab_get(&g->frames, &g->c->budget, m ? mi + 1 : 0, addr, frame, &is_new);
    if (err || !is_new || !m)
        return err;
    err = resource_for(g, mi, &res);
    g->frames.locs[*frame].extra = res + 1;
    return err;
}

static int stack_for(struct gecko *g, uint32_t prefix, uint32_t frame, uint32_t *stack)
{
    uint64_t key = (((uint64_t)prefix + 1) << 32 | frame) + 1;
    int err;
    if (perch__map_get(&g->stack_map, key, stack))
        return 0;
    err = perch__grow(&g->c->budget, (void **)&g->stack_frame, &g->stack_frame_cap,
                      g->stack_count + 1, sizeof *g->stack_frame);
    if (!err)
        err = perch__grow(&g->c->budget, (void **)&g->stack_prefix, &g->stack_prefix_cap,
                          g->stack_count + 1, sizeof *g->stack_prefix);
    if (!err)
        err = perch__map_put(&g->stack_map, &g->c->budget, key, (uint32_t)g->stack_count);
    if (err)
        return err;
    g->stack_frame[g->stack_count] = frame;
    g->stack_prefix[g->stack_count] = prefix;
    *stack = (uint32_t)g->stack_count++;
    return 0;
}

/* The stack index of a row: frames interned root first, each stack = (prefix, frame). */
static int row_stack(struct gecko *g, const perch__agg_row *r, uint32_t *stack)
{
    uint32_t count, prefix = UINT32_MAX, frame;
    const uint64_t *frames = perch__agg_frames(&g->c->stacks, r, &count);
    uint64_t pk = perch__row_process(&g->c->ents, r);
    int err = 0;
    if (count > MAX_FRAMES)
        count = MAX_FRAMES;
    for (uint32_t i = count; i-- > 0 && !err;) {
        struct frame_slot *fs = &g->fc[perch__hash64(frames[i]) & (FRAME_CACHE - 1)];
        if (r->stack_id != 0 && fs->tag == g->frame_tag && fs->addr == frames[i]) {
            frame = fs->frame;
        } else {
            err = frame_for(g, r, pk, frames[i], r->stack_id == 0, &frame);
            if (!err && r->stack_id != 0)
                *fs = (struct frame_slot){frames[i], g->frame_tag, frame};
        }
        if (!err)
            err = stack_for(g, prefix, frame, &prefix);
    }
    *stack = prefix;
    return err;
}

static void reset_thread(struct gecko *g)
{
    perch__budget *b = &g->c->budget;
    perch__interner_free(&g->strings, b);
    perch__loctab_free(&g->frames, b);
    perch__map_free(&g->stack_map, b);
    perch__map_free(&g->res_map, b);
    g->stack_count = 0;
    g->res_count = 0;
    if (++g->frame_tag == 0) { /* the tags wrapped: forget every slot */
        memset(g->fc, 0, sizeof g->fc);
        g->frame_tag = 1;
    }
}

static void free_all(struct gecko *g)
{
    perch__budget *b = &g->c->budget;
    reset_thread(g);
    perch__release(b, (void **)&g->lib_of, &g->lib_of_cap, sizeof *g->lib_of);
    perch__release(b, (void **)&g->lib_modules, &g->lib_cap, sizeof *g->lib_modules);
    perch__release(b, (void **)&g->stack_frame, &g->stack_frame_cap, sizeof *g->stack_frame);
    perch__release(b, (void **)&g->stack_prefix, &g->stack_prefix_cap, sizeof *g->stack_prefix);
    perch__release(b, (void **)&g->res_module, &g->res_cap, sizeof *g->res_module);
    perch__release(b, (void **)&g->sample_stack, &g->sample_cap, sizeof *g->sample_stack);
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

/* An array of n copies of the raw JSON value text. */
static void key_repeat(perch_json *w, const char *key, const char *text, size_t n)
{
    char chunk[4096];
    size_t len = strlen(text), per = 0, used = 0;
    perch_json_key(w, key);
    perch_json_begin_array(w);
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

/* The group's samples at their own times (the log), or one per distinct stack. */
static int samples_json(struct gecko *g, const perch__group *grp)
{
    const perch_trace_info *info = &g->c->ents.info;
    const perch__agg_row *rows = grp->rows;
    const perch__gsample *v = grp->samples;
    bool real = !g->overflow;
    size_t n = real ? grp->sample_count : grp->row_count;
    uint64_t cpu_us = perch__interval_ns(&g->c->opt) / 1000;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "samples");
    perch_json_begin_object(w);
    perch_json_key(w, "weightType");
    perch_json_string(w, "samples");
    /* A leading empty sample (no stack, weight 0) one interval before the first: the profiler
     * reads threadCPUDelta[i] as the CPU used since sample i - 1, so the first real sample's
     * CPU time counts only with a sample before it. */
    perch_json_key(w, "stack");
    perch_json_begin_array(w);
    perch__run_raw(&run, "null", 4);
    for (size_t i = 0; i < n; i++)
        perch__run_uint(&run, g->sample_stack[real ? v[i].row : i]);
    perch__run_flush(&run);
    perch_json_end_array(w);
    perch_json_key(w, "time");
    perch_json_begin_array(w);
    for (size_t i = 0; i <= n; i++) {
        size_t k = i ? i - 1 : 0;
        uint64_t ts = real ? v[k].ts : rows[k].first_ts;
        int64_t rel = (int64_t)(ts - info->start_raw);
        if (i == 0)
            rel -= (int64_t)(perch__interval_ns(&g->c->opt) * info->perf_freq / 1000000000u);
        perch__run_time(&run, rel, info->perf_freq, true);
    }
    perch__run_flush(&run);
    perch_json_end_array(w);
    perch_json_key(w, "weight");
    perch_json_begin_array(w);
    perch__run_uint(&run, 0);
    for (size_t i = 0; i < n; i++)
        perch__run_uint(&run, real ? v[i].count : rows[i].count);
    perch__run_flush(&run);
    perch_json_end_array(w);
    perch_json_key(w, "threadCPUDelta"); /* us of CPU each sample stands for */
    perch_json_begin_array(w);
    perch__run_uint(&run, 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = real ? v[i].count : rows[i].count;
        bool pmc = rows[0].kind == PERCH_SAMPLE_PMC;
        perch__run_uint(&run, pmc || g->idle ? 0 : k * cpu_us);
    }
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_length(w, n + 1);
    perch_json_end_object(w);
    return 0;
}

static uint32_t frame_category(const struct gecko *g, size_t frame)
{
    if (g->idle) /* the profiler does not count Idle samples as running */
        return CAT_IDLE;
    return perch__is_kernel_address(&g->c->ents, g->frames.locs[frame].addr) ? CAT_KERNEL
                                                                             : CAT_USER;
}

static void stack_table_json(struct gecko *g)
{
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "stackTable");
    perch_json_begin_object(w);
    key_uints(w, "frame", g->stack_frame, g->stack_count);
    key_uints(w, "prefix", g->stack_prefix, g->stack_count);
    perch_json_key(w, "category");
    perch_json_begin_array(w);
    for (size_t i = 0; i < g->stack_count; i++)
        perch__run_uint(&run, frame_category(g, g->stack_frame[i]));
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "subcategory", "0", g->stack_count);
    key_length(w, g->stack_count);
    perch_json_end_object(w);
}

static void frame_table_json(struct gecko *g)
{
    const perch__entities *e = &g->c->ents;
    size_t n = g->frames.count;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    perch_json_key(w, "frameTable");
    perch_json_begin_object(w);
    perch_json_key(w, "address");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++) {
        const perch__loc *l = &g->frames.locs[i];
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
        perch__run_uint(&run, frame_category(g, i));
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
 * ?!0xaddress outside every module (names go to the stringArray). */
static int func_table_json(struct gecko *g)
{
    char name[PERCH_FRAME_NAME_MAX];
    size_t n = g->frames.count;
    perch_json *w = g->w;
    perch__run run = {w, 0, {0}};
    int err = 0;
    perch_json_key(w, "funcTable");
    perch_json_begin_object(w);
    perch_json_key(w, "name");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n && !err; i++) {
        const perch__loc *l = &g->frames.locs[i];
        const perch__module *m = l->owner ? &g->c->ents.modules[l->owner - 1] : NULL;
        /* the module is the function's resource (shown as "module!function"): not twice */
        size_t len = m ? perch__frame_func(&g->c->ents, m, l->addr, name, sizeof name)
                       : perch__frame_name(&g->c->ents, m, l->addr, name, sizeof name);
        uint32_t s;
        err = perch__intern(&g->strings, &g->c->budget, name, len, &s);
        perch__run_uint(&run, s);
    }
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "isJS", "false", n);
    key_repeat(w, "relevantForJS", "false", n);
    perch_json_key(w, "resource");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch__run_int(&run, (int64_t)g->frames.locs[i].extra - 1);
    perch__run_flush(&run);
    perch_json_end_array(w);
    key_repeat(w, "fileName", "null", n);
    key_repeat(w, "lineNumber", "null", n);
    key_repeat(w, "columnNumber", "null", n);
    key_length(w, n);
    perch_json_end_object(w);
    return err;
}

static int resource_table_json(struct gecko *g)
{
    perch_json *w = g->w;
    int err = 0;
    perch_json_key(w, "resourceTable");
    perch_json_begin_object(w);
    perch_json_key(w, "lib");
    perch_json_begin_array(w);
    for (size_t i = 0; i < g->res_count; i++)
        perch_json_uint(w, g->lib_of[g->res_module[i]] - 1);
    perch_json_end_array(w);
    perch_json_key(w, "name");
    perch_json_begin_array(w);
    for (size_t i = 0; i < g->res_count && !err; i++) {
        const perch__module *m = &g->c->ents.modules[g->res_module[i]];
        uint32_t s;
        err = perch__intern_str(&g->strings, &g->c->budget,
                                perch__str(&g->c->ents.strings, m->name), &s);
        perch_json_uint(w, s);
    }
    perch_json_end_array(w);
    key_repeat(w, "host", "null", g->res_count);
    key_repeat(w, "type", "1", g->res_count); /* resourceTypes.library */
    key_length(w, g->res_count);
    perch_json_end_object(w);
    return err;
}

static void thread_head_json(struct gecko *g, const perch__group *grp)
{
    const perch__agg_row *first = &grp->rows[0];
    const perch__entities *e = &g->c->ents;
    const perch__thread *t = grp->thread;
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    const char *proc = t ? perch__thread_process_name(e, t) : "";
    char name[200], pidtxt[16] = "?";
    perch_json *w = g->w;
    size_t n = perch__thread_short_name(e, t, t ? t->tid : UINT32_MAX, name, sizeof name - 40);
    if (first->kind == PERCH_SAMPLE_PMC)
        snprintf(name + n, sizeof name - n, " pmc source %u", (unsigned)first->profile_source);
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

/* The thread's slices as markers (CPU-sample threads only; PMC threads get none). */
static int markers_json(struct gecko *g, const perch__group *grp)
{
    const perch__agg_row *first = &grp->rows[0];
    uint32_t name = 0;
    int err = 0;
    g->log->mark_count = 0;
    if (first->kind != PERCH_SAMPLE_PMC && first->thread_key)
        err = perch__slice_log_thread(g->log, &g->c->budget, first->thread_key);
    if (!err && g->log->mark_count > 0)
        err = perch__intern_str(&g->strings, &g->c->budget, "Running", &name);
    perch_json_key(g->w, "markers");
    perch__gecko_markers_json(g->w, g->log, &g->c->ents.info, name, CAT_OTHER);
    return err;
}

static int gecko_thread_json(struct gecko *g, const perch__group *grp)
{
    perch_json *w = g->w;
    int err;
    perch_json_begin_object(w);
    thread_head_json(g, grp);
    err = samples_json(g, grp);
    if (!err)
        err = markers_json(g, grp);
    stack_table_json(g);
    frame_table_json(g);
    if (!err)
        err = func_table_json(g);
    if (!err)
        err = resource_table_json(g);
    perch_json_key(w, "nativeSymbols");
    perch_json_raw(w, "{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],"
                      "\"length\":0}");
    perch_json_key(w, "stringArray");
    perch_json_begin_array(w);
    for (size_t i = 0; i < g->strings.count; i++)
        perch_json_string_n(w, perch__interned(&g->strings, (uint32_t)i), g->strings.len[i]);
    perch_json_end_array(w);
    perch_json_end_object(w);
    return err ? err : w->error;
}

static int write_group(void *ctx, const perch__group *grp)
{
    struct gecko *g = ctx;
    int err = perch__grow(&g->c->budget, (void **)&g->sample_stack, &g->sample_cap,
                          grp->row_count + 1, sizeof *g->sample_stack);
    g->idle = grp->thread && grp->thread->tid == 0;
    reset_thread(g);
    for (size_t i = 0; i < grp->row_count && !err; i++)
        err = row_stack(g, &grp->rows[i], &g->sample_stack[i]);
    if (!err)
        err = gecko_thread_json(g, grp);
    return err;
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
    err = perch__samplelog_each(c, write_group, g);
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
