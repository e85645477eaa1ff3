/*
 * Visiting the sample log's groups at finish (perch__samplelog_each): each group, in (thread
 * key, kind, PMC source) order, is read back into its rows and samples (perch__group_build,
 * groups.c) and handed to the format's writer. With a helper thread (the default; options
 * threads = 1: none; not for gecko, which keeps each group's samples: two of its largest
 * groups at once took its peak RSS at 512 MB from 58 to 68 MiB) the next group is built
 * while the writer writes this one: the builder
 * fills the sample log's two group states in turn, group i in st[i % 2], and builds group i
 * only once group i - 2 was written. The writer sees the same groups with the same arrays in
 * the same order either way, so the output is the same; the budget is shared (atomic).
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

static int visit_one(perch__collect *c, size_t i, const perch__gstate *s,
                     int (*visit)(void *ctx, const perch__group *g), void *ctx)
{
    const perch__vlog *g = group_at(c, i);
    bool want = c->samples.want_samples;
    perch__group grp = {
        .rows = s->rows,
        .row_count = s->row_count,
        .thread = perch__entities_thread_at(&c->ents, g->key),
        .count = g->sum,
        .samples = want ? s->v : NULL,
        .sample_count = want ? s->v_count : 0,
    };
    return visit(ctx, &grp);
}

static int builder_main(void *arg)
{
    struct builder *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        perch_mutex_lock(b->mu);
        while (i >= b->visited + 2 && !b->stop)
            perch_cond_wait(b->cv, b->mu, UINT32_MAX);
        bool stop = b->stop;
        perch_mutex_unlock(b->mu);
        if (stop)
            break;
        int err = perch__group_build(b->c, &b->c->samples.st[i % 2], group_at(b->c, i));
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
        if (!err)
            err = visit_one(b->c, i, &b->c->samples.st[i % 2], visit, ctx);
        perch_mutex_lock(b->mu);
        b->visited = i + 1;
        b->stop = err != 0;
        perch_cond_broadcast(b->cv);
        perch_mutex_unlock(b->mu);
    }
    return err;
}

/* Visits with a builder thread; *started false (nothing visited) when it could not start. */
static int visit_threaded(perch__collect *c, size_t n,
                          int (*visit)(void *ctx, const perch__group *g), void *ctx,
                          bool *started)
{
    struct builder b = {c, n, NULL, NULL, 0, 0, 0, false};
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

int perch__samplelog_each(perch__collect *c, int (*visit)(void *ctx, const perch__group *g),
                          void *ctx)
{
    perch__samplelog *l = &c->samples;
    size_t n = l->log.count;
    bool started = false;
    int err = perch__grow(&c->budget, (void **)&l->order, &l->order_cap, n, sizeof *l->order);
    for (size_t i = 0; i < n && !err; i++)
        l->order[i] = (perch__group_ref){l->log.v[i].key, l->log.v[i].tag, (uint32_t)i};
    if (err || n == 0)
        return err;
    qsort(l->order, n, sizeof *l->order, cmp_group);
    if (c->opt.threads != 1 && n > 1 && !l->want_samples) {
        err = visit_threaded(c, n, visit, ctx, &started);
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
