/*
 * Visiting the sample log's groups at finish (perch__samplelog_each): each group, in (thread
 * key, kind, PMC source) order, is read back into its rows and samples (perch__group_build,
 * groups.c) and handed to the format's writer. With a helper thread (the default; options
 * threads = 1: none) the next group is built while the writer writes this one: the builder
 * fills the sample log's two group states in turn, group i in st[i % 2], and builds group i
 * only once group i - 2 was written. The writer sees the same groups with the same arrays in
 * the same order either way, so the output is the same; the budget is shared (atomic).
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

struct builder {
    perch__collect *c;
    size_t n;
    /* perch__samplelog_each_prepared: prepare on the builder, visit_slot on the writer */
    int (*prepare)(void *ctx, const perch__group *g, size_t slot);
    int (*visit_slot)(void *ctx, size_t slot);
    void *ctx;
    size_t slots;   /* group i is in slot i % slots */
    uint64_t ahead; /* most samples in the groups built beyond the next one */
    perch_mutex *mu;
    perch_cond *cv;
    size_t built;   /* groups built: group i is in st[i % 2] while visited <= i < built */
    size_t visited; /* groups the writer is done with */
    int error;      /* the builder's error */
    bool stop;      /* the writer stopped */
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
        .thread = perch__entities_thread_at(&c->ents, g->key),
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

/* Whether group i may be built now (under b->mu): the next group always, further ones while
 * a slot is free and the samples ahead stay under b->ahead. */
static bool may_build(struct builder *b, size_t i)
{
    uint64_t held = 0;
    if (i <= b->visited + 1)
        return true;
    if (i >= b->visited + b->slots)
        return false;
    for (size_t j = b->visited + 1; j <= i; j++)
        held += group_at(b->c, j)->count;
    return held <= b->ahead;
}

static int builder_main(void *arg)
{
    struct builder *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        perch_mutex_lock(b->mu);
        while (!may_build(b, i) && !b->stop)
            perch_cond_wait(b->cv, b->mu, UINT32_MAX);
        bool stop = b->stop;
        perch_mutex_unlock(b->mu);
        if (stop)
            break;
        int err = build_one(b, i, i % b->slots);
        perch_mutex_lock(b->mu);
        if (err)
            b->error = err;
        else
            b->built = i + 1;
        perch_cond_broadcast(b->cv);
        perch_mutex_unlock(b->mu);
        if (err)
            break;
    }
    return 0;
}

/* The writer's side of the two-thread visit. */
static int visit_built(struct builder *b, int (*visit)(void *ctx, const perch__group *g),
                       void *ctx)
{
    int err = 0;
    for (size_t i = 0; i < b->n && !err; i++) {
        perch_mutex_lock(b->mu);
        while (b->built <= i && !b->error)
            perch_cond_wait(b->cv, b->mu, UINT32_MAX);
        err = b->built <= i ? b->error : 0;
        perch_mutex_unlock(b->mu);
        if (!err && b->visit_slot)
            err = b->visit_slot(b->ctx, i % b->slots);
        else if (!err)
            err = visit_one(b->c, i, &b->c->samples.st[i % 2], visit, ctx);
        perch_mutex_lock(b->mu);
        b->visited = i + 1;
        b->stop = err != 0;
        perch_cond_broadcast(b->cv);
        perch_mutex_unlock(b->mu);
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

/* The groups in (key, tag) order in l->order; their count in *n. */
static int order_groups(perch__collect *c, size_t *n)
{
    perch__samplelog *l = &c->samples;
    int err;
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
        struct builder b = {.c = c, .n = n, .slots = 2, .ahead = UINT64_MAX};
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
