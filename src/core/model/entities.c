/*
 * Processes and threads over time. A pid or tid maps to its current entity; an End makes the
 * next Start (or DCStart) with that id a new entity, while the ended one stays findable for
 * late references (M1: a sample uses the last Thread event at or before it). A reference to an
 * id with no event yet creates a provisional entity that the first later event completes (M1:
 * "if none, the first one after"). The idle thread (tid 0) is one entity per CPU, in process 0.
 * Records are upserts (records.h): an entity's record is sent as soon as the entity exists
 * (before anything refers to its key), again whenever it changes, and a last time when it ends
 * (or at the end of the trace); nothing is sent after that final record. The entity arrays are
 * capped (opts.max_entities): at the cap a slot is reclaimed by the rule of reclaim_slot().
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

enum { OP_START = 1, OP_END = 2, OP_DCSTART = 3, OP_DCEND = 4, OP_DEFUNCT = 39 };

cpu_state *perch__cpu_slow(perch_model *m, uint16_t cpu)
{
    if (cpu >= MAX_CPUS) {
        model_count(m, MC_CPU_OUT_OF_RANGE, 1);
        return NULL;
    }
    if (cpu >= m->cpu_cap) {
        uint32_t old = m->cpu_cap;
        int err =
            perch__grow_array((void **)&m->cpus, sizeof *m->cpus, &m->cpu_cap, cpu + 1u, MAX_CPUS);
        if (err < 0) {
            m->error = err;
            return NULL;
        }
        memset(m->cpus + old, 0, (m->cpu_cap - old) * sizeof *m->cpus);
        for (uint32_t i = old; i < m->cpu_cap; i++)
            m->cpus[i].idle_thread = NONE32;
    }
    return &m->cpus[cpu];
}

static uint32_t reclaim_thread(perch_model *m);

static uint32_t alloc_thread(perch_model *m)
{
    uint32_t i = m->thread_free;
    if (i == NONE32 && m->thread_count >= m->opts.max_entities)
        i = reclaim_thread(m);
    if (m->error < 0)
        return NONE32;
    if (i != NONE32) {
        m->thread_free = m->threads[i].next_free;
    } else {
        int err = perch__grow_array((void **)&m->threads, sizeof *m->threads, &m->thread_cap,
                                    m->thread_count + 1, MAX_ENTITIES);
        if (err < 0) {
            m->error = err;
            return NONE32;
        }
        i = m->thread_count++;
    }
    memset(&m->threads[i], 0, sizeof m->threads[i]);
    m->threads[i].key = perch__new_key(m);
    m->threads[i].pid = UNKNOWN_PID;
    m->threads[i].next_free = NONE32;
    return i;
}

static void release_thread(perch_model *m, uint32_t i)
{
    uint32_t slot = TID_SLOT(m->threads[i].tid);
    if (m->tid_cache_idx[slot] == i)
        m->tid_cache_tid[slot] = m->tid_cache_idx[slot] = NONE32;
    perch__free(m->threads[i].name);
    memset(&m->threads[i], 0, sizeof m->threads[i]);
    m->threads[i].next_free = m->thread_free;
    m->thread_free = i;
}

uint32_t perch__process_find(const perch_model *m, uint32_t pid)
{
    uint32_t i;
    return perch__hmap_get(&m->pid_map, pid, &i) ? i : NONE32;
}

static uint32_t reclaim_process(perch_model *m);

static uint32_t alloc_process(perch_model *m, uint32_t pid)
{
    uint32_t i = m->proc_free;
    if (i == NONE32 && m->proc_count >= m->opts.max_entities)
        i = reclaim_process(m);
    if (m->error < 0)
        return NONE32;
    if (i != NONE32) {
        m->proc_free = m->procs[i].next_free;
    } else {
        int err = perch__grow_array((void **)&m->procs, sizeof *m->procs, &m->proc_cap,
                                    m->proc_count + 1, MAX_ENTITIES);
        if (err < 0) {
            m->error = err;
            return NONE32;
        }
        i = m->proc_count++;
    }
    ent_process *p = &m->procs[i];
    memset(p, 0, sizeof *p);
    p->rec.key = perch__new_key(m);
    p->rec.pid = pid;
    p->rec.image_name = "";
    p->rec.command_line = "";
    p->next_free = NONE32;
    return i;
}

static void release_process(perch_model *m, uint32_t i)
{
    ent_process *p = &m->procs[i];
    perch__free(p->image_name);
    perch__free(p->command_line);
    perch__modmap_free(&p->mods);
    memset(p, 0, sizeof *p);
    p->next_free = m->proc_free;
    m->proc_free = i;
}

static bool process_same(const perch_process_rec *a, const perch_process_rec *b)
{
    return a->pid == b->pid && a->parent_pid == b->parent_pid && a->session_id == b->session_id &&
           a->exit_status == b->exit_status && a->flags == b->flags && a->start_ts == b->start_ts &&
           a->end_ts == b->end_ts && a->image_name == b->image_name &&
           a->command_line == b->command_line;
}

/* Sends the current record unless it equals the last one sent. Strings are set once (from
 * "" to an owned copy), so comparing their pointers finds every change. */
