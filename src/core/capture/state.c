/*
 * The per-chunk coding state shared by the record encoder and decoder: a move-to-front list
 * of recent threads and a ring of recent stacks. Both sides call exactly these functions in
 * the same order, so their states never drift apart.
 */
#include <string.h>

#include "capture/format.h"

void perch__cap_state_reset(perch__cap_state *s)
{
    memset(s, 0, sizeof *s);
}

void perch__cap_ring_reset(perch__cap_stack_ring *r)
{
    r->count = 0;
    r->next = 0;
}

int perch__cap_mru_find(const perch__cap_mru *m, uint64_t key, uint32_t tid)
{
    for (unsigned i = 0; i < m->count; i++)
        if (m->slot[i].key == key && m->slot[i].tid == tid)
            return (int)i;
    return -1;
}

perch__cap_thread_slot *perch__cap_mru_promote(perch__cap_mru *m, int idx)
{
    perch__cap_thread_slot t = m->slot[idx];
    memmove(&m->slot[1], &m->slot[0], (size_t)idx * sizeof m->slot[0]);
    m->slot[0] = t;
    return &m->slot[0];
}

perch__cap_thread_slot *perch__cap_mru_insert(perch__cap_mru *m, const perch__cap_thread_slot *init)
{
    unsigned keep = m->count < CAP_MRU ? m->count : CAP_MRU - 1;
    memmove(&m->slot[1], &m->slot[0], keep * sizeof m->slot[0]);
    m->slot[0] = *init;
    m->count = keep + 1;
    return &m->slot[0];
}

void perch__cap_ring_push(perch__cap_stack_ring *r, const uint64_t *frames, uint32_t count)
{
    uint32_t keep = count < CAP_STACK_SUFFIX ? count : CAP_STACK_SUFFIX;
    if (keep)
        memcpy(r->frames[r->next], frames + (count - keep), keep * sizeof *frames);
    r->len[r->next] = keep;
    r->next = (r->next + 1) % CAP_STACK_RING;
    if (r->count < CAP_STACK_RING)
        r->count++;
}

const uint64_t *perch__cap_ring_get(const perch__cap_stack_ring *r, unsigned j, uint32_t *len)
{
    if (j >= r->count)
        return NULL;
    unsigned at = (r->next + CAP_STACK_RING - 1 - j) % CAP_STACK_RING;
    *len = r->len[at];
    return r->frames[at];
}
