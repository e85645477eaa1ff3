/*
 * The gecko writer's sample log: every sample as (time, aggregate row, count), so the Firefox
 * Profiler gets each sample at its own time (its activity graph and CPU usage follow the real
 * timeline) while the stacks stay interned once per row. 16 bytes a sample, charged to the
 * exporter's budget, with a hard cap (perch_export_options.gecko_max_samples). Past either the
 * log is marked overflowed and the profile falls back to one sample per distinct stack (the
 * totals stay exact; meta.extra says so).
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

int perch__gsample_log_add(perch__gsample_log *l, perch__budget *b, const perch_sample_rec *r,
                           uint32_t seq)
{
    int err;
    if (l->overflow)
        return 0;
    if (l->count >= l->limit) {
        l->overflow = true;
        return 0;
    }
    err = perch__grow(b, (void **)&l->v, &l->cap, l->count + 1, sizeof *l->v);
    if (err == PERCH_ELIMIT) { /* the budget is full: give the log up, keep exporting */
        l->overflow = true;
        perch__release(b, (void **)&l->v, &l->cap, sizeof *l->v);
        l->count = 0;
        return 0;
    }
    if (err)
        return err;
    l->v[l->count++] = (perch__gsample){r->ts, seq, r->count ? r->count : 1};
    return 0;
}

/* qsort has no context argument: entries are sorted through keys that carry their group. */
struct key {
    uint32_t group;
    uint32_t index;
    uint64_t ts;
};

static int cmp_key(const void *x, const void *y)
{
    const struct key *a = x, *b = y;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* pos[seq] = sorted row index; group[row] = index of the first row of its group. */
static int row_maps(perch__budget *b, const perch__collect *c, uint32_t **pos, size_t *pos_cap,
                    uint32_t **group, size_t *group_cap)
{
    perch__group g;
    int err = perch__grow(b, (void **)pos, pos_cap, c->agg.count + 1, sizeof **pos);
    if (!err)
        err = perch__grow(b, (void **)group, group_cap, c->agg.count + 1, sizeof **group);
    if (err)
        return err;
    for (size_t i = 0; i < c->agg.count; i++)
        (*pos)[c->agg.rows[i].seq] = (uint32_t)i;
    for (size_t i = 0; i < c->agg.count; i = g.end) {
        perch__agg_group(c, i, &g);
        for (size_t r = g.begin; r < g.end; r++)
            (*group)[r] = (uint32_t)g.begin;
    }
    return 0;
}

int perch__gsample_log_sort(perch__gsample_log *l, perch__budget *b, const perch__collect *c)
{
    uint32_t *pos = NULL, *group = NULL;
    struct key *keys = NULL;
    perch__gsample *sorted = NULL;
    size_t pos_cap = 0, group_cap = 0, key_cap = 0, sorted_cap = 0;
    int err;
    if (l->overflow || l->count == 0)
        return 0;
    err = row_maps(b, c, &pos, &pos_cap, &group, &group_cap);
    if (!err)
        err = perch__grow(b, (void **)&keys, &key_cap, l->count, sizeof *keys);
    if (!err)
        err = perch__grow(b, (void **)&sorted, &sorted_cap, l->count, sizeof *sorted);
    if (!err) {
        for (size_t i = 0; i < l->count; i++) {
            l->v[i].row = pos[l->v[i].row];
            keys[i] = (struct key){group[l->v[i].row], (uint32_t)i, l->v[i].ts};
        }
        qsort(keys, l->count, sizeof *keys, cmp_key);
        for (size_t i = 0; i < l->count; i++)
            sorted[i] = l->v[keys[i].index];
        memcpy(l->v, sorted, l->count * sizeof *sorted);
    }
    perch__release(b, (void **)&pos, &pos_cap, sizeof *pos);
    perch__release(b, (void **)&group, &group_cap, sizeof *group);
    perch__release(b, (void **)&keys, &key_cap, sizeof *keys);
    perch__release(b, (void **)&sorted, &sorted_cap, sizeof *sorted);
    return err;
}

void perch__gsample_log_free(perch__gsample_log *l, perch__budget *b)
{
    perch__release(b, (void **)&l->v, &l->cap, sizeof *l->v);
    l->count = 0;
}
