/*
 * The gecko writer's sample log: every sample as (time, aggregate row, count), so the Firefox
 * Profiler gets each sample at its own time (its activity graph and CPU usage follow the real
 * timeline) while the stacks stay interned once per row. Each group (thread, kind, PMC source:
 * one profile thread) has its own varint log (vlog.c) of (time delta, row, count), a few
 * bytes a sample, charged to the exporter's budget, with a hard cap
 * (perch_export_options.gecko_max_samples). Past either the log is marked overflowed and the
 * profile falls back to one sample per distinct stack (the totals stay exact; meta.extra says
 * so). At output each group is decoded alone and sorted by time (ties in arrival order).
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

static uint32_t group_tag(uint16_t kind, uint16_t source)
{
    return (uint32_t)kind << 16 | source;
}

int perch__gsample_log_add(perch__gsample_log *l, perch__budget *b, const perch_sample_rec *r,
                           uint32_t seq)
{
    perch__vlog *g;
    int err;
    if (l->overflow)
        return 0;
    if (l->count >= l->limit) {
        l->overflow = true;
        return 0;
    }
    err = perch__vlogs_get(&l->groups, b, r->thread_key, group_tag(r->kind, r->profile_source),
                           true, &g);
    if (!err) {
        uint64_t e[3] = {perch__zigzag((int64_t)(r->ts - g->prev)), seq, r->count ? r->count : 1};
        err = perch__vlog_put(g, b, e, 3);
        g->unsorted |= r->ts < g->prev;
        g->prev = r->ts;
    }
    if (err == PERCH_ELIMIT) { /* the budget is full: give the log up, keep exporting */
        l->overflow = true;
        perch__vlogs_free(&l->groups, b);
        l->count = 0;
        return 0;
    }
    if (err)
        return err;
    l->count++;
    return 0;
}

int perch__gsample_log_sort(perch__gsample_log *l, perch__budget *b, const perch__collect *c)
{
    int err;
    if (l->overflow || l->count == 0)
        return 0;
    err = perch__grow(b, (void **)&l->pos, &l->pos_cap, c->agg.count + 1, sizeof *l->pos);
    if (err)
        return err;
    for (size_t i = 0; i < c->agg.count; i++)
        l->pos[c->agg.rows[i].seq] = (uint32_t)i;
    return 0;
}

static int cmp_sample(const void *x, const void *y)
{
    const perch__gsample *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

int perch__gsample_log_group(perch__gsample_log *l, perch__budget *b, const perch__agg_row *first)
{
    perch__vlog *g = NULL;
    uint64_t ts = 0;
    size_t off = 0;
    int err = 0;
    l->v_count = 0;
    if (!l->overflow && l->count > 0)
        err = perch__vlogs_get(&l->groups, b, first->thread_key,
                               group_tag(first->kind, first->profile_source), false, &g);
    if (err || g == NULL)
        return err;
    err = perch__grow(b, (void **)&l->v, &l->v_cap, g->count, sizeof *l->v);
    if (err)
        return err;
    for (size_t i = 0; i < g->count; i++) {
        perch__gsample *s = &l->v[i];
        ts += (uint64_t)perch__unzigzag(perch__vlog_next(g, &off));
        s->ts = ts;
        s->row = l->pos[perch__vlog_next(g, &off)];
        s->count = (uint32_t)perch__vlog_next(g, &off);
        s->order = (uint32_t)i;
    }
    l->v_count = g->count;
    if (g->unsorted)
        qsort(l->v, l->v_count, sizeof *l->v, cmp_sample);
    return 0;
}

void perch__gsample_log_free(perch__gsample_log *l, perch__budget *b)
{
    perch__vlogs_free(&l->groups, b);
    perch__release(b, (void **)&l->pos, &l->pos_cap, sizeof *l->pos);
    perch__release(b, (void **)&l->v, &l->v_cap, sizeof *l->v);
    l->count = 0;
    l->v_count = 0;
}
