/*
 * The store of entities and stacks kept for re-emission into self-contained outputs
 * (store.h): per-type tables of entity states with a first-record FIFO for the cap, and a
 * ring of stacks in arrival order with an id index, trimmed from the oldest when the frame
 * budget is passed.
 */
#include <string.h>

#include "capture/store.h"
#include "model/mem.h"
#include "perch/capture.h"
#include "perch/error.h"

/* How many FIFO entries a cap eviction looks at for an ended entity before it takes the
 * oldest one anyway. */
#define EVICT_SCAN 64u
#define MAX_RING   (1u << 24)

void perch__cap_store_init(perch__cap_store *s, uint32_t max_entities, uint64_t max_frames)
{
    memset(s, 0, sizeof *s);
    for (unsigned t = 0; t < CAP_ENT_TYPES; t++)
        s->ents[t].free = UINT32_MAX;
    s->max_entities = max_entities ? max_entities : 1;
    s->max_frames = max_frames;
}

static void free_info(perch__cap_store *s)
{
    perch__free((void *)s->info.source);
    perch__free((void *)s->info.session_config);
    s->info.source = s->info.session_config = NULL;
}

static void free_counters(perch__cap_store *s)
{
    for (uint32_t i = 0; i < s->counter_count; i++)
        perch__free(s->counters[i]);
    perch__free(s->counters);
    s->counters = NULL;
    s->counter_count = 0;
}

void perch__cap_store_free(perch__cap_store *s)
{
    free_info(s);
    free_counters(s);
    for (unsigned t = 0; t < CAP_ENT_TYPES; t++) {
        perch__store_ents *e = &s->ents[t];
        for (uint32_t i = 0; i < e->count; i++)
            perch__cap_ent_release(&e->slots[i]);
        perch__free(e->slots);
        perch__free(e->fifo);
        perch__hmap_free(&e->index);
    }
    for (uint32_t i = 0; i < s->ring_len; i++)
        perch__free(s->ring[(s->ring_head + i) % s->ring_cap].frames);
    perch__free(s->ring);
    perch__hmap_free(&s->stack_index);
    perch__cap_store_init(s, s->max_entities, s->max_frames);
}

int perch__cap_store_info(perch__cap_store *s, const perch_trace_info *info)
{
    char *src = info->source ? perch__strdup(info->source) : NULL;
    char *cfg = info->session_config ? perch__strdup(info->session_config) : NULL;
    if ((info->source && !src) || (info->session_config && !cfg)) {
        perch__free(src);
        perch__free(cfg);
        return PERCH_ENOMEM;
    }
    free_info(s);
    s->info = *info;
    s->info.source = src;
    s->info.session_config = cfg;
    s->has_info = true;
    return 0;
}

int perch__cap_store_counters(perch__cap_store *s, const perch_counters_rec *rec)
{
    uint32_t n = rec->count < PERCH_CAPTURE_MAX_COUNTERS ? rec->count : PERCH_CAPTURE_MAX_COUNTERS;
    char **v = perch__calloc(n ? n : 1, sizeof *v);
    if (!v)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if (rec->names[i] && !(v[i] = perch__strdup(rec->names[i]))) {
            for (uint32_t j = 0; j < i; j++)
                perch__free(v[j]);
            perch__free(v);
            return PERCH_ENOMEM;
        }
    }
    free_counters(s);
    s->counters = v;
    s->counter_count = n;
    s->has_counters = true;
    return 0;
}

const perch__cap_ent *perch__cap_store_get_entity(const perch__cap_store *s, unsigned type,
                                                  uint64_t key)
{
    uint32_t i;
    const perch__store_ents *e = &s->ents[type];
    return perch__hmap_get(&e->index, key, &i) ? &e->slots[i] : NULL;
}

static uint64_t str_bytes(const perch__cap_ent *e)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < CAP_ENT_STRS; k++)
        n += e->str[k] ? strlen(e->str[k]) + 1 : 0;
    return n;
}

static void forget(perch__cap_store *s, unsigned type, uint64_t key)
{
    perch__store_ents *e = &s->ents[type];
    uint32_t i;
    if (!perch__hmap_get(&e->index, key, &i))
        return;
    s->ent_str_bytes -= str_bytes(&e->slots[i]);
    perch__cap_ent_release(&e->slots[i]);
    e->slots[i].num[0] = e->free;
    e->free = i;
    perch__hmap_del(&e->index, key);
    s->entities_forgotten++;
}

static uint64_t fifo_pop(perch__store_ents *e)
{
    uint64_t key = e->fifo[e->head];
    e->head = (e->head + 1) % e->fifo_cap;
    e->len--;
    return key;
}

static int fifo_push(perch__store_ents *e, uint64_t key)
{
    if (e->len == e->fifo_cap) {
        uint32_t nc = e->fifo_cap ? e->fifo_cap * 2 : 64;
        uint64_t *f = perch__calloc(nc, sizeof *f);
        if (!f)
            return PERCH_ENOMEM;
        for (uint32_t i = 0; i < e->len; i++)
            f[i] = e->fifo[(e->head + i) % e->fifo_cap];
        perch__free(e->fifo);
        e->fifo = f;
        e->fifo_cap = nc;
        e->head = 0;
    }
    e->fifo[(e->head + e->len++) % e->fifo_cap] = key;
    return 0;
}

