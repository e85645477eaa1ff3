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
 * Each group is built into one of the writer's slots on the builder's thread (gecko_build.c);
 * this file writes the profile: meta, each slot as a thread (names, columns, tables), libs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/gecko_internal.h"
#include "perch/error.h"
#include "util/mem.h"

#define FILETIME_UNIX_EPOCH 116444736000000000ull
/* The builder runs ahead through small groups (a handover per group costs more than a small
 * group's work), holding at most SLOT_AHEAD samples beyond the next group; a slot's sample
 * arrays past SLOT_KEEP samples are released once written. */
#define SLOT_AHEAD (1u << 16)
#define SLOT_KEEP  (1u << 16)
enum { CAT_USER = 0, CAT_KERNEL = 1, CAT_OTHER = 2, CAT_IDLE = 3 };

/* The exporter's state: the common base (first, so the base's callbacks get it as ctx) and
 * the bounded slice log. */
struct gecko_state {
    perch__collect base;
    perch__slice_log log;
    uint64_t max_samples; /* past it, one sample per distinct stack */
};

static void free_slot(perch__budget *b, perch__gslot *s)
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

static void free_all(perch__gecko *g)
{
    perch__budget *b = &g->c->budget;
    for (size_t i = 0; i < PERCH_GECKO_SLOTS; i++)
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
static void extra_json(perch__gecko *g)
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

static void gecko_meta_json(perch__gecko *g)
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

static void gecko_libs_json(perch__gecko *g)
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

/* The writer's first step for slot s: the thread's strings, "Running" (when it has marks),
 * each frame's function name (the module is the function's resource, shown as
 * "module!function": not twice; ?!0xaddress outside every module), each resource's module
 * name. On the writer's thread, which has time to spare while the builder prepares the next
 * groups (and every symbol lookup stays on that one thread). */
static int name_strings(perch__gecko *g, perch__gslot *s)
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
static void times_json(perch__gecko *g, const perch__gslot *s)
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
            perch__gecko_time_since(
                &run, &c, perch__gecko_interval_ticks(perch__interval_ns(&g->c->opt), freq), 0,
                freq);
        else
            perch__gecko_time_since(&run, &c, ts, prev, freq);
    }
    perch__run_flush(&run);
    perch_json_end_array(g->w);
}

/* A column of the leading 0 and then v(count) per sample; one text repeated when every count
 * is 1 (or every value is zero). */
static void count_column(perch__gecko *g, const perch__gslot *s, const char *key, uint64_t mul)
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
static void samples_json(perch__gecko *g, const perch__gslot *s)
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

static uint32_t frame_category(const perch__gecko *g, const perch__gslot *s, size_t frame)
{
    if (s->idle) /* the profiler does not count Idle samples as running */
        return CAT_IDLE;
    return perch__is_kernel_address(&g->c->ents, s->frames.locs[frame].addr) ? CAT_KERNEL
                                                                             : CAT_USER;
}

static void stack_table_json(perch__gecko *g, const perch__gslot *s)
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

static void frame_table_json(perch__gecko *g, const perch__gslot *s)
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
static void func_table_json(perch__gecko *g, const perch__gslot *s)
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

static void resource_table_json(perch__gecko *g, const perch__gslot *s)
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

static void thread_head_json(perch__gecko *g, const perch__gslot *s)
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
    perch__gecko *g = ctx;
    perch__gslot *s = &g->slot[slot];
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
    perch__gecko *g = perch__calloc(1, sizeof *g);
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
    err = perch__samplelog_each_prepared(c, PERCH_GECKO_SLOTS, SLOT_AHEAD,
                                         perch__gecko_prepare_group, write_slot, g);
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
