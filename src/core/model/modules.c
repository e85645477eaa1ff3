/*
 * Module maps (M4, M5): Image Load/DCStart/DCEnd/Unload build one address map per process and
 * one system-wide kernel map (ProcessId 0 or a kernel-address base). Maps hold the modules
 * loaded now, sorted by base; an Unload emits and removes its module, so a lookup at a sample's
 * time sees exactly the ranges live then. A lookup picks, among ranges containing the address,
 * the highest base, then the smallest size, then the path; the scan is bounded by the map's
 * largest size (past MODMAP_SCAN_STEPS an address index answers, model/module_index.h), and
 * each map caches its last answers until it changes. DbgID_RSDS records
 * attach the PDB identity (GUID, age, PDB name) to the live module at their (process, base).
 * A module's record is sent when it is mapped, again when its PDB identity arrives, and a last
 * time (counted in modules.total) when it is unloaded or its process ends. A map holds at most
 * opts.max_modules_per_map modules: a load into a full map is sent as a final record at once and
 * not mapped (module.map_full).
 */
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "model/module_order.h"
#include "perch/error.h"

enum { OP_UNLOAD = 2, OP_DCSTART = 3, OP_DCEND = 4, OP_LOAD = 10 };

/* The first index whose base is > base. */
static uint32_t upper_bound(const modmap *mm, uint64_t base)
{
    uint32_t lo = 0, hi = mm->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mm->items[mid].rec.base <= base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint32_t find_exact(const modmap *mm, uint64_t base, uint64_t size)
{
    uint32_t i = upper_bound(mm, base), any = NONE32;
    while (i > 0 && mm->items[i - 1].rec.base == base) {
        i--;
        if (size == 0 || mm->items[i].rec.size == size)
            return i;
        any = i;
    }
    return size == 0 ? any : NONE32;
}

static bool better(const module *a, const module *b)
{
    if (b == NULL || a->rec.base != b->rec.base)
        return b == NULL || a->rec.base > b->rec.base;
    if (a->rec.size != b->rec.size)
        return a->rec.size < b->rec.size;
    return strcmp(a->rec.path, b->rec.path) < 0;
}

/* Builds mm's address index anew. The items are sorted by base already: only modules at one
 * base need sorting into the M5 order, the greater index last (the scan's answer). 0 or
 * PERCH_ENOMEM (the scan then goes on alone). */
static int index_items(modmap *mm)
{
    int err = perch__grow_array((void **)&mm->sorted, sizeof *mm->sorted, &mm->sorted_cap,
                                mm->count + 1, MAX_MODULES_PER_MAP + 1);
    if (err < 0)
        return err;
    perch__module_sort *v = mm->sorted;
    for (uint32_t i = 0; i < mm->count; i++) {
        const module *md = &mm->items[i];
        v[i] = (perch__module_sort){0, md->rec.base, md->rec.size, md->rec.path, i};
    }
    for (uint32_t i = 0, j; i < mm->count; i = j) {
        for (j = i + 1; j < mm->count && v[j].base == v[i].base;)
            j++;
        if (j - i > 1)
            qsort(v + i, j - i, sizeof *v, perch__module_sort_cmp_last);
    }
    err = perch__module_index_build(&mm->by_address, v, mm->count);
    mm->by_address_fresh = err == 0;
    return err;
}

/* Frees mm's address index and the records it was built from. */
static void index_free(modmap *mm)
{
    perch__module_index_free(&mm->by_address);
    perch__free(mm->sorted);
    mm->sorted = NULL;
    mm->sorted_cap = 0;
}

/* True when mm's address index may answer: fresh, or built now that the scans since the
 * last change have cost more than a build. */
static bool index_ready(modmap *mm)
{
    return mm->by_address_fresh ||
           (mm->scan_spent >= (uint64_t)MODMAP_INDEX_AFTER * mm->count && index_items(mm) == 0);
}

/* Scans down from the highest base <= ip. The scan stops at the first lower base once a range
 * matched (highest base wins), or once ip - base reaches max_size: no range that far below ip
 * can contain it. Without that bound an IP in no module would scan every lower module. One
 * range spanning many others lifts the bound over all of them, and an IP in the gaps between
 * them would scan every one: past MODMAP_SCAN_STEPS the address index answers instead, once
 * it is worth building (index_ready). */
static const module *map_lookup(modmap *mm, uint64_t ip)
{
    const module *best = NULL;
    uint32_t steps = 0;
    for (uint32_t i = upper_bound(mm, ip); i > 0; i--) {
        const module *md = &mm->items[i - 1];
        if (best != NULL && md->rec.base < best->rec.base)
            break;
        if (ip - md->rec.base >= mm->max_size)
            break;
        if (ip - md->rec.base < md->rec.size && better(md, best))
            best = md;
        if (++steps == MODMAP_SCAN_STEPS && index_ready(mm)) {
            uint32_t at = perch__module_index_find(&mm->by_address, 0, ip);
            return at != PERCH_MODULE_INDEX_NONE ? &mm->items[at] : NULL;
        }
    }
    if (steps > MODMAP_SCAN_STEPS)
        mm->scan_spent += steps - MODMAP_SCAN_STEPS;
    return best;
}

/* The addresses around ip with the same answer md: [base, the end of md or the next higher
 * base), when md is the only module at its base (with several, a smaller one may win below
 * ip); else ip alone. */
static void answer_range(const modmap *mm, const module *md, uint64_t ip, uint64_t *lo,
                         uint64_t *span)
{
    uint32_t i = (uint32_t)(md - mm->items);
    uint64_t base = md->rec.base, end = base + md->rec.size;
    *lo = ip;
    *span = 1;
    if ((i > 0 && mm->items[i - 1].rec.base == base) ||
        (i + 1 < mm->count && mm->items[i + 1].rec.base == base) || end < base)
        return;
    if (i + 1 < mm->count && mm->items[i + 1].rec.base < end)
        end = mm->items[i + 1].rec.base;
    *lo = base;
    *span = end - base;
}

/* map_lookup behind a small cache of the ranges of addresses that had the last answers:
 * consecutive samples often fall in one module (and idle loops share an IP), and samples of
 * one process from several CPUs take turns among a few modules. */
static uint64_t map_lookup_miss(modmap *mm, uint64_t ip);
static uint64_t map_lookup_key(modmap *mm, uint64_t ip)
{
    for (uint32_t i = 0; i < MODMAP_HITS; i++)
        if (ip - mm->hits[i].lo < mm->hits[i].span)
            return mm->hits[i].key;
    return map_lookup_miss(mm, ip);
}

/* map_lookup_key's answer when no cached range holds ip: looked up, and cached. */
PERCH_NOINLINE static uint64_t map_lookup_miss(modmap *mm, uint64_t ip)
{
    const module *md = map_lookup(mm, ip);
    modhit *h = &mm->hits[mm->hit_next++ % MODMAP_HITS];
    h->lo = ip;
    h->span = 1;
    if (md != NULL)
        answer_range(mm, md, ip, &h->lo, &h->span);
    h->key = md ? md->rec.key : 0;
    return h->key;
}

/* Forgets every cached answer of mm (and the address index). */
static void hits_drop(modmap *mm)
{
    memset(mm->hits, 0, sizeof mm->hits);
    mm->by_address_fresh = false;
    mm->scan_spent = 0;
}

/* The map's ranges changed: drop the cached lookups and recompute the scan bound. */
static void map_changed(modmap *mm)
{
    hits_drop(mm);
    mm->max_size = 0;
    for (uint32_t i = 0; i < mm->count; i++)
        if (mm->items[i].rec.size > mm->max_size)
            mm->max_size = mm->items[i].rec.size;
}

static modmap *map_for(perch_model *m, uint32_t pid, uint64_t base, uint8_t psz, uint64_t *pkey,
                       bool *emitted)
{
    *pkey = 0;
    *emitted = false;
    if (pid == 0 || perch__is_kernel_addr(psz, base))
        return &m->kernel_mods;
    uint32_t pi = perch__process_for(m, pid);
    if (pi == NONE32)
        return NULL;
    *pkey = m->procs[pi].rec.key;
    *emitted = m->procs[pi].emitted;
    return &m->procs[pi].mods;
}

uint64_t perch__module_lookup(perch_model *m, uint32_t pid, uint64_t ip)
{
    modmap *mm = NULL;
    if (perch__is_kernel_addr(m->pointer_size, ip)) {
        mm = &m->kernel_mods;
    } else {
        pid_hit *h = &m->pid_hits[(pid >> 2) & (PID_HITS - 1)]; /* pids are multiples of 4 */
        if (h->gen1 != m->pid_hit_gen + 1 || h->pid != pid) {
            h->pid = pid;
            h->idx = perch__process_find(m, pid);
            h->gen1 = m->pid_hit_gen + 1;
        }
        mm = h->idx == NONE32 ? NULL : &m->procs[h->idx].mods;
    }
    return mm ? map_lookup_key(mm, ip) : 0;
}

void perch__pid_hits_drop(perch_model *m)
{
    if (++m->pid_hit_gen == UINT32_MAX) { /* gen1 would wrap to 0, which every entry starts at */
        memset(m->pid_hits, 0, sizeof m->pid_hits);
        m->pid_hit_gen = 0;
    }
}

/* Sends the current record of a mapped module (an upsert: it stays mapped). */
static int upsert_module(perch_model *m, module *md)
{
    md->announced = true;
    md->dirty = false;
    return m->sink.module != NULL ? m->sink.module(m->sink.ctx, &md->rec) : 0;
}

/* The final record (an unchanged one already sent is not repeated). Frees the strings. */
static int emit_module(perch_model *m, module *md)
{
    model_count(m, MC_MODULES, 1);
    int err = md->announced && !md->dirty ? 0 : upsert_module(m, md);
    perch__free(md->path);
    perch__free(md->pdb_name);
    md->path = md->pdb_name = NULL;
    return err;
}

static int fill_module(perch_model *m, module *md, const perch_event *ev, const perch_image *im,
                       uint64_t pkey)
{
    memset(md, 0, sizeof *md);
    md->path = perch__utf16_dup(&im->file_name);
    if (md->path == NULL)
        return PERCH_ENOMEM;
    md->rec.key = perch__new_key(m);
    md->rec.process_key = pkey;
    md->rec.pid = pkey ? im->process_id : 0;
    md->rec.base = im->image_base;
    md->rec.size = im->image_size;
    md->rec.load_ts = ev->opcode == OP_LOAD ? ev->timestamp : 0;
    md->rec.checksum = im->image_checksum;
    md->rec.time_date_stamp = im->time_date_stamp;
    md->rec.path = md->path;
    md->rec.pdb_name = "";
    return 0;
}

/* Maps md (its strings move into the map) and sends its first record; a full map sends it as
 * a final record instead. *owned is false once md's strings belong to the map or are freed. */
static int insert(perch_model *m, modmap *mm, module *md, bool *owned)
{
    if (mm->count >= m->opts.max_modules_per_map) {
        model_count(m, MC_MODULE_MAP_FULL, 1);
        *owned = false;
        return emit_module(m, md);
    }
    int err = perch__grow_array((void **)&mm->items, sizeof *mm->items, &mm->cap, mm->count + 1,
                                MAX_MODULES_PER_MAP);
    if (err < 0)
        return err;
    uint32_t at = upper_bound(mm, md->rec.base);
    memmove(mm->items + at + 1, mm->items + at, (mm->count - at) * sizeof *mm->items);
    mm->items[at] = *md;
    *owned = false;
    mm->count++;
    hits_drop(mm);
    if (md->rec.size > mm->max_size)
        mm->max_size = md->rec.size;
    return upsert_module(m, &mm->items[at]);
}

static int unload(perch_model *m, modmap *mm, const perch_image *im, uint64_t ts)
{
    uint32_t i = find_exact(mm, im->image_base, im->image_size);
    if (i == NONE32) {
        model_count(m, MC_MODULE_UNLOAD_UNKNOWN, 1);
        return 0;
    }
    mm->items[i].rec.unload_ts = ts;
    mm->items[i].dirty = true;
    int err = emit_module(m, &mm->items[i]);
    memmove(mm->items + i, mm->items + i + 1, (mm->count - i - 1) * sizeof *mm->items);
    mm->count--;
    map_changed(mm);
    return err;
}

static int set_pdb(module *md, const perch_guid *g, uint32_t age, const char *name, size_t n)
{
    if (md->rec.has_pdb)
        return 0;
    md->pdb_name = perch__strdup_n(name, n);
    if (md->pdb_name == NULL)
        return PERCH_ENOMEM;
    md->rec.has_pdb = true;
    md->rec.pdb_guid = *g;
    md->rec.pdb_age = age;
    md->rec.pdb_name = md->pdb_name;
    return 0;
}

/* Attaches a pending DbgID_RSDS with this (pid, base) to md, if there is one; *taken says
 * whether md changed. */
static int take_pending_pdb(perch_model *m, module *md, uint32_t pid, bool *taken)
{
    *taken = false;
    for (uint32_t i = 0; i < PDB_PENDING; i++) {
        pdb_pending *p = &m->pdb[i];
        if (p->name == NULL || p->pid != pid || p->base != md->rec.base)
            continue;
        *taken = !md->rec.has_pdb;
        int err = set_pdb(md, &p->guid, p->age, p->name, strlen(p->name));
        perch__free(p->name);
        p->name = NULL;
        return err;
    }
    return 0;
}

static int add_pending_pdb(perch_model *m, const perch_dbg_id_rsds *r)
{
    pdb_pending *p = &m->pdb[m->pdb_next];
    m->pdb_next = (m->pdb_next + 1) % PDB_PENDING;
    if (p->name != NULL)
        model_count(m, MC_PDB_UNMATCHED, 1);
    perch__free(p->name);
    p->name =
        perch__strdup_n(r->pdb_file_name.data ? r->pdb_file_name.data : "", r->pdb_file_name.len);
    p->pid = r->process_id;
    p->base = r->image_base;
    p->guid = r->guid;
    p->age = r->age;
    return p->name == NULL ? PERCH_ENOMEM : 0;
}

void perch__pdb_finish(perch_model *m)
{
    for (uint32_t i = 0; i < PDB_PENDING; i++) {
        if (m->pdb[i].name != NULL)
            model_count(m, MC_PDB_UNMATCHED, 1);
        perch__free(m->pdb[i].name);
        m->pdb[i].name = NULL;
    }
}

/* DbgID_RSDS (opcode 36) names the PDB of the image at (process, base). Opcode 37 carries
 * another identity of the same image (M6 counts opcode 36 only): counted, not attached. */
int perch__dbg_id(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_dbg_id_rsds *r = &d->dbg_id_rsds;
    uint64_t pkey;
    bool emitted;
    if (d->opcode != 36) {
        model_count(m, MC_PDB_OTHER, 1);
        return 0;
    }
    modmap *mm = map_for(m, r->process_id, r->image_base, ev->pointer_size, &pkey, &emitted);
    uint32_t i = mm == NULL ? NONE32 : find_exact(mm, r->image_base, 0);
    if (mm == NULL)
        return m->error;
    if (i == NONE32 || emitted)
        return add_pending_pdb(m, r);
    module *md = &mm->items[i];
    if (md->rec.has_pdb)
        return 0;
    int err = set_pdb(md, &r->guid, r->age, r->pdb_file_name.data ? r->pdb_file_name.data : "",
                      r->pdb_file_name.len);
    return err ? err : upsert_module(m, md);
}

int perch__image_event(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_image *im = &d->image;
    uint64_t pkey;
    bool emitted;
    module md;
    modmap *mm = map_for(m, im->process_id, im->image_base, ev->pointer_size, &pkey, &emitted);
    if (mm == NULL)
        return m->error;
    if (d->opcode == OP_UNLOAD)
        return emitted ? 0 : unload(m, mm, im, ev->timestamp);
    if (d->opcode != OP_LOAD && d->opcode != OP_DCSTART && d->opcode != OP_DCEND)
        return 0;
    uint32_t at = emitted ? NONE32 : find_exact(mm, im->image_base, im->image_size);
    bool taken;
    if (at != NONE32) { /* the same live range, seen again (DCEnd of a loaded module) */
        int err = take_pending_pdb(m, &mm->items[at], im->process_id, &taken);
        return err || !taken ? err : upsert_module(m, &mm->items[at]);
    }
    int err = fill_module(m, &md, ev, im, pkey);
    err = err ? err : take_pending_pdb(m, &md, im->process_id, &taken);
    if (err == 0 && emitted)
        return emit_module(m, &md); /* its process has ended: nothing maps it any more */
    bool owned = true;
    err = err ? err : insert(m, mm, &md, &owned);
    if (err < 0 && owned) {
        perch__free(md.path);
        perch__free(md.pdb_name);
    }
    return err;
}

int perch__modmap_emit_all(perch_model *m, modmap *mm, uint64_t unload_ts)
{
    int err = 0;
    for (uint32_t i = 0; i < mm->count; i++) {
        if (unload_ts != 0 && mm->items[i].rec.unload_ts == 0) {
            mm->items[i].rec.unload_ts = unload_ts;
            mm->items[i].dirty = true;
        }
        int e = emit_module(m, &mm->items[i]);
        err = err ? err : e;
    }
    mm->count = 0;
    map_changed(mm);
    index_free(mm);
    return err;
}

void perch__modmap_free(modmap *mm)
{
    for (uint32_t i = 0; i < mm->count; i++) {
        perch__free(mm->items[i].path);
        perch__free(mm->items[i].pdb_name);
    }
    perch__free(mm->items);
    mm->items = NULL;
    mm->count = mm->cap = 0;
    map_changed(mm);
    index_free(mm);
}
