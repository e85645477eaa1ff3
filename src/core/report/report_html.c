/*
 * perch report --html: one self-contained page (no network, no external script or style).
 * The page is the report's JSON (`perch report --json`, byte for byte, in
 * <script type="application/json" id="perch-report">), what only the page draws (the call
 * tree of the flame graph, CPU over time per process, the top functions) in a second JSON
 * block, and the embedded style and script that render them (src/core/report/html).
 * '<' inside the JSON blocks is written as \u003c, so no name from a trace can end a block.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "report/report_html.h"
#include "report/report_internal.h"
#include "util/mem.h"

#define FLAME_MAX_NODES 400000u
#define TIMELINE_SERIES 12u
#define TOP_FUNCTIONS   50u

/* ---- the flame graph: a tree of (parent, name) nodes with sample counts --------------- */
struct flame {
    perch__budget *b;
    perch__interner names;
    perch__map index; /* (parent << 32 | name) + 1 -> node */
    uint32_t *parent, *name;
    uint64_t *value;
    size_t count, parent_cap, name_cap, value_cap;
    uint64_t dropped; /* samples whose path was cut short at the node cap */
};

static int flame_node(struct flame *f, uint32_t parent, const char *s, size_t n, uint32_t *node)
{
    uint32_t name;
    int err = perch__intern(&f->names, f->b, s, n, &name);
    uint64_t key = ((uint64_t)parent << 32 | name) + 1;
    if (err || perch__map_get(&f->index, key, node))
        return err;
    if (f->count >= FLAME_MAX_NODES)
        return PERCH_ELIMIT;
    err = perch__grow(f->b, (void **)&f->parent, &f->parent_cap, f->count + 1, sizeof *f->parent);
    if (!err)
        err = perch__grow(f->b, (void **)&f->name, &f->name_cap, f->count + 1, sizeof *f->name);
    if (!err)
        err = perch__grow(f->b, (void **)&f->value, &f->value_cap, f->count + 1, sizeof *f->value);
    if (!err && f->count > 0) /* the root is nobody's child: a process named "all" is not it */
        err = perch__map_put(&f->index, f->b, key, (uint32_t)f->count);
    if (err)
        return err;
    f->parent[f->count] = parent;
    f->name[f->count] = name;
    f->value[f->count] = 0;
    *node = (uint32_t)f->count++;
    return 0;
}

/* One step down the tree: the child of *node named s, which gets count samples. */
static int flame_step(struct flame *f, uint32_t *node, const char *s, size_t n, uint64_t count)
{
    int err = flame_node(f, *node, s, n, node);
    if (!err)
        f->value[*node] += count;
    return err;
}

/* Adds one aggregate row: all -> process -> thread -> frames root first. At the node cap the
 * path stops where it is (every node above still counts the samples). */
static int flame_row(struct flame *f, const perch__collect *c, const perch__agg_row *r)
{
    const perch__entities *e = &c->ents;
    const perch__thread *t = perch__entities_thread_at(e, r->thread_key);
    char buf[320];
    uint32_t count, node = 0, tid = t ? t->tid : UINT32_MAX;
    const uint64_t *frames = perch__agg_frames(&c->stacks, r, &count);
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    const char *proc = t ? perch__thread_process_name(e, t) : "";
    int n, err;
    if (tid == 0)
        n = snprintf(buf, sizeof buf, "Idle");
    else if (pid == UINT32_MAX)
        n = snprintf(buf, sizeof buf, "%.200s (?)", *proc ? proc : "?");
    else
        n = snprintf(buf, sizeof buf, "%.200s (%" PRIu32 ")", *proc ? proc : "?", pid);
    f->value[0] += r->count;
    err = flame_step(f, &node, buf, n > 0 ? (size_t)n : 0, r->count);
    if (!err)
        err = flame_step(f, &node, buf, perch__thread_short_name(e, t, tid, buf, sizeof buf),
                         r->count);
    for (uint32_t i = count; !err && i-- > 0;) {
        const perch__module *m = perch__frame_module(e, r, frames[i], r->stack_id == 0);
        err = flame_step(f, &node, buf, perch__frame_name(e, m, frames[i], buf, sizeof buf),
                         r->count);
    }
    if (err == PERCH_ELIMIT && f->count >= FLAME_MAX_NODES) {
        f->dropped += r->count;
        return 0;
    }
    return err;
}