static int send_process(perch_model *m, ent_process *p)
{
    if (p->announced && process_same(&p->rec, &p->sent))
        return 0;
    p->announced = true;
    p->sent = p->rec;
    return m->sink.process != NULL ? m->sink.process(m->sink.ctx, &p->rec) : 0;
}

int perch__process_upsert(perch_model *m, uint32_t i)
{
    ent_process *p = &m->procs[i];
    return p->emitted ? 0 : send_process(m, p);
}

static int emit_process(perch_model *m, uint32_t i)
{
    ent_process *p = &m->procs[i];
    if (p->emitted)
        return 0;
    p->emitted = true;
    model_count(m, MC_PROCESSES, 1);
    int err = perch__modmap_emit_all(m, &p->mods, p->rec.end_ts);
    return err ? err : send_process(m, p);
}

static perch_thread_rec thread_rec(const ent_thread *t)
{
    perch_thread_rec rec = {t->key,   t->process_key, t->tid,    t->pid,
                            t->flags, t->start_ts,    t->end_ts, t->name ? t->name : ""};
    return rec;
}

static bool thread_same(const perch_thread_rec *a, const perch_thread_rec *b)
{
    return a->process_key == b->process_key && a->tid == b->tid && a->pid == b->pid &&
           a->flags == b->flags && a->start_ts == b->start_ts && a->end_ts == b->end_ts;
}

static int send_thread(perch_model *m, ent_thread *t)
{
    perch_thread_rec rec = thread_rec(t);
    if (t->announced && !t->name_changed && thread_same(&rec, &t->sent))
        return 0;
    t->announced = true;
    t->name_changed = false;
    t->sent = rec;
    return m->sink.thread != NULL ? m->sink.thread(m->sink.ctx, &rec) : 0;
}

int perch__thread_upsert(perch_model *m, uint32_t i)
{
    ent_thread *t = &m->threads[i];
    return t->emitted ? 0 : send_thread(m, t);
}

static int emit_thread(perch_model *m, uint32_t i)
{
    ent_thread *t = &m->threads[i];
    if (t->emitted)
        return 0;
    t->emitted = true;
    model_count(m, MC_THREADS, 1);
    if (t->pid == UNKNOWN_PID)
        model_count(m, MC_THREAD_UNKNOWN_PID, 1);
    return send_thread(m, t);
}

/* How many slots past the cursor a reclaim looks at for an ended entity. */
#define RECLAIM_SCAN 64u

/* The slot to free when an entity array is full: the first slot, among the RECLAIM_SCAN live
 * slots from a round-robin cursor, whose entity has ended (its final record was sent); when
 * there is none, the live slot at the cursor itself. skip() excludes slots that must stay
 * (the idle threads). *ended says which case it was. NONE32 when no slot qualifies. */
static uint32_t reclaim_slot(uint32_t count, uint32_t *cursor,
                             bool (*usable)(const void *, uint32_t),
                             bool (*ended)(const void *, uint32_t), const void *arr,
                             bool *was_ended)
{
    uint32_t first = NONE32, seen = 0;
    for (uint32_t n = 0; n < count && seen < RECLAIM_SCAN; n++) {
        uint32_t i = (*cursor + n) % count;
        if (!usable(arr, i))
            continue;
        if (first == NONE32)
            first = i;
        seen++;
        if (ended(arr, i)) {
            *cursor = (i + 1) % count;
            *was_ended = true;
            return i;
        }
    }
    *was_ended = false;
    if (first != NONE32)
        *cursor = (first + 1) % count;
    return first;
}

