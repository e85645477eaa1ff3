/*
 * Frame blocks for stack parts and key definitions: every part's frames used to be one
 * allocation and one free, about twice per sample. Blocks now come in size classes of 8 << c
 * frames (8 to MAX_PART_FRAMES) and a freed block goes onto its class's free list (its first
 * word links the list), so a steady stream of samples allocates nothing. The lists hold at
 * most the blocks that were in use at once, so memory stays bounded by the model's own caps.
 */
#include "model/mem.h"
#include "model/model_internal.h"

_Static_assert((8u << (FRAME_CLASSES - 1)) >= MAX_PART_FRAMES, "the top class holds a part");

static uint8_t class_of(uint32_t count)
{
    uint8_t c = 0;
    while ((8u << c) < count)
        c++;
    return c;
}

uint64_t *perch__frames_alloc(perch_model *m, uint32_t count, uint8_t *cls)
{
    uint8_t c = class_of(count);
    uint64_t *f = m->frame_free[c];
    if (f != NULL) {
        m->frame_free[c] = (uint64_t *)(uintptr_t)f[0];
    } else {
        f = perch__alloc(sizeof *f * (8u << c));
        if (f == NULL)
            return NULL;
    }
    *cls = c;
    return f;
}

void perch__frames_free(perch_model *m, uint64_t *f, uint8_t cls)
{
    if (f == NULL)
        return;
    f[0] = (uint64_t)(uintptr_t)m->frame_free[cls];
    m->frame_free[cls] = f;
}

void perch__frames_free_all(perch_model *m)
{
    for (unsigned c = 0; c < FRAME_CLASSES; c++) {
        uint64_t *f = m->frame_free[c];
        while (f != NULL) {
            uint64_t *next = (uint64_t *)(uintptr_t)f[0];
            perch__free(f);
            f = next;
        }
        m->frame_free[c] = NULL;
    }
}
