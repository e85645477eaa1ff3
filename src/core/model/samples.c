/*
 * Samples waiting for their stack parts. Samples that share (timestamp, thread) form one group
 * (S3: a part belongs to every sample with its key); the group collects parts (parts.c) and is
 * finalized, i.e. its stack assembled and interned and its samples emitted, when:
 *   - a user part arrives and no key reference of the group is still unresolved,
 *   - its wait window passes (trace time > ts + wait) or its thread exits, once no reference
 *     is unresolved (a reference's definition always comes later, so it is awaited),
 *   - the trace ends (unresolved references are then ignored and counted).
 * Assembly follows S4: the kernel segments of all parts in time order, then their user
 * segments; no frame is added, dropped or reordered within a segment.
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

#define MAX_QUEUE (1u << 24)

/* True while entry still stands for a group waiting in q: for the window queues, a live group
 * whose window is open; for key_wait, a live group whose window closed with a key reference
 * still unresolved. Other entries are stale: queue_pop_live and compaction skip them. */
static bool entry_waits(const perch_model *m, const squeue *q, const qentry *e)
{
    if (e->g == QENTRY_GONE)
        return false;
    const sgroup *gr = &m->groups[e->g];
    if (!gr->live || gr->gen != e->gen)
        return false;
    if (q == &m->key_wait)
        return gr->window_closed && gr->unresolved > 0;
    return !gr->window_closed && q == &m->queues[gr->queue]; /* not one it moved out of */
}

/* Drops q's stale entries, keeping the order of the others (renumbered: a window queue's groups
 * learn their entry's new number). */
static void queue_compact(perch_model *m, squeue *q)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < q->len; i++) {
        qentry e = q->e[(q->head + i) & (q->cap - 1)];
        if (!entry_waits(m, q, &e))
            continue;
        if (q != &m->key_wait)
            m->groups[e.g].qpos = q->base + kept;
        q->e[(q->head + kept++) & (q->cap - 1)] = e;
    }
    q->len = kept;
    q->gone = 0;
    q->ahead = q->base; /* the numbers changed */
}

/* The head entry of q leaves it. */
static void queue_pop(squeue *q)
{
    q->head = (q->head + 1) & (q->cap - 1);
    q->len--;
    q->base++;
}

/* g leaves its window queue before its entry reaches the head (a part finalized it, or its
 * thread exited): the entry, still near the tail and warm, is marked, so neither expiry nor
 * compaction reads the group behind it again. */
static void queue_forget(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    squeue *q = &m->queues[gr->queue];
    uint32_t i = gr->qpos - q->base;
    if (i < q->len) {
        qentry *e = &q->e[(q->head + i) & (q->cap - 1)];
        if (e->g == g && e->gen == gr->gen) {
            e->g = QENTRY_GONE;
            q->gone++;
        }
    }
}

static int queue_grow(squeue *q)
{
    uint32_t ncap = q->cap ? q->cap * 2 : 1024;
    if (ncap > MAX_QUEUE)
        return PERCH_ELIMIT;
    qentry *e = perch__alloc(sizeof *e * ncap);
    if (e == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < q->len; i++)
        e[i] = q->e[(q->head + i) & (q->cap - 1)];
    perch__free(q->e);
    q->e = e;
    q->cap = ncap;
    q->head = 0;
    return 0;
}

/* Room for one more entry in full q (the rule below). Out of line, so the push, once per sample,
 * keeps its few registers free of what this needs (callee-saved registers pushed and popped on
 * every call when it was inline). */
PERCH_NOINLINE static int queue_make_room(perch_model *m, squeue *q)
{
    bool compact = q->cap > 0 && (q == &m->key_wait || q->gone >= q->cap / 4 * 3);
    if (compact)
        queue_compact(m, q);
    if (q->cap == 0 || q->len > q->cap / 2) {
        int err = queue_grow(q);
        if (err < 0 && !compact)
            queue_compact(m, q);
        if (err < 0 && q->len == q->cap)
            return err; /* more waiting groups than MAX_QUEUE: cannot happen (MAX_GROUPS) */
    }
    return 0;
}