static bool thread_usable(const void *arr, uint32_t i)
{
    const ent_thread *t = (const ent_thread *)arr + i;
    return t->key != 0 && t->tid != 0;
}

static bool thread_ended(const void *arr, uint32_t i)
{
    return ((const ent_thread *)arr)[i].emitted;
}

static bool process_usable(const void *arr, uint32_t i)
{
    return ((const ent_process *)arr)[i].rec.key != 0;
}

static bool process_ended(const void *arr, uint32_t i)
{
    return ((const ent_process *)arr)[i].emitted;
}

/* Frees a thread slot at the cap (see reclaim_slot): the entity is forgotten, or ended early
 * with its final record. Returns the slot, taken off the free list, or NONE32. */
static uint32_t reclaim_thread(perch_model *m)
{
    bool ended;
    uint32_t v = reclaim_slot(m->thread_count, &m->thread_cursor, thread_usable, thread_ended,
                              m->threads, &ended);
    uint32_t cur;
    if (v == NONE32)
        return NONE32;
    model_count(m, ended ? MC_THREAD_FORGOTTEN : MC_THREAD_EVICTED, 1);
    int err = ended ? 0 : emit_thread(m, v);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    if (perch__hmap_get(&m->tid_map, m->threads[v].tid, &cur) && cur == v)
        perch__hmap_del(&m->tid_map, m->threads[v].tid);
    release_thread(m, v); /* onto the free list, where alloc_thread takes it */
    return v;
}

static uint32_t reclaim_process(perch_model *m)
{
    bool ended;
    uint32_t v = reclaim_slot(m->proc_count, &m->proc_cursor, process_usable, process_ended,
                              m->procs, &ended);
    uint32_t cur;
    if (v == NONE32)
        return NONE32;
    model_count(m, ended ? MC_PROCESS_FORGOTTEN : MC_PROCESS_EVICTED, 1);
    int err = ended ? 0 : emit_process(m, v);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    if (perch__hmap_get(&m->pid_map, m->procs[v].rec.pid, &cur) && cur == v)
        perch__hmap_del(&m->pid_map, m->procs[v].rec.pid);
    perch__pid_hits_drop(m);
    release_process(m, v);
    return v;
}

/* Installs a new process entity for pid, emitting and releasing the one it replaces. */
static uint32_t new_process(perch_model *m, uint32_t pid)
{
    uint32_t i = alloc_process(m, pid); /* first: a reclaim may take the old one's slot */
    if (i == NONE32)
        return NONE32;
    uint32_t old = perch__process_find(m, pid);
    int err = perch__hmap_put(&m->pid_map, pid, i);
    perch__pid_hits_drop(m);
    if (err == 0 && old != NONE32) {
        err = emit_process(m, old);
        release_process(m, old);
    }
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return i;
}

uint32_t perch__process_for(perch_model *m, uint32_t pid)
{
    uint32_t i = perch__process_find(m, pid);
    if (i != NONE32)
        return i;
    i = new_process(m, pid);
    if (i == NONE32)
        return NONE32;
    m->procs[i].rec.flags = PERCH_ENTITY_PROVISIONAL;
    int err = perch__process_upsert(m, i);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return i;
}

static void bind_thread(perch_model *m, uint32_t ti, uint32_t pid)
{
    uint32_t pi = perch__process_for(m, pid);
    m->threads[ti].pid = pid;
    m->threads[ti].process_key = pi == NONE32 ? 0 : m->procs[pi].rec.key;
    m->threads[ti].proc = pi;
    m->threads[ti].flags &= ~PERCH_ENTITY_PROVISIONAL;
}

static uint32_t idle_thread(perch_model *m, uint16_t cpu)
{
    cpu_state *c = perch__cpu(m, cpu);
    if (c == NULL)
        return NONE32;
    if (c->idle_thread == NONE32) {
        uint32_t i = alloc_thread(m);
        if (i == NONE32)
            return NONE32;
        c = &m->cpus[cpu];
        c->idle_thread = i;
        m->threads[i].tid = 0;
        m->threads[i].flags = PERCH_ENTITY_RUNDOWN;
        bind_thread(m, i, 0);
        int err = m->error < 0 ? m->error : perch__thread_upsert(m, i);
        if (err < 0) {
            m->error = err;
            return NONE32;
        }
    }
    return c->idle_thread;
}

