/*
 * The interned stacks of a record stream, kept by id for the exporters: one flat frame array
 * and a per-id (offset, count) index. Memory is bounded by the distinct stacks (the model
 * interns them), not by the samples that use them.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

#define MAX_FRAMES_PER_STACK ((1u << 24) - 1)

int perch__stacks_add(perch__stacks *s, perch__budget *b, const perch_stack_rec *rec)
{
    uint32_t n = rec->frame_count;
    size_t old = s->cap;
    int err;
    if (rec->id == 0 || (n && !rec->frames))
        return PERCH_EINVAL;
    if (n > MAX_FRAMES_PER_STACK)
        n = MAX_FRAMES_PER_STACK;
    err = perch__grow(b, (void **)&s->index, &s->cap, (size_t)rec->id + 1, sizeof *s->index);
    if (!err)
        err = perch__grow(b, (void **)&s->frames, &s->frame_cap, s->frame_count + n,
                          sizeof *s->frames);
    if (err)
        return err;
    if (s->cap > old)
        memset(s->index + old, 0, (s->cap - old) * sizeof *s->index);
    if (n)
        memcpy(s->frames + s->frame_count, rec->frames, (size_t)n * sizeof *s->frames);
    s->index[rec->id] = (uint64_t)s->frame_count << 24 | n;
    s->frame_count += n;
    if (rec->id >= s->count)
        s->count = (size_t)rec->id + 1;
    return 0;
}

const uint64_t *perch__stacks_get(const perch__stacks *s, uint32_t id, uint32_t *count)
{
    uint64_t v;
    *count = 0;
    if (id == 0 || id >= s->count)
        return NULL;
    v = s->index[id];
    *count = (uint32_t)(v & MAX_FRAMES_PER_STACK);
    return *count ? s->frames + (v >> 24) : NULL;
}

void perch__stacks_free(perch__stacks *s, perch__budget *b)
{
    perch__release(b, (void **)&s->frames, &s->frame_cap, sizeof *s->frames);
    perch__release(b, (void **)&s->index, &s->cap, sizeof *s->index);
    s->frame_count = 0;
    s->count = 0;
}
