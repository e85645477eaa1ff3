/*
 * The stack table: each distinct assembled stack (frames and kernel-part length) is stored once
 * in a frame pool and gets a dense 1-based id in first-seen order. A stack is handed to the sink
 * the first time it is interned, so it always precedes its first sample. The table is a window
 * of STACK_WINDOW_FRAMES frames: past it, the table starts over with the next ids (so ids stay
 * dense, and a stack interned again after a reset gets a new id).
 *
 * Lookup costs one pass over the frames and one comparison for a stack seen before:
 *   - a small direct-mapped cache keyed by (length, kernel length, first and last frame) names
 *     the stack most recently interned with that key (samples repeat their stacks in bursts);
 *     a hit is checked by one comparison and needs no hash at all; an entry holds 32 bits of
 *     its key, so a stack with another key is turned away without reading the pool;
 *   - otherwise the frames are hashed (four independent multiply lanes, so the hash is not one
 *     long chain of dependent multiplies) and looked up in an open-addressing table whose slots
 *     are 32 bits: the stack's place in the pool and 10 bits of its hash, so a probe touches
 *     only the slot and, when those bits agree (a stranger's do once in 1,024), the stack's
 *     frames. The table is read once per sample at a random place, so its size is what a
 *     lookup costs: a window of stacks of 12 frames (the synthetic traces') has a table of
 *     256 Ki slots, 1 MiB, where slots holding the full hash took 4 MiB;
 *   - each stack's pool entry starts with one header word (frame count, kernel length and the
 *     stack's index in the window), so a comparison reads one contiguous run of memory, and a
 *     match gives the index without another read. The table's growth rehashes the stacks from
 *     the pool.
 * The hash and the cache decide nothing but where to look: ids, window restarts and every
 * record sent are those of a table compared frame by frame.
 */
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"

#define MIN_SLOTS 1024u

/* A pool entry's header word: frame count, kernel length, index in the window. */
#define HEADER_LEN_BITS 20u
#define HEADER_SHAPE    ((1ull << (2 * HEADER_LEN_BITS)) - 1) /* count and kernel length */
/* A slot: the pool offset + 1 below SLOT_OFF_BITS, the top bits of the hash above. */
#define SLOT_OFF_BITS 22u
#define SLOT_OFF_MASK ((1u << SLOT_OFF_BITS) - 1)

/* A window holds at most STACK_WINDOW_FRAMES frames (or one longer stack, as long as
 * MAX_ASSEMBLED_FRAMES at most) and one header per stack of at least one frame: its pool
 * offsets fit the slot, its lengths and indexes the header. */
_Static_assert(MAX_ASSEMBLED_FRAMES < (1u << HEADER_LEN_BITS) &&
                   MAX_ASSEMBLED_FRAMES <= STACK_WINDOW_FRAMES,
               "a stack's lengths fit the header");
_Static_assert(2ull * STACK_WINDOW_FRAMES < SLOT_OFF_MASK, "a window's pool offsets fit a slot");
_Static_assert(STACK_WINDOW_FRAMES < (1ull << (64 - 2 * HEADER_LEN_BITS)),
               "a window's stack indexes fit the header");

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
    return x << r | x >> (64 - r);
}

static uint64_t hash_frames(const uint64_t *f, uint32_t n, uint32_t kernel)
{
    const uint64_t k = 0x9E3779B97F4A7C15ull;
    uint64_t a = 0x243f6a8885a308d3ull ^ n, b = 0x13198a2e03707344ull ^ kernel;
    uint64_t c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a = rotl64((a ^ f[i]) * k, 29);
        b = rotl64((b ^ f[i + 1]) * k, 29);
        c = rotl64((c ^ f[i + 2]) * k, 29);
        d = rotl64((d ^ f[i + 3]) * k, 29);
    }
    for (; i < n; i++)
        a = rotl64((a ^ f[i]) * k, 29);
    return perch__mix64(a ^ rotl64(b, 16) ^ rotl64(c, 32) ^ rotl64(d, 48));
}

/* The cache's key of a stack, mixed: its top bits pick the entry, its low 32 bits are the
 * entry's tag. */
static uint64_t cache_key(const uint64_t *f, uint32_t n, uint32_t kernel)
{
    uint64_t x = f[0] ^ rotl64(f[n - 1], 23) ^ ((uint64_t)n << 44) ^ kernel;
    return x * 0x9E3779B97F4A7C15ull;
}

static inline uint64_t header_shape(uint32_t count, uint32_t kernel)
{
    return (uint64_t)kernel << HEADER_LEN_BITS | count;
}

static inline uint32_t slot_tag(uint64_t h)
{
    return (uint32_t)(h >> (64 - (32 - SLOT_OFF_BITS))) << SLOT_OFF_BITS;
}

static bool same(const perch_model *m, uint32_t off, const uint64_t *f, uint32_t n, uint32_t kernel)
{
    const uint64_t *p = m->frame_pool + off;
    return (p[0] & HEADER_SHAPE) == header_shape(n, kernel) && memcmp(p + 1, f, sizeof *f * n) == 0;
}

/* The index in the window of the stack whose entry starts at off. */
static inline uint32_t pool_index(const perch_model *m, uint32_t off)
{
    return (uint32_t)(m->frame_pool[off] >> (2 * HEADER_LEN_BITS));
}

/* The table's slot for a stack of hash h that is not in it. */
static uint32_t free_slot(const stack_slot *s, uint32_t cap, uint64_t h)
{
    uint32_t j = (uint32_t)h & (cap - 1);
    while (s[j] != 0)
        j = (j + 1) & (cap - 1);
    return j;
}