/* Appends entry. A full queue first drops its stale entries (groups emitted by a user part or
 * a definition leave one behind, and when trace time stops advancing nothing expires them), and
 * grows only when that freed less than half. A window queue counts its entries marked gone and
 * compacts only when at least 3/4 are (else it grows, as compaction would visit every group
 * still waiting, each a cold read, about once per push when half the entries wait): it stays
 * within eight times the groups that wait; key_wait within twice. Whatever the timestamps do. */
static int queue_push(perch_model *m, squeue *q, qentry entry)
{
    int err = q->len == q->cap ? queue_make_room(m, q) : 0;
    if (err < 0)
        return err;
    q->run = q->len > 0 && entry.key == q->last_key ? q->run + 1 : 1;
    q->e[(q->head + q->len) & (q->cap - 1)] = entry;
    q->len++;
    q->last_key = entry.key;
    return 0;
}

/* The key of a new entry of q for a group at ts: ts unless that would decrease the keys. */
static uint64_t queue_key(const squeue *q, uint64_t ts)
{
    return q->len > 0 && q->last_key > ts ? q->last_key : ts;
}

/* True when a group at ts, queued in q next, can be found by a search of q: its key is ts and
 * at most QUEUE_RUN_SORTED entries of that key come before it (so a search looks at no more;
 * when trace time stands still, the groups past those go into the bucket table). */
static bool queue_finds(const squeue *q, uint64_t ts)
{
    if (queue_key(q, ts) != ts)
        return false;
    return q->len == 0 || q->last_key != ts || q->run < QUEUE_RUN_SORTED;
}

static int queue_add_group(perch_model *m, uint32_t g)
{
    squeue *q = &m->queues[m->groups[g].queue];
    uint64_t deadline = m->groups[g].ts + q->wait;
    if (deadline < q->deadline)
        q->deadline = deadline;
    int err = queue_push(m, q, (qentry){queue_key(q, m->groups[g].ts), g, m->groups[g].gen});
    m->groups[g].qpos = q->base + q->len - 1;
    return err;
}

/* True when entity slot ti still holds the thread of key: it may hold another since a sample
 * named it (the tid started again, or an eviction at the cap). */
static bool entity_holds(const perch_model *m, uint32_t ti, uint64_t key)
{
    return ti < m->thread_count && m->threads[ti].key == key;
}

/* Whether the thread of g's first sample may run user mode: not the idle thread, nor a thread
 * of the idle (0) or System (4) process, for whose samples no user part comes. When its entity
 * left its slot, its pid is not known, and it may. */
static bool may_run_user(const perch_model *m, const sgroup *gr)
{
    if (gr->tid == 0)
        return false;
    if (!entity_holds(m, gr->first_thread, gr->first.thread_key))
        return true;
    uint32_t pid = m->threads[gr->first_thread].pid;
    return pid != 0 && pid != 4;
}

/* Every group starts in the kernel wait: a stack's parts come with the sample or not at all,
 * but for a part that leaves the user part to come later (a kernel part, a key reference still
 * waiting), logged when the thread returns to user mode, which may be seconds. So a group
 * that gets a first part while its thread may run user mode moves to the stack wait, and one
 * that gets none in the kernel wait closes then (docs/model.md, "Samples and stacks"). */
int perch__samples_first_part(perch_model *m, uint32_t g)
{
    sgroup *gr = &m->groups[g];
    if (gr->window_closed || !may_run_user(m, gr))
        return 0; /* its window is over (it waits for a definition), or no user part comes */
    queue_forget(m, g);
    gr->queue = STACK_WAIT;
    bool findable = queue_finds(&m->queues[STACK_WAIT], gr->ts);
    int err = queue_add_group(m, g);
    return err < 0 ? err : perch__group_requeued(m, g, findable);
}

/* Frees g's second and later samples and its parts (most groups have neither). */
PERCH_NOINLINE static void release_members(perch_model *m, const sgroup *gr)
{
    for (uint32_t s = gr->samples, next; s != NONE32; s = next) {
        next = m->samples[s].next;
        m->samples[s].next = m->sample_free;
        m->sample_free = s;
    }
    for (uint32_t p = gr->parts, next; p != NONE32; p = next) {
        next = m->parts[p].next;
        if (m->parts[p].is_ref && !m->parts[p].resolved)
            perch__part_stop_waiting(m, p);
        perch__frames_free(m, m->parts[p].frames, m->parts[p].frames_class);
        m->parts[p].frames = NULL;
        m->parts[p].next = m->part_free;
        m->part_free = p;
    }
}

