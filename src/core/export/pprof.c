/*
 * pprof writer: google/pprof's profile.proto (uncompressed protobuf, which pprof reads as is).
 * Sample types [samples/count, cpu/nanoseconds, pmc/events]; a timer row is
 * [n, n x interval, 0], a PMC row [0, 0, n] with a pmc_source label; default type "cpu".
 * One mapping per module used, one location per distinct (module, address), one function per
 * distinct frame name (`module!+0xoffset`). Labels: thread (name), tid, pid, process.
 * Field numbers from proto/profile.proto of github.com/google/pprof.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11,
    PROFILE_PERIOD = 12,
    PROFILE_DEFAULT_SAMPLE_TYPE = 14
};

#define FILETIME_UNIX_EPOCH 116444736000000000ull /* 1970-01-01 in 100 ns since 1601 */
#define MAX_FRAMES          4096
#define LOC_CACHE           (1u << 15)

struct pprof {
    perch__collect *c;
    perch__interner strings;
    perch__loctab locs;   /* extra = function id */
    perch__map func_map;  /* name string index + 1 -> function id */
    uint32_t *func_names; /* per function id - 1: name string index */
    size_t func_count, func_cap;
    uint32_t *mapping_of; /* per module index: mapping id, 0 = none yet */
    size_t mapping_of_cap;
    uint32_t *mapping_modules; /* per mapping id - 1: module index */
    size_t mapping_count, mapping_cap;
    uint64_t ids[MAX_FRAMES];
    perch__pb top, sub, sub2;
    perch__resolve_cache rc;
    /* A direct-mapped cache of the location ids of stack frames: (process key, address) ->
     * id (0 = empty), the process key 0 for kernel addresses. Exact: a stack frame's module,
     * so its location, is a function of the address and, for a user address, the row's
     * process; an id never changes once given. One entry is one line read. */
    struct loc_slot {
        uint64_t pk, addr;
        uint32_t id;
    } lc[LOC_CACHE];
    uint64_t kernel_lo, kernel_span; /* kernel addresses: addr - kernel_lo <= kernel_span */
    perch__pb labels; /* the labels of the group's samples, encoded at its first row */
    bool labels_ok;
    const perch__thread *thread; /* the group's thread (NULL: none) */
    uint64_t pk;                 /* its process key (0: none), where its user addresses resolve */
    perch__writer *w;
    /* Without symbol records a frame's name is its module's name and its offset, so the
     * function of a new location is found by (module name, offset) without formatting the
     * name (every process's copy of a DLL has its own module and locations, not names). */
    bool plain_names;
    perch__interner mod_names; /* module names -> class */
    uint32_t *name_class;      /* per module index: its name's class + 1, 0 = not yet */
    size_t name_class_cap;
    perch__loctab funcs; /* (class + 1, offset) -> extra = function id */
};

/* ASCII case-insensitive equality (module names are lower case, images as logged). */
static bool same_name_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != y)
            return false;
    }
    return *a == *b;
}

static int str(struct pprof *p, const char *s, uint32_t *idx)
{
    return perch__intern_str(&p->strings, &p->c->budget, s, idx);
}

static int mapping_for(struct pprof *p, const perch__module *m, uint32_t *id)
{
    size_t mi = (size_t)(m - p->c->ents.modules);
    int err = perch__grow_zeroed(&p->c->budget, (void **)&p->mapping_of, &p->mapping_of_cap,
                                 p->c->ents.module_count, sizeof *p->mapping_of);
    if (err)
        return err;
    if (!p->mapping_of[mi]) {
        err = perch__grow(&p->c->budget, (void **)&p->mapping_modules, &p->mapping_cap,
                          p->mapping_count + 1, sizeof *p->mapping_modules);
        if (err)
            return err;
        p->mapping_modules[p->mapping_count++] = (uint32_t)mi;
        p->mapping_of[mi] = (uint32_t)p->mapping_count;
    }
    *id = p->mapping_of[mi];
    return 0;
}

