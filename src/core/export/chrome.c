/*
 * Chrome Trace Event Format writer (the JSON object form: {"traceEvents": [...],
 * "displayTimeUnit": "ns", "otherData": {...}}), opened by the Perfetto UI and chrome://tracing.
 * Two passes: pass 1 collects the entities (threads, processes and modules arrive late in the
 * stream) and the PMC counter names; pass 2 streams one event per record, so memory stays
 * bounded by entities and distinct stacks while the output grows with the trace.
 *
 * One track per thread (pid = process id, tid = thread id, process_name / thread_name
 * metadata events), slices as complete events ("X") with cpu, priority, wait reason, ready
 * latency and PMC deltas in args, timer samples as the thread's CPU profile ("Profile" and
 * "ProfileChunk" events, chrome_profile.c: a flame chart in DevTools and Perfetto), PMC
 * samples as thread-scoped instant events ("i") named by their leaf frame; optionally the
 * slices again on one track per CPU, in CPU order (thread_sort_index). Times are microseconds
 * from the trace start (start_raw), computed exactly from raw ticks and perf_freq and written
 * with up to 3 decimals (nanosecond resolution, trailing zeros left out); profile samples are
 * whole microseconds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/chrome_events.h"
#include "perch/error.h"
#include "util/mem.h"

#define UNKNOWN_PID PERCH_CHROME_UNKNOWN_PID
#define CPU_PID     PERCH_CHROME_CPU_PID
#define IDLE_TID    PERCH_CHROME_IDLE_TID
#define SLICED_CACHE 256 /* entries of the cache in front of `sliced`, a power of two */

struct chrome {
    perch__collect base; /* first: pass 1 binds the base's callbacks with ctx = &c->base */
    perch_json w;
    perch__profiles prof; /* timer samples as CPU profiles */
    perch__resolve_cache rc;
    perch__map sliced; /* thread keys with slices (pass 2, read at its finish) */
    uint32_t pmc_names[PERCH_MAX_PMC];
    uint32_t pmc_name_count;
    /* pass 2: this thread's formatter (the thread cache, the PMC names; with one thread every
     * event) and the second formatter, started after the metadata unless threads = 1 */
    perch__chrome_fmt fmt;
    perch__chrome_async *async;
    bool header_done;
    uint64_t slices, samples, pmc_samples;
    /* pass 2: thread keys known to be in `sliced` (direct-mapped, 0 empty) */
    uint64_t sliced_seen[SLICED_CACHE];
    /* the metadata written with the header (the entities' threads), and what pass 2's events
     * needed besides: a thread of no known process, an idle thread (tid 0) and its pid */
    bool unknown_done, idle_done, unknown_used, idle_used;
    uint32_t idle_pid;
};

/* A metadata event ("ph":"M") whose args are {key: name} (a string) or, with name NULL,
 * {key: index}. */
static void metadata(struct chrome *c, const char *what, uint32_t pid, uint32_t tid,
                     const char *key, const char *name, uint64_t index)
{
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, "name");
    perch_json_string(&c->w, what);
    perch_json_key(&c->w, "ph");
    perch_json_string(&c->w, "M");
    perch_json_key(&c->w, "pid");
    perch_json_uint(&c->w, pid);
    perch_json_key(&c->w, "tid");
    perch_json_uint(&c->w, tid);
    perch_json_key(&c->w, "args");
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, key);
    if (name)
        perch_json_string(&c->w, name);
    else
        perch_json_uint(&c->w, index);
    perch_json_end_object(&c->w);
    perch_json_end_object(&c->w);
}

static void meta_event(struct chrome *c, const char *what, uint32_t pid, uint32_t tid,
                       const char *name)
{
    metadata(c, what, pid, tid, "name", name, 0);
}

static void sort_event(struct chrome *c, const char *what, uint32_t pid, uint32_t tid,
                       uint64_t index)
{
    metadata(c, what, pid, tid, "sort_index", NULL, index);
}

/* Tracks named per CPU ("Idle (CPU n)", "CPU n"), sorted by CPU number: viewers otherwise
 * order them by tid as text or by first event. */
static void cpu_track_names(struct chrome *c, uint32_t pid, uint32_t base, const char *prefix)
{
    char buf[64];
    for (uint32_t cpu = 0; cpu < c->base.ents.info.cpu_count && cpu < 4096; cpu++) {
        snprintf(buf, sizeof buf, "%s%" PRIu32 "%s", prefix, cpu, *prefix == 'I' ? ")" : "");
        meta_event(c, "thread_name", pid, base + cpu, buf);
        sort_event(c, "thread_sort_index", pid, base + cpu, cpu);
    }
}

