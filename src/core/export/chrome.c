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
 * with 3 decimals (nanosecond resolution); profile samples are whole microseconds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

#define UNKNOWN_PID 2147483646u /* threads whose process is unknown */
#define CPU_PID     2147483647u /* the per-CPU tracks */
#define IDLE_TID    2147418112u /* 0x7fff0000 + cpu: the idle thread (tid 0) of each CPU */
#define THREAD_CACHE 256  /* entries of the per-thread cache, a power of two */
#define NAME_CACHE   2048 /* entries of the PMC event name cache, a power of two */
#define NAME_TEXT    104  /* the longest name text the name cache keeps */
#define SEEN_CACHE   256  /* entries of pass 1's thread cache, a power of two */
#define SEEN_DONE    1u   /* touching the thread again changes nothing */
#define SEEN_SLICED  2u   /* the thread key is in `sliced` */

/* Appends a string literal (no byte needs escaping) to buf at len. */
#define PUT_LIT(buf, len, lit) (memcpy((buf) + (len), (lit), sizeof(lit) - 1), (len) += sizeof(lit) - 1)

/* The idle thread is tid 0 on every CPU at once: one track per CPU keeps its slices from
 * overlapping on one track (which trace viewers reject as bad nesting). */
static uint32_t track_tid(uint32_t tid, uint16_t cpu)
{
    return tid == 0 ? IDLE_TID + cpu : tid;
}

struct chrome {
    perch__collect base; /* first: pass 1 binds the base's callbacks with ctx = &c->base */
    perch_json w;
    perch__profiles prof; /* timer samples as CPU profiles */
    perch__resolve_cache rc;
    perch__map sliced; /* thread keys with slices (pass 1) */
    uint32_t pmc_names[PERCH_MAX_PMC];
    uint32_t pmc_name_count;
    struct pmc_key {
        char text[64]; /* `"name":` escaped, when it fits */
        size_t len;
        bool done, fits;
    } pmc_keys[PERCH_MAX_PMC];
    bool header_done;
    uint64_t slices, samples, pmc_samples;
    /* pass 2: what each event needs of its thread, by thread key (direct-mapped; the
     * entities do not change after pass 1) */
    struct thread_slot {
        uint64_t key;
        uint64_t process_key;
        uint32_t pid;
        bool sliced, valid;
    } threads[THREAD_CACHE];
    /* pass 1: thread keys whose touch is known to change nothing more (direct-mapped): the
     * thread exists and is not an idle thread waiting for its CPU; SEEN_SLICED: in `sliced` */
    struct seen_slot {
        uint64_t key;
        uint8_t flags; /* SEEN_* */
    } seen[SEEN_CACHE];
    int (*thread1)(void *ctx, const perch_thread_rec *rec); /* the base's thread callback */
    /* pass 2: a PMC sample's event name as JSON text ("name" escaped, quotes included) by
     * (process key, leaf address, module key when the leaf is the sample's ip) */
    struct name_slot {
        uint64_t pk, addr, module_key;
        uint8_t len; /* 0: empty */
        char text[NAME_TEXT];
    } *names;
    size_t names_cap;
};

static uint32_t pid_of(const struct chrome *c, uint64_t thread_key)
{
    const perch__thread *t = perch__entities_thread_at(&c->base.ents, thread_key);
    uint32_t pid = t ? perch__thread_pid(&c->base.ents, t) : UINT32_MAX;
    return pid == UINT32_MAX ? UNKNOWN_PID : pid;
}

/* What pass 2's events need of thread_key, from the cache (filled from the entities). */
static const struct thread_slot *thread_of(struct chrome *c, uint64_t key)
{
    struct thread_slot *t = &c->threads[perch__hash64(key) & (THREAD_CACHE - 1)];
    if (!t->valid || t->key != key) {
        const perch__thread *th = perch__entities_thread_at(&c->base.ents, key);
        uint32_t unused;
        t->key = key;
        t->process_key = th ? th->process_key : 0;
        t->pid = pid_of(c, key);
        t->sliced = perch__map_get(&c->sliced, key, &unused);
        t->valid = true;
    }
    return t;
}

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
        uint32_t pid = pid_of(c, t->key);
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
    if (!c->base.opt.cpu_tracks)
        return;
    meta_event(c, "process_name", CPU_PID, 0, "CPUs");
    sort_event(c, "process_sort_index", CPU_PID, 0, 0);
    cpu_track_names(c, CPU_PID, 0, "CPU ");
}

