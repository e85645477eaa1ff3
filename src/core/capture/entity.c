/*
 * Version 2 entity records: the field tables of the three entity types, the conversions
 * between records and state vectors, the field diff, and the per-type tables of current
 * entity state that the writer and the reader keep alike (see entity.h).
 */
#include <string.h>

#include "capture/entity.h"
#include "model/mem.h"
#include "perch/capture.h"
#include "perch/error.h"

/* Slots of each type's numbers. */
enum { P_PID, P_PARENT, P_SESSION, P_EXIT, P_FLAGS, P_START, P_END };
enum { T_PKEY, T_TID, T_PID, T_FLAGS, T_START, T_END };
enum {
    M_PKEY,
    M_PID,
    M_BASE,
    M_SIZE,
    M_LOAD,
    M_UNLOAD,
    M_CHECKSUM,
    M_TDS,
    M_HASPDB,
    M_GUID_LO,
    M_GUID_HI,
    M_AGE
};

const perch__cap_ent_type perch__cap_ent_types[CAP_ENT_TYPES] = {
    [CAP_ENT_PROCESS] = {PERCH_CHUNK_PROCESS,
                         9,
                         {{CF_U32, P_PID, 0},
                          {CF_U32, P_PARENT, 0},
                          {CF_U32, P_SESSION, 0},
                          {CF_I32, P_EXIT, 0},
                          {CF_U32, P_FLAGS, 0},
                          {CF_U64, P_START, 0},
                          {CF_U64, P_END, 0},
                          {CF_STR, 0, 0},
                          {CF_STR, 1, 0}}},
    [CAP_ENT_THREAD] = {PERCH_CHUNK_THREAD,
                        7,
                        {{CF_PKEY, T_PKEY, 0},
                         {CF_U32, T_TID, 0},
                         {CF_U32, T_PID, 0},
                         {CF_U32, T_FLAGS, 0},
                         {CF_U64, T_START, 0},
                         {CF_U64, T_END, 0},
                         {CF_STR, 0, 0}}},
    [CAP_ENT_MODULE] = {PERCH_CHUNK_MODULE,
                        10,
                        {{CF_U64, M_PKEY, 0},
                         {CF_U32, M_PID, 0},
                         {CF_U64, M_BASE, 0},
                         {CF_U64, M_SIZE, 0},
                         {CF_U64, M_LOAD, 0},
                         {CF_U64, M_UNLOAD, 0},
                         {CF_U32, M_CHECKSUM, 0},
                         {CF_U32, M_TDS, 0},
                         {CF_STR, 0, 0},
                         {CF_PDB, M_HASPDB, 1}}},
};

void perch__cap_ent_default(perch__cap_ent *e, uint64_t key)
{
    memset(e, 0, sizeof *e);
    e->key = key;
}

void perch__cap_ent_from_process(perch__cap_ent *e, const perch_process_rec *r)
{
    perch__cap_ent_default(e, r->key);
    e->num[P_PID] = r->pid;
    e->num[P_PARENT] = r->parent_pid;
    e->num[P_SESSION] = r->session_id;
    e->num[P_EXIT] = (uint32_t)r->exit_status;
    e->num[P_FLAGS] = r->flags;
    e->num[P_START] = r->start_ts;
    e->num[P_END] = r->end_ts;
    e->str[0] = r->image_name;
    e->str[1] = r->command_line;
}

void perch__cap_ent_to_process(const perch__cap_ent *e, perch_process_rec *r)
{
    r->key = e->key;
    r->pid = (uint32_t)e->num[P_PID];
    r->parent_pid = (uint32_t)e->num[P_PARENT];
    r->session_id = (uint32_t)e->num[P_SESSION];
    r->exit_status = (int32_t)(uint32_t)e->num[P_EXIT];
    r->flags = (uint32_t)e->num[P_FLAGS];
    r->start_ts = e->num[P_START];
    r->end_ts = e->num[P_END];
    r->image_name = e->str[0];
    r->command_line = e->str[1];
}

void perch__cap_ent_from_thread(perch__cap_ent *e, const perch_thread_rec *r)
{
    perch__cap_ent_default(e, r->key);
    e->num[T_PKEY] = r->process_key;
    e->num[T_TID] = r->tid;
    e->num[T_PID] = r->pid;
    e->num[T_FLAGS] = r->flags;
    e->num[T_START] = r->start_ts;
    e->num[T_END] = r->end_ts;
    e->str[0] = r->name;
}

void perch__cap_ent_to_thread(const perch__cap_ent *e, perch_thread_rec *r)
{
    r->key = e->key;
    r->process_key = e->num[T_PKEY];
    r->tid = (uint32_t)e->num[T_TID];
    r->pid = (uint32_t)e->num[T_PID];
    r->flags = (uint32_t)e->num[T_FLAGS];
    r->start_ts = e->num[T_START];
    r->end_ts = e->num[T_END];
    r->name = e->str[0];
}

