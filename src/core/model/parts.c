/*
 * Stack parts (S1, S2): StackWalk events carry frames at once; StackKeyKernel/StackKeyUser
 * references name a cached stack whose frames come with the first definition (KeyCreate,
 * KeyDelete, KeyRundown) of that key at or after the reference's own header timestamp. A
 * reference waits on its key; a definition resolves every waiting reference of its key, and is
 * remembered (first one at the latest definition time) for a reference logged at that same
 * timestamp after it. Also LBR records, attached to their thread and timestamp.
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

static uint32_t alloc_part(perch_model *m, uint32_t g, uint64_t ts, uint8_t psz)
{
    int err = perch__samples_part_coming(m, g);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    uint32_t p = m->part_free;
    if (p != NONE32) {
        m->part_free = m->parts[p].next;
    } else {
        err = perch__grow_array((void **)&m->parts, sizeof *m->parts, &m->part_cap,
                                m->part_count + 1, MAX_PARTS);
        if (err < 0) {
            m->error = err;
            return NONE32;
        }
        p = m->part_count++;
    }
    spart *pt = &m->parts[p];
    memset(pt, 0, sizeof *pt);
    pt->ts = ts;
    pt->group = g;
    pt->psz = psz;
    pt->next = pt->next_wait = pt->prev_wait = NONE32;
    sgroup *gr = &m->groups[g];
    if (gr->parts_tail == NONE32)
        gr->parts = p;
    else
        m->parts[gr->parts_tail].next = p;
    gr->parts_tail = p;
    return p;
}

/* The first count pointers of a, widened to 64 bits: perch_ptr_at with its pointer-size test
 * taken out of the loop. */