static void release_group(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    if (!gr->window_closed)
        queue_forget(m, g);
    if (gr->samples != NONE32 || gr->parts != NONE32)
        release_members(m, gr);
    perch__group_unlink(m, g);
}

/* Appends the kernel (pass 0) or user (pass 1) segments of g's resolved parts to scratch,
 * never beyond max frames in all. */
static uint32_t gather(perch_model *m, const sgroup *gr, int pass, uint32_t n, uint32_t max)
{
    for (uint32_t p = gr->parts; p != NONE32 && n < max; p = m->parts[p].next) {
        const spart *pt = &m->parts[p];
        uint32_t from = pass == 0 ? 0 : pt->nkernel, to = pass == 0 ? pt->nkernel : pt->count;
        uint32_t take = to - from < max - n ? to - from : max - n;
        if (take > 0)
            memcpy(m->scratch + n, pt->frames + from, sizeof *pt->frames * take);
        n += take;
    }
    return n;
}

static int assemble(perch_model *m, const sgroup *gr, uint32_t *id, uint32_t *kernel,
                    uint32_t *total, bool *unresolved_only)
{
    uint64_t need = 0;
    bool any_ref = false;
    for (uint32_t p = gr->parts; p != NONE32; p = m->parts[p].next) {
        need += m->parts[p].count;
        any_ref |= m->parts[p].is_ref && !m->parts[p].resolved;
    }
    *unresolved_only = any_ref && need == 0;
    *id = *kernel = *total = 0;
    if (need == 0)
        return 0;
    if (need > MAX_ASSEMBLED_FRAMES) { /* many parts for one sample: keep the first frames */
        model_count(m, MC_STACK_TOO_LONG, 1);
        need = MAX_ASSEMBLED_FRAMES;
    }
    int err = perch__grow_array((void **)&m->scratch, sizeof *m->scratch, &m->scratch_cap,
                                (uint32_t)need, MAX_ASSEMBLED_FRAMES);
    if (err < 0)
        return err;
    *kernel = gather(m, gr, 0, 0, (uint32_t)need);
    *total = gather(m, gr, 1, *kernel, (uint32_t)need);
    *id = perch__stack_intern(m, m->scratch, *total, *kernel);
    return *id == 0 ? (m->error < 0 ? m->error : PERCH_ENOMEM) : 0;
}

static void count_stack(perch_model *m, uint32_t kernel, uint32_t total)
{
    model_count(m, MC_SAMPLES_WITH_STACK, 1);
    model_count(m, MC_FRAMES_TOTAL, total);
    if (kernel > 0 && total > kernel)
        model_count(m, MC_STACK_MERGED, 1);
    else if (kernel > 0)
        model_count(m, MC_STACK_KERNEL_ONLY, 1);
    else
        model_count(m, MC_STACK_USER_ONLY, 1);
}

/* The stack facts every sample of a group is emitted with. */
typedef struct emit_stack {
    uint32_t id, kernel, total;
    bool unresolved_only;
} emit_stack;

static int emit_sample(perch_model *m, perch_sample_rec *rec, uint32_t thread, bool module_done,
                       const emit_stack *st)
{
    if (!module_done && entity_holds(m, thread, rec->thread_key) &&
        m->threads[thread].pid != UNKNOWN_PID)
        rec->module_key = perch__module_lookup(m, m->threads[thread].pid, rec->ip);
    rec->stack_id = st->id;
    if (st->id != 0)
        count_stack(m, st->kernel, st->total);
    else
        model_count(m, st->unresolved_only ? MC_SAMPLE_STACK_UNRESOLVED : MC_SAMPLE_NO_STACK, 1);
    return m->sink.sample != NULL ? m->sink.sample(m->sink.ctx, rec) : 0;
}

