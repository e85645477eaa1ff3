/*
 * The live engine's record of what the model has said so far (src/core/live/state.h). Each
 * entity type is a table of current records keyed by entity key (an index map over a dense
 * array, swap-removal); an entity that ends stays in a ring of the most recently ended ones
 * and is dropped when the ring passes its cap. Stacks are held by id (dense from 1) in a
 * window of ids: the oldest are forgotten when their frames pass the cap, and the window's
 * array moves on past them (base), so a service that sees new stacks for weeks holds only
 * the ids of the stacks it still keeps.
 */
#include <string.h>

#include "model/hmap.h"
#include "model/mem.h"
#include "perch/error.h"
#include "state.h"
#include "util/mem.h"

enum { ENT_PROCESS, ENT_THREAD, ENT_MODULE, ENT_TYPES };

#define MAX_ENTITIES (1u << 24)
#define MAX_STACKS   (1u << 26) /* ids in the window at once */

struct ent {
    union {
        perch_process_rec p;
        perch_thread_rec t;
        perch_module_rec m;
    } rec;
    char *str[2]; /* owned copies of the record's strings */
};

struct ent_table {
    perch__hmap index; /* key -> position in v */
    struct ent *v;
    uint32_t count, cap;
    uint64_t *ended; /* ring of keys of ended entities */
    uint32_t ended_head, ended_count;
};

struct held_stack {
    uint64_t *frames; /* NULL once forgotten (or never seen) */
    uint32_t count, kernel;
};

struct perch__live_state {
    uint32_t max_frames, max_ended;
    bool have_info;
    perch_trace_info info;
    char *info_str[2];
    char **counter_names;
    uint32_t counter_count;
    struct ent_table ents[ENT_TYPES];
    struct held_stack *stacks; /* stacks[i] holds id base + i + 1 */
    uint32_t base, stack_count, stack_cap, first_held;
    uint64_t frames_held;
    perch__live_state_stats stats;
};

/* ---- strings -------------------------------------------------------------------------------- */

/* Replaces *owned with a copy of s (NULL stays NULL); 0 or PERCH_ENOMEM (then *owned is
 * unchanged). */
static int own(char **owned, const char *s)
{
    char *copy = NULL;
    if (s != NULL && (copy = perch__strdup(s)) == NULL)
        return PERCH_ENOMEM;
    perch__free(*owned);
    *owned = copy;
    return 0;
}

/* ---- entities -------------------------------------------------------------------------------- */

static uint64_t key_of(unsigned type, const struct ent *e)
{
    return type == ENT_PROCESS ? e->rec.p.key : type == ENT_THREAD ? e->rec.t.key : e->rec.m.key;
}

static void remove_at(struct ent_table *t, unsigned type, uint32_t i)
{
    perch__hmap_del(&t->index, key_of(type, &t->v[i]));
    perch__free(t->v[i].str[0]);
    perch__free(t->v[i].str[1]);
    if (i != t->count - 1) {
        t->v[i] = t->v[t->count - 1];
        perch__hmap_put(&t->index, key_of(type, &t->v[i]), i); /* replaces: cannot grow */
    }
    t->count--;
}

/* Remembers that key ended; forgets the oldest ended entity past the cap. */
static int note_ended(perch__live_state *s, unsigned type, uint64_t key)
{
    struct ent_table *t = &s->ents[type];
    uint32_t i;
    if (t->ended == NULL && (t->ended = perch__calloc(s->max_ended, sizeof *t->ended)) == NULL)
        return PERCH_ENOMEM;
    if (t->ended_count == s->max_ended) {
        uint64_t old = t->ended[t->ended_head];
        if (perch__hmap_get(&t->index, old, &i)) {
            remove_at(t, type, i);
            s->stats.ended_forgotten++;
        }
        t->ended[t->ended_head] = key;
        t->ended_head = (t->ended_head + 1) % s->max_ended;
        return 0;
    }
    t->ended[(t->ended_head + t->ended_count++) % s->max_ended] = key;
    return 0;
}

/* The slot of key, created empty when new; NULL on allocation failure. */
static struct ent *slot_of(struct ent_table *t, uint64_t key, bool *is_new)
{
    uint32_t i;
    *is_new = false;
    if (perch__hmap_get(&t->index, key, &i))
        return &t->v[i];
    if (perch__grow_array((void **)&t->v, sizeof *t->v, &t->cap, t->count + 1, MAX_ENTITIES) < 0 ||
        perch__hmap_put(&t->index, key, t->count) < 0)
        return NULL;
    memset(&t->v[t->count], 0, sizeof t->v[0]);
    *is_new = true;
    return &t->v[t->count++];
}

