/*
 * The entity store of the exporters: threads, processes and modules as their records arrive,
 * keyed by their model keys. Records are upserts (records.h): a later record of a key
 * replaces the earlier one.
 * A sample or slice of a thread with no record yet creates a provisional thread, completed
 * when the record comes. Strings are copied into one arena; all memory is budgeted.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

void perch__entities_init(perch__entities *e, perch__budget *b)
{
    memset(e, 0, sizeof *e);
    e->budget = b;
    e->info.pointer_size = 8;
    e->info.perf_freq = 10000000;
}

void perch__entities_free(perch__entities *e)
{
    perch__budget *b = e->budget;
    perch__release(b, (void **)&e->strings.data, &e->strings.cap, 1);
    perch__release(b, (void **)&e->threads, &e->thread_cap, sizeof *e->threads);
    perch__release(b, (void **)&e->processes, &e->process_cap, sizeof *e->processes);
    perch__release(b, (void **)&e->modules, &e->module_cap, sizeof *e->modules);
    perch__module_index_free(&e->by_address);
    perch__budget_give(b, e->by_address_bytes);
    e->by_address_bytes = 0;
    perch__map_free(&e->thread_map, b);
    perch__map_free(&e->process_map, b);
    perch__map_free(&e->module_map, b);
    perch_symnames_destroy(e->names);
    e->names = NULL;
}

static int add_string(perch__entities *e, const char *s, uint32_t *off)
{
    return perch__strings_add(&e->strings, e->budget, s ? s : "", s ? strlen(s) : 0, off);
}

int perch__entities_info(perch__entities *e, const perch_trace_info *info)
{
    e->info = *info;
    e->info.source = NULL;
    e->info.session_config = NULL;
    if (e->info.pointer_size != 4)
        e->info.pointer_size = 8;
    e->info.perf_freq = perch__clock_hz(e->info.perf_freq);
    return 0;
}

int perch__entities_process(perch__entities *e, const perch_process_rec *rec)
{
    uint32_t idx;
    int err;
    if (rec->key == 0)
        return 0;
    if (!perch__map_get(&e->process_map, rec->key, &idx)) {
        err = perch__grow(e->budget, (void **)&e->processes, &e->process_cap, e->process_count + 1,
                          sizeof *e->processes);
        if (!err)
            err = perch__map_put(&e->process_map, e->budget, rec->key, (uint32_t)e->process_count);
        if (err)
            return err;
        idx = (uint32_t)e->process_count++;
    }
    e->processes[idx].key = rec->key;
    e->processes[idx].pid = rec->pid;
    return add_string(e, rec->image_name, &e->processes[idx].image);
}

int perch__entities_touch_thread(perch__entities *e, uint64_t key, uint32_t tid, uint16_t cpu,
                                 uint32_t *index)
{
    perch__thread *t;
    int err;
    *index = UINT32_MAX;
    if (key == 0) /* "unknown": no entry (lookups of key 0 find nothing) */
        return 0;
    if (perch__map_get(&e->thread_map, key, index)) {
        t = &e->threads[*index];
        if (tid == 0 && t->tid == 0 && t->cpu < 0)
            t->cpu = cpu;
        return 0;
    }
    err = perch__grow(e->budget, (void **)&e->threads, &e->thread_cap, e->thread_count + 1,
                      sizeof *e->threads);
    if (err)
        return err;
    t = &e->threads[e->thread_count];
    memset(t, 0, sizeof *t);
    t->key = key;
    t->tid = tid;
    t->pid = UINT32_MAX;
    t->cpu = tid == 0 && cpu != UINT16_MAX ? cpu : -1;
    /* the map names the thread only once it is whole: a failure leaves no key to a thread
     * that was never added */
    err = add_string(e, "", &t->name);
    if (!err)
        err = perch__map_put(&e->thread_map, e->budget, key, (uint32_t)e->thread_count);
    if (err)
        return err;
    *index = (uint32_t)e->thread_count++;
    return 0;
}

int perch__entities_thread(perch__entities *e, const perch_thread_rec *rec)
{
    uint32_t idx;
    perch__thread *t;
    int err;
    if (rec->key == 0)
        return 0;
    err = perch__entities_touch_thread(e, rec->key, rec->tid, UINT16_MAX, &idx);
    if (err)
        return err;
    t = &e->threads[idx];
    t->process_key = rec->process_key;
    t->tid = rec->tid;
    t->pid = rec->pid;
    t->seen_record = true;
    return add_string(e, rec->name, &t->name);
}

int perch__entities_module(perch__entities *e, const perch_module_rec *rec)
{
    char base[PERCH_FRAME_NAME_MAX];
    perch__module *m;
    size_t n;
    uint32_t idx = (uint32_t)e->module_count;
    int err = 0;
    bool again = rec->key && perch__map_get(&e->module_map, rec->key, &idx);
    if (!again)
        err = perch__grow(e->budget, (void **)&e->modules, &e->module_cap, e->module_count + 1,
                          sizeof *e->modules);
    if (!err && rec->key && !again)
        err = perch__map_put(&e->module_map, e->budget, rec->key, idx);
    if (err)
        return err;
    m = &e->modules[idx];
    m->key = rec->key;
    m->process_key = rec->process_key;
    m->base = rec->base;
    m->size = rec->size;
    n = perch__module_base_name(rec->path ? rec->path : "", base, sizeof base);
    err = perch__strings_add(&e->strings, e->budget, base, n, &m->name);
    if (!err)
        err = add_string(e, rec->path, &m->path);
    if (err)
        return err;
    e->module_count += !again;
    e->sorted = false;
    err = e->names ? 0 : perch_symnames_create(&e->names);
    return err ? err : perch_symnames_module(e->names, rec);
}

int perch__entities_symbol(perch__entities *e, const perch_symbol_rec *rec)
{
    return e->names ? perch_symnames_symbol(e->names, rec) : 0; /* no module: names nothing */
}

const perch__thread *perch__entities_thread_at(const perch__entities *e, uint64_t key)
{
    uint32_t idx;
    return perch__map_get(&e->thread_map, key, &idx) ? &e->threads[idx] : NULL;
}

const perch__process *perch__entities_process_at(const perch__entities *e, uint64_t key)
{
    uint32_t idx;
    return perch__map_get(&e->process_map, key, &idx) ? &e->processes[idx] : NULL;
}

const perch__module *perch__module_by_key(const perch__entities *e, uint64_t key)
{
    uint32_t idx;
    return perch__map_get(&e->module_map, key, &idx) ? &e->modules[idx] : NULL;
}

uint32_t perch__thread_pid(const perch__entities *e, const perch__thread *t)
{
    const perch__process *p;
    if (t->pid != UINT32_MAX)
        return t->pid;
    p = perch__entities_process_at(e, t->process_key);
    return p ? p->pid : UINT32_MAX;
}

const char *perch__thread_process_name(const perch__entities *e, const perch__thread *t)
{
    const perch__process *p = perch__entities_process_at(e, t->process_key);
    return p ? perch__str(&e->strings, p->image) : "";
}