/* Emits g's samples with the stack id (0: none) and releases g. */
static int emit_group(perch_model *m, uint32_t g, enum model_counter reason, int err, uint32_t id,
                      uint32_t kernel, uint32_t total, bool unresolved_only)
{
    emit_stack st = {id, kernel, total, unresolved_only};
    sgroup *gr = &m->groups[g];
    if (err == 0) {
        err = emit_sample(m, &gr->first, gr->first_thread, gr->first_module_done, &st);
        model_count(m, reason, 1);
        m->samples_pending--;
    }
    for (uint32_t s = gr->samples; s != NONE32 && err == 0; s = m->samples[s].next) {
        psample *ps = &m->samples[s];
        err = emit_sample(m, &ps->rec, ps->thread, ps->module_done, &st);
        model_count(m, reason, 1);
        m->samples_pending--;
    }
    release_group(m, g);
    return err;
}

int perch__group_finalize(perch_model *m, uint32_t g, enum model_counter reason)
{
    uint32_t id, kernel, total;
    bool unresolved_only;
    if (m->groups[g].parts == NONE32) /* no stack: what assemble gives for no part */
        return emit_group(m, g, reason, 0, 0, 0, 0, false);
    int err = assemble(m, &m->groups[g], &id, &kernel, &total, &unresolved_only);
    return emit_group(m, g, reason, err, id, kernel, total, unresolved_only);
}

int perch__group_finalize_alone(perch_model *m, uint32_t g, const uint64_t *frames, uint32_t count,
                                uint32_t kernel)
{
    uint32_t id = perch__stack_intern(m, frames, count, kernel);
    int err = id == 0 ? (m->error < 0 ? m->error : PERCH_ENOMEM) : 0;
    return emit_group(m, g, MC_EMIT_USER_ARRIVED, err, id, kernel, count, false);
}

/* The window of g is over (time, count bound or thread exit): emit now unless a key
 * reference still waits for its definition; then g joins key_wait, oldest first. */
static int close_window(perch_model *m, uint32_t g, enum model_counter reason)
{
    queue_forget(m, g);
    m->groups[g].window_closed = 1;
    m->groups[g].reason = (uint8_t)reason;
    if (m->groups[g].unresolved == 0)
        return perch__group_finalize(m, g, reason);
    int err = perch__group_window_closed(m, g); /* no window queue entry finds it now */
    return err < 0 ? err
                   : queue_push(m, &m->key_wait, (qentry){m->groups[g].ts, g, m->groups[g].gen});
}

/* Emits g, whose window closed but whose key references still wait, without them: too many
 * samples wait. Its unresolved references count as stack.key_unresolved, its samples as
 * stack.key_wait_dropped (the rule of docs/model.md). */
static int drop_key_wait(perch_model *m, uint32_t g)
{
    for (uint32_t p = m->groups[g].parts; p != NONE32; p = m->parts[p].next)
        if (m->parts[p].is_ref && !m->parts[p].resolved)
            model_count(m, MC_KEY_UNRESOLVED, 1);
    return perch__group_finalize(m, g, MC_KEY_WAIT_DROPPED);
}

/* The first live, still-waiting group of q (popped unless peek), or NONE32. */
static inline uint32_t queue_pop_live(perch_model *m, squeue *q, bool peek)
{
    while (q->len > 0) {
        const qentry *e = &q->e[q->head];
        uint32_t g = e->g;
        bool waiting = entry_waits(m, q, e);
        if (waiting && peek)
            return g;
        q->gone -= g == QENTRY_GONE;
        queue_pop(q);
        if (waiting)
            return g;
    }
    return NONE32;
}

/* Entries behind the head whose groups expire asks the cache for. */
#define EXPIRE_PREFETCH 8u

/* Asks the cache for the groups (both lines: the sample, then the state and links) of the
 * entries up to EXPIRE_PREFETCH places behind q's head that it has not asked for yet: q->ahead
 * is the number of the next one, entries marked gone are passed over. Expiry takes groups in
 * queue order, each cold after waiting out its window (seconds of trace): asked early, the
 * misses of several groups overlap with the work between them instead of each stalling its
 * turn. */
