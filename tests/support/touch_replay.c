/*
 * The entity-store replay of touch_replay.h: the sink callbacks of chrome's first pass over
 * the exporters' entity store, with an optional refusal of the n-th new thread (so a caller
 * can check where the split walk stops when the sink refuses a touch).
 */
#include "touch_replay.h"

#include <string.h>

#include "perch/error.h"
#include "perch/io.h"

static int touch(touch_replay *t, uint64_t key, uint32_t tid, uint16_t cpu, bool sliced)
{
    uint32_t idx;
    t->touches++;
    if (t->refuse && t->ents.thread_count + 1 == t->refuse &&
        !perch__map_get(&t->ents.thread_map, key, &idx))
        return PERCH_ELIMIT;
    int err = perch__entities_touch_thread(&t->ents, key, tid, cpu, &idx);
    if (!err && sliced && idx != UINT32_MAX)
        err = perch__map_put(&t->sliced, &t->budget, key, 1);
    return err;
}

static int on_sample(void *ctx, const perch_sample_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, false);
}

static int on_slice(void *ctx, const perch_slice_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, true);
}

static int on_touch(void *ctx, const perch_touch_rec *r)
{
    return touch(ctx, r->thread_key, r->tid, r->cpu, r->sliced != 0);
}

void touch_replay_run(const uint8_t *data, size_t len, bool split, size_t refuse, touch_replay *t)
{
    perch_sink sink = {.ctx = t, .sample = on_sample, .slice = on_slice};
    perch_input in;
    memset(t, 0, sizeof *t);
    t->budget.limit = UINT64_MAX;
    perch__entities_init(&t->ents, &t->budget);
    t->refuse = refuse;
    sink.touch = split ? on_touch : NULL;
    perch_input_memory(&in, data, len);
    memset(&t->st, 0xff, sizeof t->st);
    t->err = perch_capture_replay_ex(&in, &sink, NULL, &t->st);
    perch_input_close(&in);
}

const char *touch_replay_diff(const touch_replay *a, const touch_replay *b)
{
    if (a->err != b->err)
        return "error";
    if (a->ents.thread_count != b->ents.thread_count)
        return "thread count";
    for (size_t i = 0; i < a->ents.thread_count; i++) {
        const perch__thread *x = &a->ents.threads[i], *y = &b->ents.threads[i];
        uint32_t sx = 0, sy = 0;
        if (x->key != y->key)
            return "thread key";
        if (x->tid != y->tid)
            return "tid";
        if (x->cpu != y->cpu)
            return "cpu";
        if (perch__map_get(&a->sliced, x->key, &sx) != perch__map_get(&b->sliced, y->key, &sy))
            return "sliced";
    }
    return NULL;
}

void touch_replay_free(touch_replay *t)
{
    perch__map_free(&t->sliced, &t->budget);
    perch__entities_free(&t->ents);
}