/* Stores the record in e, strings a and b as its two owned strings; 0 or PERCH_ENOMEM. */
static int store_strings(struct ent *e, const char *a, const char *b)
{
    int err = own(&e->str[0], a);
    return err ? err : own(&e->str[1], b);
}

static int on_process(void *ctx, const perch_process_rec *rec)
{
    perch__live_state *s = ctx;
    bool is_new, was_ended;
    struct ent *e = slot_of(&s->ents[ENT_PROCESS], rec->key, &is_new);
    if (e == NULL || store_strings(e, rec->image_name, rec->command_line) < 0)
        return PERCH_ENOMEM;
    was_ended = !is_new && (e->rec.p.flags & PERCH_ENTITY_ENDED);
    e->rec.p = *rec;
    e->rec.p.image_name = e->str[0];
    e->rec.p.command_line = e->str[1];
    return (rec->flags & PERCH_ENTITY_ENDED) && !was_ended ? note_ended(s, ENT_PROCESS, rec->key)
                                                           : 0;
}

static int on_thread(void *ctx, const perch_thread_rec *rec)
{
    perch__live_state *s = ctx;
    bool is_new, was_ended;
    struct ent *e = slot_of(&s->ents[ENT_THREAD], rec->key, &is_new);
    if (e == NULL || store_strings(e, rec->name, NULL) < 0)
        return PERCH_ENOMEM;
    was_ended = !is_new && (e->rec.t.flags & PERCH_ENTITY_ENDED);
    e->rec.t = *rec;
    e->rec.t.name = e->str[0];
    return (rec->flags & PERCH_ENTITY_ENDED) && !was_ended ? note_ended(s, ENT_THREAD, rec->key)
                                                           : 0;
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    perch__live_state *s = ctx;
    bool is_new, was_ended;
    struct ent *e = slot_of(&s->ents[ENT_MODULE], rec->key, &is_new);
    if (e == NULL || store_strings(e, rec->path, rec->pdb_name) < 0)
        return PERCH_ENOMEM;
    was_ended = !is_new && e->rec.m.unload_ts != 0;
    e->rec.m = *rec;
    e->rec.m.path = e->str[0];
    e->rec.m.pdb_name = e->str[1];
    return rec->unload_ts != 0 && !was_ended ? note_ended(s, ENT_MODULE, rec->key) : 0;
}

/* ---- trace info, counters, stacks --------------------------------------------------------- */

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch__live_state *s = ctx;
    if (own(&s->info_str[0], info->source) < 0 || own(&s->info_str[1], info->session_config) < 0)
        return PERCH_ENOMEM;
    s->info = *info;
    s->info.source = s->info_str[0];
    s->info.session_config = s->info_str[1];
    s->have_info = true;
    return 0;
}

static void free_counters(perch__live_state *s)
{
    for (uint32_t i = 0; i < s->counter_count; i++)
        perch__free(s->counter_names[i]);
    perch__free(s->counter_names);
    s->counter_names = NULL;
    s->counter_count = 0;
}

static int on_counters(void *ctx, const perch_counters_rec *rec)
{
    perch__live_state *s = ctx;
    free_counters(s);
    if (rec->count == 0)
        return 0;
    if ((s->counter_names = perch__calloc(rec->count, sizeof *s->counter_names)) == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < rec->count; i++, s->counter_count++)
        if (own(&s->counter_names[i], rec->names[i] ? rec->names[i] : "") < 0)
            return PERCH_ENOMEM;
    return 0;
}

/* Moves the window past the forgotten ids once they are half of it. */
static void slide_window(perch__live_state *s)
{
    if (s->first_held < 1024 || s->first_held < s->stack_count / 2)
        return;
    memmove(s->stacks, s->stacks + s->first_held,
            (s->stack_count - s->first_held) * sizeof *s->stacks);
    s->base += s->first_held;
    s->stack_count -= s->first_held;
    s->first_held = 0;
}

static void forget_oldest_stacks(perch__live_state *s, uint32_t frames_max)
{
    while (s->frames_held > frames_max && s->first_held < s->stack_count) {
        struct held_stack *h = &s->stacks[s->first_held++];
        if (h->frames != NULL) {
            s->frames_held -= h->count;
            perch__free(h->frames);
            h->frames = NULL;
            s->stats.stacks_forgotten++;
        }
    }
    slide_window(s);
}

/* Makes room for id in the window (id > base); the oldest are forgotten when it would span
 * more than MAX_STACKS ids. 0 or PERCH_ENOMEM. */