static void expire_prefetch(const perch_model *m, squeue *q)
{
    uint32_t end = q->base + (q->len < EXPIRE_PREFETCH ? q->len : EXPIRE_PREFETCH);
    if ((int32_t)(q->ahead - q->base) < 0)
        q->ahead = q->base; /* popped past it, or renumbered by compaction */
    for (; (int32_t)(end - q->ahead) > 0; q->ahead++) {
        uint32_t g = q->e[(q->head + (q->ahead - q->base)) & (q->cap - 1)].g;
        if (g != QENTRY_GONE) {
            __builtin_prefetch(&m->groups[g]);
            __builtin_prefetch((const char *)&m->groups[g] + 64);
        }
    }
}

static int expire(perch_model *m, squeue *q, uint64_t now)
{
    int err = 0;
    uint32_t g;
    if (now <= q->deadline)
        return 0; /* nothing in q can have expired yet */
    while (err == 0 && (g = queue_pop_live(m, q, true)) != NONE32) {
        if (m->groups[g].ts + q->wait >= now) {
            q->deadline = m->groups[g].ts + q->wait;
            return 0;
        }
        queue_pop(q); /* the peek left g's entry at the head */
        expire_prefetch(m, q);
        err = close_window(m, g, MC_EMIT_WAIT_TIME);
    }
    if (err == 0)
        q->deadline = UINT64_MAX; /* empty: the next group sets it */
    return err;
}

/* The live group with the oldest open window, popped from its queue (the older head of the
 * two; a tie goes to the kernel wait), or NONE32. */
static uint32_t pop_oldest_open(perch_model *m)
{
    squeue *k = &m->queues[KERNEL_WAIT], *s = &m->queues[STACK_WAIT];
    uint32_t gk = queue_pop_live(m, k, true), gs = queue_pop_live(m, s, true);
    if (gk == NONE32 && gs == NONE32)
        return NONE32;
    bool kernel = gs == NONE32 || (gk != NONE32 && k->e[k->head].key <= s->e[s->head].key);
    queue_pop(kernel ? k : s); /* the peeks left both heads in place */
    return kernel ? gk : gs;
}

int perch__samples_advance(perch_model *m, uint64_t now)
{
    if (!perch__samples_due(m, now))
        return 0;
    int err = expire(m, &m->queues[STACK_WAIT], now);
    err = err ? err : expire(m, &m->queues[KERNEL_WAIT], now);
    /* Too many samples wait: first those whose window already closed but whose key
     * references still wait for a definition that may never come, oldest first; then the
     * oldest open windows are closed. */
    while (err == 0 && m->samples_pending > m->opts.max_pending_samples) {
        uint32_t g = queue_pop_live(m, &m->key_wait, false);
        if (g != NONE32) {
            err = drop_key_wait(m, g);
            continue;
        }
        g = pop_oldest_open(m);
        if (g == NONE32)
            break;
        err = close_window(m, g, MC_EMIT_COUNT_BOUND);
    }
    return err;
}

int perch__samples_thread_exit(perch_model *m, uint32_t tid)
{
    int err = 0;
    uint32_t g = perch__group_first_of_thread(m, tid);
    while (g != NONE32 && err == 0) {
        uint32_t next = m->groups[g].tid_next;
        if (next != NONE32) { /* cold (it waited): asked for while g is emitted */
            __builtin_prefetch(&m->groups[next]);
            __builtin_prefetch((const char *)&m->groups[next] + 64);
        }
        if (!m->groups[g].window_closed)
            err = close_window(m, g, MC_EMIT_THREAD_EXIT);
        g = next;
    }
    perch__group_thread_done(m, tid);
    return err;
}

static uint32_t alloc_sample(perch_model *m)
{
    uint32_t s = m->sample_free;
    if (s != NONE32) {
        m->sample_free = m->samples[s].next;
        return s;
    }
    int err = perch__grow_array((void **)&m->samples, sizeof *m->samples, &m->sample_cap,
                                m->sample_count + 1, MAX_GROUPS);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return m->sample_count++;
}

