/*
 * The sample groups' storage and indexes (samples.c uses them): groups live in one array with a
 * free list; each thread has a list of its pending groups for thread exit. The group of
 * (timestamp, thread) is found in a ring of the RECENT_GROUPS newest groups, then by a binary
 * search of the window queues (samples.c), whose entries are in creation order with keys that
 * never decrease (a group's own timestamp, for every group created in time order), then in a
 * bucket table that holds only the live groups the other two cannot find: those that left the
 * ring after their window closed (they wait for a key definition), that came out of time
 * order, or whose first stack part came after a later group's (moved to the stack wait with a
 * later key, samples.c). The thread lists and the buckets are intrusive and doubly linked through
 * the groups themselves, so a group costs no hash-map insertion or deletion: a bucket head is a
 * plain array slot, and a thread's list head is a hash-map value updated in place (the entry of a
 * thread is removed at its exit, not per sample).
 *
 * Why this shape: a sample opens a group with a timestamp newer than every group's (records
 * come in time order), which group_max_ts answers without a lookup, and a part names a group
 * that is nearly always among the last few created (its kernel part follows the sample; of the
 * 724 k lookups of a 64 MiB synthetic trace, 263 k found a ring entry and 371 looked further).
 * Most groups are released while still in the ring; the others (a sample without a stack
 * waits out its kernel wait, one with a kernel part the stack wait for its user part) used to
 * be linked into the bucket table as they left the ring and unlinked at their release, two
 * random accesses to cold groups each, the largest cost of the model. The queues hold them
 * anyway, in order, so the rare lookup searches there instead.
 *
 * The order of every list is the order the previous implementation had (newest first), and
 * group indexes are handed out in the same order, so outputs are unchanged.
 */
#include <stddef.h>
#include <stdint.h>
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

/* The group of (ts, tid) among the first QUEUE_RUN_SORTED entries of q with key ts whose
 * window is open, or NONE32. */
static uint32_t queue_find(const perch_model *m, const squeue *q, uint64_t ts, uint32_t tid)
{
    uint32_t lo = 0, hi = q->len, mask = q->cap - 1;
    while (lo < hi) { /* the first entry with key >= ts */
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->e[(q->head + mid) & mask].key < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t end = lo + QUEUE_RUN_SORTED; lo < q->len && lo < end; lo++) {
        const qentry *e = &q->e[(q->head + lo) & mask];
        if (e->key != ts)
            break;
        if (e->g == QENTRY_GONE)
            continue;
        const sgroup *gr = &m->groups[e->g];
        if (gr->live && gr->gen == e->gen && !gr->window_closed && gr->ts == ts && gr->tid == tid)
            return e->g;
    }
    return NONE32;
}

