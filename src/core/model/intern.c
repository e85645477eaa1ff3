/*
 * The stack table: each distinct assembled stack (frames and kernel-part length) is stored once
 * in a frame pool and gets a dense 1-based id in first-seen order. A hash of the frames indexes
 * the table; entries with equal hashes are chained and compared frame by frame. A stack is
 * handed to the sink the first time it is interned, so it always precedes its first sample.
 * The table is a window of STACK_WINDOW_FRAMES frames: past it, the table starts over with
 * the next ids (so ids stay dense, and a stack interned again after a reset gets a new id).
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

static uint64_t hash_frames(const uint64_t *f, uint32_t n, uint32_t kernel)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ n ^ ((uint64_t)kernel << 32);
    for (uint32_t i = 0; i < n; i++)
        h = perch__mix64(h ^ f[i]);
    return h;
}

static bool same(const perch_model *m, const stack_entry *e, const uint64_t *f, uint32_t n,
                 uint32_t kernel)
{
    return e->count == n && e->kernel == kernel &&
           memcmp(m->frame_pool + e->off, f, sizeof *f * n) == 0;
}

static int pool_reserve(perch_model *m, uint32_t n)
{
    uint64_t need = m->frame_count + n;
    if (need <= m->frame_cap)
        return 0;
    if (need > MAX_STACK_FRAMES)
        return PERCH_ELIMIT;
    uint64_t ncap = m->frame_cap ? m->frame_cap * 2 : 4096;
    while (ncap < need)
        ncap *= 2;
    if (ncap > MAX_STACK_FRAMES)
        ncap = MAX_STACK_FRAMES;
    uint64_t *p = perch__realloc(m->frame_pool, (size_t)ncap * sizeof *p);
    if (p == NULL)
        return PERCH_ENOMEM;
    m->frame_pool = p;
    m->frame_cap = ncap;
    return 0;
}

/* Starts a new window when n more frames would not fit in the current one. */
static void window_check(perch_model *m, uint32_t n)
{
    if (m->frame_count == 0 || m->frame_count + n <= STACK_WINDOW_FRAMES)
        return;
    model_count(m, MC_STACK_WINDOWS, 1);
    m->stack_base += m->stack_count;
    m->stack_count = 0;
    m->frame_count = 0;
    perch__hmap_free(&m->stack_map);
}

static int emit_stack(perch_model *m, uint32_t idx)
{
    const stack_entry *e = &m->stacks[idx];
    perch_stack_rec rec = {m->stack_base + idx + 1, e->count, e->kernel, m->frame_pool + e->off};
    model_count(m, MC_STACKS_DISTINCT, 1);
    return m->sink.stack != NULL ? m->sink.stack(m->sink.ctx, &rec) : 0;
}

uint32_t perch__stack_intern(perch_model *m, const uint64_t *frames, uint32_t count,
                             uint32_t kernel)
{
    uint64_t h = hash_frames(frames, count, kernel);
    uint32_t head = NONE32;
    perch__hmap_get(&m->stack_map, h, &head);
    for (uint32_t i = head; i != NONE32; i = m->stacks[i].next)
        if (same(m, &m->stacks[i], frames, count, kernel))
            return m->stack_base + i + 1;
    window_check(m, count);
    if (m->frame_count == 0)
        head = NONE32; /* a new window: the old chain is gone */
    int err = pool_reserve(m, count);
    err = err ? err
              : perch__grow_array((void **)&m->stacks, sizeof *m->stacks, &m->stack_cap,
                                  m->stack_count + 1, MAX_STACKS);
    uint32_t idx = m->stack_count;
    err = err ? err : perch__hmap_put(&m->stack_map, h, idx);
    if (err < 0) {
        m->error = err;
        return 0;
    }
    stack_entry *e = &m->stacks[idx];
    e->off = m->frame_count;
    e->hash = h;
    e->count = count;
    e->kernel = kernel;
    e->next = head;
    memcpy(m->frame_pool + m->frame_count, frames, sizeof *frames * count);
    m->frame_count += count;
    m->stack_count++;
    err = emit_stack(m, idx);
    if (err < 0) {
        m->error = err;
        return 0;
    }
    return m->stack_base + idx + 1;
}

void perch__intern_free(perch_model *m)
{
    perch__free(m->frame_pool);
    perch__free(m->stacks);
    perch__hmap_free(&m->stack_map);
}