static uint64_t guid_half(const perch_guid *g, int high)
{
    uint8_t b[16];
    uint64_t v = 0;
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(g->data1 >> (8 * i));
    b[4] = (uint8_t)g->data2;
    b[5] = (uint8_t)(g->data2 >> 8);
    b[6] = (uint8_t)g->data3;
    b[7] = (uint8_t)(g->data3 >> 8);
    memcpy(b + 8, g->data4, 8);
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[8 * high + i];
    return v;
}

static void guid_set(perch_guid *g, uint64_t lo, uint64_t hi)
{
    g->data1 = (uint32_t)lo;
    g->data2 = (uint16_t)(lo >> 32);
    g->data3 = (uint16_t)(lo >> 48);
    for (int i = 0; i < 8; i++)
        g->data4[i] = (uint8_t)(hi >> (8 * i));
}

void perch__cap_ent_from_module(perch__cap_ent *e, const perch_module_rec *r)
{
    perch__cap_ent_default(e, r->key);
    e->num[M_PKEY] = r->process_key;
    e->num[M_PID] = r->pid;
    e->num[M_BASE] = r->base;
    e->num[M_SIZE] = r->size;
    e->num[M_LOAD] = r->load_ts;
    e->num[M_UNLOAD] = r->unload_ts;
    e->num[M_CHECKSUM] = r->checksum;
    e->num[M_TDS] = r->time_date_stamp;
    e->num[M_HASPDB] = r->has_pdb;
    e->num[M_GUID_LO] = guid_half(&r->pdb_guid, 0);
    e->num[M_GUID_HI] = guid_half(&r->pdb_guid, 1);
    e->num[M_AGE] = r->pdb_age;
    e->str[0] = r->path;
    e->str[1] = r->pdb_name;
}

void perch__cap_ent_to_module(const perch__cap_ent *e, perch_module_rec *r)
{
    r->key = e->key;
    r->process_key = e->num[M_PKEY];
    r->pid = (uint32_t)e->num[M_PID];
    r->base = e->num[M_BASE];
    r->size = e->num[M_SIZE];
    r->load_ts = e->num[M_LOAD];
    r->unload_ts = e->num[M_UNLOAD];
    r->checksum = (uint32_t)e->num[M_CHECKSUM];
    r->time_date_stamp = (uint32_t)e->num[M_TDS];
    r->has_pdb = e->num[M_HASPDB] != 0;
    guid_set(&r->pdb_guid, e->num[M_GUID_LO], e->num[M_GUID_HI]);
    r->pdb_age = (uint32_t)e->num[M_AGE];
    r->path = e->str[0];
    r->pdb_name = e->str[1];
}

int perch__cap_ent_on_process(void *ctx, const perch_process_rec *rec)
{
    perch__cap_ent e;
    perch__cap_ent_from_process(&e, rec);
    return ((perch__cap_ent_adapter *)ctx)->on_entity(ctx, CAP_ENT_PROCESS, &e);
}

int perch__cap_ent_on_thread(void *ctx, const perch_thread_rec *rec)
{
    perch__cap_ent e;
    perch__cap_ent_from_thread(&e, rec);
    return ((perch__cap_ent_adapter *)ctx)->on_entity(ctx, CAP_ENT_THREAD, &e);
}

int perch__cap_ent_on_module(void *ctx, const perch_module_rec *rec)
{
    perch__cap_ent e;
    perch__cap_ent_from_module(&e, rec);
    return ((perch__cap_ent_adapter *)ctx)->on_entity(ctx, CAP_ENT_MODULE, &e);
}

static bool str_differ(const char *a, const char *b)
{
    if (!a || !b)
        return a != b;
    return strcmp(a, b) != 0;
}

uint32_t perch__cap_ent_diff(unsigned type, const perch__cap_ent *a, const perch__cap_ent *b)
{
    const perch__cap_ent_type *t = &perch__cap_ent_types[type];
    uint32_t mask = 0;
    for (unsigned i = 0; i < t->count; i++) {
        const perch__cap_field *f = &t->field[i];
        bool d;
        if (f->kind == CF_STR)
            d = str_differ(a->str[f->slot], b->str[f->slot]);
        else if (f->kind == CF_PDB)
            d = memcmp(a->num + f->slot, b->num + f->slot, 4 * sizeof a->num[0]) != 0 ||
                str_differ(a->str[f->str], b->str[f->str]);
        else
            d = a->num[f->slot] != b->num[f->slot];
        mask |= (uint32_t)d << i;
    }
    return mask;
}

bool perch__cap_ent_final(unsigned type, const perch__cap_ent *e)
{
    if (type == CAP_ENT_MODULE)
        return e->num[M_UNLOAD] != 0;
    return (e->num[type == CAP_ENT_PROCESS ? P_FLAGS : T_FLAGS] & PERCH_ENTITY_ENDED) != 0;
}

