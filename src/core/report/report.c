/*
 * The report sink: aggregates the model's records (see include/perch/report.h). Samples count
 * per thread key, module key and stack id; names are joined at output time. Entity records
 * are upserts (records.h): a later record of a key replaces the earlier one.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "report/report_html.h"
#include "report/report_internal.h"

#define DEFAULT_MEMORY ((uint64_t)16 << 20)

static char *dup_str(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    char *p = perch__alloc(n + 1);
    if (p != NULL) {
        if (n)
            memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *perch__report_lower_base(const char *path)
{
    const char *b = path ? path : "";
    for (const char *p = b; *p; p++)
        if (*p == '\\' || *p == '/')
            b = p + 1;
    char *out = dup_str(b);
    for (char *p = out; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return out;
}

void *perch__rtable_get(rtable *t, uint64_t key, size_t row_size)
{
    uint32_t i;
    if (perch__hmap_get(&t->index, key, &i))
        return (char *)t->rows + (size_t)i * row_size;
    return NULL;
}

int perch__rtable_add(rtable *t, uint64_t key, size_t row_size, void **row, bool *is_new)
{
    void *p = perch__rtable_get(t, key, row_size);
    bool add = p == NULL;
    if (add) {
        /* PERCH_ELIMIT at RPT_MAX_ROWS, PERCH_ENOMEM for a failed allocation */
        int err = perch__grow_array(&t->rows, row_size, &t->cap, t->count + 1, RPT_MAX_ROWS);
        err = err ? err : perch__hmap_put(&t->index, key, t->count);
        if (err)
            return err;
        p = (char *)t->rows + (size_t)t->count++ * row_size;
        memset(p, 0, row_size);
    }
    *row = p;
    if (is_new != NULL)
        *is_new = add;
    return 0;
}

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_report *r = ctx;
    r->info = *info;
    perch__free(r->source);
    r->source = dup_str(info->source);
    r->info.source = r->source;
    r->info.session_config = NULL;
    return r->source ? 0 : PERCH_ENOMEM;
}

static int on_process(void *ctx, const perch_process_rec *rec)
{
    perch_report *r = ctx;
    rproc *p;
    int err = perch__rtable_add(&r->procs, rec->key, sizeof *p, (void **)&p, NULL);
    if (err)
        return err;
    p->key = rec->key;
    p->pid = rec->pid;
    perch__free(p->name);
    p->name = dup_str(rec->image_name);
    return p->name ? 0 : PERCH_ENOMEM;
}

static int on_thread(void *ctx, const perch_thread_rec *rec)
{
    perch_report *r = ctx;
    rthread *t;
    bool is_new;
    int err = perch__rtable_add(&r->threads, rec->key, sizeof *t, (void **)&t, &is_new);
    if (err)
        return err;
    if (is_new)
        t->cpu = -1;
    t->key = rec->key;
    t->process_key = rec->process_key;
    t->tid = rec->tid;
    t->pid = rec->pid;
    t->known = true;
    perch__free(t->name);
    t->name = dup_str(rec->name);
    return t->name ? 0 : PERCH_ENOMEM;
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    perch_report *r = ctx;
    rmod *md;
    int err = perch__rtable_add(&r->mods, rec->key, sizeof *md, (void **)&md, NULL);
    if (err)
        return err;
    md->key = rec->key;
    md->base = rec->base;
    md->size = rec->size;
    md->pid = rec->pid;
    md->process_key = rec->process_key;
    md->known = true;
    r->modmap.built = false; /* the index no longer holds every module */
    perch__free(md->name);
    perch__free(md->pdb);
    md->name = perch__report_lower_base(rec->path);
    md->has_pdb = rec->has_pdb;
    md->guid = rec->pdb_guid;
    md->age = rec->pdb_age;
    md->pdb = rec->has_pdb ? perch__report_lower_base(rec->pdb_name) : NULL;
    if (!md->name || (rec->has_pdb && !md->pdb))
        return PERCH_ENOMEM;
    err = r->names ? 0 : perch_symnames_create(&r->names);
    return err ? err : perch_symnames_module(r->names, rec);
}

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    perch_report *r = ctx;
    r->named = r->named || r->names != NULL;
    return r->names ? perch_symnames_symbol(r->names, rec) : 0;
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    return perch__rstacks_add(&((perch_report *)ctx)->stacks, rec);
}