static void flame_free(struct flame *f)
{
    perch__interner_free(&f->names, f->b);
    perch__map_free(&f->index, f->b);
    perch__release(f->b, (void **)&f->parent, &f->parent_cap, sizeof *f->parent);
    perch__release(f->b, (void **)&f->name, &f->name_cap, sizeof *f->name);
    perch__release(f->b, (void **)&f->value, &f->value_cap, sizeof *f->value);
}

static void u32_array(perch_json *w, const char *key, const uint32_t *v, size_t n)
{
    perch_json_key(w, key);
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch_json_uint(w, v[i]);
    perch_json_end_array(w);
}

static void flame_json(const struct flame *f, perch_json *w)
{
    perch_json_key(w, "flame");
    perch_json_begin_object(w);
    perch_json_key(w, "names");
    perch_json_begin_array(w);
    for (size_t i = 0; i < f->names.count; i++)
        perch_json_string_n(w, perch__interned(&f->names, (uint32_t)i), f->names.len[i]);
    perch_json_end_array(w);
    u32_array(w, "parent", f->parent, f->count);
    u32_array(w, "name", f->name, f->count);
    perch_json_key(w, "value");
    perch_json_begin_array(w);
    for (size_t i = 0; i < f->count; i++)
        perch_json_uint(w, f->value[i]);
    perch_json_end_array(w);
    perch_json_key(w, "cut_samples");
    perch_json_uint(w, f->dropped);
    perch_json_end_object(w);
}

/* ---- top functions: self (leaf) and total (once per row) samples by frame name -------- */
struct fstat {
    uint64_t self, total;
    uint32_t last_row; /* row + 1 that last added to total: recursion counts once */
    uint32_t name;
};