/* Fills rec for a sample of thread entity ti; true when its module was looked up now. */
static bool fill_sample(perch_model *m, perch_sample_rec *rec, const perch_event *ev,
                        const perch_decoded *d, uint32_t ti)
{
    bool pmc = d->type == PERCH_DECODED_PMC_SAMPLE;
    memset(rec, 0, sizeof *rec);
    rec->thread_key = m->threads[ti].key;
    rec->tid = pmc ? d->pmc_sample.thread_id : d->sampled_profile.thread_id;
    rec->cpu = ev->cpu;
    rec->kind = pmc ? PERCH_SAMPLE_PMC : PERCH_SAMPLE_TIMER;
    rec->flags = pmc ? 0 : d->sampled_profile.flags;
    rec->profile_source = pmc ? d->pmc_sample.profile_source : 0;
    rec->ts = ev->timestamp;
    rec->ip = pmc ? d->pmc_sample.instruction_pointer : d->sampled_profile.instruction_pointer;
    rec->count = pmc ? 1 : d->sampled_profile.count;
    uint32_t pid = m->threads[ti].pid;
    if (!perch__is_kernel_addr(ev->pointer_size, rec->ip) && pid == UNKNOWN_PID)
        return false;
    rec->module_key = perch__module_lookup(m, pid, rec->ip);
    return true;
}

int perch__sample(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    bool pmc = d->type == PERCH_DECODED_PMC_SAMPLE;
    uint32_t tid = pmc ? d->pmc_sample.thread_id : d->sampled_profile.thread_id;
    uint32_t ti = perch__thread_for(m, tid, ev->cpu);
    uint32_t g = ti == NONE32 ? NONE32 : perch__group_find(m, ev->timestamp, tid), s = NONE32;
    if (ti != NONE32 && g == NONE32) { /* a new group: the sample is its first, inline */
        squeue *q = &m->queues[KERNEL_WAIT];
        g = perch__group_add(m, ev->timestamp, tid, KERNEL_WAIT, queue_finds(q, ev->timestamp));
        int err = g != NONE32 ? queue_add_group(m, g) : 0;
        if (err < 0) {
            m->error = err;
            g = NONE32;
        }
        if (g != NONE32) {
            m->groups[g].first_module_done = fill_sample(m, &m->groups[g].first, ev, d, ti);
            m->groups[g].first_thread = ti;
        }
    } else if (g != NONE32 && (s = alloc_sample(m)) != NONE32) {
        psample *ps = &m->samples[s];
        ps->module_done = fill_sample(m, &ps->rec, ev, d, ti);
        ps->thread = ti;
        ps->next = NONE32;
        sgroup *gr = &m->groups[g];
        if (gr->samples_tail == NONE32)
            gr->samples = s;
        else
            m->samples[gr->samples_tail].next = s;
        gr->samples_tail = s;
    } else {
        g = NONE32;
    }
    if (g == NONE32)
        return m->error < 0 ? m->error : PERCH_ENOMEM;
    m->samples_pending++;
    model_count(m, pmc ? MC_SAMPLES_PMC : MC_SAMPLES, 1);
    return m->samples_pending > m->opts.max_pending_samples
               ? perch__samples_advance(m, ev->timestamp)
               : 0;
}

int perch__samples_finish(perch_model *m)
{
    int err = 0;
    /* Every group is emitted now, in index order: no entry needs marking on the way (each
     * mark would be a cold read of the queue). */
    m->queues[0].len = m->queues[1].len = 0;
    for (uint32_t g = 0; g < m->group_count && err == 0; g++) {
        if (!m->groups[g].live)
            continue;
        for (uint32_t p = m->groups[g].parts; p != NONE32; p = m->parts[p].next)
            if (m->parts[p].is_ref && !m->parts[p].resolved)
                model_count(m, MC_KEY_UNRESOLVED, 1);
        err = perch__group_finalize(m, g, MC_EMIT_END);
    }
    return err;
}

void perch__samples_free(perch_model *m)
{
    for (uint32_t p = 0; p < m->part_count; p++)
        perch__free(m->parts[p].frames);
    for (uint32_t d = 0; d < m->def_count; d++)
        perch__free(m->defs[d].frames);
    perch__frames_free_all(m);
    perch__free(m->parts);
    perch__free(m->samples);
    perch__free(m->queues[0].e);
    perch__free(m->queues[1].e);
    perch__free(m->key_wait.e);
    perch__free(m->defs);
    perch__free(m->scratch);
    perch__groups_free(m);
    perch__hmap_free(&m->wait_map);
    perch__hmap_free(&m->def_map);
}