static int function_named(struct pprof *p, const perch__module *m, uint64_t addr, uint32_t *id)
{
    char name[PERCH_FRAME_NAME_MAX];
    size_t n = perch__frame_name(&p->c->ents, m, addr, name, sizeof name);
    uint32_t s;
    int err = perch__intern(&p->strings, &p->c->budget, name, n, &s);
    if (err || perch__map_get(&p->func_map, (uint64_t)s + 1, id))
        return err;
    err = perch__grow(&p->c->budget, (void **)&p->func_names, &p->func_cap, p->func_count + 1,
                      sizeof *p->func_names);
    if (!err)
        err = perch__map_put(&p->func_map, &p->c->budget, (uint64_t)s + 1,
                             (uint32_t)p->func_count + 1);
    if (err)
        return err;
    p->func_names[p->func_count++] = s;
    *id = (uint32_t)p->func_count;
    return 0;
}

/* The class of module m's name (+ 1): modules with the same name share it. */
static int name_class(struct pprof *p, const perch__module *m, uint32_t *cls)
{
    size_t mi = (size_t)(m - p->c->ents.modules);
    uint32_t idx;
    int err = perch__grow_zeroed(&p->c->budget, (void **)&p->name_class, &p->name_class_cap,
                                 p->c->ents.module_count, sizeof *p->name_class);
    if (err)
        return err;
    if (!p->name_class[mi]) {
        err = perch__intern_str(&p->mod_names, &p->c->budget,
                                perch__str(&p->c->ents.strings, m->name), &idx);
        if (err)
            return err;
        p->name_class[mi] = idx + 1;
    }
    *cls = p->name_class[mi];
    return 0;
}

/* The function id of the frame at addr in module m: by its name, or with plain names by
 * (module name, offset), the same id its name would find. */
static int function_for(struct pprof *p, const perch__module *m, uint64_t addr, uint32_t *id)
{
    uint32_t cls, idx;
    bool is_new;
    int err;
    if (!p->plain_names || !m)
        return function_named(p, m, addr, id);
    err = name_class(p, m, &cls);
    if (!err)
        err = perch__loctab_get(&p->funcs, &p->c->budget, cls, addr - m->base, &idx, &is_new);
    if (err || !is_new) {
        if (!err)
            *id = p->funcs.locs[idx].extra;
        return err;
    }
    err = function_named(p, m, addr, id);
    if (!err)
        p->funcs.locs[idx].extra = *id;
    return err;
}

/* The location id (1-based) of addr in module m (NULL = none), created on first use. */
static int location_for(struct pprof *p, const perch__module *m, uint64_t addr, uint64_t *id)
{
    uint32_t mod = m ? (uint32_t)(m - p->c->ents.modules) + 1 : 0, idx, unused;
    bool is_new;
    int err = perch__loctab_get(&p->locs, &p->c->budget, mod, addr, &idx, &is_new);
    if (!err && is_new)
        err = function_for(p, m, addr, &p->locs.locs[idx].extra);
    if (!err && is_new && m)
        err = mapping_for(p, m, &unused);
    *id = (uint64_t)idx + 1;
    return err;
}

/* The location id of a stack frame at addr of a row of process pk, through the cache. */
static int stack_location(struct pprof *p, uint64_t pk, uint64_t addr, uint64_t *id)
{
    uint64_t key = addr - p->kernel_lo <= p->kernel_span ? 0 : pk;
    struct loc_slot *slot = &p->lc[perch__hash64(addr ^ perch__hash64(key)) & (LOC_CACHE - 1)];
    const perch__module *m;
    int err;
    if (slot->id && slot->addr == addr && slot->pk == key) {
        *id = slot->id;
        return 0;
    }
    m = perch__resolve_cached(&p->rc, &p->c->ents, pk, addr);
    err = location_for(p, m, addr, id);
    if (!err)
        *slot = (struct loc_slot){key, addr, (uint32_t)*id};
    return err;
}

