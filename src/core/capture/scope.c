/*
 * Writing one self-contained output from a store (scope.h): lazily, every entity and stack
 * before its first use, stack ids renumbered per output.
 */
#include <string.h>

#include "capture/scope.h"
#include "model/mem.h"
#include "perch/error.h"

static void lock(perch__cap_scope *sc)
{
    if (sc->lock)
        sc->lock(sc->lock_ctx);
}

static void unlock(perch__cap_scope *sc)
{
    if (sc->unlock)
        sc->unlock(sc->lock_ctx);
}

static int begin_info(perch__cap_scope *sc, perch_trace_info *info, perch_counters_rec *c,
                      char ***names)
{
    perch__cap_store *st = sc->store;
    int err = 0;
    *names = NULL;
    lock(sc);
    bool has_info = st->has_info, has_counters = st->has_counters;
    if (has_info) {
        *info = st->info;
        info->source = st->info.source ? perch__strdup(st->info.source) : NULL;
        info->session_config =
            st->info.session_config ? perch__strdup(st->info.session_config) : NULL;
    }
    if (has_counters && (*names = perch__calloc(st->counter_count + 1u, sizeof **names))) {
        c->count = st->counter_count;
        for (uint32_t i = 0; i < st->counter_count; i++)
            if (st->counters[i] && !((*names)[i] = perch__strdup(st->counters[i])))
                err = PERCH_ENOMEM;
    } else if (has_counters) {
        err = PERCH_ENOMEM;
    }
    unlock(sc);
    if (!has_info)
        return PERCH_ESTATE;
    return err;
}

int perch__cap_scope_begin(perch__cap_scope *sc, perch__cap_store *store, const perch_sink *out)
{
    perch_trace_info info;
    perch_counters_rec c = {0, NULL};
    char **names = NULL;
    sc->store = store;
    sc->out = out;
    sc->next_stack = 0;
    int err = begin_info(sc, &info, &c, &names);
    if (err == 0 && out->trace_info)
        err = out->trace_info(out->ctx, &info);
    c.names = (const char *const *)names;
    if (err == 0 && names && out->counters)
        err = out->counters(out->ctx, &c);
    if (err != PERCH_ESTATE) {
        perch__free((void *)info.source);
        perch__free((void *)info.session_config);
    }
    for (uint32_t i = 0; names && i < c.count; i++)
        perch__free(names[i]);
    perch__free(names);
    return err;
}

void perch__cap_scope_end(perch__cap_scope *sc)
{
    for (unsigned t = 0; t < CAP_ENT_TYPES; t++)
        perch__hmap_free(&sc->written[t]);
    perch__hmap_free(&sc->stacks);
    perch__free(sc->frames);
    sc->frames = NULL;
    sc->frame_cap = 0;
}

static bool holds(const perch__cap_scope *sc, unsigned type, uint64_t key)
{
    uint32_t v;
    return perch__hmap_get(&sc->written[type], key, &v);
}

static int ensure(perch__cap_scope *sc, unsigned type, uint64_t key);

/* The process an entity of this type names (0: none). */
static uint64_t process_of(unsigned type, const perch__cap_ent *e)
{
    return type == CAP_ENT_PROCESS ? 0 : e->num[0]; /* process_key is field slot 0 */
}

/* Writes the store's entity of key (after its process) unless the output holds it. */
static int ensure(perch__cap_scope *sc, unsigned type, uint64_t key)
{
    perch__cap_ent copy;
    if (key == 0 || holds(sc, type, key))
        return 0;
    lock(sc);
    const perch__cap_ent *held = perch__cap_store_get_entity(sc->store, type, key);
    int err = held ? perch__cap_ent_copy(&copy, held) : 1;
    unlock(sc);
    if (err == 1) {
        sc->missing_entities++;
        return perch__hmap_put(&sc->written[type], key, 0); /* counted once */
    }
    if (err)
        return err;
    err = ensure(sc, CAP_ENT_PROCESS, process_of(type, &copy));
    if (err == 0)
        err = perch__hmap_put(&sc->written[type], key, 1);
    if (err == 0)
        err = perch__cap_ent_send(sc->out, type, &copy);
    perch__cap_ent_release(&copy);
    return err;
}

int perch__cap_scope_entity(perch__cap_scope *sc, unsigned type, const perch__cap_ent *e)
{
    uint32_t v;
    bool held = perch__hmap_get(&sc->written[type], e->key, &v) && v != 0;
    if (!held && !sc->eager)
        return 0;
    int err = ensure(sc, CAP_ENT_PROCESS, process_of(type, e));
    if (err == 0 && !held)
        err = perch__hmap_put(&sc->written[type], e->key, 1);
    return err ? err : perch__cap_ent_send(sc->out, type, e);
}

/* Copies the store's stack id into sc->frames; 1 when the store does not hold it. */
static int take_stack(perch__cap_scope *sc, uint32_t id, perch_stack_rec *out)
{
    int err = 0;
    lock(sc);
    const perch__store_stack *s = perch__cap_store_get_stack(sc->store, id);
    if (!s) {
        err = 1;
    } else if (s->count > sc->frame_cap) {
        uint64_t *f = perch__realloc(sc->frames, (size_t)s->count * sizeof *f);
        err = f ? 0 : PERCH_ENOMEM;
        if (f) {
            sc->frames = f;
            sc->frame_cap = s->count;
        }
    }
    if (err == 0) {
        memcpy(sc->frames, s->frames, (size_t)s->count * sizeof *sc->frames);
        *out = (perch_stack_rec){0, s->count, s->kernel, sc->frames};
    }
    unlock(sc);
    return err;
}

/* The output's id of model stack id, writing the stack first when new (0: none/missing). */
static int map_stack(perch__cap_scope *sc, uint32_t id, uint32_t *local)
{
    perch_stack_rec rec;
    uint32_t v;
    *local = 0;
    if (id == 0)
        return 0;
    if (perch__hmap_get(&sc->stacks, id, &v)) {
        *local = v;
        return 0;
    }
    int err = take_stack(sc, id, &rec);
    if (err == 1) {
        sc->missing_stacks++;
        return 0;
    }
    if (err)
        return err;
    rec.id = sc->next_stack + 1;
    if ((err = perch__hmap_put(&sc->stacks, id, rec.id)) != 0)
        return err;
    sc->next_stack++;
    *local = rec.id;
    return sc->out->stack ? sc->out->stack(sc->out->ctx, &rec) : 0;
}

int perch__cap_scope_sample(perch__cap_scope *sc, const perch_sample_rec *rec)
{
    perch_sample_rec r = *rec;
    int err = ensure(sc, CAP_ENT_THREAD, rec->thread_key);
    err = err ? err : ensure(sc, CAP_ENT_MODULE, rec->module_key);
    err = err ? err : map_stack(sc, rec->stack_id, &r.stack_id);
    if (err == 0 && sc->out->sample)
        err = sc->out->sample(sc->out->ctx, &r);
    return err;
}

int perch__cap_scope_slice(perch__cap_scope *sc, const perch_slice_rec *rec)
{
    int err = ensure(sc, CAP_ENT_THREAD, rec->thread_key);
    if (err == 0 && sc->out->slice)
        err = sc->out->slice(sc->out->ctx, rec);
    return err;
}

int perch__cap_scope_lbr(perch__cap_scope *sc, const perch_lbr_rec *rec)
{
    int err = ensure(sc, CAP_ENT_THREAD, rec->thread_key);
    if (err == 0 && sc->out->lbr)
        err = sc->out->lbr(sc->out->ctx, rec);
    return err;
}