static int window_reach(perch__live_state *s, uint32_t id)
{
    if (id - s->base > MAX_STACKS) { /* a jump in ids: forget the window, start at id */
        forget_oldest_stacks(s, 0);
        s->base += s->stack_count;
        s->stack_count = s->first_held = 0;
        s->base = id - 1 > s->base ? id - 1 : s->base;
    }
    uint32_t need = id - s->base;
    if (need > s->stack_count) {
        if (perch__grow_array((void **)&s->stacks, sizeof *s->stacks, &s->stack_cap, need,
                              MAX_STACKS) < 0)
            return PERCH_ENOMEM;
        memset(s->stacks + s->stack_count, 0, (need - s->stack_count) * sizeof *s->stacks);
        s->stack_count = need;
    }
    return 0;
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    perch__live_state *s = ctx;
    if (rec->id <= s->base || rec->frame_count == 0)
        return 0; /* id 0, or forgotten already */
    if (window_reach(s, rec->id) < 0)
        return PERCH_ENOMEM;
    uint32_t i = rec->id - s->base - 1;
    struct held_stack *h = &s->stacks[i];
    if (h->frames != NULL || i < s->first_held)
        return 0;
    if ((h->frames = perch__calloc(rec->frame_count, sizeof *h->frames)) == NULL)
        return PERCH_ENOMEM;
    memcpy(h->frames, rec->frames, rec->frame_count * sizeof *h->frames);
    h->count = rec->frame_count;
    h->kernel = rec->kernel_frames;
    s->frames_held += rec->frame_count;
    forget_oldest_stacks(s, s->max_frames);
    return 0;
}

/* ---- life cycle and replay ---------------------------------------------------------------- */

int perch__live_state_create(uint32_t max_frames, uint32_t max_ended, perch__live_state **out)
{
    if (out == NULL || max_ended == 0)
        return PERCH_EINVAL;
    perch__live_state *s = perch__calloc(1, sizeof *s);
    if (s == NULL)
        return PERCH_ENOMEM;
    s->max_frames = max_frames;
    s->max_ended = max_ended;
    *out = s;
    return 0;
}

void perch__live_state_destroy(perch__live_state *s)
{
    if (s == NULL)
        return;
    for (unsigned type = 0; type < ENT_TYPES; type++) {
        struct ent_table *t = &s->ents[type];
        for (uint32_t i = 0; i < t->count; i++) {
            perch__free(t->v[i].str[0]);
            perch__free(t->v[i].str[1]);
        }
        perch__free(t->v);
        perch__free(t->ended);
        perch__hmap_free(&t->index);
    }
    for (uint32_t i = 0; i < s->stack_count; i++)
        perch__free(s->stacks[i].frames);
    perch__free(s->stacks);
    free_counters(s);
    perch__free(s->info_str[0]);
    perch__free(s->info_str[1]);
    perch__free(s);
}

void perch__live_state_sink(perch__live_state *s, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = s;
    sink->trace_info = on_info;
    sink->process = on_process;
    sink->thread = on_thread;
    sink->module = on_module;
    sink->counters = on_counters;
    sink->stack = on_stack;
}

static int replay_entities(const perch__live_state *s, const perch_sink *k)
{
    int err = 0;
    const struct ent_table *t = &s->ents[ENT_PROCESS];
    for (uint32_t i = 0; i < t->count && err == 0 && k->process; i++)
        err = k->process(k->ctx, &t->v[i].rec.p);
    t = &s->ents[ENT_THREAD];
    for (uint32_t i = 0; i < t->count && err == 0 && k->thread; i++)
        err = k->thread(k->ctx, &t->v[i].rec.t);
    t = &s->ents[ENT_MODULE];
    for (uint32_t i = 0; i < t->count && err == 0 && k->module; i++)
        err = k->module(k->ctx, &t->v[i].rec.m);
    return err;
}

int perch__live_state_replay(const perch__live_state *s, const perch_sink *k)
{
    int err = 0;
    if (!s->have_info)
        return 0;
    if (k->trace_info != NULL)
        err = k->trace_info(k->ctx, &s->info);
    if (err == 0 && s->counter_count > 0 && k->counters != NULL) {
        perch_counters_rec c = {s->counter_count, (const char *const *)s->counter_names};
        err = k->counters(k->ctx, &c);
    }
    err = err ? err : replay_entities(s, k);
    for (uint32_t i = s->first_held; i < s->stack_count && err == 0 && k->stack; i++) {
        const struct held_stack *h = &s->stacks[i];
        perch_stack_rec rec = {s->base + i + 1, h->count, h->kernel, h->frames};
        if (h->frames != NULL)
            err = k->stack(k->ctx, &rec);
    }
    return err;
}

void perch__live_state_get_stats(const perch__live_state *s, perch__live_state_stats *st)
{
    *st = s->stats;
    st->entities = 0;
    for (unsigned type = 0; type < ENT_TYPES; type++)
        st->entities += s->ents[type].count;
    st->frames = s->frames_held;
    st->stacks = 0;
    for (uint32_t i = s->first_held; i < s->stack_count; i++)
        st->stacks += s->stacks[i].frames != NULL;
}
