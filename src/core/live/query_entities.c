/*
 * The entities of the live query state: processes, threads and modules by key (a later
 * record of a key replaces the earlier one, its strings copied) and the distinct stacks by
 * id, each under a count cap. The sweep drops what can no longer be named by a held record:
 * entities that ended before the oldest held bucket, and stacks no held bucket uses.
 */
#include <string.h>

#include "live/query_internal.h"
#include "perch/error.h"
#include "util/mem.h"

static char *copy_str(const char *s, size_t *bytes)
{
    char *c = perch__strdup(s ? s : "");
    if (c != NULL)
        *bytes += strlen(c) + 1;
    return c;
}

static void drop_str(char **s, size_t *bytes)
{
    if (*s != NULL)
        *bytes -= strlen(*s) + 1;
    perch__free(*s);
    *s = NULL;
}

static uint32_t entity_count(const perch_live_query *q)
{
    return q->procs.count + q->threads.count + q->mods.count;
}

/* The row for key, or NULL (counted) when the entity cap refuses a new one. */
static void *entity_row(perch_live_query *q, qtable *t, uint64_t key, int *err)
{
    bool created;
    uint32_t room = entity_count(q) >= q->o.max_entities ? t->count : UINT32_MAX;
    size_t before = perch__qtable_bytes(t);
    void *row = perch__qtable_put(t, key, room, &created);
    *err = 0;
    if (row == NULL) {
        if (t->count >= room)
            q->dropped_entities++;
        else
            *err = PERCH_ENOMEM;
        return NULL;
    }
    q->entity_bytes += perch__qtable_bytes(t) - before;
    return row;
}

int perch__q_process(perch_live_query *q, const perch_process_rec *rec)
{
    int err;
    perch_process_rec *p = entity_row(q, &q->procs, rec->key, &err);
    if (p == NULL)
        return err;
    char *image = (char *)p->image_name, *cmd = (char *)p->command_line;
    drop_str(&image, &q->entity_bytes);
    drop_str(&cmd, &q->entity_bytes);
    *p = *rec;
    p->image_name = image = copy_str(rec->image_name, &q->entity_bytes);
    p->command_line = cmd = copy_str(rec->command_line, &q->entity_bytes);
    return image && cmd ? 0 : PERCH_ENOMEM;
}

int perch__q_thread(perch_live_query *q, const perch_thread_rec *rec)
{
    int err;
    perch_thread_rec *t = entity_row(q, &q->threads, rec->key, &err);
    if (t == NULL)
        return err;
    char *name = (char *)t->name;
    drop_str(&name, &q->entity_bytes);
    *t = *rec;
    t->name = name = copy_str(rec->name, &q->entity_bytes);
    return name ? 0 : PERCH_ENOMEM;
}

int perch__q_module(perch_live_query *q, const perch_module_rec *rec)
{
    int err;
    perch_module_rec *m = entity_row(q, &q->mods, rec->key, &err);
    if (m == NULL)
        return err;
    char *path = (char *)m->path, *pdb = (char *)m->pdb_name;
    drop_str(&path, &q->entity_bytes);
    drop_str(&pdb, &q->entity_bytes);
    *m = *rec;
    m->path = path = copy_str(rec->path, &q->entity_bytes);
    m->pdb_name = pdb = copy_str(rec->pdb_name, &q->entity_bytes);
    return path && pdb ? 0 : PERCH_ENOMEM;
}

int perch__q_stack(perch_live_query *q, const perch_stack_rec *rec)
{
    bool created;
    size_t before = perch__qtable_bytes(&q->stacks);
    qstack *s = perch__qtable_put(&q->stacks, rec->id, q->o.max_stacks, &created);
    if (s == NULL) {
        if (q->stacks.count >= q->o.max_stacks) {
            q->dropped_entities++;
            return 0;
        }
        return PERCH_ENOMEM;
    }
    q->entity_bytes += perch__qtable_bytes(&q->stacks) - before;
    if (!created) {
        q->entity_bytes -= sizeof *s->frames * s->count;
        perch__free(s->frames);
    }
    s->frames = perch__alloc(sizeof *s->frames * (rec->frame_count ? rec->frame_count : 1));
    if (s->frames == NULL) {
        uint32_t i;
        s->count = 0;
        if (perch__hmap_get(&q->stacks.index, rec->id, &i))
            perch__qtable_remove(&q->stacks, i);
        return PERCH_ENOMEM;
    }
    if (rec->frame_count)
        memcpy(s->frames, rec->frames, sizeof *s->frames * rec->frame_count);
    s->id = rec->id;
    s->count = rec->frame_count;
    s->kernel = rec->kernel_frames;
    s->first_ts = q->newest_ts;
    s->mark = q->sweep_gen;
    q->entity_bytes += sizeof *s->frames * s->count;
    return 0;
}

