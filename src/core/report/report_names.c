/*
 * Names in the report: which module holds a frame (the M5 rule), what the stream's symbol
 * records call it ("module!function+0xoff", else "module!+0xoff"), and the top functions by
 * timer samples at the IP, counted per (module, IP) as samples arrive and named at output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hmap.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/json.h"
#include "report/report_internal.h"

#define MAX_IPS (1u << 24)

/* M5 order among ranges containing an address: highest base, then smallest size, then name. */
static bool better_module(const rmod *a, const rmod *b)
{
    if (b == NULL)
        return true;
    if (a->base != b->base)
        return a->base > b->base;
    if (a->size != b->size)
        return a->size < b->size;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") < 0;
}

const rmod *perch__report_module_at(perch_report *r, uint64_t addr, uint64_t process_key)
{
    const rmod *best = NULL;
    bool kernel = perch_is_kernel_address(addr, r->info.pointer_size);
    uint64_t want = kernel ? 0 : process_key;
    if (!kernel && process_key == 0)
        return NULL;
    for (uint32_t i = 0; i < r->mods.count; i++) {
        const rmod *md = (const rmod *)r->mods.rows + i;
        if (!md->known || addr - md->base >= md->size || md->process_key != want)
            continue;
        if (better_module(md, best))
            best = md;
    }
    return best;
}

size_t perch__report_frame(perch_report *r, const rmod *md, uint64_t addr, char *buf, size_t cap,
                           perch_sym_func *f, int64_t *off, bool *named)
{
    int n;
    *named = md != NULL && r->names != NULL && addr - md->base <= UINT32_MAX &&
             perch_symnames_lookup(r->names, md->key, (uint32_t)(addr - md->base), f, off);
    if (*named)
        n = snprintf(buf, cap, "%s!%s%s0x%" PRIx64, md->name, f->name, *off < 0 ? "-" : "+",
                     *off < 0 ? (uint64_t) - *off : (uint64_t)*off);
    else if (md != NULL)
        n = snprintf(buf, cap, "%s!+0x%" PRIx64, md->name, addr - md->base);
    else
        n = snprintf(buf, cap, "?!0x%" PRIx64, addr);
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

int perch__report_count_ip(perch_report *r, uint64_t module_key, uint64_t ip, uint32_t count)
{
    uint64_t k = perch__mix64(module_key * 0x9e3779b97f4a7c15ull ^ ip);
    uint32_t at;
    while (perch__hmap_get(&r->ip_index, k, &at)) { /* rehash past a colliding pair */
        if (r->ips[at].module_key == module_key && r->ips[at].ip == ip) {
            r->ips[at].samples += count;
            return 0;
        }
        k = perch__mix64(k + 1);
    }
    if (r->ip_count >= MAX_IPS)
        return 0; /* the function table then counts the IPs seen first */
    int err =
        perch__grow_array((void **)&r->ips, sizeof *r->ips, &r->ip_cap, r->ip_count + 1, MAX_IPS);
    if (!err)
        err = perch__hmap_put(&r->ip_index, k, r->ip_count);
    if (!err)
        r->ips[r->ip_count++] = (rip){module_key, ip, count};
    return err;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const rfunc *)a)->name, ((const rfunc *)b)->name);
}

static int cmp_samples(const void *a, const void *b)
{
    const rfunc *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->name, y->name);
}