static void flush_top(struct pprof *p, bool force)
{
    if (!p->top.error && p->top.len && (force || p->top.len > (1u << 16))) {
        perch__writer_put(p->w, p->top.data, p->top.len);
        p->top.len = 0;
    }
}

/* Adds a Label {key, str | num} to p->sub. */
static int label(struct pprof *p, const char *key, const char *s, int64_t num)
{
    uint32_t k, v = 0;
    int err = str(p, key, &k);
    if (!err && s)
        err = str(p, s, &v);
    if (err)
        return err;
    p->sub2.len = 0;
    perch__pb_int(&p->sub2, 1, k);
    perch__pb_int(&p->sub2, 2, v);
    if (!s)
        perch__pb_int(&p->sub2, 3, num);
    perch__pb_bytes(&p->sub, 3, p->sub2.data, p->sub2.len);
    return p->sub2.error;
}

/* Every sample is labelled with its pid and tid, as strings: pprof drops a numeric label
 * whose value is 0 (profile/encode.go keeps num only when num or num_unit is set), and the
 * idle thread is pid 0, tid 0. "?" when unknown. */
static int sample_labels(struct pprof *p, const perch__agg_row *r)
{
    const perch__entities *e = &p->c->ents;
    const perch__thread *t = p->thread;
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    const char *proc = t ? perch__thread_process_name(e, t) : "";
    char pidtxt[16] = "?", tidtxt[16] = "?", name[200];
    int err;
    if (pid != UINT32_MAX)
        snprintf(pidtxt, sizeof pidtxt, "%" PRIu32, pid);
    if (t)
        snprintf(tidtxt, sizeof tidtxt, "%" PRIu32, t->tid);
    perch__thread_short_name(e, t, t ? t->tid : UINT32_MAX, name, sizeof name);
    err = label(p, "thread", name, 0);
    if (!err)
        err = label(p, "tid", tidtxt, 0);
    if (!err)
        err = label(p, "pid", pidtxt, 0);
    if (!err && (*proc || (t && t->tid == 0)))
        err = label(p, "process", *proc ? proc : "Idle", 0);
    if (!err && r->kind == PERCH_SAMPLE_PMC)
        err = label(p, "pmc_source", NULL, r->profile_source);
    return err;
}

/* The labels of a row into p->sub: the same for every row of a group (the thread's, and
 * the PMC source), so encoded once, at the group's first row, when its strings are interned
 * in the order they always were. */
static int labels_of(struct pprof *p, const perch__agg_row *r)
{
    size_t at = p->sub.len;
    int err;
    if (p->labels_ok) {
        perch__pb_raw(&p->sub, p->labels.data, p->labels.len);
        return 0;
    }
    err = sample_labels(p, r);
    p->labels.len = 0;
    if (!err && !p->sub.error)
        perch__pb_raw(&p->labels, p->sub.data + at, p->sub.len - at);
    p->labels_ok = !err && !p->sub.error && !p->labels.error;
    return err;
}

/* The row's values: timer [n, n x interval, 0], PMC [0, 0, n]. PERCH_ELIMIT (values
 * untouched) when one does not fit in profile.proto's int64: a count, or counts summed to
 * more than 2^63 ns of CPU (a capture of absurd counts). */
static int sample_values(const struct pprof *p, const perch__agg_row *r, uint64_t values[3])
{
    uint64_t ns;
    if (r->count > INT64_MAX)
        return PERCH_ELIMIT;
    if (r->kind == PERCH_SAMPLE_PMC) {
        values[2] = r->count;
        return 0;
    }
    if (__builtin_mul_overflow(r->count, perch__interval_ns(&p->c->opt), &ns) || ns > INT64_MAX)
        return PERCH_ELIMIT;
    values[0] = r->count;
    values[1] = ns;
    return 0;
}