static int cmp_fstat(const void *x, const void *y)
{
    const struct fstat *a = x, *b = y;
    if (a->self != b->self)
        return a->self > b->self ? -1 : 1;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

/* Adds row r's frames to the function table st (indexed by name in f->names). */
static int function_row(struct flame *f, const perch__collect *c, size_t r, struct fstat **st,
                        size_t *cap)
{
    char buf[PERCH_FRAME_NAME_MAX];
    const perch__agg_row *row = &c->agg.rows[r];
    uint32_t count, name;
    const uint64_t *frames = perch__agg_frames(&c->stacks, row, &count);
    int err = 0;
    for (uint32_t i = 0; i < count && !err; i++) {
        const perch__module *m = perch__frame_module(&c->ents, row, frames[i], row->stack_id == 0);
        size_t old = *cap;
        err = perch__intern(&f->names, f->b, buf,
                            perch__frame_name(&c->ents, m, frames[i], buf, sizeof buf), &name);
        if (!err)
            err = perch__grow(f->b, (void **)st, cap, (size_t)name + 1, sizeof **st);
        if (err)
            break;
        if (*cap > old)
            memset(*st + old, 0, (*cap - old) * sizeof **st);
        (*st)[name].name = name;
        if (i == 0)
            (*st)[name].self += row->count;
        if ((*st)[name].last_row != r + 1) {
            (*st)[name].total += row->count;
            (*st)[name].last_row = (uint32_t)r + 1;
        }
    }
    return err;
}

static int functions_json(struct flame *f, const perch__collect *c, perch_json *w)
{
    struct fstat *st = NULL;
    size_t cap = 0, n;
    int err = 0;
    for (size_t r = 0; r < c->agg.count && !err; r++)
        err = function_row(f, c, r, &st, &cap);
    n = f->names.count < cap ? f->names.count : cap;
    if (!err && st)
        qsort(st, n, sizeof *st, cmp_fstat);
    perch_json_key(w, "functions");
    perch_json_begin_array(w);
    for (size_t i = 0; !err && i < n && i < TOP_FUNCTIONS && st[i].total; i++) {
        perch_json_begin_object(w);
        perch_json_key(w, "name");
        perch_json_string_n(w, perch__interned(&f->names, st[i].name), f->names.len[st[i].name]);
        perch_json_key(w, "self");
        perch_json_uint(w, st[i].self);
        perch_json_key(w, "total");
        perch_json_uint(w, st[i].total);
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
    perch__release(f->b, (void **)&st, &cap, sizeof *st);
    return err;
}

/* ---- CPU over time: the busiest processes' bucket counts, the rest as one row ---------- */
struct group {
    uint64_t total;
    int64_t pid; /* -1 unknown */
    const char *name;
    uint32_t rank; /* row after sorting; TIMELINE_SERIES - 1 and above: "other" */
};

/* The group key of thread series s (map keys are nonzero): its process, all idle threads
 * together, or the unknown process. */
static uint64_t series_group(const perch__html *h, size_t s, int64_t *pid, const char **name)
{
    const perch__thread *t = perch__entities_thread_at(&h->c.ents, h->series_key[s]);
    uint32_t p = t ? perch__thread_pid(&h->c.ents, t) : UINT32_MAX;
    *pid = p == UINT32_MAX ? -1 : (int64_t)p;
    *name = t ? perch__thread_process_name(&h->c.ents, t) : "";
    if (t && t->tid == 0) {
        *name = "Idle";
        return 1;
    }
    return t && t->process_key ? t->process_key + 2 : 2;
}

static int cmp_group(const void *x, const void *y)
{
    const struct group *a = *(const struct group *const *)x, *b = *(const struct group *const *)y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

static void series_json(const perch__html *h, perch_json *w, const uint32_t *group_of,
                        const struct group *g, size_t ng, uint32_t rank, const char *label)
{
    perch_json_begin_object(w);
    perch_json_key(w, "name");
    perch_json_string(w, label);
    perch_json_key(w, "counts");
    perch_json_begin_array(w);
    for (uint32_t b = 0; b < h->used; b++) {
        uint64_t sum = 0;
        for (size_t s = 0; s < h->series; s++) {
            uint32_t r = g[group_of[s]].rank;
            if (r == rank || (rank == TIMELINE_SERIES - 1 && r > rank && ng))
                sum += h->counts[s * HTML_BUCKETS + b];
        }
        perch_json_uint(w, sum);
    }
    perch_json_end_array(w);
    perch_json_end_object(w);
}

static int timeline_json(const perch__html *h, perch_json *w)
{
    perch__budget *b = (perch__budget *)&h->c.budget;
    perch__map index = {0};
    struct group *g = NULL, **order = NULL;
    uint32_t *group_of = NULL;
    size_t gcap = 0, ocap = 0, sgcap = 0, ng = 0;
    char label[256];
    int err = perch__grow(b, (void **)&group_of, &sgcap, h->series + 1, sizeof *group_of);
    for (size_t s = 0; s < h->series && !err; s++) {
        int64_t pid;
        const char *name;
        uint64_t key = series_group(h, s, &pid, &name), total = 0;
        uint32_t k;
        if (!perch__map_get(&index, key, &k)) {
            err = perch__grow(b, (void **)&g, &gcap, ng + 1, sizeof *g);
            if (!err)
                err = perch__map_put(&index, b, key, (uint32_t)ng);
            if (err)
                break;
            k = (uint32_t)ng++;
            g[k] = (struct group){0, key == 1 ? 0 : pid, name, 0};
        }
        for (uint32_t i = 0; i < h->used; i++)
            total += h->counts[s * HTML_BUCKETS + i];
        g[k].total += total;
        group_of[s] = k;
    }
    if (!err)
        err = perch__grow(b, (void **)&order, &ocap, ng + 1, sizeof *order);
    if (!err) {
        for (size_t i = 0; i < ng; i++)
            order[i] = &g[i];
        qsort(order, ng, sizeof *order, cmp_group);
        for (size_t i = 0; i < ng; i++)
            order[i]->rank = (uint32_t)i;
        perch_json_key(w, "timeline");
        perch_json_begin_object(w);
        perch_json_key(w, "bucket_ns");
        perch_json_uint(w, perch__ticks_to_ns(h->bucket_ticks, h->c.ents.info.perf_freq));
        perch_json_key(w, "buckets");
        perch_json_uint(w, h->used);
        perch_json_key(w, "series");
        perch_json_begin_array(w);
        for (size_t i = 0; i < ng && i < TIMELINE_SERIES; i++) {
            const struct group *x = order[i];
            if (i == TIMELINE_SERIES - 1 && ng > TIMELINE_SERIES)
                snprintf(label, sizeof label, "%zu other processes", ng - i);
            else if (x->pid < 0 || !*x->name)
                snprintf(label, sizeof label, "%.200s", *x->name ? x->name : "? (unknown process)");
            else
                snprintf(label, sizeof label, "%.200s (%" PRId64 ")", x->name, x->pid);
            series_json(h, w, group_of, g, ng > TIMELINE_SERIES, (uint32_t)i, label);
        }
        perch_json_end_array(w);
        perch_json_end_object(w);
    }
    perch__map_free(&index, b);
    perch__release(b, (void **)&g, &gcap, sizeof *g);
    perch__release(b, (void **)&order, &ocap, sizeof *order);
    perch__release(b, (void **)&group_of, &sgcap, sizeof *group_of);
    return err;
}

/* ---- the page --------------------------------------------------------------------------- */

int perch__html_data_json(perch__html *h, perch_json *w, uint32_t top, uint64_t interval_ns)
{
    struct flame f;
    int err = perch__entities_seal(&h->c.ents);
    memset(&f, 0, sizeof f);
    f.b = &h->c.budget;
    perch__agg_sort(&h->c.agg);
    if (!err)
        err = flame_node(&f, 0, "all", 3, &(uint32_t){0});
    for (size_t i = 0; i < h->c.agg.count && !err; i++)
        err = flame_row(&f, &h->c, &h->c.agg.rows[i]);
    if (!err) {
        perch_json_begin_object(w);
        perch_json_key(w, "interval_ns");
        perch_json_uint(w, interval_ns);
        perch_json_key(w, "top");
        perch_json_uint(w, top);
        flame_json(&f, w);
        err = functions_json(&f, &h->c, w);
    }
    if (!err)
        err = timeline_json(h, w);
    perch_json_end_object(w);
    flame_free(&f);
    return err ? err : w->error;
}

/* A perch_json sink to the FILE * ctx that writes '<' as \u003c: inside a JSON string it is
 * the same text, and no name from a trace can close the <script> block around the JSON. */
static int script_safe_sink(void *ctx, const char *data, size_t n)
{
    FILE *f = ctx;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '<')
            continue;
        if ((i > start && fwrite(data + start, 1, i - start, f) != i - start) ||
            fputs("\\u003c", f) < 0)
            return PERCH_EIO;
        start = i + 1;
    }
    return n > start && fwrite(data + start, 1, n - start, f) != n - start ? PERCH_EIO : 0;
}

/* Writes what goes at marker `name` of the skeleton. */
static int write_part(perch_report *r, FILE *f, const char *name, size_t len)
{
    perch_json w;
    int err = 0;
    perch_json_init(&w, script_safe_sink, f);
    if (len == 3 && memcmp(name, "CSS", 3) == 0)
        fputs(perch__report_css, f);
    else if (len == 2 && memcmp(name, "JS", 2) == 0)
        fputs(perch__report_js, f);
    else if (len == 6 && memcmp(name, "REPORT", 6) == 0)
        err = perch_report_write_json(r, &w);
    else if (len == 4 && memcmp(name, "HTML", 4) == 0) {
        err = perch__html_data_json(r->html, &w, r->top, perch__report_interval_ns(r));
        if (!err)
            err = perch_json_flush(&w);
    } else
        err = PERCH_EINVAL; /* a marker the writer does not know: the skeleton is wrong */
    return err;
}

int perch_report_write_html(perch_report *r, FILE *f)
{
    const char *p = perch__report_page;
    int err = r && r->html ? 0 : PERCH_EINVAL;
    while (!err && *p) {
        const char *m = strstr(p, "@@"), *end = m ? strstr(m + 2, "@@") : NULL;
        if (!m || !end) {
            fputs(p, f);
            break;
        }
        fwrite(p, 1, (size_t)(m - p), f);
        err = write_part(r, f, m + 2, (size_t)(end - m - 2));
        p = end + 2;
    }
    if (!err && ferror(f))
        err = PERCH_EIO;
    return err;
}
