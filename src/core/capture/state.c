/*
 * The per-chunk coding state shared by the record encoder and decoder: a ring of recent stacks
 * here, and the move-to-front list of recent threads (static inline in format.h). Both sides
 * call exactly these functions in the same order, so their states never drift apart.
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