uint32_t perch__group_find_slow(const perch_model *m, uint64_t ts, uint32_t tid)
{
    uint32_t n = m->recent_seq < RECENT_GROUPS ? m->recent_seq : RECENT_GROUPS, g;
    for (uint32_t i = 1; i <= n; i++) { /* newest first */
        const recent_group *r = &m->recent[(m->recent_seq - i) & (RECENT_GROUPS - 1)];
        if (r->ts == ts && r->tid == tid && r->g1 != 0)
            return r->g1 - 1;
    }
    for (unsigned q = 0; q < 2; q++)
        if ((g = queue_find(m, &m->queues[q], ts, tid)) != NONE32)
            return g;
    if (m->groups_hashed == 0)
        return NONE32;
    for (g = m->group_heads[bucket_of(m, ts, tid)]; g != NONE32; g = m->groups[g].next_hash)
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

PERCH_NOINLINE static void bucket_unlink(perch_model *m, uint32_t g)
{
    const sgroup *gr = &m->groups[g];
    if (gr->next_hash != NONE32)
        m->groups[gr->next_hash].prev_hash = gr->prev_hash;
    if (gr->prev_hash != NONE32)
        m->groups[gr->prev_hash].next_hash = gr->next_hash;
    else
        m->group_heads[bucket_of(m, gr->ts, gr->tid)] = gr->next_hash;
}

/* Keeps at least one bucket per hashed group: doubles the table and relinks them all. */
static int reserve_buckets(perch_model *m)
{
    uint32_t n = m->group_buckets ? m->group_buckets * 2 : MIN_BUCKETS, *heads;
    if (m->groups_hashed < m->group_buckets)
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

/* Puts live group g into the bucket table (once). */
PERCH_NOINLINE static int bucket_add(perch_model *m, uint32_t g)
{
    if (m->groups[g].hashed)
        return 0;
    int err = reserve_buckets(m);
    if (err < 0)
        return err;
    m->groups[g].hashed = 1;
    m->groups_hashed++;
    bucket_link(m, g);
    return 0;
}

static bool in_ring(const perch_model *m, uint32_t g)
{
    return m->recent_seq - m->groups[g].recent_seq <= RECENT_GROUPS &&
           m->recent[m->groups[g].recent_seq & (RECENT_GROUPS - 1)].g1 == g + 1;
}

int perch__group_window_closed(perch_model *m, uint32_t g)
{
    return in_ring(m, g) ? 0 : bucket_add(m, g);
}

int perch__group_requeued(perch_model *m, uint32_t g, bool findable)
{
    m->groups[g].sorted = findable; /* the ring puts it into the table as it leaves, if not */
    return findable || in_ring(m, g) ? 0 : bucket_add(m, g);
}

/* Makes g the newest group of the ring; the oldest one leaves it, into the bucket table when
 * still live and no window queue entry can find it. */
static int recent_push(perch_model *m, uint32_t g)
{
    recent_group *r = &m->recent[m->recent_seq & (RECENT_GROUPS - 1)];
    if (r->g1 != 0) {
        const sgroup *old = &m->groups[r->g1 - 1];
        if (old->window_closed || !old->sorted) {
            int err = bucket_add(m, r->g1 - 1);
            if (err < 0)
                return err;
        }
    }
    r->ts = m->groups[g].ts;
    r->tid = m->groups[g].tid;
    r->g1 = g + 1;
    m->groups[g].recent_seq = m->recent_seq++;
    if (m->groups[g].ts > m->group_max_ts)
        m->group_max_ts = m->groups[g].ts;
    return 0;
}

/* The list head of tid in tid_groups (updated in place), or NULL: through the cache in front,
 * as every group's link and unlink asks for it. */
PERCH_NOINLINE static uint32_t *tid_head_miss(perch_model *m, uint32_t tid)
{
    tid_head_cache *c = &m->tg_cache[TID_SLOT(tid)];
    uint32_t slot = perch__hmap_slot(&m->tid_groups, tid);
    if (slot == NONE32)
        return NULL;
    c->tid = tid;
    c->slot = slot;
    c->gen = m->tg_gen;
    return &m->tid_groups.vals[slot];
}

static uint32_t *tid_head(perch_model *m, uint32_t tid)
{
    const tid_head_cache *c = &m->tg_cache[TID_SLOT(tid)];
    if (c->tid != tid || c->gen != m->tg_gen)
        return tid_head_miss(m, tid);
    return &m->tid_groups.vals[c->slot];
}

/* tid_groups gains or loses a key: slots may move. */
static void tid_heads_moved(perch_model *m)
{
    if (++m->tg_gen == 0) { /* wrapped: entries of an old gen 0 could match again */
        memset(m->tg_cache, 0, sizeof m->tg_cache);
        m->tg_gen = 1;
    }
}

static int tid_link(perch_model *m, uint32_t g)
{
    sgroup *gr = &m->groups[g];
    uint32_t *head;
    if (gr->tid == 0)
        return 0; /* idle threads never exit */
    head = tid_head(m, gr->tid);
    if (head == NULL) {
        tid_heads_moved(m);
        return perch__hmap_put(&m->tid_groups, gr->tid, g);
    }
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
        uint32_t *head = tid_head(m, gr->tid);
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
    uint32_t *head = tid_head(m, tid);
    if (head != NULL && *head == EMPTY_LIST) {
        tid_heads_moved(m);
        perch__hmap_del(&m->tid_groups, tid); /* once per thread exit */
    }
}

/* Grows the groups array as perch__grow_array would, but keeps it aligned to a cache line, so
 * a group (and its first sample) is exactly two lines, not three. */
#define LINE 64u
_Static_assert(sizeof(sgroup) % LINE == 0, "a group is whole cache lines");
_Static_assert(offsetof(sgroup, first) == 0, "group_add clears what follows first");
PERCH_NOINLINE static int grow_groups(perch_model *m, uint32_t need)
{
    if (need <= m->group_cap)
        return 0;
    if (need > MAX_GROUPS)
        return PERCH_ELIMIT;
    uint64_t ncap = m->group_cap ? (uint64_t)m->group_cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > MAX_GROUPS)
        ncap = MAX_GROUPS;
    size_t old_off = m->groups != NULL ? (size_t)((char *)m->groups - (char *)m->groups_raw) : 0;
    char *raw = perch__realloc(m->groups_raw, (size_t)ncap * sizeof *m->groups + LINE);
    if (raw == NULL)
        return PERCH_ENOMEM;
    /* realloc kept the bytes, not always their alignment (a large block usually moves by whole
     * pages, so nothing moves here) */
    size_t off = (size_t)(-(uintptr_t)raw & (LINE - 1));
    if (off != old_off && m->group_count > 0)
        memmove(raw + off, raw + old_off, (size_t)m->group_count * sizeof *m->groups);
    m->groups_raw = raw;
    m->groups = (sgroup *)(void *)(raw + off);
    uint32_t *free_stack = perch__realloc(m->group_free, (size_t)ncap * sizeof *free_stack);
    if (free_stack == NULL)
        return PERCH_ENOMEM; /* the groups grew, group_cap did not: the next call retries */
    m->group_free = free_stack;
    m->group_cap = (uint32_t)ncap;
    return 0;
}

/* A free group slot: the last one freed, or a new one. The slot to be taken after it is asked
 * of the cache now (a slot freed long ago is cold, and the next sample writes both its lines). */
static uint32_t take_slot(perch_model *m)
{
    if (m->group_free_count > 0) {
        uint32_t g = m->group_free[--m->group_free_count];
        if (m->group_free_count > 0) {
            const char *next = (const char *)&m->groups[m->group_free[m->group_free_count - 1]];
            __builtin_prefetch(next, 1);
            __builtin_prefetch(next + 64, 1);
        }
        return g;
    }
    int err = grow_groups(m, m->group_count + 1);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    m->groups[m->group_count].gen = 0;
    return m->group_count++;
}

uint32_t perch__group_add(perch_model *m, uint64_t ts, uint32_t tid, uint8_t queue, bool sorted)
{
    uint32_t g = take_slot(m);
    if (g == NONE32)
        return NONE32;
    sgroup *gr = &m->groups[g];
    uint32_t gen = gr->gen;
    /* first, the leading member, is the caller's to fill (samples.c) */
    memset((char *)gr + sizeof gr->first, 0, sizeof *gr - sizeof gr->first);
    gr->gen = gen;
    gr->ts = ts;
    gr->tid = tid;
    gr->samples = gr->samples_tail = gr->parts = gr->parts_tail = NONE32;
    gr->live = 1;
    gr->queue = queue;
    gr->sorted = sorted;
    gr->tid_prev = gr->tid_next = NONE32;
    int err = tid_link(m, g);
    if (err == 0 && (err = recent_push(m, g)) < 0)
        tid_unlink(m, g);
    if (err < 0) {
        m->error = err;
        gr->live = 0;
        m->group_free[m->group_free_count++] = g;
        return NONE32;
    }
    m->groups_live++;
    return g;
}

void perch__group_unlink(perch_model *m, uint32_t g)
{
    tid_unlink(m, g);
    if (m->groups[g].hashed) {
        bucket_unlink(m, g);
        m->groups_hashed--;
    } else if (in_ring(m, g)) {
        m->recent[m->groups[g].recent_seq & (RECENT_GROUPS - 1)].g1 = 0;
    }
    m->groups[g].live = 0;
    m->groups[g].gen++;
    m->group_free[m->group_free_count++] = g;
    m->groups_live--;
}

void perch__groups_free(perch_model *m)
{
    perch__free(m->groups_raw);
    perch__free(m->group_free);
    perch__free(m->group_heads);
    perch__hmap_free(&m->tid_groups);
}
