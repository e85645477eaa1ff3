/*
 * The capture writer's entity records (version 2, docs/capture-format.md 4.2-4.4): each
 * process, thread or module record is coded as its key, a mask of the fields that differ from
 * the previous record of that key (or from the defaults for a key the writer does not hold),
 * and those fields only. The writer's entity table is then updated by the rule the reader
 * applies too (perch__cap_ents_commit).
 */
#include <string.h>

#include "capture/entity.h"
#include "capture/writer.h"
#include "perch/error.h"

/* Largest encoding of one entity record: key, mask, nine varints, a PDB group. */
#define ENT_BOUND (CAP_VARINT_MAX * 13 + 17)

static void put_pdb(perch__cap_buf *b, const perch__cap_ent *e, const perch__cap_field *f,
                    uint64_t id)
{
    uint64_t lo = e->num[f->slot + 1], hi = e->num[f->slot + 2];
    uint8_t flags = (uint8_t)((e->num[f->slot] ? MOD_HAS_PDB : 0) | (lo || hi ? MOD_GUID : 0));
    cap_put_u8(b, flags);
    for (int i = 0; (flags & MOD_GUID) && i < 16; i++)
        cap_put_u8(b, (uint8_t)((i < 8 ? lo : hi) >> (8 * (i % 8))));
    cap_put_varint(b, e->num[f->slot + 3]);
    cap_put_varint(b, id);
}

static void put_fields(perch__cap_open_chunk *c, unsigned type, const perch__cap_ent *e,
                       uint32_t mask, const uint64_t ids[CAP_ENT_STRS])
{
    const perch__cap_ent_type *t = &perch__cap_ent_types[type];
    perch__cap_buf *b = &c->buf;
    for (unsigned i = 0; i < t->count; i++) {
        const perch__cap_field *f = &t->field[i];
        if (!(mask & (1u << i)))
            continue;
        switch (f->kind) {
        case CF_I32:
            cap_put_varint(b, cap_zigzag((int32_t)(uint32_t)e->num[f->slot]));
            break;
        case CF_PKEY:
            cap_put_delta(b, e->num[f->slot], c->state.id);
            c->state.id = e->num[f->slot];
            break;
        case CF_STR:
            cap_put_varint(b, ids[f->slot]);
            break;
        case CF_PDB:
            put_pdb(b, e, f, ids[f->str]);
            break;
        default:
            cap_put_varint(b, e->num[f->slot]);
            break;
        }
    }
}

/* The string slot each field of the mask writes (-1: none). */
static int field_string(const perch__cap_field *f)
{
    return f->kind == CF_STR ? f->slot : f->kind == CF_PDB ? f->str : -1;
}

int perch__cap_put_entity(perch_capture_writer *w, unsigned type, const perch__cap_ent *e)
{
    const perch__cap_ent_type *t = &perch__cap_ent_types[type];
    const perch__cap_ent *prev = perch__cap_ents_get(&w->ents, type, e->key);
    perch__cap_ent def;
    const char *strs[CAP_ENT_STRS] = {NULL};
    uint64_t ids[CAP_ENT_STRS] = {0};
    int err;
    if (!prev) {
        perch__cap_ent_default(&def, e->key);
        prev = &def;
    }
    uint32_t mask = perch__cap_ent_diff(type, e, prev);
    for (unsigned i = 0; i < t->count; i++) {
        int s = field_string(&t->field[i]);
        if (s >= 0 && (mask & (1u << i)))
            strs[s] = e->str[s];
    }
    if ((err = perch__cap_intern(w, strs, CAP_ENT_STRS, ids)) != 0)
        return err;
    perch__cap_open_chunk *c = perch__cap_begin(w, t->chunk, ENT_BOUND);
    if (!c)
        return w->error;
    cap_put_delta(&c->buf, e->key, c->state.key);
    c->state.key = e->key;
    cap_put_varint(&c->buf, mask);
    put_fields(c, type, e, mask, ids);
    if ((err = perch__cap_end(w, t->chunk)) != 0)
        return err;
    if ((err = perch__cap_ents_commit(&w->ents, type, e)) != 0)
        w->error = w->error ? w->error : err;
    return w->error;
}