static int write_sample(struct pprof *p, const perch__agg_row *r)
{
    uint32_t count;
    const uint64_t *frames = perch__agg_frames(&p->c->stacks, r, &count);
    uint64_t values[3] = {0, 0, 0}, pk = p->pk;
    int err = sample_values(p, r, values);
    if (err)
        return err;
    if (count > MAX_FRAMES)
        count = MAX_FRAMES;
    for (uint32_t i = 0; i < count && !err; i++) {
        if (r->stack_id == 0) { /* the sample's own ip: its module may come from the sample */
            const perch__module *m =
                perch__row_frame_module(&p->rc, &p->c->ents, r, pk, frames[i], true);
            err = location_for(p, m, frames[i], &p->ids[i]);
        } else {
            err = stack_location(p, pk, frames[i], &p->ids[i]);
        }
    }
    p->sub.len = 0;
    perch__pb_packed(&p->sub, 1, p->ids, count); /* leaf first, as pprof expects */
    perch__pb_packed(&p->sub, 2, values, 3);
    if (!err)
        err = labels_of(p, r);
    perch__pb_bytes(&p->top, PROFILE_SAMPLE, p->sub.data, p->sub.len);
    flush_top(p, false);
    return err ? err : p->sub.error;
}

static int write_group(void *ctx, const perch__group *g)
{
    struct pprof *p = ctx;
    int err = 0;
    p->labels_ok = false;
    p->thread = g->thread; /* the thread of every row's key, so perch__row_process's too */
    p->pk = g->thread ? g->thread->process_key : 0;
    for (size_t i = 0; i < g->row_count && !err; i++)
        err = write_sample(ctx, &g->rows[i]);
    return err;
}

static void value_type(struct pprof *p, uint32_t field, uint32_t type, uint32_t unit)
{
    p->sub.len = 0;
    perch__pb_int(&p->sub, 1, type);
    perch__pb_int(&p->sub, 2, unit);
    perch__pb_bytes(&p->top, field, p->sub.data, p->sub.len);
}

/* Sample types and period; *cpu receives the string index of "cpu". */
static int write_header(struct pprof *p, uint32_t *cpu)
{
    uint32_t s[7];
    static const char *const names[7] = {"",    "samples", "count", "cpu", "nanoseconds",
                                         "pmc", "events"};
    for (int i = 0; i < 7; i++) {
        int err = str(p, names[i], &s[i]);
        if (err)
            return err;
    }
    value_type(p, PROFILE_SAMPLE_TYPE, s[1], s[2]);
    value_type(p, PROFILE_SAMPLE_TYPE, s[3], s[4]);
    value_type(p, PROFILE_SAMPLE_TYPE, s[5], s[6]);
    value_type(p, PROFILE_PERIOD_TYPE, s[3], s[4]);
    perch__pb_int(&p->top, PROFILE_PERIOD, (int64_t)perch__interval_ns(&p->c->opt));
    *cpu = s[3];
    return 0;
}

static void write_mappings(struct pprof *p)
{
    const perch__entities *e = &p->c->ents;
    for (size_t i = 0; i < p->mapping_count; i++) {
        const perch__module *m = &e->modules[p->mapping_modules[i]];
        uint32_t file = 0;
        if (str(p, perch__str(&e->strings, m->path), &file))
            p->top.error = PERCH_ENOMEM;
        p->sub.len = 0;
        perch__pb_uint(&p->sub, 1, i + 1);
        perch__pb_uint(&p->sub, 2, m->base);
        perch__pb_uint(&p->sub, 3, m->base + m->size);
        perch__pb_int(&p->sub, 5, file);
        perch__pb_uint(&p->sub, 7, 1); /* has_functions: names are final, do not symbolize */
        perch__pb_bytes(&p->top, PROFILE_MAPPING, p->sub.data, p->sub.len);
        flush_top(p, false);
    }
}