static void ensure_header(struct chrome *c)
{
    if (c->header_done)
        return;
    c->header_done = true;
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, "traceEvents");
    perch_json_begin_array(&c->w);
    write_metadata(c);
}

/* Appends s (no byte needs escaping) to buf at *len. */
static void put_lit(char *buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    memcpy(buf + *len, s, n);
    *len += n;
}

static void put_u(char *buf, size_t *len, uint64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(buf + *len, p, (size_t)(tmp + sizeof tmp - p));
    *len += (size_t)(tmp + sizeof tmp - p);
}

/* {"name":name,"cat":cat,"ph":ph,"ts":ts,"pid":pid,"tid":tid (the object left open); cat and
 * ph are literals that need no escaping. */
static void event_head(struct chrome *c, const char *name, const char *cat, const char *ph,
                       uint64_t ts, uint32_t pid, uint32_t tid)
{
    const perch_trace_info *info = &c->base.ents.info;
    char buf[128 + PERCH_TIME_TEXT_MAX];
    size_t len = 0;
    perch_json_begin_object(&c->w);
    perch_json_key(&c->w, "name");
    perch_json_string(&c->w, name);
    put_lit(buf, &len, "\"cat\":\"");
    put_lit(buf, &len, cat);
    put_lit(buf, &len, "\",\"ph\":\"");
    put_lit(buf, &len, ph);
    put_lit(buf, &len, "\",\"ts\":");
    len += perch__fmt_time(buf + len, (int64_t)(ts - info->start_raw), info->perf_freq, false);
    put_lit(buf, &len, ",\"pid\":");
    put_u(buf, &len, pid);
    put_lit(buf, &len, ",\"tid\":");
    put_u(buf, &len, tid);
    perch_json_raw_members(&c->w, buf, len);
}

