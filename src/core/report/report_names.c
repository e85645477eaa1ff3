/*
 * Names in the report: which module holds a frame (the M5 rule), what the stream's symbol
 * records call it ("module!function+0xoff", else "module!+0xoff"), and the JSON of the top
 * functions (counted in report_funcs.c) and the top stacks.
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

/* Every module, one by one: what report_modmap.c's index answers, when it could not be built
 * (out of memory). A range holds the addresses from its base up, none below it. */
static const rmod *scan_modules(const perch_report *r, uint64_t addr, uint64_t want)
{
    const rmod *best = NULL;
    for (uint32_t i = 0; i < r->mods.count; i++) {
        const rmod *md = (const rmod *)r->mods.rows + i;
        if (!md->known || addr < md->base || addr - md->base >= md->size || md->process_key != want)
            continue;
        if (better_module(md, best))
            best = md;
    }
    return best;
}

const rmod *perch__report_module_at(perch_report *r, uint64_t addr, uint64_t process_key)
{
    bool kernel = perch_is_kernel_address(addr, r->info.pointer_size);
    uint64_t want = kernel ? 0 : process_key;
    if (!kernel && process_key == 0)
        return NULL;
    if (!r->modmap.built && perch__rmodmap_build(&r->modmap, &r->mods) != 0)
        return scan_modules(r, addr, want);
    return perch__rmodmap_find(&r->modmap, &r->mods, want, addr);
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
        const rthread *t = perch__rtable_get(&r->threads, v[i].e.thread_key, sizeof *t);
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