static void write_metadata(struct chrome *c)
{
    const perch__entities *e = &c->base.ents;
    bool unknown = false, idle = false;
    uint32_t idle_pid = 0;
    for (size_t i = 0; i < e->process_count; i++) {
        const char *img = perch__str(&e->strings, e->processes[i].image);
        meta_event(c, "process_name", e->processes[i].pid, 0, *img ? img : "?");
    }
    for (size_t i = 0; i < e->thread_count; i++) {
        const perch__thread *t = &e->threads[i];
        const char *name = perch__str(&e->strings, t->name);
        uint32_t pid = perch__chrome_pid(e, t->key);
        unknown |= pid == UNKNOWN_PID;
        if (t->tid == 0) {
            idle = true;
            idle_pid = pid;
        } else if (*name) {
            meta_event(c, "thread_name", pid, t->tid, name);
        }
    }
    if (unknown)
        meta_event(c, "process_name", UNKNOWN_PID, 0, "unknown process");
    if (idle)
        cpu_track_names(c, idle_pid, IDLE_TID, "Idle (CPU ");
    c->unknown_done = unknown;
    c->idle_done = idle;
    if (!c->base.opt.cpu_tracks)
        return;
    meta_event(c, "process_name", CPU_PID, 0, "CPUs");
    sort_event(c, "process_sort_index", CPU_PID, 0, 0);
    cpu_track_names(c, CPU_PID, 0, "CPU ");
}

/* What an event of thread (pid, tid) asks of the metadata (late_metadata). */
static void note_track(struct chrome *c, uint32_t pid, uint32_t tid)
{
    c->unknown_used |= pid == UNKNOWN_PID;
    if (tid == 0 && !c->idle_used) {
        c->idle_used = true;
        c->idle_pid = pid;
    }
}

/* The metadata of threads that only pass 2's events named (no thread record of their own):
 * the unknown process and the idle tracks, when the header left them out. Viewers take
 * metadata events anywhere in the array. The threads with slices are noted here, from
 * `sliced` (each key's tid), not at each slice. */
static void late_metadata(struct chrome *c)
{
    for (size_t i = 0; i < c->sliced.cap; i++)
        if (c->sliced.keys[i])
            note_track(c, perch__chrome_pid(&c->base.ents, c->sliced.keys[i]), c->sliced.vals[i]);
    if (c->unknown_used && !c->unknown_done)
        meta_event(c, "process_name", UNKNOWN_PID, 0, "unknown process");
    if (c->idle_used && !c->idle_done)
        cpu_track_names(c, c->idle_pid, IDLE_TID, "Idle (CPU ");
}

/* A thread with slices gets no "CPU samples" span (read at finish: perch__profiles.sliced);
 * the map keeps its tid for late_metadata. The unknown thread (key 0, no entity: the unknown
 * process) is never in the map, and noted at once. */
static int note_sliced(struct chrome *c, uint64_t key, uint32_t tid)
{
    uint64_t *seen = &c->sliced_seen[perch__hash64(key) & (SLICED_CACHE - 1)];
    int err;
    if (key == 0) {
        note_track(c, UNKNOWN_PID, tid);
        return 0;
    }
    if (*seen == key)
        return 0;
    err = perch__map_put(&c->sliced, &c->base.budget, key, tid);
    if (!err)
        *seen = key;
    return err;
}

/* perch__profiles.runs: a chunk's numbers go to the second formatter after this writer's
 * text (the array they belong to is open). */
static int profile_runs(void *ctx, const perch__psample *out, size_t n, uint64_t base, bool times)
{
    struct chrome *c = ctx;
    int err = perch_json_flush(&c->w);
    return err ? err : perch__chrome_async_runs(c->async, out, n, base, times);
}

/* perch__profiles.nodes: a chunk's new nodes go to the second formatter, which names them,
 * after this writer's text (the nodes array is open). */
static int profile_nodes(void *ctx, const perch__ptrack *t, size_t from, size_t to)
{
    struct chrome *c = ctx;
    int err = perch_json_flush(&c->w);
    bool comma = c->w.need_comma[c->w.depth];
    c->w.need_comma[c->w.depth] = true;
    return err ? err
               : perch__chrome_async_nodes(c->async, t->pk, from + 2, t->nodes + from, to - from,
                                           comma);
}

/* The second formatter takes the events from here on (the metadata are written): this
 * writer's text goes into its queue. With threads = 1, or when it cannot start, every event
 * stays on this thread. */
static void start_async(struct chrome *c)
{
    if (c->base.opt.threads == 1 || perch_json_flush(&c->w))
        return;
    if (perch__chrome_async_start(&c->fmt, &c->w, c->base.out, &c->async))
        return;
    c->w.sink = perch__chrome_async_text;
    c->w.ctx = c->async;
    c->prof.runs = profile_runs;
    c->prof.nodes = profile_nodes;
    c->prof.runs_ctx = c;
}

