/*
 * The sample aggregate: one row per (thread, stack, kind, PMC source), or per (thread, ip,
 * module) for samples without a stack, with the summed count and the first and last
 * timestamps. Memory is bounded by the distinct rows, never by the number of samples.
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

static bool same_key(const perch__agg_row *r, const perch_sample_rec *s)
{
    if (r->thread_key != s->thread_key || r->stack_id != s->stack_id || r->kind != s->kind ||
        r->profile_source != s->profile_source)
        return false;
    return s->stack_id != 0 || (r->ip == s->ip && r->module_key == s->module_key);
}

static uint64_t key_hash(const perch_sample_rec *s)
{
    uint64_t h = perch__hash64(s->thread_key ^ ((uint64_t)s->stack_id << 32));
    h = perch__hash64(h ^ s->kind ^ ((uint64_t)s->profile_source << 8));
    if (s->stack_id == 0)
        h = perch__hash64(h ^ s->ip ^ perch__hash64(s->module_key));
    return h;
}

static uint64_t row_hash(const perch__agg_row *r)
{
    perch_sample_rec s;
    memset(&s, 0, sizeof s);
    s.thread_key = r->thread_key;
    s.stack_id = r->stack_id;
    s.kind = (uint8_t)r->kind;
    s.profile_source = r->profile_source;
    s.ip = r->ip;
    s.module_key = r->module_key;
    return key_hash(&s);
}

/* A slot holds the row index + 1 (low 32 bits, 0 = empty) and the upper half of the key's
 * hash, so a probe only touches a row when the tags match. */
#define SLOT(row, h) ((uint64_t)((row) + 1) | ((h)&0xffffffff00000000ull))
#define SLOT_ROW(v)  ((uint32_t)(v)-1u)
#define SLOT_TAG(v)  ((v)&0xffffffff00000000ull)

static int rehash(perch__agg *a, perch__budget *b)
{
    size_t ncap = a->slot_cap ? a->slot_cap * 2 : 1024;
    uint64_t *slots;
    if (!perch__budget_take(b, ncap * sizeof *slots))
        return PERCH_ELIMIT;
    slots = perch__calloc(ncap, sizeof *slots);
    if (!slots) {
        perch__budget_give(b, ncap * sizeof *slots);
        return PERCH_ENOMEM;
    }
    for (size_t r = 0; r < a->count; r++) {
        uint64_t h = row_hash(&a->rows[r]);
        size_t i = h & (ncap - 1);
        while (slots[i])
            i = (i + 1) & (ncap - 1);
        slots[i] = SLOT(r, h);
    }
    perch__free(a->slots);
    perch__budget_give(b, a->slot_cap * sizeof *slots);
    a->slots = slots;
    a->slot_cap = ncap;
    return 0;
}

static int new_row(perch__agg *a, perch__budget *b, const perch_sample_rec *s, size_t slot,
                   uint64_t h)
{
    perch__agg_row *r;
    int err;
    if (a->count >= UINT32_MAX - 1)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&a->rows, &a->cap, a->count + 1, sizeof *a->rows);
    if (err)
        return err;
    r = &a->rows[a->count];
    memset(r, 0, sizeof *r);
    r->thread_key = s->thread_key;
    r->stack_id = s->stack_id;
    r->kind = s->kind;
    r->profile_source = s->profile_source;
    r->ip = s->ip;
    r->module_key = s->module_key;
    r->first_ts = s->ts;
    r->seq = (uint32_t)a->count;
    a->slots[slot] = SLOT(a->count, h);
    a->count++;
    return 0;
}

int perch__agg_add(perch__agg *a, perch__budget *b, const perch_sample_rec *s, uint32_t *seq)
{
    perch__agg_row *r;
    uint64_t h;
    size_t i;
    int err;
    if ((a->count + 1) * 4 > a->slot_cap * 3) {
        err = rehash(a, b);
        if (err)
            return err;
    }
    h = key_hash(s);
    for (i = h & (a->slot_cap - 1); a->slots[i]; i = (i + 1) & (a->slot_cap - 1))
        if (SLOT_TAG(a->slots[i]) == SLOT_TAG(h) && same_key(&a->rows[SLOT_ROW(a->slots[i])], s))
            break;
    if (!a->slots[i]) {
        err = new_row(a, b, s, i, h);
        if (err)
            return err;
    }
    r = &a->rows[SLOT_ROW(a->slots[i])];
    if (seq)
        *seq = r->seq;
    r->count += s->count ? s->count : 1;
    if (s->ts < r->first_ts)
        r->first_ts = s->ts;
    if (s->ts > a->last_ts)
        a->last_ts = s->ts;
    a->samples++;
    a->total += s->count ? s->count : 1;
    return 0;
}

static int cmp_row(const void *x, const void *y)
{
    const perch__agg_row *a = x, *b = y;
    if (a->thread_key != b->thread_key)
        return a->thread_key < b->thread_key ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->profile_source != b->profile_source)
        return a->profile_source < b->profile_source ? -1 : 1;
    if (a->first_ts != b->first_ts)
        return a->first_ts < b->first_ts ? -1 : 1;
    if (a->stack_id != b->stack_id)
        return a->stack_id < b->stack_id ? -1 : 1;
    return a->ip < b->ip ? -1 : a->ip > b->ip;
}

void perch__agg_sort(perch__agg *a)
{
    /* The hash slots point at rows by index: sorting invalidates them, so drop them. */
    if (a->rows)
        qsort(a->rows, a->count, sizeof *a->rows, cmp_row);
    if (a->slots)
        memset(a->slots, 0, a->slot_cap * sizeof *a->slots);
}

void perch__agg_free(perch__agg *a, perch__budget *b)
{
    perch__release(b, (void **)&a->rows, &a->cap, sizeof *a->rows);
    perch__release(b, (void **)&a->slots, &a->slot_cap, sizeof *a->slots);
    a->count = 0;
    a->last_ts = 0;
}

const uint64_t *perch__agg_frames(const perch__stacks *s, const perch__agg_row *r, uint32_t *count)
{
    const uint64_t *f = NULL;
    if (r->stack_id)
        f = perch__stacks_get(s, r->stack_id, count);
    if (!f) {
        *count = 1;
        return &r->ip;
    }
    return f;
}
