/*
 * The capture reader's version 2 entity records: the mirror of enc_entity.c. A record names
 * its key and the fields it carries; the others keep the reader's current state of that key
 * (or the defaults). The full record goes to the sink, then the reader's entity table is
 * updated by the same rule as the writer's. Version 1 entity records (whole records, no
 * table) are decoded in decode.c.
 */
#include <string.h>

#include "capture/entity.h"
#include "capture/reader.h"
#include "perch/error.h"

static const char *get_str(perch__cap_reader *r, perch__cap_cursor *c)
{
    uint64_t id = cap_get_varint(c);
    const char *s = id ? perch__strtab_get(&r->strings, id) : NULL;
    if (id && !s) {
        cap_fail(c, PERCH_EFORMAT);
        return NULL;
    }
    return s;
}

static void get_pdb(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_ent *e,
                    const perch__cap_field *f)
{
    uint8_t flags = cap_get_u8(c);
    uint64_t lo = 0, hi = 0;
    const uint8_t *g = flags & MOD_GUID ? cap_get_bytes(c, 16) : NULL;
    for (int i = 0; g && i < 16; i++)
        *(i < 8 ? &lo : &hi) |= (uint64_t)g[i] << (8 * (i % 8));
    e->num[f->slot] = (flags & MOD_HAS_PDB) != 0;
    e->num[f->slot + 1] = lo;
    e->num[f->slot + 2] = hi;
    e->num[f->slot + 3] = cap_get_bounded(c, UINT32_MAX);
    e->str[f->str] = get_str(r, c);
}

static void get_fields(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st,
                       unsigned type, uint32_t mask, perch__cap_ent *e)
{
    const perch__cap_ent_type *t = &perch__cap_ent_types[type];
    for (unsigned i = 0; i < t->count && !c->error; i++) {
        const perch__cap_field *f = &t->field[i];
        if (!(mask & (1u << i)))
            continue;
        if (f->kind == CF_U32) {
            e->num[f->slot] = cap_get_bounded(c, UINT32_MAX);
        } else if (f->kind == CF_I32) {
            int64_t v = cap_unzigzag(cap_get_varint(c));
            if (v < INT32_MIN || v > INT32_MAX)
                cap_fail(c, PERCH_EFORMAT);
            e->num[f->slot] = (uint32_t)(int32_t)v;
        } else if (f->kind == CF_PKEY) {
            e->num[f->slot] = st->id = cap_get_delta(c, st->id);
        } else if (f->kind == CF_STR) {
            e->str[f->slot] = get_str(r, c);
        } else if (f->kind == CF_PDB) {
            get_pdb(r, c, e, f);
        } else {
            e->num[f->slot] = cap_get_varint(c);
        }
    }
}

int perch__cap_dec_entity(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st,
                          unsigned type)
{
    const perch__cap_ent_type *t = &perch__cap_ent_types[type];
    uint64_t key = st->key = cap_get_delta(c, st->key);
    uint32_t mask = (uint32_t)cap_get_bounded(c, (1u << t->count) - 1);
    const perch__cap_ent *prev = perch__cap_ents_get(&r->ents, type, key);
    perch__cap_ent e;
    if (prev)
        e = *prev; /* its strings stay borrowed from the table until the commit */
    else
        perch__cap_ent_default(&e, key);
    e.key = key;
    get_fields(r, c, st, type, mask, &e);
    if (c->error)
        return c->error;
    int err = perch__cap_ent_send(r->sink, type, &e);
    if (err)
        return r->sink_error = err;
    if ((err = perch__cap_ents_commit(&r->ents, type, &e)) != 0)
        return r->limit_error = err;
    return 0;
}