static void ensure_header(struct chrome *c)
{
    if (c->header_done)
        return;
    c->header_done = true;
    c->fmt.pmc_name_count = c->pmc_name_count;
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, "traceEvents");
    perch_json_begin_array(&c->w);
    write_metadata(c);
    start_async(c);
}

/* Before an event goes into the second formatter's queue: this writer's text goes first, and
 * the event is an element of the array. Returns whether a comma precedes the event. */
static bool queue_event(struct chrome *c)
{
    if (c->w.used)
        perch_json_flush(&c->w);
    bool comma = c->w.need_comma[c->w.depth];
    c->w.need_comma[c->w.depth] = true;
    return comma;
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    struct chrome *c = ctx;
    ensure_header(c);
    int err = perch__profiles_drain(&c->prof); /* the samples before this slice first */
    if (err)
        return err;
    c->slices++;
    err = note_sliced(c, r->thread_key, r->tid);
    if (err)
        return err;
    if (!c->async)
        return perch__chrome_slice(&c->fmt, r);
    bool comma = queue_event(c);
    return c->w.error ? c->w.error : perch__chrome_async_slice(c->async, r, comma);
}

/* A PMC sample's instant event, named by its leaf frame: with the second formatter, its leaf
 * is found here (the stacks are this thread's) and named there. */
static int pmc_sample(struct chrome *c, const perch_sample_rec *r)
{
    const perch__chrome_thread *t = perch__chrome_thread_of(&c->fmt, r->thread_key);
    note_track(c, t->pid, r->tid);
    if (c->async) {
        bool comma = queue_event(c);
        uint64_t leaf = perch__chrome_pmc_leaf(&c->base.stacks, r);
        return c->w.error
                   ? c->w.error
                   : perch__chrome_async_pmc(c->async, r, t->pid, t->process_key, leaf, comma);
    }
    char name[PERCH_CHROME_NAME_TEXT_MAX];
    size_t n = 0;
    int err = c->w.error;
    if (!err)
        err = perch__chrome_pmc_name(&c->fmt, &c->base.stacks, t->process_key, r, name, &n);
    if (!err && n == 0)
        err = c->w.error ? c->w.error : PERCH_ELIMIT;
    if (err)
        return err;
    perch__chrome_pmc_ev ev = {*r, t->pid, (uint32_t)n, name};
    return perch__chrome_pmc(&c->fmt, &ev);
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    struct chrome *c = ctx;
    const perch_trace_info *info = &c->base.ents.info;
    const perch__chrome_thread *t;
    struct perch__pheld held;
    uint64_t us;
    int err;
    ensure_header(c);
    if (r->kind == PERCH_SAMPLE_PMC) {
        c->pmc_samples++;
        err = perch__profiles_drain(&c->prof);
        return err ? err : pmc_sample(c, r);
    }
    us = r->ts > info->start_raw
             ? perch__ticks_to_ns(r->ts - info->start_raw, info->perf_freq) / 1000
             : 0;
    c->samples++;
    t = perch__chrome_thread_of(&c->fmt, r->thread_key);
    note_track(c, t->pid, r->tid);
    /* stack id 0: the ip alone; else the profile decodes the stack when its leaf is not
     * cached */
    held = (struct perch__pheld){
        .thread_key = r->thread_key,
        .module_key = r->module_key,
        .ip = r->ip,
        .us = us,
        .pid = t->pid,
        .tid = perch__chrome_track_tid(r->tid, r->cpu),
        .stack_id = perch__stacks_known(&c->base.stacks, r->stack_id) ? r->stack_id : 0,
        .weight = r->count,
        .on = true,
    };
    return perch__profiles_hold(&c->prof, &held);
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    struct chrome *c = ctx;
    int err = perch__profiles_drain(&c->prof); /* its stack as it was */
    return err ? err : perch__stacks_add(&c->base.stacks, &c->base.budget, rec);
}

static void write_other_data(struct chrome *c)
{
    const perch_trace_info *i = &c->base.ents.info;
    perch_json_key(&c->w, "displayTimeUnit");
    perch_json_string(&c->w, "ns");
    perch_json_key(&c->w, "otherData");
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, "exporter");
    perch_json_string(&c->w, "perch");
    perch_json_key(&c->w, "os_build");
    perch_json_uint(&c->w, i->os_build);
    perch_json_key(&c->w, "cpu_count");
    perch_json_uint(&c->w, i->cpu_count);
    perch_json_key(&c->w, "pointer_size");
    perch_json_uint(&c->w, i->pointer_size);
    perch_json_key(&c->w, "perf_freq");
    perch_json_uint(&c->w, i->perf_freq);
    perch_json_key(&c->w, "start_filetime");
    perch_json_uint(&c->w, i->start_filetime);
    perch_json_key(&c->w, "events_lost");
    perch_json_uint(&c->w, i->events_lost);
    perch_json_key(&c->w, "slices");
    perch_json_uint(&c->w, c->slices);
    perch_json_key(&c->w, "samples");
    perch_json_uint(&c->w, c->samples);
    perch_json_key(&c->w, "pmc_samples");
    perch_json_uint(&c->w, c->pmc_samples);
    perch_json_key(&c->w, "sample_interval_us");
    perch_json_uint(&c->w, c->prof.interval_us);
    perch_json_end_object(&c->w);
}