/* Installs a new thread entity for tid, emitting and releasing the one it replaces. */
static uint32_t new_thread(perch_model *m, uint32_t tid)
{
    uint32_t old;
    uint32_t i = alloc_thread(m); /* first: a reclaim may take the old one's slot */
    if (i == NONE32)
        return NONE32;
    bool had = perch__hmap_get(&m->tid_map, tid, &old);
    m->threads[i].tid = tid;
    int err = perch__hmap_put(&m->tid_map, tid, i);
    m->tid_cache_tid[TID_SLOT(tid)] = tid;
    m->tid_cache_idx[TID_SLOT(tid)] = i;
    if (err == 0 && had) {
        err = emit_thread(m, old);
        release_thread(m, old);
    }
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return i;
}

uint32_t perch__thread_for_slow(perch_model *m, uint32_t tid, uint16_t cpu)
{
    uint32_t i;
    if (tid == 0)
        return idle_thread(m, cpu);
    /* An empty slot is (NONE32, NONE32): tid 0xFFFFFFFF must not take it for a hit. */
    if (m->tid_cache_tid[TID_SLOT(tid)] == tid && m->tid_cache_idx[TID_SLOT(tid)] != NONE32)
        return m->tid_cache_idx[TID_SLOT(tid)];
    if (perch__hmap_get(&m->tid_map, tid, &i)) {
        m->tid_cache_tid[TID_SLOT(tid)] = tid;
        m->tid_cache_idx[TID_SLOT(tid)] = i;
        return i;
    }
    i = new_thread(m, tid);
    if (i == NONE32)
        return NONE32;
    m->threads[i].flags = PERCH_ENTITY_PROVISIONAL;
    int err = perch__thread_upsert(m, i);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return i;
}

static bool alive(const ent_thread *t)
{
    return (t->flags & PERCH_ENTITY_ENDED) == 0;
}

/* The entity a Thread event of this opcode describes: the current one, completed when it was
 * provisional, or a new one. */
static uint32_t thread_target(perch_model *m, uint32_t tid, uint32_t pid, uint8_t op)
{
    uint32_t i;
    if (perch__hmap_get(&m->tid_map, tid, &i)) {
        ent_thread *t = &m->threads[i];
        if (t->flags & PERCH_ENTITY_PROVISIONAL)
            return i;
        if (alive(t) && op != OP_START && t->pid == pid)
            return i;
        if (alive(t) && op == OP_START)
            model_count(m, MC_THREAD_RESTART, 1);
    }
    return new_thread(m, tid);
}

static const uint32_t thread_op_flags[5] = {0, PERCH_ENTITY_STARTED, PERCH_ENTITY_ENDED,
                                            PERCH_ENTITY_RUNDOWN, 0};

int perch__thread_event(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_thread *th = &d->thread;
    uint8_t op = d->opcode;
    if (op < OP_START || op > OP_DCEND)
        return 0;
    uint32_t i = th->thread_id == 0 ? idle_thread(m, ev->cpu)
                                    : thread_target(m, th->thread_id, th->process_id, op);
    if (i == NONE32)
        return m->error;
    ent_thread *t = &m->threads[i];
    if (th->thread_id != 0 && (t->pid != th->process_id || t->process_key == 0))
        bind_thread(m, i, th->process_id);
    t = &m->threads[i];
    t->flags |= thread_op_flags[op];
    if (op == OP_START)
        t->start_ts = ev->timestamp;
    if (th->thread_name.data != NULL && th->thread_name.len > 0 && t->name == NULL) {
        t->name = perch__utf16_dup(&th->thread_name);
        if (t->name == NULL)
            return PERCH_ENOMEM;
        t->name_changed = true;
    }
    if (m->error < 0)
        return m->error;
    if (op != OP_END || th->thread_id == 0)
        return perch__thread_upsert(m, i);
    t->end_ts = ev->timestamp;
    int err = perch__samples_thread_exit(m, th->thread_id);
    return err ? err : emit_thread(m, i);
}

