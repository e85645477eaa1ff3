/*
 * Visiting the sample log's groups at finish (perch__samplelog_each): each group, in (thread
 * key, kind, PMC source) order, is read back into its rows and samples (perch__group_build,
 * groups.c) and handed to the format's writer. With a helper thread (the default; options
 * threads = 1: none) the next large group is built while the writer writes this one: the
 * builder fills the sample log's first two group states in turn, the k-th large group in
 * st[k % 2], and builds it only once large group k - 2 was written. A small group (fewer
 * than SMALL_GROUP entries) is built by the writer itself, in st[2], when its turn comes:
 * handing it over costs more than building it (a wake-up of the other core each way; a
 * capture of 4 M one-sample threads spent most of its export in them). The writer sees the
 * same groups with the same arrays in the same order either way, so the output is the same;
 * the budget is shared (atomic), and each state reads its log through its own window.
 *
 * perch__samplelog_each_prepared (gecko, which keeps each group's samples: two of its largest
 * group states at once took its peak RSS at 512 MB from 58 to 68 MiB) builds every group in
 * st[0] and hands it to the format's prepare callback on the builder's thread, which copies
 * what its writer needs into the format's own slot i % slots (compactly); visit then gets the
 * slot on the writer's thread. The builder may run ahead by more than one group, up to the
 * slots, while the groups ahead of the next one hold at most `ahead` samples together: most
 * groups are small, and a handover per group (a wake-up on the other core) costs more than
 * building or writing one of them.
 *
 * An error of the builder is returned after the writer visited every group built before it
 * (as the one-thread loop would); an error of the writer stops the builder at its next group.
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "perch/thread.h"
#include "util/mem.h"

/* Groups of fewer entries are built on the writer's thread (perch__samplelog_each). */
#define SMALL_GROUP 1024

struct builder {
    perch__collect *c;
    size_t n;
    size_t small; /* groups of fewer entries: built by the writer (0: none) */
    /* perch__samplelog_each_prepared: prepare on the builder, visit_slot on the writer */
    int (*prepare)(void *ctx, const perch__group *g, size_t slot);
    int (*visit_slot)(void *ctx, size_t slot);
    void *ctx;
    size_t slots;   /* group i is in slot i % slots */
    uint64_t ahead; /* most samples in the groups built beyond the next one */
    /* Counted in the groups the builder builds (the k-th: slot k % slots). Each side
     * publishes its progress with an atomic store and takes the mutex only to sleep, or to
     * wake the other side when that one said it sleeps (its flag, set under the mutex before
     * it checks again): a handover of many small groups is then a few loads and stores, not
     * two futex calls. The flag and the counter are sequentially consistent, so of a store
     * of one side and the other side's flag at least one sees the other's. */
    perch_mutex *mu;
    perch_cond *cv;
    _Atomic size_t built;   /* groups built: group k is in its slot while visited <= k < built */
    _Atomic size_t visited; /* groups the writer is done with */
    _Atomic int error;      /* the builder's error */
    _Atomic bool stop;      /* the writer stopped */
    _Atomic bool builder_sleeps, writer_sleeps;
};