static int on_finish2(void *ctx)
{
    struct chrome *c = ctx;
    int err;
    ensure_header(c);
    err = perch__profiles_finish(&c->prof);
    if (err)
        return err;
    late_metadata(c);
    perch_json_end_array(&c->w);
    write_other_data(c);
    perch_json_end_object(&c->w);
    perch_json_newline(&c->w);
    err = perch_json_flush(&c->w);
    int aerr = perch__chrome_async_stop(c->async); /* the queue played, the output written */
    c->async = NULL;
    c->prof.runs = NULL;
    return err ? err : aerr;
}

static int on_info2(void *ctx, const perch_trace_info *info)
{
    (void)ctx;
    (void)info; /* kept from pass 1 */
    return 0;
}

static int on_counters(void *ctx, const perch_counters_rec *rec)
{
    struct chrome *c = ctx;
    return perch__counter_names(&c->base, rec, c->pmc_names, &c->pmc_name_count);
}

/* The entities sealed, and every symbol table with them: in pass 2 two threads name frames
 * (the profiles' nodes here, the PMC samples on the second formatter), and a lookup that
 * sealed a table would change it under the other (pass 2 takes no symbol record, so sealing
 * now names what a first lookup would). */
static int on_finish1(void *ctx)
{
    struct chrome *c = ctx;
    int err = perch__entities_seal(&c->base.ents);
    if (!err && c->base.ents.names)
        perch_symnames_seal_all(c->base.ents.names);
    return err;
}

static void chrome_bind(void *state, unsigned pass, perch_sink *sink)
{
    struct chrome *c = state;
    perch__collect_bind(&c->base, sink); /* ctx = &c->base == c */
    if (pass == 0) { /* the entities alone: a capture's events are left undecoded */
        sink->stack = NULL;
        sink->sample = NULL;
        sink->counters = on_counters;
        sink->finish = on_finish1;
        sink->skip_events = true;
        return;
    }
    sink->trace_info = on_info2;
    sink->process = NULL;
    sink->thread = NULL;
    sink->module = NULL;
    sink->symbol = NULL; /* pass 1 took them: again, they would add every name twice */
    sink->stack = on_stack;
    sink->slice = on_slice;
    sink->sample = on_sample;
    sink->finish = on_finish2;
}

static int chrome_create(const perch_export_options *opt, perch_output *out, void **state)
{
    struct chrome *c = perch__calloc(1, sizeof *c);
    if (!c)
        return PERCH_ENOMEM;
    perch__collect_init(&c->base, opt, out);
    perch_json_init(&c->w, perch__json_output_sink, out);
    c->prof.budget = &c->base.budget;
    c->prof.ents = &c->base.ents;
    c->prof.stacks = &c->base.stacks;
    c->prof.rc = &c->rc;
    c->prof.w = &c->w;
    c->fmt.w = &c->w;
    c->fmt.ents = &c->base.ents;
    c->prof.sliced = &c->sliced;
    c->fmt.pmc_names = c->pmc_names;
    c->fmt.cpu_tracks = c->base.opt.cpu_tracks;
    c->fmt.budget = &c->base.budget;
    c->fmt.rc = &c->rc;
    perch__chrome_fmt_reset(&c->fmt);
    c->prof.interval_us = perch__interval_ns(&c->base.opt) / 1000;
    if (c->prof.interval_us == 0)
        c->prof.interval_us = 1;
    *state = c;
    return 0;
}

static void chrome_destroy(void *state)
{
    struct chrome *c = state;
    if (!c)
        return;
    perch__chrome_async_stop(c->async); /* an export that failed */
    perch__profiles_free(&c->prof);
    perch__chrome_fmt_free(&c->fmt);
    perch__map_free(&c->sliced, &c->base.budget);
    perch__collect_free(&c->base);
    perch__free(c);
}

const perch__format perch__format_chrome = {
    "chrome",    "Perfetto UI (ui.perfetto.dev), chrome://tracing",
    2,           chrome_create,
    chrome_bind, chrome_destroy,
};