/* The thread row of a sample or slice into *out (a placeholder until its record comes, with
 * the tid the first sample or slice gives, as the exports show it); the first CPU an idle
 * thread is seen on names it. 0, PERCH_ELIMIT or PERCH_ENOMEM. */
static int thread_row(perch_report *r, uint64_t key, uint32_t tid, uint16_t cpu, rthread **out)
{
    rthread *t;
    bool is_new;
    int err = perch__rtable_add(&r->threads, key, sizeof *t, (void **)&t, &is_new);
    if (err)
        return err;
    t->key = key;
    if (is_new) {
        t->tid = tid;
        t->cpu = -1;
    }
    if (tid == 0 && t->cpu < 0)
        t->cpu = cpu;
    *out = t;
    return 0;
}

static int on_sample(void *ctx, const perch_sample_rec *rec)
{
    perch_report *r = ctx;
    if (rec->kind != PERCH_SAMPLE_TIMER) {
        r->samples_pmc++;
        return 0;
    }
    rthread *t;
    rmod *md;
    int err = thread_row(r, rec->thread_key, rec->tid, rec->cpu, &t);
    err = err ? err : perch__rtable_add(&r->mods, rec->module_key, sizeof *md, (void **)&md, NULL);
    if (err)
        return err;
    t->samples++;
    md->key = rec->module_key;
    md->samples++;
    r->samples++;
    if (rec->module_key) {
        err = perch__report_count_ip(r, rec->module_key, rec->ip, 1);
        if (err)
            return err;
    }
    if (rec->stack_id == 0)
        return 0;
    rstack *s = perch__rstacks_get(&r->stacks, rec->stack_id);
    if (s == NULL) /* not defined before it: a capture's reader refuses that first */
        return r->stacks.meta.error ? r->stacks.meta.error : PERCH_EFORMAT;
    if (s->samples++ == 0)
        s->thread_key = rec->thread_key;
    r->samples_with_stack++;
    r->frames_total += s->count;
    if (s->kernel > 0 && s->count > s->kernel)
        r->merged++;
    else if (s->kernel > 0)
        r->kernel_only++;
    else
        r->user_only++;
    return 0;
}

/* A slice's run time and ready latency, clamped to 0 when its times are out of order (an end
 * before the start, a ready time after it), as the exports clamp them. */
static uint64_t slice_ticks(const perch_slice_rec *rec, uint64_t *ready)
{
    bool has_ready = (rec->flags & PERCH_SLICE_HAS_READY) && rec->ready_ts <= rec->start_ts;
    *ready = has_ready ? rec->start_ts - rec->ready_ts : 0;
    return rec->end_ts >= rec->start_ts ? rec->end_ts - rec->start_ts : 0;
}

static int on_slice(void *ctx, const perch_slice_rec *rec)
{
    perch_report *r = ctx;
    uint64_t ready, d = slice_ticks(rec, &ready);
    uint64_t *sum = rec->tid == 0 ? &r->idle_ticks : &r->run_ticks;
    /* Sums past 64 bits (2^64 ticks at 10 MHz are 58,000 years) only come from a hostile
     * stream: refuse the slice rather than wrap. */
    if (d > UINT64_MAX - *sum || ready > UINT64_MAX - r->ready_ticks)
        return PERCH_ELIMIT;
    if (rec->tid != 0) {
        rthread *t;
        int err = thread_row(r, rec->thread_key, rec->tid, rec->cpu, &t);
        if (err)
            return err;
        t->cpu_ticks += d; /* a part of run_ticks: it cannot wrap when run_ticks does not */
    }
    *sum += d;
    r->slices++;
    for (unsigned b = 0; b < 4; b++)
        r->slice_flags[b] += (rec->flags >> b) & 1u;
    if (rec->flags & PERCH_SLICE_HAS_READY) {
        r->ready_count++;
        r->ready_ticks += ready;
    }
    int w = rec->wait_reason;
    r->wait_reason[w >= 0 && w < RPT_MAX_WAIT ? w : RPT_MAX_WAIT]++;
    return 0;
}