/* Makes room for one more key of type: forgets the first ended entity among the EVICT_SCAN
 * oldest keys (the others go to the back of the FIFO), or the oldest. Keys already forgotten
 * are dropped from the FIFO on the way. */
static int make_room(perch__cap_store *s, unsigned type)
{
    perch__store_ents *e = &s->ents[type];
    for (uint32_t scanned = 0; e->index.count >= s->max_entities && e->len > 0;) {
        uint64_t key = fifo_pop(e);
        const perch__cap_ent *held = perch__cap_store_get_entity(s, type, key);
        if (!held)
            continue;
        if (perch__cap_ent_final(type, held) || ++scanned > EVICT_SCAN) {
            forget(s, type, key);
            continue;
        }
        if (fifo_push(e, key) != 0)
            return PERCH_ENOMEM;
    }
    return 0;
}

int perch__cap_store_entity(perch__cap_store *s, unsigned type, const perch__cap_ent *ent)
{
    perch__store_ents *e = &s->ents[type];
    perch__cap_ent copy;
    uint32_t i;
    if (perch__hmap_get(&e->index, ent->key, &i)) {
        if (perch__cap_ent_copy(&copy, ent) != 0)
            return PERCH_ENOMEM;
        s->ent_str_bytes += str_bytes(&copy) - str_bytes(&e->slots[i]);
        perch__cap_ent_release(&e->slots[i]);
        e->slots[i] = copy;
        return 0;
    }
    int err = make_room(s, type);
    if (err || (err = perch__cap_ent_copy(&copy, ent)) != 0)
        return err;
    if (e->free != UINT32_MAX) {
        i = e->free;
        e->free = (uint32_t)e->slots[i].num[0];
    } else if (perch__grow_array((void **)&e->slots, sizeof *e->slots, &e->cap, e->count + 1,
                                 UINT32_MAX - 1) == 0) {
        i = e->count++;
    } else {
        perch__cap_ent_release(&copy);
        return PERCH_ENOMEM;
    }
    e->slots[i] = copy;
    if ((err = perch__hmap_put(&e->index, ent->key, i)) != 0 ||
        (err = fifo_push(e, ent->key)) != 0) {
        perch__hmap_del(&e->index, ent->key);
        perch__cap_ent_release(&e->slots[i]);
        e->slots[i].num[0] = e->free;
        e->free = i;
        return err;
    }
    s->ent_str_bytes += str_bytes(&copy);
    return 0;
}

const perch__store_stack *perch__cap_store_get_stack(const perch__cap_store *s, uint32_t id)
{
    uint32_t pos;
    if (!perch__hmap_get(&s->stack_index, id, &pos))
        return NULL;
    return &s->ring[pos % s->ring_cap];
}

static void drop_oldest_stack(perch__cap_store *s)
{
    perch__store_stack *st = &s->ring[s->ring_head % s->ring_cap];
    uint32_t pos;
    if (perch__hmap_get(&s->stack_index, st->id, &pos) && pos == s->ring_head)
        perch__hmap_del(&s->stack_index, st->id);
    s->frames_held -= st->count;
    perch__free(st->frames);
    st->frames = NULL;
    s->ring_head++;
    s->ring_len--;
    s->stacks_forgotten++;
}

/* Doubles the ring, keeping every position at p % ring_cap (so the index stays valid). */
static int grow_ring(perch__cap_store *s)
{
    uint32_t nc = s->ring_cap ? s->ring_cap * 2 : 256;
    if (nc > MAX_RING)
        return PERCH_ELIMIT;
    perch__store_stack *r = perch__calloc(nc, sizeof *r);
    if (!r)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < s->ring_len; i++) {
        uint32_t p = s->ring_head + i;
        r[p % nc] = s->ring[p % s->ring_cap];
    }
    perch__free(s->ring);
    s->ring = r;
    s->ring_cap = nc;
    return 0;
}

int perch__cap_store_stack(perch__cap_store *s, const perch_stack_rec *rec)
{
    uint32_t n = rec->frame_count;
    while (s->ring_len > 0 && s->frames_held + n > s->max_frames)
        drop_oldest_stack(s);
    if (s->ring_len == s->ring_cap) {
        int err = grow_ring(s);
        if (err == PERCH_ELIMIT)
            drop_oldest_stack(s);
        else if (err)
            return err;
    }
    uint64_t *f = perch__alloc((n ? n : 1) * sizeof *f);
    if (!f)
        return PERCH_ENOMEM;
    if (n)
        memcpy(f, rec->frames, n * sizeof *f);
    uint32_t pos = s->ring_head + s->ring_len;
    if (perch__hmap_put(&s->stack_index, rec->id, pos) != 0) {
        perch__free(f);
        return PERCH_ENOMEM;
    }
    s->ring[pos % s->ring_cap] = (perch__store_stack){rec->id, n, rec->kernel_frames, f};
    s->ring_len++;
    s->frames_held += n;
    return 0;
}

uint64_t perch__cap_store_bytes(const perch__cap_store *s)
{
    uint64_t n = s->frames_held * 8 + (uint64_t)s->ring_cap * sizeof *s->ring +
                 (uint64_t)s->stack_index.cap * 12 + s->ent_str_bytes;
    for (unsigned t = 0; t < CAP_ENT_TYPES; t++) {
        const perch__store_ents *e = &s->ents[t];
        n += (uint64_t)e->cap * sizeof *e->slots + (uint64_t)e->fifo_cap * 8 +
             (uint64_t)e->index.cap * 12;
    }
    return n;
}