const perch_thread_rec *perch__q_thread_rec(const perch_live_query *q, uint64_t key)
{
    return perch__qtable_get(&q->threads, key);
}

const perch_process_rec *perch__q_process_rec(const perch_live_query *q, uint64_t key)
{
    return perch__qtable_get(&q->procs, key);
}

const qstack *perch__q_stack_row(const perch_live_query *q, uint64_t id)
{
    return perch__qtable_get(&q->stacks, id);
}

int perch__q_emit_modules(const perch_live_query *q, uint64_t process_key, const perch_sink *sink)
{
    const perch_module_rec *m = q->mods.rows;
    for (uint32_t i = 0; i < q->mods.count && sink->module; i++) {
        if (m[i].process_key != process_key)
            continue;
        int err = sink->module(sink->ctx, &m[i]);
        if (err < 0)
            return err;
    }
    return 0;
}

static void free_process(perch_live_query *q, perch_process_rec *p)
{
    char *a = (char *)p->image_name, *b = (char *)p->command_line;
    drop_str(&a, &q->entity_bytes);
    drop_str(&b, &q->entity_bytes);
}

static void free_thread(perch_live_query *q, perch_thread_rec *t)
{
    char *a = (char *)t->name;
    drop_str(&a, &q->entity_bytes);
}

static void free_module(perch_live_query *q, perch_module_rec *m)
{
    char *a = (char *)m->path, *b = (char *)m->pdb_name;
    drop_str(&a, &q->entity_bytes);
    drop_str(&b, &q->entity_bytes);
}

static void free_stack(perch_live_query *q, qstack *s)
{
    q->entity_bytes -= sizeof *s->frames * s->count;
    perch__free(s->frames);
    s->frames = NULL;
}

/* Marks every stack a held bucket uses with the current sweep generation. */
static void mark_stacks(perch_live_query *q)
{
    for (uint32_t k = 0; k < q->nbuckets; k++) {
        const qagg *a = &q->ring[k].t.stacks;
        if (!q->ring[k].used)
            continue;
        for (uint32_t j = 0; j < a->count; j++) {
            qstack *s = perch__qtable_get(&q->stacks, a->keys[j]);
            if (s != NULL)
                s->mark = q->sweep_gen;
        }
    }
}

void perch__q_sweep(perch_live_query *q, uint64_t oldest_ts)
{
    q->sweep_gen++;
    mark_stacks(q);
    for (uint32_t i = q->stacks.count; i-- > 0;) {
        qstack *s = (qstack *)q->stacks.rows + i;
        if (s->mark != q->sweep_gen && s->first_ts < oldest_ts) {
            free_stack(q, s);
            perch__qtable_remove(&q->stacks, i);
        }
    }
    for (uint32_t i = q->threads.count; i-- > 0;) {
        perch_thread_rec *t = (perch_thread_rec *)q->threads.rows + i;
        if (t->end_ts != 0 && t->end_ts < oldest_ts) {
            free_thread(q, t);
            perch__qtable_remove(&q->threads, i);
        }
    }
    for (uint32_t i = q->mods.count; i-- > 0;) {
        perch_module_rec *m = (perch_module_rec *)q->mods.rows + i;
        const perch_process_rec *p = perch__qtable_get(&q->procs, m->process_key);
        bool gone = p != NULL && p->end_ts != 0 && p->end_ts < oldest_ts;
        if ((m->unload_ts != 0 && m->unload_ts < oldest_ts) || gone) {
            free_module(q, m);
            perch__qtable_remove(&q->mods, i);
        }
    }
    for (uint32_t i = q->procs.count; i-- > 0;) {
        perch_process_rec *p = (perch_process_rec *)q->procs.rows + i;
        if (p->end_ts != 0 && p->end_ts < oldest_ts) {
            free_process(q, p);
            perch__qtable_remove(&q->procs, i);
        }
    }
}

void perch__q_free_entities(perch_live_query *q)
{
    for (uint32_t i = 0; i < q->procs.count; i++)
        free_process(q, (perch_process_rec *)q->procs.rows + i);
    for (uint32_t i = 0; i < q->threads.count; i++)
        free_thread(q, (perch_thread_rec *)q->threads.rows + i);
    for (uint32_t i = 0; i < q->mods.count; i++)
        free_module(q, (perch_module_rec *)q->mods.rows + i);
    for (uint32_t i = 0; i < q->stacks.count; i++)
        free_stack(q, (qstack *)q->stacks.rows + i);
    perch__qtable_free(&q->procs);
    perch__qtable_free(&q->threads);
    perch__qtable_free(&q->mods);
    perch__qtable_free(&q->stacks);
    q->entity_bytes = 0;
}
