/*
 * The interned stacks of a record stream, kept by id for the exporters: each stack's frames
 * as LEB128 varints of the zigzag difference from the frame before (the first from 0), in one
 * byte array, and a per-id (offset, count) index. Frames of one stack sit close together in
 * their modules, so a frame takes 3 to 5 bytes instead of 8; a lookup decodes the stack into
 * one buffer sized for the longest. Memory is bounded by the distinct stacks (the model
 * interns them), not by the samples that use them.
 */
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

#define MAX_FRAMES_PER_STACK ((1u << 24) - 1)
#define DEFINED              (1ull << 63) /* in an index entry: the id was given a stack */

static size_t put_frames(uint8_t *out, const uint64_t *f, uint32_t n)
{
    uint64_t prev = 0;
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = perch__zigzag((int64_t)(f[i] - prev));
        prev = f[i];
        while (v >= 0x80) {
            out[len++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        out[len++] = (uint8_t)v;
    }
    return len;
}

int perch__stacks_add(perch__stacks *s, perch__budget *b, const perch_stack_rec *rec)
{
    uint32_t n = rec->frame_count;
    int err;
    if (rec->id == 0 || (n && !rec->frames))
        return PERCH_EINVAL;
    if (rec->id < s->count && (s->index[rec->id] & DEFINED))
        return PERCH_EFORMAT; /* an id given twice: which stack a sample meant is unknown (the
                               * capture reader refuses it; other producers never send it) */
    if (n > MAX_FRAMES_PER_STACK)
        n = MAX_FRAMES_PER_STACK;
    err = perch__grow_zeroed(b, (void **)&s->index, &s->cap, (size_t)rec->id + 1,
                             sizeof *s->index);
    if (!err)
        err = perch__grow_zeroed(b, (void **)&s->known, &s->known_cap, (size_t)rec->id / 64 + 1,
                                 sizeof *s->known);
    if (!err)
        err = perch__grow(b, (void **)&s->bytes, &s->byte_cap, s->byte_count + (size_t)n * 10, 1);
    if (!err)
        err = perch__grow(b, (void **)&s->frames, &s->frame_cap, n, sizeof *s->frames);
    if (err)
        return err;
    s->index[rec->id] = DEFINED | (uint64_t)s->byte_count << 24 | n;
    s->known[rec->id / 64] &= ~((uint64_t)1 << (rec->id % 64));
    s->known[rec->id / 64] |= (uint64_t)(n != 0) << (rec->id % 64);
    if (n)
        s->byte_count += put_frames(s->bytes + s->byte_count, rec->frames, n);
    if (rec->id >= s->count)
        s->count = (size_t)rec->id + 1;
    return 0;
}

const uint64_t *perch__stacks_get(const perch__stacks *s, uint32_t id, uint32_t *count)
{
    const uint8_t *p;
    uint64_t v, prev = 0;
    *count = 0;
    if (id == 0 || id >= s->count)
        return NULL;
    v = s->index[id];
    *count = (uint32_t)(v & MAX_FRAMES_PER_STACK);
    if (*count == 0)
        return NULL;
    p = s->bytes + ((v & ~DEFINED) >> 24);
    for (uint32_t i = 0; i < *count; i++) {
        uint64_t z = 0;
        unsigned n = 0;
        if ((size_t)(s->bytes + s->byte_count - p) >= 8)
            z = perch__varint8(p, &n);
        p += n;
        for (unsigned shift = 0; n == 0; shift += 7) { /* longer, or near the end: by bytes */
            uint8_t c = *p++;
            z |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80))
                break;
        }
        prev += (uint64_t)perch__unzigzag(z);
        s->frames[i] = prev;
    }
    return s->frames;
}

bool perch__stacks_leaf(const perch__stacks *s, uint32_t id, uint64_t *leaf)
{
    const uint8_t *p;
    uint64_t z = 0;
    if (!perch__stacks_known(s, id))
        return false;
    p = s->bytes + ((s->index[id] & ~DEFINED) >> 24);
    for (unsigned shift = 0;; shift += 7) { /* the first frame: its difference from 0 */
        uint8_t c = *p++;
        z |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            break;
    }
    *leaf = (uint64_t)perch__unzigzag(z);
    return true;
}

void perch__stacks_free(perch__stacks *s, perch__budget *b)
{
    perch__release(b, (void **)&s->bytes, &s->byte_cap, 1);
    perch__release(b, (void **)&s->index, &s->cap, sizeof *s->index);
    perch__release(b, (void **)&s->known, &s->known_cap, sizeof *s->known);
    perch__release(b, (void **)&s->frames, &s->frame_cap, sizeof *s->frames);
    s->byte_count = 0;
    s->count = 0;
}