static int pool_reserve(perch_model *m, uint32_t n)
{
    uint64_t need = m->pool_used + 1 + n;
    if (need <= m->frame_cap)
        return 0;
    if (need > MAX_STACK_FRAMES)
        return PERCH_ELIMIT;
    uint64_t ncap = m->frame_cap ? m->frame_cap * 2 : 4096;
    while (ncap < need)
        ncap *= 2;
    if (ncap > STACK_POOL_WORDS && need <= STACK_POOL_WORDS)
        ncap = STACK_POOL_WORDS; /* a window's frames and headers: no need to double past it */
    if (ncap > MAX_STACK_FRAMES)
        ncap = MAX_STACK_FRAMES;
    uint64_t *p = perch__realloc(m->frame_pool, (size_t)ncap * sizeof *p);
    if (p == NULL)
        return PERCH_ENOMEM;
    m->frame_pool = p;
    m->frame_cap = ncap;
    return 0;
}

/* Keeps the slot table at most half full: doubles it and reinserts every stack, hashed again
 * from the pool. */
static int slots_reserve(perch_model *m)
{
    if ((m->stack_count + 1) * 2 <= m->slot_cap)
        return 0;
    uint32_t n = m->slot_cap ? m->slot_cap * 2 : MIN_SLOTS;
    if (m->stack_count + 1 > MAX_STACKS || n > 2 * MAX_STACKS)
        return PERCH_ELIMIT;
    stack_slot *s = perch__calloc(n, sizeof *s);
    if (s == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < m->slot_cap; i++) {
        if (m->slots[i] == 0)
            continue;
        const uint64_t *p = m->frame_pool + ((m->slots[i] & SLOT_OFF_MASK) - 1);
        uint32_t count = (uint32_t)(p[0] & ((1u << HEADER_LEN_BITS) - 1));
        uint32_t kernel = (uint32_t)(p[0] >> HEADER_LEN_BITS & ((1u << HEADER_LEN_BITS) - 1));
        uint64_t h = hash_frames(p + 1, count, kernel);
        s[free_slot(s, n, h)] = m->slots[i];
    }
    perch__free(m->slots);
    m->slots = s;
    m->slot_cap = n;
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
    m->pool_used = 0;
    if (m->slots != NULL)
        memset(m->slots, 0, sizeof *m->slots * m->slot_cap);
    memset(m->stack_cache, 0, sizeof m->stack_cache);
}

static int emit_stack(perch_model *m, uint32_t idx, uint32_t off, uint32_t count, uint32_t kernel)
{
    perch_stack_rec rec = {m->stack_base + idx + 1, count, kernel, m->frame_pool + off + 1};
    model_count(m, MC_STACKS_DISTINCT, 1);
    return m->sink.stack != NULL ? m->sink.stack(m->sink.ctx, &rec) : 0;
}

/* Stores a new stack (its hash h) in the pool and the table; its index, or NONE32. */
PERCH_NOINLINE static uint32_t add_stack(perch_model *m, const uint64_t *frames, uint32_t count,
                                         uint32_t kernel, uint64_t h)
{
    window_check(m, count);
    int err = pool_reserve(m, count);
    err = err ? err : slots_reserve(m);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    uint32_t idx = m->stack_count, off = (uint32_t)m->pool_used;
    m->slots[free_slot(m->slots, m->slot_cap, h)] = slot_tag(h) | (off + 1);
    m->frame_pool[off] = (uint64_t)idx << (2 * HEADER_LEN_BITS) | header_shape(count, kernel);
    memcpy(m->frame_pool + off + 1, frames, sizeof *frames * count);
    m->pool_used += 1 + (uint64_t)count;
    m->frame_count += count;
    m->stack_count++;
    err = emit_stack(m, idx, off, count, kernel);
    if (err < 0) {
        m->error = err;
        return NONE32;
    }
    return idx;
}

uint32_t perch__stack_intern(perch_model *m, const uint64_t *frames, uint32_t count,
                             uint32_t kernel)
{
    uint64_t key = cache_key(frames, count, kernel);
    stack_cache_entry *c = &m->stack_cache[key >> (64 - STACK_CACHE_BITS)];
    if (c->idx1 != 0 && c->tag == (uint32_t)key && same(m, c->off, frames, count, kernel))
        return m->stack_base + c->idx1;
    uint64_t h = hash_frames(frames, count, kernel);
    uint32_t idx = NONE32, off = 0;
    if (m->slot_cap != 0) {
        uint32_t mask = m->slot_cap - 1, tag = slot_tag(h);
        for (uint32_t j = (uint32_t)h & mask; m->slots[j] != 0; j = (j + 1) & mask) {
            uint32_t v = m->slots[j];
            if ((v & ~SLOT_OFF_MASK) == tag &&
                same(m, (v & SLOT_OFF_MASK) - 1, frames, count, kernel)) {
                off = (v & SLOT_OFF_MASK) - 1;
                idx = pool_index(m, off);
                break;
            }
        }
    }
    if (idx == NONE32) {
        idx = add_stack(m, frames, count, kernel, h);
        if (idx == NONE32)
            return 0;
        off = (uint32_t)(m->pool_used - 1 - count);
    }
    *c = (stack_cache_entry){idx + 1, off, (uint32_t)key};
    return m->stack_base + idx + 1;
}

void perch__intern_free(perch_model *m)
{
    perch__free(m->frame_pool);
    perch__free(m->slots);
}
