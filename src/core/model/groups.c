/*
 * The sample groups' storage and indexes (samples.c uses them): groups live in one array with a
 * free list; the group of (timestamp, thread) is found in a ring of the RECENT_GROUPS newest
 * groups, then in a bucket table that holds only the groups that left the ring while still
 * live; each thread has a list of its pending groups for thread exit. Both the buckets and the
 * thread lists are intrusive and doubly linked through the groups themselves, so creating and
 * releasing a group costs no hash-map insertion or deletion: a bucket head is a plain array
 * slot, and a thread's list head is a hash-map value updated in place (the entry of a thread
 * is removed at its exit, not per sample).
 *
 * Why the ring: a sample opens a group with a timestamp newer than every group's (records come
 * in time order), which group_max_ts answers without a lookup, and a part names a group that is
 * nearly always among the last few created (its kernel part follows the sample; 98% of the
 * parts of a synthetic trace found their group among the last 4, all but 0.2% among the last
 * 64). Most groups (those with a user part) are released while still in the ring and never
 * touch the bucket table, whose random accesses were the largest cost of the model.
 *
 * The order of every list is the order the previous implementation had (newest first), and
 * group indexes are handed out in the same order, so outputs are unchanged.
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

#define EMPTY_LIST  (NONE32 - 1) /* a thread's list head when it has no pending group */
#define MIN_BUCKETS 1024u

static uint32_t bucket_of(const perch_model *m, uint64_t ts, uint32_t tid)
{
    return (uint32_t)perch__mix64(ts ^ ((uint64_t)tid * 0x9E3779B97F4A7C15ull)) &
           (m->group_buckets - 1);
}

uint32_t perch__group_find(const perch_model *m, uint64_t ts, uint32_t tid)
{
    if (ts > m->group_max_ts)
        return NONE32; /* newer than every group: a sample in time order */
    uint32_t n = m->recent_seq < RECENT_GROUPS ? m->recent_seq : RECENT_GROUPS;
    for (uint32_t i = 1; i <= n; i++) { /* newest first */
        const recent_group *r = &m->recent[(m->recent_seq - i) & (RECENT_GROUPS - 1)];
        if (r->ts == ts && r->tid == tid && r->g1 != 0)
            return r->g1 - 1;
    }
    if (m->group_buckets == 0)
        return NONE32;
    for (uint32_t g = m->group_heads[bucket_of(m, ts, tid)]; g != NONE32;
         g = m->groups[g].next_hash)
        if (m->groups[g].ts == ts && m->groups[g].tid == tid)
            return g;
    return NONE32;
}

static void bucket_link(perch_model *m, uint32_t g)
{
    sgroup *gr = &m->groups[g];
    uint32_t *head = &m->group_heads[bucket_of(m, gr->ts, gr->tid)];
    gr->next_hash = *head;
    gr->prev_hash = NONE32;
    if (*head != NONE32)
        m->groups[*head].prev_hash = g;
    *head = g;
}

static void bucket_unlink(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    if (gr->next_hash != NONE32)
        m->groups[gr->next_hash].prev_hash = gr->prev_hash;
    if (gr->prev_hash != NONE32)
        m->groups[gr->prev_hash].next_hash = gr->next_hash;
    else
        m->group_heads[bucket_of(m, gr->ts, gr->tid)] = gr->next_hash;
}

/* Keeps at least one bucket per live group: doubles the table and relinks every live group. */
static int reserve_buckets(perch_model *m)
{
    uint32_t n = m->group_buckets ? m->group_buckets * 2 : MIN_BUCKETS, *heads;
    if (m->groups_live < m->group_buckets)
        return 0;
    heads = perch__alloc(sizeof *heads * n);
    if (heads == NULL)
        return PERCH_ENOMEM;
    memset(heads, 0xff, sizeof *heads * n);
    perch__free(m->group_heads);
    m->group_heads = heads;
    m->group_buckets = n;
    for (uint32_t g = 0; g < m->group_count; g++)
        if (m->groups[g].live && m->groups[g].hashed)
            bucket_link(m, g);
    return 0;
}

/* Makes g the newest group of the ring; the oldest one leaves it, into the bucket table when
 * still live (reserve_buckets made room for every live group). */