static void widen(uint64_t *f, const perch_ptr_array *a, uint32_t count)
{
    const uint8_t *p = a->data;
    if (a->pointer_size == 8) {
        for (uint32_t i = 0; i < count; i++, p += 8)
            f[i] = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                   (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
                   (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    } else {
        for (uint32_t i = 0; i < count; i++, p += 4)
            f[i] =
                (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    }
}

/* Copies count frames (pointer array or u64 array) into part p. */
static int set_frames(perch_model *m, uint32_t p, const perch_ptr_array *a, const uint64_t *u,
                      uint32_t count)
{
    if (count > MAX_PART_FRAMES) {
        model_count(m, MC_PART_TOO_LONG, 1);
        count = MAX_PART_FRAMES;
    }
    uint8_t cls;
    uint64_t *f = perch__frames_alloc(m, count, &cls);
    if (f == NULL)
        return PERCH_ENOMEM;
    if (a != NULL)
        widen(f, a, count);
    else
        memcpy(f, u, sizeof *f * count);
    uint32_t k = 0; /* the kernel segment: the leading kernel-address frames (S4) */
    while (k < count && perch__is_kernel_addr(m->parts[p].psz, f[k]))
        k++;
    perch__frames_free(m, m->parts[p].frames, m->parts[p].frames_class);
    m->parts[p].frames = f;
    m->parts[p].frames_class = cls;
    m->parts[p].nkernel = k;
    m->parts[p].count = count;
    m->parts[p].resolved = 1;
    return 0;
}

static bool has_user_frame(const perch_ptr_array *a)
{
    for (uint32_t i = 0; i < a->count; i++)
        if (!perch__is_kernel_addr(a->pointer_size, perch_ptr_at(a, i)))
            return true;
    return false;
}

/* The walk a of a group with no part yet: when it has user frames, the group is finalized at
 * once with a as its whole stack (1), with no part stored and no frame copied but the one
 * into the assembly buffer; else 0 (stored as a part, as any walk) or an error. */
static int walk_alone(perch_model *m, uint32_t g, const perch_ptr_array *a)
{
    uint32_t count = a->count > MAX_PART_FRAMES ? MAX_PART_FRAMES : a->count, k = 0;
    if (count == 0)
        return 0;
    int err = perch__grow_array((void **)&m->scratch, sizeof *m->scratch, &m->scratch_cap, count,
                                MAX_ASSEMBLED_FRAMES);
    if (err < 0)
        return err;
    uint64_t *f = m->scratch;
    widen(f, a, count);
    while (k < count && perch__is_kernel_addr(a->pointer_size, f[k]))
        k++;
    if (k == count && !has_user_frame(a))
        return 0;
    if (a->count > MAX_PART_FRAMES)
        model_count(m, MC_PART_TOO_LONG, 1);
    m->groups[g].has_user = 1;
    err = perch__group_finalize_alone(m, g, f, count, k);
    return err < 0 ? err : 1;
}

int perch__stack_walk(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_stack_walk *w = &d->stack_walk;
    uint32_t g = perch__group_find(m, w->event_timestamp, w->thread_id);
    model_count(m, MC_PARTS_WALK, 1);
    if (g == NONE32) {
        model_count(m, MC_PART_ORPHAN, 1);
        return 0;
    }
    if (m->groups[g].parts == NONE32) { /* the common case: the walk is the whole stack */
        int done = walk_alone(m, g, &w->frames);
        if (done != 0)
            return done < 0 ? done : 0;
    }
    uint32_t p = alloc_part(m, g, ev->timestamp, w->frames.pointer_size);
    if (p == NONE32)
        return m->error;
    int err = set_frames(m, p, &w->frames, NULL, w->frames.count);
    if (err < 0 || !has_user_frame(&w->frames))
        return err;
    m->groups[g].has_user = 1;
    return m->groups[g].unresolved == 0 ? perch__group_finalize(m, g, MC_EMIT_USER_ARRIVED) : 0;
}

int perch__stack_key_ref(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_stack_key_ref *r = &d->stack_key_ref;
    bool user = d->opcode == 38;
    uint32_t g = perch__group_find(m, r->event_timestamp, r->thread_id), di;
    model_count(m, user ? MC_PARTS_KEY_USER : MC_PARTS_KEY_KERNEL, 1);
    if (g == NONE32) {
        model_count(m, MC_PART_ORPHAN, 1);
        return 0;
    }
    uint32_t p = alloc_part(m, g, ev->timestamp, ev->pointer_size);
    if (p == NONE32)
        return m->error;
    spart *pt = &m->parts[p];
    pt->is_ref = 1;
    pt->user_ref = user;
    pt->stack_key = r->stack_key;
    int err = 0;
    if (perch__hmap_get(&m->def_map, r->stack_key, &di) && m->defs[di].ts == ev->timestamp) {
        err = set_frames(m, p, NULL, m->defs[di].frames, m->defs[di].count);
    } else {
        uint32_t *head = perch__hmap_ref(&m->wait_map, r->stack_key);
        if (head != NULL) { /* the newest first, as the definition walks them */
            pt->next_wait = *head;
            m->parts[*head].prev_wait = p;
            *head = p;
        } else {
            err = perch__hmap_put(&m->wait_map, r->stack_key, p);
        }
        m->groups[g].unresolved++;
    }
    if (err < 0 || !user)
        return err;
    m->groups[g].has_user = 1;
    return m->groups[g].unresolved == 0 ? perch__group_finalize(m, g, MC_EMIT_USER_ARRIVED) : 0;
}

void perch__part_stop_waiting(perch_model *m, uint32_t p)
{
    const spart *pt = &m->parts[p];
    if (pt->next_wait != NONE32)
        m->parts[pt->next_wait].prev_wait = pt->prev_wait;
    if (pt->prev_wait != NONE32) {
        m->parts[pt->prev_wait].next_wait = pt->next_wait;
    } else if (pt->next_wait != NONE32) {
        uint32_t *head = perch__hmap_ref(&m->wait_map, pt->stack_key);
        if (head != NULL)
            *head = pt->next_wait;
    } else {
        perch__hmap_del(&m->wait_map, pt->stack_key);
    }
}

/* Forgets the definitions of an earlier timestamp: a reference only ever uses one logged at
 * its own timestamp, and references come in time order, so only those at the latest
 * definition time can still be used. Keeps the table as small as one timestamp's
 * definitions, whatever the trace length. */
static void forget_defs(perch_model *m)
{
    for (uint32_t di = 0; di < m->def_count; di++) {
        perch__frames_free(m, m->defs[di].frames, m->defs[di].frames_class);
        perch__hmap_del(&m->def_map, m->defs[di].key);
    }
    m->def_count = 0;
}

/* Remembers the definition for references logged at its own timestamp after it: the first
 * one of its key at that time. Past MAX_DEFS at one timestamp it is not remembered (counted);
 * waiting references still get it. */
static int remember_def(perch_model *m, uint64_t key, uint64_t ts, const perch_ptr_array *a)
{
    uint32_t di;
    if (ts != m->def_time || m->def_count == 0) {
        forget_defs(m);
        m->def_time = ts;
    }
    if (perch__hmap_get(&m->def_map, key, &di))
        return 0; /* keep the first definition at this time */
    if (m->def_count >= MAX_DEFS) {
        model_count(m, MC_DEFS_DROPPED, 1);
        return 0;
    }
    int err = perch__grow_array((void **)&m->defs, sizeof *m->defs, &m->def_cap, m->def_count + 1,
                                MAX_DEFS);
    if (err < 0)
        return err;
    uint32_t count = a->count > MAX_PART_FRAMES ? MAX_PART_FRAMES : a->count;
    keydef *d = &m->defs[m->def_count];
    d->frames = perch__frames_alloc(m, count, &d->frames_class);
    if (d->frames == NULL)
        return PERCH_ENOMEM;
    err = perch__hmap_put(&m->def_map, key, m->def_count);
    if (err < 0) {
        perch__frames_free(m, d->frames, d->frames_class);
        return err;
    }
    for (uint32_t i = 0; i < count; i++)
        d->frames[i] = perch_ptr_at(a, i);
    d->key = key;
    d->ts = ts;
    d->count = count;
    m->def_count++;
    return 0;
}

int perch__stack_key_def(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_stack_key_def *def = &d->stack_key_def;
    uint32_t p = NONE32;
    int err = remember_def(m, def->stack_key, ev->timestamp, &def->frames);
    if (err < 0 || !perch__hmap_get(&m->wait_map, def->stack_key, &p))
        return err;
    perch__hmap_del(&m->wait_map, def->stack_key);
    while (p != NONE32 && err == 0) {
        uint32_t next = m->parts[p].next_wait, g = m->parts[p].group;
        err = set_frames(m, p, &def->frames, NULL, def->frames.count);
        sgroup *gr = &m->groups[g];
        gr->unresolved--;
        if (err == 0 && gr->unresolved == 0 && (gr->window_closed || gr->has_user))
            err = perch__group_finalize(
                m, g, gr->window_closed ? (enum model_counter)gr->reason : MC_EMIT_USER_ARRIVED);
        p = next;
    }
    return err;
}

int perch__lbr(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_lbr *l = &d->lbr;
    uint64_t from[MAX_LBR], to[MAX_LBR];
    uint32_t n = l->entry_count;
    if (n > MAX_LBR) {
        model_count(m, MC_LBR_TOO_LONG, 1);
        n = MAX_LBR;
    }
    uint32_t ti = perch__thread_for(m, l->thread_id, ev->cpu);
    if (ti == NONE32)
        return m->error;
    for (uint32_t i = 0; i < n; i++) {
        from[i] = perch_lbr_from(l, i);
        to[i] = perch_lbr_to(l, i);
    }
    uint64_t ts = l->timestamp != 0 ? l->timestamp : ev->timestamp;
    perch_lbr_rec rec = {
        m->threads[ti].key, l->thread_id, l->process_id, ts, l->filters, n, from, to};
    model_count(m, MC_LBR_RECORDS, 1);
    return m->sink.lbr != NULL ? m->sink.lbr(m->sink.ctx, &rec) : 0;
}

/* PmcCounterConfig: names the PMC counters that ride on events (counter i is names[i]). */
int perch__pmc_config(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_pmc_config *c = &d->pmc_config;
    char *names[PERCH_MAX_PMC];
    uint32_t n = 0, pos = 0;
    perch_wstr w;
    int err = 0;
    (void)ev;
    while (n < PERCH_MAX_PMC && perch_wstr_list_next(&c->counter_names, &pos, &w)) {
        names[n] = perch__utf16_dup(&w);
        if (names[n] == NULL) {
            err = PERCH_ENOMEM;
            break;
        }
        n++;
    }
    if (err == 0 && m->sink.counters != NULL) {
        perch_counters_rec rec = {n, (const char *const *)names};
        err = m->sink.counters(m->sink.ctx, &rec);
    }
    for (uint32_t i = 0; i < n; i++)
        perch__free(names[i]);
    return err;
}