static void write_locations(struct pprof *p)
{
    for (size_t i = 0; i < p->locs.count; i++) {
        const perch__loc *l = &p->locs.locs[i];
        p->sub2.len = 0;
        perch__pb_uint(&p->sub2, 1, l->extra);
        p->sub.len = 0;
        perch__pb_uint(&p->sub, 1, i + 1);
        if (l->owner)
            perch__pb_uint(&p->sub, 2, p->mapping_of[l->owner - 1]);
        perch__pb_uint(&p->sub, 3, l->addr);
        perch__pb_bytes(&p->sub, 4, p->sub2.data, p->sub2.len);
        perch__pb_bytes(&p->top, PROFILE_LOCATION, p->sub.data, p->sub.len);
        flush_top(p, false);
    }
    for (size_t i = 0; i < p->func_count; i++) {
        p->sub.len = 0;
        perch__pb_uint(&p->sub, 1, i + 1);
        perch__pb_int(&p->sub, 2, p->func_names[i]);
        perch__pb_int(&p->sub, 3, p->func_names[i]);
        perch__pb_bytes(&p->top, PROFILE_FUNCTION, p->sub.data, p->sub.len);
        flush_top(p, false);
    }
}

static void write_trailer(struct pprof *p, uint32_t cpu)
{
    const perch_trace_info *info = &p->c->ents.info;
    uint64_t last_ts = p->c->samples.last_ts;
    uint64_t last = last_ts > info->start_raw ? last_ts : info->start_raw;
    for (size_t i = 0; i < p->strings.count; i++) {
        perch__pb_bytes(&p->top, PROFILE_STRING_TABLE, perch__interned(&p->strings, (uint32_t)i),
                        p->strings.len[i]);
        flush_top(p, false);
    }
    double duration = perch__ts_ns(info, last);
    if (info->start_filetime > FILETIME_UNIX_EPOCH &&
        info->start_filetime - FILETIME_UNIX_EPOCH < (uint64_t)INT64_MAX / 100)
        perch__pb_int(&p->top, PROFILE_TIME_NANOS,
                      (int64_t)(info->start_filetime - FILETIME_UNIX_EPOCH) * 100);
    if (duration > 0 && duration < 9e18)
        perch__pb_int(&p->top, PROFILE_DURATION_NANOS, (int64_t)duration);
    perch__pb_int(&p->top, PROFILE_DEFAULT_SAMPLE_TYPE, cpu);
    flush_top(p, true);
}

static void pprof_free(struct pprof *p)
{
    perch__budget *b = &p->c->budget;
    perch__interner_free(&p->strings, b);
    perch__loctab_free(&p->locs, b);
    perch__map_free(&p->func_map, b);
    perch__release(b, (void **)&p->func_names, &p->func_cap, sizeof *p->func_names);
    perch__release(b, (void **)&p->mapping_of, &p->mapping_of_cap, sizeof *p->mapping_of);
    perch__release(b, (void **)&p->mapping_modules, &p->mapping_cap, sizeof *p->mapping_modules);
    perch__pb_free(&p->top);
    perch__pb_free(&p->sub);
    perch__pb_free(&p->sub2);
    perch__pb_free(&p->labels);
    perch__interner_free(&p->mod_names, b);
    perch__release(b, (void **)&p->name_class, &p->name_class_cap, sizeof *p->name_class);
    perch__loctab_free(&p->funcs, b);
    perch__free(p->w);
    perch__free(p);
}

/* The process key with the most timer samples (summed over the sample log's groups), not
 * counting Idle (pid 0) and threads of unknown processes; 0 when none. Ties go to the smaller
 * key. */