static void put_i(char *buf, size_t *len, int64_t v)
{
    if (v < 0)
        buf[(*len)++] = '-';
    put_u(buf, len, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static int key_sink(void *ctx, const char *data, size_t n)
{
    struct pmc_key *k = ctx;
    if (k->len + n > sizeof k->text)
        return PERCH_ELIMIT;
    memcpy(k->text + k->len, data, n);
    k->len += n;
    return 0;
}

/* The JSON key of PMC counter i: the counter's name, or "pmcI" past the named ones. */
static const char *pmc_name(const struct chrome *c, uint32_t i, char name[16])
{
    if (i < c->pmc_name_count)
        return perch__str(&c->base.ents.strings, c->pmc_names[i]);
    snprintf(name, 16, "pmc%" PRIu32, i);
    return name;
}

/* The text `"name":` of PMC counter i as the writer escapes it, rendered once (fits false
 * when it is longer than the cache keeps). */
static const struct pmc_key *pmc_key(struct chrome *c, uint32_t i)
{
    struct pmc_key *k = &c->pmc_keys[i];
    if (!k->done) {
        char name[16];
        perch_json w;
        k->len = 0;
        perch_json_init(&w, key_sink, k);
        perch_json_begin_object(&w); /* "{" then the key: the key's text is what follows */
        perch_json_key(&w, pmc_name(c, i, name));
        k->fits = perch_json_flush(&w) == 0 && k->len > 1;
        if (k->fits) {
            memmove(k->text, k->text + 1, k->len - 1);
            k->len--;
        }
        k->done = true;
    }
    return k;
}

/* PMC deltas from counter i on, through the writer's calls. */
static void slow_pmc(struct chrome *c, const perch_slice_rec *r, uint32_t i)
{
    char name[16];
    for (; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        perch_json_key(&c->w, pmc_name(c, i, name));
        perch_json_uint(&c->w, r->pmc_delta[i]);
    }
}

/* "dur" and "args" of a slice's complete event: {cpu, priority, wait_reason, ready_latency_us,
 * the PMC deltas under their counter names, open}. */
static void slice_args(struct chrome *c, const perch_slice_rec *r)
{
    uint64_t freq = c->base.ents.info.perf_freq;
    char buf[160 + 2 * PERCH_TIME_TEXT_MAX + PERCH_MAX_PMC * 96];
    size_t len = 0;
    put_lit(buf, &len, "\"dur\":");
    len += perch__fmt_time(
        buf + len, r->end_ts >= r->start_ts ? (int64_t)(r->end_ts - r->start_ts) : 0, freq, false);
    perch_json_raw_members(&c->w, buf, len);
    perch_json_key(&c->w, "args");
    perch_json_begin_object(&c->w);
    len = 0;
    put_lit(buf, &len, "\"cpu\":");
    put_u(buf, &len, r->cpu);
    put_lit(buf, &len, ",\"priority\":");
    put_i(buf, &len, r->priority);
    if (r->wait_reason >= 0) {
        put_lit(buf, &len, ",\"wait_reason\":");
        put_i(buf, &len, r->wait_reason);
    }
    if ((r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts) {
        put_lit(buf, &len, ",\"ready_latency_us\":");
        len += perch__fmt_time(buf + len, (int64_t)(r->start_ts - r->ready_ts), freq, false);
    }
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        const struct pmc_key *k = pmc_key(c, i);
        if (!k->fits) { /* a long name: the writer's own calls from here */
            perch_json_raw_members(&c->w, buf, len);
            slow_pmc(c, r, i);
            len = 0;
            break;
        }
        buf[len++] = ',';
        memcpy(buf + len, k->text, k->len);
        len += k->len;
        put_u(buf, &len, r->pmc_delta[i]);
    }
    if (len)
        perch_json_raw_members(&c->w, buf, len);
    if (r->flags & (PERCH_SLICE_OPEN_START | PERCH_SLICE_OPEN_END)) {
        perch_json_key(&c->w, "open");
        perch_json_string(&c->w, (r->flags & PERCH_SLICE_OPEN_START) ? "start" : "end");
    }
    perch_json_end_object(&c->w);
}

/* The "args" members of a slice after cpu and priority into buf at *len: wait reason, ready
 * latency, the PMC deltas (every key fits), open; and the two closing braces. */
static void slice_args_rest(struct chrome *c, const perch_slice_rec *r, char *buf, size_t *len)
{
    uint64_t freq = c->base.ents.info.perf_freq;
    size_t n = *len;
    if (r->wait_reason >= 0) {
        PUT_LIT(buf, n, ",\"wait_reason\":");
        put_i(buf, &n, r->wait_reason);
    }
    if ((r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts) {
        PUT_LIT(buf, n, ",\"ready_latency_us\":");
        n += perch__fmt_time(buf + n, (int64_t)(r->start_ts - r->ready_ts), freq, false);
    }
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        const struct pmc_key *k = &c->pmc_keys[i];
        buf[n++] = ',';
        memcpy(buf + n, k->text, k->len);
        n += k->len;
        n += perch__put_uint(buf + n, r->pmc_delta[i]);
    }
    if (r->flags & PERCH_SLICE_OPEN_START)
        PUT_LIT(buf, n, ",\"open\":\"start\"");
    else if (r->flags & PERCH_SLICE_OPEN_END)
        PUT_LIT(buf, n, ",\"open\":\"end\"");
    PUT_LIT(buf, n, "}}");
    *len = n;
}

/* A slice's complete event on its thread's track as one run of text: the bytes event_head
 * and slice_args write through the writer's calls. false (nothing written) when a PMC
 * counter's key does not fit its cache. */
static bool slice_fast(struct chrome *c, const perch_slice_rec *r, uint32_t pid, uint32_t tid)
{
    const perch_trace_info *info = &c->base.ents.info;
    char buf[256 + 3 * PERCH_TIME_TEXT_MAX + PERCH_MAX_PMC * 96];
    size_t len = 0;
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++)
        if (!pmc_key(c, i)->fits)
            return false;
    if (r->tid == 0)
        PUT_LIT(buf, len, "{\"name\":\"idle\",\"cat\":\"cpu\",\"ph\":\"X\",\"ts\":");
    else
        PUT_LIT(buf, len, "{\"name\":\"running\",\"cat\":\"cpu\",\"ph\":\"X\",\"ts\":");
    len += perch__fmt_time(buf + len, (int64_t)(r->start_ts - info->start_raw), info->perf_freq,
                           false);
    PUT_LIT(buf, len, ",\"pid\":");
    len += perch__put_uint(buf + len, pid);
    PUT_LIT(buf, len, ",\"tid\":");
    len += perch__put_uint(buf + len, tid);
    PUT_LIT(buf, len, ",\"dur\":");
    len += perch__fmt_time(
        buf + len, r->end_ts >= r->start_ts ? (int64_t)(r->end_ts - r->start_ts) : 0,
        info->perf_freq, false);
    PUT_LIT(buf, len, ",\"args\":{\"cpu\":");
    len += perch__put_uint(buf + len, r->cpu);
    PUT_LIT(buf, len, ",\"priority\":");
    put_i(buf, &len, r->priority);
    slice_args_rest(c, r, buf, &len);
    perch_json_raw_n(&c->w, buf, len);
    return true;
}

static void slice_event(struct chrome *c, const perch_slice_rec *r, const char *name, uint32_t pid,
                        uint32_t tid)
{
    event_head(c, name, "cpu", "X", r->start_ts, pid, tid);
    slice_args(c, r);
    perch_json_end_object(&c->w);
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    struct chrome *c = ctx;
    char label[300];
    ensure_header(c);
    uint32_t pid = thread_of(c, r->thread_key)->pid, tid = track_tid(r->tid, r->cpu);
    int err = perch__profiles_drain(&c->prof); /* the samples before this slice first */
    if (err)
        return err;
    if (!slice_fast(c, r, pid, tid))
        slice_event(c, r, r->tid == 0 ? "idle" : "running", pid, tid);
    if (c->base.opt.cpu_tracks) {
        const perch__thread *t = perch__entities_thread_at(&c->base.ents, r->thread_key);
        perch__thread_label(&c->base.ents, t, r->tid, label, sizeof label);
        slice_event(c, r, label, CPU_PID, r->cpu);
    }
    c->slices++;
    return c->w.error;
}

/* The name of a PMC sample's event (its leaf frame) as the writer writes a string (quoted,
 * escaped) into out (NAME_TEXT_MAX bytes); returns its length. */
#define NAME_TEXT_MAX PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX)
_Static_assert(NAME_TEXT <= NAME_TEXT_MAX, "a cached name is copied whole into its output");
static size_t leaf_name_text(struct chrome *c, uint64_t pk, uint64_t module_key, uint64_t leaf,
                             bool is_ip, char *out)
{
    char name[PERCH_FRAME_NAME_MAX];
    const perch__module *m =
        perch__frame_module_cached(&c->rc, &c->base.ents, pk, module_key, leaf, is_ip);
    perch__frame_name(&c->base.ents, m, leaf, name, sizeof name);
    return perch__json_string_text(name, strlen(name), out, NAME_TEXT_MAX);
}

/* The cached name text of (pk, leaf, the module key when the leaf is the sample's ip): the
 * leaf's module, so its name, is a function of these once the entities are sealed. */
static int cached_name(struct chrome *c, uint64_t pk, uint64_t module_key, uint64_t leaf,
                       bool is_ip, char *out, size_t *len)
{
    uint64_t mk = is_ip ? module_key : 0;
    struct name_slot *slot;
    if (!c->names) {
        int err = perch__grow(&c->base.budget, (void **)&c->names, &c->names_cap, NAME_CACHE,
                              sizeof *c->names);
        if (err)
            return err;
        memset(c->names, 0, c->names_cap * sizeof *c->names);
    }
    slot = &c->names[perch__hash64(leaf ^ perch__hash64(pk ^ perch__hash64(mk))) &
                     (NAME_CACHE - 1)];
    if (slot->len && slot->addr == leaf && slot->pk == pk && slot->module_key == mk) {
        memcpy(out, slot->text, sizeof slot->text); /* out has room: a fixed size copies fast */
        *len = slot->len;
        return 0;
    }
    *len = leaf_name_text(c, pk, module_key, leaf, is_ip, out);
    if (*len > 0 && *len <= NAME_TEXT) {
        slot->pk = pk;
        slot->addr = leaf;
        slot->module_key = mk;
        slot->len = (uint8_t)*len;
        memcpy(slot->text, out, *len);
    }
    return 0;
}

/* A PMC sample counts events, not time: an instant event named by its leaf frame, written as
 * one run of text (the bytes of the writer's calls for that object). */
static int pmc_sample(struct chrome *c, const perch_sample_rec *r)
{
    const perch_trace_info *info = &c->base.ents.info;
    const struct thread_slot *t = thread_of(c, r->thread_key);
    char text[NAME_TEXT_MAX + 256 + PERCH_TIME_TEXT_MAX];
    size_t len = 0, n = 0;
    uint64_t leaf;
    if (!perch__stacks_leaf(&c->base.stacks, r->stack_id, &leaf))
        leaf = r->ip;
    PUT_LIT(text, len, "{\"name\":");
    int err = cached_name(c, t->process_key, r->module_key, leaf, leaf == r->ip, text + len, &n);
    if (err)
        return err;
    if (n == 0)
        return c->w.error ? c->w.error : PERCH_ELIMIT;
    len += n;
    PUT_LIT(text, len, ",\"cat\":\"pmc_sample\",\"ph\":\"i\",\"ts\":");
    len += perch__fmt_time(text + len, (int64_t)(r->ts - info->start_raw), info->perf_freq, false);
    PUT_LIT(text, len, ",\"pid\":");
    len += perch__put_uint(text + len, t->pid);
    PUT_LIT(text, len, ",\"tid\":");
    len += perch__put_uint(text + len, track_tid(r->tid, r->cpu));
    PUT_LIT(text, len, ",\"s\":\"t\",\"args\":{\"stack_id\":");
    len += perch__put_uint(text + len, r->stack_id);
    PUT_LIT(text, len, ",\"cpu\":");
    len += perch__put_uint(text + len, r->cpu);
    if (r->count > 1) {
        PUT_LIT(text, len, ",\"count\":");
        len += perch__put_uint(text + len, r->count);
    }
    PUT_LIT(text, len, ",\"pmc_source\":");
    len += perch__put_uint(text + len, r->profile_source);
    PUT_LIT(text, len, "}}");
    perch_json_raw_n(&c->w, text, len);
    return c->w.error;
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    struct chrome *c = ctx;
    const perch_trace_info *info = &c->base.ents.info;
    const struct thread_slot *t;
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
    t = thread_of(c, r->thread_key);
    /* stack id 0: the ip alone; else the profile decodes the stack when its leaf is not
     * cached */
    held = (struct perch__pheld){
        r->thread_key, r->module_key, r->ip, us, t->pid, track_tid(r->tid, r->cpu),
        perch__stacks_known(&c->base.stacks, r->stack_id) ? r->stack_id : 0, r->count,
        !t->sliced, true};
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
    perch_json_end_array(&c->w);
    write_other_data(c);
    perch_json_end_object(&c->w);
    perch_json_newline(&c->w);
    return perch_json_flush(&c->w);
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

/* Pass 1: a thread that only appears in samples or slices still gets a track. Touching a
 * thread that exists changes nothing unless it is an idle thread (tid 0) whose CPU is not
 * known yet, so such touches are skipped through the seen cache. */
static int touch(struct chrome *c, uint64_t key, uint32_t tid, uint16_t cpu, unsigned sliced)
{
    struct seen_slot *s = &c->seen[perch__hash64(key) & (SEEN_CACHE - 1)];
    uint32_t idx;
    int err = 0;
    if (s->key != key || !(s->flags & SEEN_DONE)) {
        err = perch__entities_touch_thread(&c->base.ents, key, tid, cpu, &idx);
        if (err || idx == UINT32_MAX)
            return err; /* key 0 (unknown) has no entry, and is not in `sliced` */
        if (s->key != key)
            *s = (struct seen_slot){key, 0};
        if (tid != 0 || c->base.ents.threads[idx].cpu >= 0)
            s->flags |= SEEN_DONE;
    }
    if (sliced && !(s->flags & SEEN_SLICED)) {
        err = perch__map_put(&c->sliced, &c->base.budget, key, 1);
        if (!err)
            s->flags |= SEEN_SLICED;
    }
    return err;
}

static int on_sample1(void *ctx, const perch_sample_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, 0);
}

static int on_slice1(void *ctx, const perch_slice_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, 1);
}

