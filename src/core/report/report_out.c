/*
 * Writing the report: the JSON object of docs/report.md and the text summary. Top lists sort
 * by samples descending, then pid, then name (M3, M5); the stack hash follows S7.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/kind.h"
#include "report/report_internal.h"

typedef struct row {
    int64_t pid;
    const char *name;
    uint64_t samples, ticks;
} row;

const char *perch__report_thread_process(perch_report *r, const rthread *t, int64_t *pid)
{
    *pid = t->known && t->pid != UINT32_MAX ? (int64_t)t->pid : -1;
    rproc *p = t->known ? perch__rtable_get(&r->procs, t->process_key, sizeof *p) : NULL;
    return p != NULL && p->name != NULL && p->name[0] != '\0' && *pid >= 0 ? p->name : "?";
}

static int cmp_group(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_top(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return cmp_group(a, b);
}

/* Merges rows with equal (pid, name) and sorts them for a top list; returns the new count. */
static uint32_t merge_rows(row *rows, uint32_t n)
{
    uint32_t out = 0;
    qsort(rows, n, sizeof *rows, cmp_group);
    for (uint32_t i = 0; i < n; i++) {
        if (out > 0 && cmp_group(&rows[out - 1], &rows[i]) == 0) {
            rows[out - 1].samples += rows[i].samples;
            rows[out - 1].ticks += rows[i].ticks;
        } else {
            rows[out++] = rows[i];
        }
    }
    qsort(rows, out, sizeof *rows, cmp_top);
    return out;
}

static row *process_rows(perch_report *r, uint32_t *n)
{
    row *rows = perch__alloc(sizeof *rows * (r->threads.count + 1));
    if (rows == NULL)
        return NULL;
    *n = 0;
    for (uint32_t i = 0; i < r->threads.count; i++) {
        const rthread *t = (const rthread *)r->threads.rows + i;
        if (t->samples == 0 && t->cpu_ticks == 0)
            continue;
        row *w = &rows[(*n)++];
        w->name = perch__report_thread_process(r, t, &w->pid);
        w->samples = t->samples;
        w->ticks = t->cpu_ticks;
    }
    *n = merge_rows(rows, *n);
    return rows;
}