void perch__cap_ents_init(perch__cap_ents *ents)
{
    memset(ents, 0, sizeof *ents);
    for (unsigned i = 0; i < CAP_ENT_TYPES; i++)
        ents->t[i].free = UINT32_MAX;
}

void perch__cap_ent_release(perch__cap_ent *e)
{
    for (unsigned i = 0; i < CAP_ENT_STRS; i++) {
        perch__free((void *)e->str[i]);
        e->str[i] = NULL;
    }
}

int perch__cap_ent_send(const perch_sink *s, unsigned type, const perch__cap_ent *e)
{
    perch_process_rec p;
    perch_thread_rec t;
    perch_module_rec m;
    if (type == CAP_ENT_PROCESS && s->process) {
        perch__cap_ent_to_process(e, &p);
        return s->process(s->ctx, &p);
    }
    if (type == CAP_ENT_THREAD && s->thread) {
        perch__cap_ent_to_thread(e, &t);
        return s->thread(s->ctx, &t);
    }
    if (type == CAP_ENT_MODULE && s->module) {
        perch__cap_ent_to_module(e, &m);
        return s->module(s->ctx, &m);
    }
    return 0;
}

void perch__cap_ents_free(perch__cap_ents *ents)
{
    for (unsigned i = 0; i < CAP_ENT_TYPES; i++) {
        perch__cap_ent_table *t = &ents->t[i];
        for (uint32_t j = 0; j < t->count; j++)
            perch__cap_ent_release(&t->slots[j]);
        perch__free(t->slots);
        perch__hmap_free(&t->index);
    }
    perch__cap_ents_init(ents);
}

const perch__cap_ent *perch__cap_ents_get(const perch__cap_ents *ents, unsigned type, uint64_t key)
{
    uint32_t i;
    const perch__cap_ent_table *t = &ents->t[type];
    return perch__hmap_get(&t->index, key, &i) ? &t->slots[i] : NULL;
}

int perch__cap_ent_copy(perch__cap_ent *out, const perch__cap_ent *e)
{
    const char *s[CAP_ENT_STRS] = {NULL};
    for (unsigned i = 0; i < CAP_ENT_STRS; i++) {
        if (e->str[i] && !(s[i] = perch__strdup(e->str[i]))) {
            for (unsigned j = 0; j < i; j++)
                perch__free((void *)s[j]);
            return PERCH_ENOMEM;
        }
    }
    *out = *e;
    memcpy(out->str, s, sizeof s);
    return 0;
}

static uint32_t take_slot(perch__cap_ent_table *t)
{
    uint32_t i = t->free;
    if (i != UINT32_MAX) {
        t->free = (uint32_t)t->slots[i].num[0];
        return i;
    }
    if (perch__grow_array((void **)&t->slots, sizeof *t->slots, &t->cap, t->count + 1,
                          PERCH_CAPTURE_MAX_ENTITIES) < 0)
        return UINT32_MAX;
    return t->count++;
}

int perch__cap_ents_commit(perch__cap_ents *ents, unsigned type, const perch__cap_ent *e)
{
    perch__cap_ent_table *t = &ents->t[type];
    perch__cap_ent copy;
    uint32_t i;
    bool held = perch__hmap_get(&t->index, e->key, &i);
    if (perch__cap_ent_final(type, e)) {
        if (held) {
            perch__cap_ent_release(&t->slots[i]);
            t->slots[i].num[0] = t->free;
            t->free = i;
            t->live--;
            perch__hmap_del(&t->index, e->key);
        }
        return 0;
    }
    if (!held && t->live >= PERCH_CAPTURE_MAX_ENTITIES)
        return 0;
    if (perch__cap_ent_copy(&copy, e) != 0)
        return PERCH_ENOMEM;
    if (!held) {
        i = take_slot(t);
        if (i == UINT32_MAX || perch__hmap_put(&t->index, e->key, i) < 0) {
            if (i != UINT32_MAX) { /* a fresh slot holds no strings yet */
                memset(&t->slots[i], 0, sizeof t->slots[i]);
                t->slots[i].num[0] = t->free;
                t->free = i;
            }
            perch__cap_ent_release(&copy);
            return PERCH_ENOMEM;
        }
        t->live++;
    } else {
        perch__cap_ent_release(&t->slots[i]);
    }
    t->slots[i] = copy;
    return 0;
}

uint64_t perch__cap_ents_bytes(const perch__cap_ents *ents)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < CAP_ENT_TYPES; i++) {
        const perch__cap_ent_table *t = &ents->t[i];
        n += (uint64_t)t->cap * sizeof *t->slots + (uint64_t)t->index.cap * 12;
        for (uint32_t j = 0; j < t->count; j++)
            for (unsigned k = 0; k < CAP_ENT_STRS; k++)
                n += t->slots[j].str[k] ? strlen(t->slots[j].str[k]) + 1 : 0;
    }
    return n;
}