/* A thread record may change the thread's tid, so its next touch is not skipped. */
static int on_thread1(void *ctx, const perch_thread_rec *rec)
{
    struct chrome *c = ctx;
    struct seen_slot *s = &c->seen[perch__hash64(rec->key) & (SEEN_CACHE - 1)];
    if (s->key == rec->key)
        s->flags &= (uint8_t)~SEEN_DONE;
    return c->thread1(ctx, rec);
}

static int on_finish1(void *ctx)
{
    struct chrome *c = ctx;
    return perch__entities_seal(&c->base.ents);
}

static void chrome_bind(void *state, unsigned pass, perch_sink *sink)
{
    struct chrome *c = state;
    perch__collect_bind(&c->base, sink); /* ctx = &c->base == c */
    if (pass == 0) {
        sink->stack = NULL;
        c->thread1 = sink->thread;
        sink->thread = on_thread1;
        sink->sample = on_sample1;
        sink->slice = on_slice1;
        sink->counters = on_counters;
        sink->finish = on_finish1;
        return;
    }
    sink->trace_info = on_info2;
    sink->process = NULL;
    sink->thread = NULL;
    sink->module = NULL;
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
    perch__profiles_free(&c->prof);
    perch__release(&c->base.budget, (void **)&c->names, &c->names_cap, sizeof *c->names);
    perch__map_free(&c->sliced, &c->base.budget);
    perch__collect_free(&c->base);
    perch__free(c);
}

const perch__format perch__format_chrome = {
    "chrome",    "Perfetto UI (ui.perfetto.dev), chrome://tracing",
    2,           chrome_create,
    chrome_bind, chrome_destroy,
};