static int cmp_group(const void *x, const void *y)
{
    const perch__group_ref *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

static const perch__vlog *group_at(perch__collect *c, size_t i)
{
    return &c->samples.log.v[c->samples.order[i].index];
}

static perch__group group_of_state(perch__collect *c, size_t i, const perch__gstate *s)
{
    const perch__vlog *g = group_at(c, i);
    bool want = c->samples.want_samples;
    return (perch__group){
        .rows = s->rows,
        .row_count = s->row_count,
        .thread = perch__group_thread(c, g),
        .count = g->sum,
        .samples = want ? s->v : NULL,
        .sample_count = want ? s->v_count : 0,
    };
}

static int visit_one(perch__collect *c, size_t i, const perch__gstate *s,
                     int (*visit)(void *ctx, const perch__group *g), void *ctx)
{
    perch__group grp = group_of_state(c, i, s);
    return visit(ctx, &grp);
}

/* Builds group i: into st[slot], or (prepared) into st[0] and then the format's slot. */
static int build_one(struct builder *b, size_t i, size_t slot)
{
    perch__gstate *s = &b->c->samples.st[b->prepare ? 0 : slot];
    int err = perch__group_build(b->c, s, group_at(b->c, i));
    if (!err && b->prepare) {
        perch__group grp = group_of_state(b->c, i, s);
        err = b->prepare(b->ctx, &grp, slot);
    }
    return err;
}

/* Whether group i may be built now: the next group always, further ones while a slot is
 * free and the samples ahead stay under b->ahead. i counts the groups the builder builds;
 * past the next one it is also the group's index (slots > 2 only with small = 0). */
static bool may_build(struct builder *b, size_t i)
{
    size_t visited = atomic_load(&b->visited);
    uint64_t held = 0;
    if (i <= visited + 1)
        return true;
    if (i >= visited + b->slots)
        return false;
    for (size_t j = visited + 1; j <= i; j++)
        held += group_at(b->c, j)->count;
    return held <= b->ahead;
}

/* Wakes the other side (under the mutex, so a side about to sleep has). */
static void wake(struct builder *b)
{
    perch_mutex_lock(b->mu);
    perch_cond_broadcast(b->cv);
    perch_mutex_unlock(b->mu);
}

/* The builder's wait until it may build its k-th group or the writer stopped; false: stop. */
static bool builder_wait(struct builder *b, size_t k)
{
    if (!may_build(b, k) && !atomic_load(&b->stop)) {
        perch_mutex_lock(b->mu);
        atomic_store(&b->builder_sleeps, true);
        while (!may_build(b, k) && !atomic_load(&b->stop))
            perch_cond_wait(b->cv, b->mu, UINT32_MAX);
        atomic_store(&b->builder_sleeps, false);
        perch_mutex_unlock(b->mu);
    }
    return !atomic_load(&b->stop);
}

/* After the writer is done with a group: wakes a sleeping builder once it may build its next
 * group and at most half the slots are still built ahead, so a builder that runs ahead
 * through small groups is woken once per few groups. With two slots that is as soon as it
 * may build: the group after the one the writer visits next is then built while it does. */
static void writer_done(struct builder *b, size_t k, int err)
{
    size_t built;
    atomic_store(&b->visited, k + 1);
    if (err) {
        atomic_store(&b->stop, true);
        wake(b);
        return;
    }
    if (!atomic_load(&b->builder_sleeps))
        return;
    built = atomic_load(&b->built);
    if (built <= k + 1 + b->slots / 2 && may_build(b, built))
        wake(b);
}

/* Whether the builder builds group i (else the writer does, in st[2]). */
static bool built_ahead(const struct builder *b, size_t i)
{
    return group_at(b->c, i)->count >= b->small;
}

static int builder_main(void *arg)
{
    struct builder *b = arg;
    for (size_t i = 0, k = 0; i < b->n; i++) {
        if (!built_ahead(b, i))
            continue;
        if (!builder_wait(b, k))
            break;
        int err = build_one(b, i, k % b->slots);
        if (err) {
            atomic_store(&b->error, err);
            wake(b);
            break;
        }
        atomic_store(&b->built, ++k);
        if (atomic_load(&b->writer_sleeps))
            wake(b);
    }
    return 0;
}

/* The writer's side of group i, the k-th the builder builds: waits for it, visits it. */
static int visit_ahead(struct builder *b, size_t i, size_t k,
                       int (*visit)(void *ctx, const perch__group *g), void *ctx)
{
    int err;
    if (atomic_load(&b->built) <= k && !atomic_load(&b->error)) {
        perch_mutex_lock(b->mu);
        atomic_store(&b->writer_sleeps, true);
        while (atomic_load(&b->built) <= k && !atomic_load(&b->error)) {
            if (atomic_load(&b->builder_sleeps)) /* it may build: k is the next */
                perch_cond_broadcast(b->cv);
            perch_cond_wait(b->cv, b->mu, UINT32_MAX);
        }
        atomic_store(&b->writer_sleeps, false);
        perch_mutex_unlock(b->mu);
    }
    err = atomic_load(&b->built) <= k ? atomic_load(&b->error) : 0;
    if (!err && b->visit_slot)
        err = b->visit_slot(b->ctx, k % b->slots);
    else if (!err)
        err = visit_one(b->c, i, &b->c->samples.st[k % 2], visit, ctx);
    writer_done(b, k, err);
    return err;
}

/* The writer's side of the two-thread visit. */
static int visit_built(struct builder *b, int (*visit)(void *ctx, const perch__group *g),
                       void *ctx)
{
    perch__gstate *own = &b->c->samples.st[2];
    int err = 0;
    for (size_t i = 0, k = 0; i < b->n && !err; i++) {
        if (built_ahead(b, i)) {
            err = visit_ahead(b, i, k++, visit, ctx);
            continue;
        }
        err = perch__group_build(b->c, own, group_at(b->c, i));
        if (!err)
            err = visit_one(b->c, i, own, visit, ctx);
        if (err) {
            atomic_store(&b->stop, true);
            wake(b);
        }
    }
    return err;
}

/* Visits with a builder thread (b's callbacks set); *started false (nothing visited) when it
 * could not start. */
static int visit_threaded(struct builder *b0, int (*visit)(void *ctx, const perch__group *g),
                          void *ctx, bool *started)
{
    struct builder b = *b0;
    perch_thread *t = NULL;
    int err = perch_mutex_create(&b.mu);
    err = err ? err : perch_cond_create(&b.cv);
    err = err ? err : perch_thread_start(builder_main, &b, "perch-groups", &t);
    *started = err == 0;
    if (*started) {
        err = visit_built(&b, visit, ctx);
        perch_thread_join(t, NULL);
    }
    perch_cond_destroy(b.cv);
    perch_mutex_destroy(b.mu);
    return err;
}

/* The groups in (key, tag) order in l->order; their count in *n. The log store's key index
 * goes first: no sample comes any more. */
static int order_groups(perch__collect *c, size_t *n)
{
    perch__samplelog *l = &c->samples;
    int err;
    perch__vlogs_seal(&l->log, &c->budget);
    *n = l->log.count;
    err = perch__grow(&c->budget, (void **)&l->order, &l->order_cap, *n, sizeof *l->order);
    for (size_t i = 0; i < *n && !err; i++)
        l->order[i] = (perch__group_ref){l->log.v[i].key, l->log.v[i].tag, (uint32_t)i};
    if (!err && *n > 1)
        qsort(l->order, *n, sizeof *l->order, cmp_group);
    return err;
}

int perch__samplelog_each(perch__collect *c, int (*visit)(void *ctx, const perch__group *g),
                          void *ctx)
{
    perch__samplelog *l = &c->samples;
    size_t n = 0;
    bool started = false;
    int err = order_groups(c, &n);
    if (err || n == 0)
        return err;
    if (c->opt.threads != 1 && n > 1 && !l->want_samples) {
        struct builder b = {.c = c, .n = n, .small = SMALL_GROUP, .slots = 2, .ahead = UINT64_MAX};
        err = visit_threaded(&b, visit, ctx, &started);
        if (started)
            return err;
    }
    err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        err = perch__group_build(c, &l->st[0], group_at(c, i));
        if (!err)
            err = visit_one(c, i, &l->st[0], visit, ctx);
    }
    return err;
}

int perch__samplelog_each_prepared(perch__collect *c, size_t slots, uint64_t ahead,
                                   int (*prepare)(void *ctx, const perch__group *g, size_t slot),
                                   int (*visit)(void *ctx, size_t slot), void *ctx)
{
    struct builder b = {.c = c,
                        .prepare = prepare,
                        .visit_slot = visit,
                        .ctx = ctx,
                        .slots = slots < 2 ? 2 : slots,
                        .ahead = ahead};
    bool started = false;
    int err = order_groups(c, &b.n);
    if (err || b.n == 0)
        return err;
    if (c->opt.threads != 1 && b.n > 1) {
        err = visit_threaded(&b, NULL, NULL, &started);
        if (started)
            return err;
    }
    err = 0;
    for (size_t i = 0; i < b.n && !err; i++) {
        err = build_one(&b, i, 0); /* one thread: slot 0 only */
        if (!err)
            err = visit(ctx, 0);
    }
    return err;
}