static void recent_push(perch_model *m, uint32_t g)
{
    recent_group *r = &m->recent[m->recent_seq & (RECENT_GROUPS - 1)];
    if (r->g1 != 0) {
        m->groups[r->g1 - 1].hashed = 1;
        bucket_link(m, r->g1 - 1);
    }
    r->ts = m->groups[g].ts;
    r->tid = m->groups[g].tid;
    r->g1 = g + 1;
    m->groups[g].recent_seq = m->recent_seq++;
    if (m->groups[g].ts > m->group_max_ts)
        m->group_max_ts = m->groups[g].ts;
}

static int tid_link(perch_model *m, uint32_t g)
{
    sgroup *gr = &m->groups[g];
    uint32_t *head;
    if (gr->tid == 0)
        return 0; /* idle threads never exit */
    head = perch__hmap_ref(&m->tid_groups, gr->tid);
    if (head == NULL)
        return perch__hmap_put(&m->tid_groups, gr->tid, g);
    if (*head != EMPTY_LIST) {
        gr->tid_next = *head;
        m->groups[*head].tid_prev = g;
    }
    *head = g;
    return 0;
}

static void tid_unlink(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    if (gr->tid == 0)
        return;
    if (gr->tid_next != NONE32)
        m->groups[gr->tid_next].tid_prev = gr->tid_prev;
    if (gr->tid_prev != NONE32) {
        m->groups[gr->tid_prev].tid_next = gr->tid_next;
    } else {
        uint32_t *head = perch__hmap_ref(&m->tid_groups, gr->tid);
        if (head != NULL)
            *head = gr->tid_next != NONE32 ? gr->tid_next : EMPTY_LIST;
    }
}

uint32_t perch__group_first_of_thread(const perch_model *m, uint32_t tid)
{
    uint32_t g;
    if (!perch__hmap_get(&m->tid_groups, tid, &g) || g == EMPTY_LIST)
        return NONE32;
    return g;
}

void perch__group_thread_done(perch_model *m, uint32_t tid)
{
    uint32_t *head = perch__hmap_ref(&m->tid_groups, tid);
    if (head != NULL && *head == EMPTY_LIST)
        perch__hmap_del(&m->tid_groups, tid); /* once per thread exit */
}

static uint32_t take_slot(perch_model *m)
{
    uint32_t g = m->group_free;
    if (g != NONE32) {
        m->group_free = m->groups[g].next_hash;
        return g;
    }
    int err = perch__grow_array((void **)&m->groups, sizeof *m->groups, &m->group_cap,
                                m->group_count + 1, MAX_GROUPS);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    m->groups[m->group_count].gen = 0;
    return m->group_count++;
}

uint32_t perch__group_add(perch_model *m, uint64_t ts, uint32_t tid, uint8_t queue)
{
    int err = reserve_buckets(m);
    uint32_t g = err < 0 ? NONE32 : take_slot(m);
    if (g == NONE32) {
        if (err < 0)
            m->error = err;
        return NONE32;
    }
    sgroup *gr = &m->groups[g];
    uint32_t gen = gr->gen;
    memset(gr, 0, sizeof *gr);
    gr->gen = gen;
    gr->ts = ts;
    gr->tid = tid;
    gr->samples = gr->samples_tail = gr->parts = gr->parts_tail = NONE32;
    gr->live = 1;
    gr->queue = queue;
    gr->tid_prev = gr->tid_next = NONE32;
    err = tid_link(m, g);
    if (err < 0) {
        m->error = err;
        gr->live = 0;
        gr->next_hash = m->group_free;
        m->group_free = g;
        return NONE32;
    }
    recent_push(m, g);
    m->groups_live++;
    return g;
}

void perch__group_unlink(perch_model *m, uint32_t g)
{
    tid_unlink(m, g);
    if (m->groups[g].hashed)
        bucket_unlink(m, g);
    else
        m->recent[m->groups[g].recent_seq & (RECENT_GROUPS - 1)].g1 = 0;
    m->groups[g].live = 0;
    m->groups[g].gen++;
    m->groups[g].next_hash = m->group_free;
    m->group_free = g;
    m->groups_live--;
}

void perch__groups_free(perch_model *m)
{
    perch__free(m->groups);
    perch__free(m->group_heads);
    perch__hmap_free(&m->tid_groups);
}