static int on_lbr(void *ctx, const perch_lbr_rec *rec)
{
    (void)rec;
    ((perch_report *)ctx)->lbr++;
    return 0;
}

static int add_named(rnamed **arr, uint32_t *count, uint32_t *cap, const char *name, uint64_t v)
{
    int err = perch__grow_array((void **)arr, sizeof **arr, cap, *count + 1, 4096);
    if (err < 0)
        return err;
    (*arr)[*count].name = dup_str(name);
    (*arr)[*count].value = v;
    if ((*arr)[*count].name == NULL)
        return PERCH_ENOMEM;
    (*count)++;
    return 0;
}

static int on_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch_report *r = ctx;
    return add_named(&r->ledger, &r->ledger_count, &r->ledger_cap, rec->reason, rec->count);
}

static int on_stat(void *ctx, const perch_stat_rec *rec)
{
    perch_report *r = ctx;
    return add_named(&r->stats, &r->stat_count, &r->stat_cap, rec->name, rec->value);
}

int perch_report_create(const perch_report_options *opts, perch_report **out)
{
    if (out == NULL)
        return PERCH_EINVAL;
    perch_report *r = perch__alloc(sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    memset(r, 0, sizeof *r);
    bool full = opts != NULL && opts->sz >= sizeof *opts;
    r->top = full && opts->top ? opts->top : 10;
    uint64_t memory = full && opts->memory_limit ? opts->memory_limit : DEFAULT_MEMORY;
    perch_scratch_open_fn open =
        full && opts->scratch_open ? opts->scratch_open : perch_scratch_open_temp;
    void *open_ctx = full && opts->scratch_open ? opts->scratch_ctx : NULL;
    perch__rstacks_init(&r->stacks, memory, open, open_ctx);
    perch__rips_init(&r->ips, memory, open, open_ctx);
    *out = r;
    return 0;
}

int perch_report_enable_html(perch_report *r)
{
    if (r == NULL)
        return PERCH_EINVAL;
    return r->html != NULL ? 0 : perch__html_create(&r->html);
}

void perch_report_sink(perch_report *r, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = r;
    sink->trace_info = on_info;
    sink->process = on_process;
    sink->thread = on_thread;
    sink->module = on_module;
    sink->stack = on_stack;
    sink->slice = on_slice;
    sink->sample = on_sample;
    sink->lbr = on_lbr;
    sink->ledger = on_ledger;
    sink->stat = on_stat;
    sink->symbol = on_symbol;
    if (r->html) /* the HTML page's collector sees every record too */
        perch__html_wrap(r->html, sink);
}

static void free_table(rtable *t)
{
    perch__hmap_free(&t->index);
    perch__free(t->rows);
}

void perch_report_destroy(perch_report *r)
{
    if (r == NULL)
        return;
    perch__html_destroy(r->html);
    perch_symnames_destroy(r->names);
    perch__rips_free(&r->ips);
    for (uint32_t i = 0; i < r->threads.count; i++)
        perch__free(((rthread *)r->threads.rows)[i].name);
    for (uint32_t i = 0; i < r->procs.count; i++)
        perch__free(((rproc *)r->procs.rows)[i].name);
    for (uint32_t i = 0; i < r->mods.count; i++) {
        perch__free(((rmod *)r->mods.rows)[i].name);
        perch__free(((rmod *)r->mods.rows)[i].pdb);
    }
    perch__rstacks_free(&r->stacks);
    for (uint32_t i = 0; i < r->ledger_count; i++)
        perch__free(r->ledger[i].name);
    for (uint32_t i = 0; i < r->stat_count; i++)
        perch__free(r->stats[i].name);
    free_table(&r->threads);
    free_table(&r->procs);
    free_table(&r->mods);
    perch__rmodmap_free(&r->modmap);
    perch__free(r->ledger);
    perch__free(r->stats);
    perch__free(r->source);
    perch__free(r);
}