static row *module_rows(perch_report *r, uint32_t *n)
{
    row *rows = perch__alloc(sizeof *rows * (r->mods.count + 1));
    if (rows == NULL)
        return NULL;
    *n = 0;
    for (uint32_t i = 0; i < r->mods.count; i++) {
        const rmod *md = (const rmod *)r->mods.rows + i;
        if (md->samples == 0)
            continue;
        row *w = &rows[(*n)++];
        w->pid = 0;
        w->name = md->key != 0 && md->name != NULL ? md->name : "?";
        w->samples = md->samples;
        w->ticks = 0;
    }
    *n = merge_rows(rows, *n);
    return rows;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct PDB ids into *out: 0 or PERCH_ENOMEM (never a smaller count). */
static int pdb_count(perch_report *r, uint64_t *out)
{
    char **keys = perch__alloc(sizeof *keys * (r->mods.count + 1));
    uint32_t n = 0;
    uint64_t distinct = 0;
    int err = keys == NULL ? PERCH_ENOMEM : 0;
    for (uint32_t i = 0; i < r->mods.count && err == 0; i++) {
        const rmod *md = (const rmod *)r->mods.rows + i;
        char g[37];
        if (!md->has_pdb)
            continue;
        if ((keys[n] = perch__alloc(strlen(md->pdb) + 64)) == NULL) {
            err = PERCH_ENOMEM;
            break;
        }
        perch_guid_format(&md->guid, g);
        sprintf(keys[n++], "%s|%s|%" PRIu32, md->pdb, g, md->age);
    }
    if (err == 0) {
        qsort(keys, n, sizeof *keys, cmp_str);
        for (uint32_t i = 0; i < n; i++)
            distinct += i == 0 || strcmp(keys[i], keys[i - 1]) != 0;
    }
    for (uint32_t i = 0; i < n; i++)
        perch__free(keys[i]);
    perch__free(keys);
    *out = distinct;
    return err;
}

static void write_rows(perch_json *w, const char *key, const row *rows, uint32_t n, uint32_t top,
                       bool with_pid)
{
    perch_json_key(w, key);
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < n && i < top; i++) {
        perch_json_begin_object(w);
        perch_json_key(w, "name");
        perch_json_string(w, rows[i].name);
        if (with_pid) {
            perch_json_key(w, "pid");
            perch_json_int(w, rows[i].pid);
        }
        perch_json_key(w, "samples");
        perch_json_uint(w, rows[i].samples);
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
}

static int cmp_threads(const void *a, const void *b)
{
    const rthread *x = *(const rthread *const *)a, *y = *(const rthread *const *)b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    if (x->cpu_ticks != y->cpu_ticks)
        return x->cpu_ticks > y->cpu_ticks ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

rthread **perch__report_sorted_threads(perch_report *r, uint32_t *n)
{
    rthread **v = perch__alloc(sizeof *v * (r->threads.count + 1));
    *n = 0;
    if (v == NULL)
        return NULL;
    for (uint32_t i = 0; i < r->threads.count; i++) {
        rthread *t = (rthread *)r->threads.rows + i;
        if (t->samples > 0 || t->cpu_ticks > 0)
            v[(*n)++] = t;
    }
    qsort(v, *n, sizeof *v, cmp_threads);
    return v;
}

static void kv(perch_json *w, const char *k, uint64_t v);

/* top_threads: [{cpu (idle threads), name, pid, process, run_ticks, samples, tid}]. */
static int write_threads(perch_report *r, perch_json *w)
{
    uint32_t n = 0;
    rthread **v = perch__report_sorted_threads(r, &n);
    if (v == NULL)
        return PERCH_ENOMEM;
    perch_json_key(w, "top_threads");
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < n && i < r->top; i++) {
        int64_t pid;
        const char *proc = perch__report_thread_process(r, v[i], &pid);
        perch_json_begin_object(w);
        if (v[i]->known && v[i]->tid == 0 && v[i]->cpu >= 0)
            kv(w, "cpu", (uint64_t)v[i]->cpu);
        perch_json_key(w, "name");
        perch_json_string(w, v[i]->name ? v[i]->name : "");
        perch_json_key(w, "pid");
        perch_json_int(w, pid);
        perch_json_key(w, "process");
        perch_json_string(w, proc);
        kv(w, "run_ticks", v[i]->cpu_ticks);
        kv(w, "samples", v[i]->samples);
        perch_json_key(w, "tid");
        perch_json_uint(w, v[i]->tid);
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
    perch__free(v);
    return 0;
}

static void kv(perch_json *w, const char *k, uint64_t v)
{
    perch_json_key(w, k);
    perch_json_uint(w, v);
}

static void write_header(perch_report *r, perch_json *w)
{
    perch_json_key(w, "header");
    perch_json_begin_object(w);
    kv(w, "buffers_lost", r->info.buffers_lost);
    kv(w, "build", r->info.os_build);
    kv(w, "clock_type", r->info.clock_type);
    kv(w, "cpus", r->info.cpu_count);
    kv(w, "end_time", r->info.end_filetime);
    kv(w, "events_lost", r->info.events_lost);
    kv(w, "perf_freq", r->info.perf_freq);
    kv(w, "pointer_size", r->info.pointer_size);
    kv(w, "start_time", r->info.start_filetime);
    perch_json_end_object(w);
}

static void write_named(perch_json *w, const char *key, const rnamed *v, uint32_t n,
                        const char *prefix)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    perch_json_key(w, key);
    perch_json_begin_object(w);
    for (uint32_t i = 0; i < n; i++) {
        if (pl && strncmp(v[i].name, prefix, pl) != 0)
            continue;
        perch_json_key(w, v[i].name + pl);
        perch_json_uint(w, v[i].value);
    }
    perch_json_end_object(w);
}

static void write_slices(perch_report *r, perch_json *w)
{
    perch_json_key(w, "slices");
    perch_json_begin_object(w);
    kv(w, "count", r->slices);
    kv(w, "run_ticks", r->run_ticks);
    kv(w, "idle_ticks", r->idle_ticks);
    kv(w, "open_start", r->slice_flags[0]);
    kv(w, "open_end", r->slice_flags[1]);
    kv(w, "stale", r->slice_flags[2]);
    kv(w, "with_ready", r->ready_count);
    kv(w, "ready_latency_ticks", r->ready_ticks);
    perch_json_key(w, "wait_reasons");
    perch_json_begin_object(w);
    for (int i = 0; i <= RPT_MAX_WAIT; i++) {
        char k[16];
        if (r->wait_reason[i] == 0)
            continue;
        snprintf(k, sizeof k, "%d", i < RPT_MAX_WAIT ? i : -1);
        kv(w, k, r->wait_reason[i]);
    }
    perch_json_end_object(w);
    perch_json_end_object(w);
}

int perch_report_write_json(perch_report *r, perch_json *w)
{
    uint32_t np = 0, nm = 0;
    char hash[17];
    uint64_t pdb_ids = 0;
    row *procs = process_rows(r, &np), *mods = module_rows(r, &nm);
    int err = procs && mods ? perch__rstacks_hash(&r->stacks, hash) : PERCH_ENOMEM;
    err = err ? err : pdb_count(r, &pdb_ids);
    if (err == 0) {
        perch_json_begin_object(w);
        write_named(w, "by_kind", r->stats, r->stat_count, "kind.");
        kv(w, "frames_total", r->frames_total);
        write_header(r, w);
        write_named(w, "ledger", r->ledger, r->ledger_count, NULL);
        kv(w, "lbr_records", r->lbr);
        kv(w, "pdb_ids", pdb_ids);
        kv(w, "pmc_samples", r->samples_pmc);
        kv(w, "samples", r->samples);
        kv(w, "samples_with_stack", r->samples_with_stack);
        write_slices(r, w);
        perch_json_key(w, "source");
        perch_json_string(w, r->info.source ? r->info.source : "");
        perch_json_key(w, "stack_hash");
        perch_json_string(w, hash);
        kv(w, "stacks_distinct", r->stacks.count);
        kv(w, "stacks_kernel_only", r->kernel_only);
        kv(w, "stacks_merged", r->merged);
        kv(w, "stacks_user_only", r->user_only);
        write_named(w, "stats", r->stats, r->stat_count, NULL);
        err = perch__report_write_functions_json(r, w);
        write_rows(w, "top_modules", mods, nm, r->top, false);
        write_rows(w, "top_processes", procs, np, r->top, true);
        err = err ? err : perch__report_write_stacks_json(r, w);
        if (err == 0)
            err = write_threads(r, w);
        perch_json_end_object(w);
        perch_json_newline(w);
        if (err == 0)
            err = perch_json_flush(w);
    }
    perch__free(procs);
    perch__free(mods);
    return err;
}

int perch__report_text_tables(perch_report *r, FILE *f)
{
    uint32_t np = 0, nm = 0;
    row *procs = process_rows(r, &np), *mods = module_rows(r, &nm);
    if (procs == NULL || mods == NULL) {
        perch__free(procs);
        perch__free(mods);
        return PERCH_ENOMEM;
    }
    fprintf(f, "\nProcesses (top %u by samples)\n  %8s %-28s %10s %12s\n", r->top, "pid", "name",
            "samples", perch__report_cpu_heading(r));
    for (uint32_t i = 0; i < np && i < r->top; i++)
        fprintf(f, "  %8" PRId64 " %-28s %10" PRIu64 " %12.3f\n", procs[i].pid, procs[i].name,
                procs[i].samples, perch__report_cpu_ms(r, procs[i].ticks, procs[i].samples));
    fprintf(f, "\nModules (top %u by samples at the IP)\n", r->top);
    for (uint32_t i = 0; i < nm && i < r->top; i++)
        fprintf(f, "  %-36s %10" PRIu64 "\n", mods[i].name, mods[i].samples);
    perch__free(procs);
    perch__free(mods);
    return 0;
}