static int busiest_process(struct pprof *p, uint64_t *best)
{
    const perch__entities *e = &p->c->ents;
    perch__budget *b = &p->c->budget;
    perch__map index = {0};
    uint64_t *counts = NULL, best_count = 0;
    size_t cap = 0, n = 0;
    int err = 0;
    *best = 0;
    for (size_t i = 0; i < p->c->samples.log.count && !err; i++) {
        const perch__vlog *g = &p->c->samples.log.v[i]; /* a group: tag = kind << 16 | source */
        const perch__thread *t = perch__group_thread(p->c, g);
        uint32_t k;
        if (!t || t->tid == 0 || t->process_key == 0 || perch__thread_pid(e, t) == 0 ||
            g->tag >> 16 != PERCH_SAMPLE_TIMER)
            continue;
        if (!perch__map_get(&index, t->process_key, &k)) {
            err = perch__grow(b, (void **)&counts, &cap, n + 1, sizeof *counts);
            if (!err)
                err = perch__map_put(&index, b, t->process_key, (uint32_t)n);
            k = (uint32_t)n;
            if (!err)
                counts[n++] = 0;
        }
        if (err)
            break;
        counts[k] += g->sum;
        if (counts[k] > best_count || (counts[k] == best_count && t->process_key < *best)) {
            best_count = counts[k];
            *best = t->process_key;
        }
    }
    perch__release(b, (void **)&counts, &cap, sizeof *counts);
    perch__map_free(&index, b);
    return err;
}

/* pprof names the first mapping in its header ("File:"): make it the main image of the
 * busiest process (the module of that process named like its image), not a kernel module. */
static int main_image_first(struct pprof *p)
{
    const perch__entities *e = &p->c->ents;
    const perch__process *proc;
    uint64_t pk;
    uint32_t unused;
    int err = busiest_process(p, &pk);
    if (err || !(proc = perch__entities_process_at(e, pk)))
        return err;
    for (size_t i = 0; i < e->module_count; i++) {
        const perch__module *m = &e->modules[i];
        if (m->process_key == pk &&
            same_name_ci(perch__str(&e->strings, m->name), perch__str(&e->strings, proc->image)))
            return mapping_for(p, m, &unused);
    }
    return 0;
}

static int pprof_write(perch__collect *c)
{
    struct pprof *p = perch__calloc(1, sizeof *p);
    uint32_t cpu = 0;
    int err;
    if (!p || !(p->w = perch__alloc(sizeof *p->w))) {
        perch__free(p);
        return PERCH_ENOMEM;
    }
    p->c = c;
    perch_symnames_stats sym = {0, 0, 0};
    if (c->ents.names)
        perch_symnames_get_stats(c->ents.names, &sym);
    p->plain_names = sym.names == 0; /* no symbol records: names are module + offset */
    p->kernel_lo = c->ents.info.pointer_size == 4 ? 0x80000000u : 0xFFFF800000000000ull;
    p->kernel_span = (c->ents.info.pointer_size == 4 ? 0xffffffffu : UINT64_MAX) - p->kernel_lo;
    p->top.budget = p->sub.budget = p->sub2.budget = p->labels.budget = &c->budget;
    perch__writer_init(p->w, c->out);
    err = write_header(p, &cpu);
    if (!err)
        err = main_image_first(p);
    if (!err)
        err = perch__samplelog_each(c, write_group, p);
    if (!err) {
        write_mappings(p);
        write_locations(p);
        write_trailer(p, cpu);
        err = p->top.error ? p->top.error : p->sub.error ? p->sub.error : p->sub2.error;
    }
    if (!err)
        err = perch__writer_flush(p->w);
    pprof_free(p);
    return err;
}

static int pprof_create(const perch_export_options *opt, perch_output *out, void **state)
{
    return perch__collect_create(opt, out, state, pprof_write);
}

const perch__format perch__format_pprof = {
    "pprof",
    "go tool pprof (-top, -http=:8080, ...)",
    1,
    pprof_create,
    perch__collect_bind_pass,
    perch__collect_destroy,
};