int perch__thread_set_name(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    uint32_t i = perch__thread_for(m, d->thread_set_name.thread_id, ev->cpu);
    if (i == NONE32)
        return m->error;
    ent_thread *t = &m->threads[i];
    if (t->emitted)
        return 0;
    perch__free(t->name);
    t->name = perch__utf16_dup(&d->thread_set_name.thread_name);
    if (t->name == NULL)
        return PERCH_ENOMEM;
    t->name_changed = true;
    return perch__thread_upsert(m, i);
}

static uint32_t process_target(perch_model *m, uint32_t pid, uint8_t op)
{
    uint32_t i = perch__process_find(m, pid);
    if (i != NONE32) {
        ent_process *p = &m->procs[i];
        bool is_alive = (p->rec.flags & PERCH_ENTITY_ENDED) == 0;
        if (p->rec.flags & PERCH_ENTITY_PROVISIONAL)
            return i;
        if (is_alive && op != OP_START)
            return i;
        if (!is_alive && op == OP_DEFUNCT)
            return i;
        if (is_alive)
            model_count(m, MC_PROCESS_RESTART, 1);
    }
    return new_process(m, pid);
}

static int fill_process(ent_process *p, const perch_process *pr)
{
    p->rec.parent_pid = pr->parent_id;
    p->rec.session_id = pr->session_id;
    p->rec.exit_status = pr->exit_status;
    if (p->image_name == NULL && pr->image_file_name.data != NULL) {
        p->image_name = perch__strdup_n(pr->image_file_name.data, pr->image_file_name.len);
        if (p->image_name == NULL)
            return PERCH_ENOMEM;
        p->rec.image_name = p->image_name;
    }
    if (p->command_line == NULL && pr->command_line.data != NULL) {
        p->command_line = perch__utf16_dup(&pr->command_line);
        if (p->command_line == NULL)
            return PERCH_ENOMEM;
        p->rec.command_line = p->command_line;
    }
    return 0;
}

static const uint32_t process_op_flags[5] = {0, PERCH_ENTITY_STARTED, PERCH_ENTITY_ENDED,
                                             PERCH_ENTITY_RUNDOWN, 0};

int perch__process_event(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    uint8_t op = d->opcode;
    if (op != OP_DEFUNCT && (op < OP_START || op > OP_DCEND))
        return 0;
    uint32_t i = process_target(m, d->process.process_id, op);
    if (i == NONE32)
        return m->error;
    ent_process *p = &m->procs[i];
    bool was_ended = (p->rec.flags & PERCH_ENTITY_ENDED) != 0;
    p->rec.flags &= ~PERCH_ENTITY_PROVISIONAL;
    p->rec.flags |= op == OP_DEFUNCT ? PERCH_ENTITY_ENDED : process_op_flags[op];
    if (op == OP_START)
        p->rec.start_ts = ev->timestamp;
    if (p->emitted)
        return 0;
    int err = fill_process(p, &d->process);
    if (err < 0)
        return err;
    if (!(op == OP_END || op == OP_DEFUNCT) || was_ended)
        return perch__process_upsert(m, i);
    p->rec.end_ts = ev->timestamp;
    return emit_process(m, i);
}

int perch__model_entities_finish(perch_model *m)
{
    int err = perch__modmap_emit_all(m, &m->kernel_mods, 0);
    for (uint32_t i = 0; i < m->thread_count && err == 0; i++)
        if (m->threads[i].key != 0)
            err = emit_thread(m, i);
    for (uint32_t i = 0; i < m->proc_count && err == 0; i++)
        if (m->procs[i].rec.key != 0)
            err = emit_process(m, i);
    return err;
}

void perch__model_entities_free(perch_model *m)
{
    for (uint32_t i = 0; i < m->thread_count; i++)
        perch__free(m->threads[i].name);
    for (uint32_t i = 0; i < m->proc_count; i++) {
        perch__free(m->procs[i].image_name);
        perch__free(m->procs[i].command_line);
        perch__modmap_free(&m->procs[i].mods);
    }
    perch__modmap_free(&m->kernel_mods);
    perch__free(m->threads);
    perch__free(m->procs);
    perch__free(m->cpus);
    perch__hmap_free(&m->tid_map);
    perch__hmap_free(&m->pid_map);
}