int perch__report_functions(perch_report *r, rfunc **rows, uint32_t *n)
{
    rfunc *v = perch__calloc(r->ip_count + 1u, sizeof *v);
    uint32_t m = 0, w = 0;
    if (v == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < r->ip_count && r->names != NULL; i++) {
        const rmod *md = perch__rtable_get(&r->mods, r->ips[i].module_key, sizeof *md, false);
        perch_sym_func f;
        int64_t off;
        uint64_t addr = r->ips[i].ip;
        if (md == NULL || !md->known || addr - md->base > UINT32_MAX ||
            !perch_symnames_lookup(r->names, md->key, (uint32_t)(addr - md->base), &f, &off))
            continue;
        snprintf(v[m].name, sizeof v[m].name, "%s!%s", md->name, f.name);
        v[m].samples = r->ips[i].samples;
        v[m++].source = f.source;
    }
    if (m > 0)
        qsort(v, m, sizeof *v, cmp_name);
    for (uint32_t i = 0; i < m; i++) {
        if (w > 0 && strcmp(v[w - 1].name, v[i].name) == 0)
            v[w - 1].samples += v[i].samples;
        else
            v[w++] = v[i];
    }
    if (w > 0)
        qsort(v, w, sizeof *v, cmp_samples);
    *rows = v;
    *n = w;
    return 0;
}

static void write_frame(perch_report *r, perch_json *w, uint64_t addr, uint64_t pkey)
{
    char name[256], hex[24];
    perch_sym_func f;
    int64_t off;
    bool named;
    const rmod *md = perch__report_module_at(r, addr, pkey);
    size_t len = perch__report_frame(r, md, addr, name, sizeof name, &f, &off, &named);
    perch_json_begin_object(w);
    snprintf(hex, sizeof hex, "0x%" PRIx64, addr);
    perch_json_key(w, "addr");
    perch_json_string(w, hex);
    if (named) {
        perch_json_key(w, "function");
        perch_json_string(w, f.name);
    }
    perch_json_key(w, "name");
    perch_json_string_n(w, name, len);
    if (named) {
        perch_json_key(w, "offset");
        perch_json_int(w, off);
        perch_json_key(w, "source");
        perch_json_string(w, perch_sym_source_name(f.source));
    }
    perch_json_end_object(w);
}

int perch__report_write_stacks_json(perch_report *r, perch_json *w)
{
    rstack_ref *v = NULL;
    uint64_t *frames = NULL;
    uint32_t n = 0, distinct = 0, cap = 0;
    if (!r->named)
        return 0; /* the JSON of a stream without names stays what it was */
    int err = perch__rstacks_top(&r->stacks, r->top, &v, &n, &distinct);
    if (err)
        return err;
    perch_json_key(w, "top_stacks");
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < n && err == 0; i++) {
        const rthread *t = perch__rtable_get(&r->threads, v[i].e.thread_key, sizeof *t, false);
        uint64_t pkey = t != NULL && t->known ? t->process_key : 0;
        err = perch__rstacks_frames(&r->stacks, &v[i].e, &frames, &cap);
        if (err)
            break;
        perch_json_begin_object(w);
        perch_json_key(w, "frames");
        perch_json_begin_array(w);
        for (uint32_t k = 0; k < v[i].e.count; k++)
            write_frame(r, w, frames[k], pkey);
        perch_json_end_array(w);
        perch_json_key(w, "kernel_frames");
        perch_json_uint(w, v[i].e.kernel);
        perch_json_key(w, "samples");
        perch_json_uint(w, v[i].e.samples);
        perch_json_end_object(w);
    }
    perch_json_end_array(w);
    perch__free(frames);
    perch__free(v);
    return err;
}

int perch__report_write_functions_json(perch_report *r, perch_json *w)
{
    rfunc *v = NULL;
    uint32_t n = 0;
    int err = r->named ? perch__report_functions(r, &v, &n) : 0;
    if (err)
        return err;
    if (r->named) {
        perch_json_key(w, "top_functions");
        perch_json_begin_array(w);
        for (uint32_t i = 0; i < n && i < r->top; i++) {
            perch_json_begin_object(w);
            perch_json_key(w, "name");
            perch_json_string(w, v[i].name);
            perch_json_key(w, "samples");
            perch_json_uint(w, v[i].samples);
            perch_json_key(w, "source");
            perch_json_string(w, perch_sym_source_name(v[i].source));
            perch_json_end_object(w);
        }
        perch_json_end_array(w);
    }
    perch__free(v);
    return 0;
}
