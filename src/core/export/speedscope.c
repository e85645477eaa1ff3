/*
 * speedscope writer: the speedscope JSON file format
 * (https://www.speedscope.app/file-format-schema.json). One "sampled" profile per thread
 * (and per PMC source: "... pmc source N", unit "none"), frames shared and named
 * `module!+0xoffset`, each sample a frame-index array root first with its weight (count x
 * sampling interval in nanoseconds for timer samples, count for PMC samples). Samples are
 * aggregated by distinct stack (bounded memory), so speedscope's "Time Order" view shows one
 * block per stack in first-seen order; "Left Heavy" and "Sandwich" are exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

#define MAX_FRAMES 4096

struct speedscope {
    perch__collect *c;
    perch__name_cache frames; /* frame names = the shared frames list */
    perch_json *w;
    uint64_t best, index, active; /* the busiest timer profile so far */
    uint32_t idx[MAX_FRAMES];
};

/* A row of a group whose thread's process key is pk (what perch__row_process gives). */
static int write_stack(struct speedscope *s, const perch__agg_row *r, uint64_t pk)
{
    uint32_t count;
    const uint64_t *frames = perch__agg_frames(&s->c->stacks, r, &count);
    int err = 0;
    if (count > MAX_FRAMES)
        count = MAX_FRAMES;
    for (uint32_t i = 0; i < count && !err; i++)
        err = perch__frame_name_index(&s->frames, &s->c->budget, &s->c->ents, r, pk, frames[i],
                                      &s->idx[i]);
    perch_json_begin_array(s->w);
    for (uint32_t i = count; i-- > 0;) /* root first */
        perch_json_uint(s->w, s->idx[i]);
    perch_json_end_array(s->w);
    return err;
}

/* The weight of count samples of kind into *w: the count for PMC samples, count x interval
 * ns for timer samples; PERCH_ELIMIT (*w untouched) past 64 bits (absurd counts). */
static int weight_of(const struct speedscope *s, uint16_t kind, uint64_t count, uint64_t *w)
{
    uint64_t ns;
    if (kind == PERCH_SAMPLE_PMC) {
        *w = count;
        return 0;
    }
    if (__builtin_mul_overflow(count, perch__interval_ns(&s->c->opt), &ns))
        return PERCH_ELIMIT;
    *w = ns;
    return 0;
}

/* The profile's weights; PERCH_ELIMIT when one does not fit in 64 bits. */
static int write_weights(struct speedscope *s, const perch__group *g)
{
    uint64_t w;
    int err = 0;
    perch_json_key(s->w, "weights");
    perch_json_begin_array(s->w);
    for (size_t i = 0; i < g->row_count && !err; i++) {
        err = weight_of(s, g->rows[i].kind, g->rows[i].count, &w);
        if (!err)
            perch_json_uint(s->w, w);
    }
    perch_json_end_array(s->w);
    return err;
}

static int write_profile(struct speedscope *s, const perch__group *g)
{
    const perch__agg_row *first = &g->rows[0];
    bool pmc = first->kind == PERCH_SAMPLE_PMC;
    char name[300];
    uint32_t tid = g->thread ? g->thread->tid : UINT32_MAX;
    size_t n = perch__thread_label(&s->c->ents, g->thread, tid, name, sizeof name - 40);
    uint64_t end;
    int werr, err = weight_of(s, first->kind, g->count, &end); /* the total, before any text */
    if (err)
        return err;
    if (pmc)
        snprintf(name + n, sizeof name - n, " pmc source %u", (unsigned)first->profile_source);
    perch_json_begin_object(s->w);
    perch_json_key(s->w, "type");
    perch_json_string(s->w, "sampled");
    perch_json_key(s->w, "name");
    perch_json_string(s->w, name);
    perch_json_key(s->w, "unit");
    perch_json_string(s->w, pmc ? "none" : "nanoseconds");
    perch_json_key(s->w, "startValue");
    perch_json_uint(s->w, 0);
    perch_json_key(s->w, "endValue");
    perch_json_uint(s->w, end);
    perch_json_key(s->w, "samples");
    perch_json_begin_array(s->w);
    for (size_t i = 0; i < g->row_count && !err; i++)
        err = write_stack(s, &g->rows[i], g->thread ? g->thread->process_key : 0);
    perch_json_end_array(s->w);
    werr = write_weights(s, g);
    perch_json_end_object(s->w);
    return err ? err : werr;
}

/* One profile per group; remembers the index of the busiest thread's timer profile. */
static int profile_group(void *ctx, const perch__group *g)
{
    struct speedscope *s = ctx;
    bool idle = g->thread ? g->thread->tid == 0 : false;
    if (g->rows[0].kind != PERCH_SAMPLE_PMC && !idle && g->count > s->best) {
        s->best = g->count;
        s->active = s->index;
    }
    s->index++;
    return write_profile(s, g);
}

/* Writes every profile; *active receives the index of the busiest thread's timer profile,
 * not counting the idle threads (speedscope opens on it). */
static int write_profiles(struct speedscope *s, uint64_t *active)
{
    int err;
    perch_json_key(s->w, "profiles");
    perch_json_begin_array(s->w);
    err = perch__samplelog_each(s->c, profile_group, s);
    perch_json_end_array(s->w);
    *active = s->active;
    return err;
}

static void write_frames(struct speedscope *s)
{
    perch_json_key(s->w, "shared");
    perch_json_begin_object(s->w);
    perch_json_key(s->w, "frames");
    perch_json_begin_array(s->w);
    for (size_t i = 0; i < s->frames.names.count; i++) {
        perch_json_begin_object(s->w);
        perch_json_key(s->w, "name");
        perch_json_string_n(s->w, perch__interned(&s->frames.names, (uint32_t)i),
                            s->frames.names.len[i]);
        perch_json_end_object(s->w);
    }
    perch_json_end_array(s->w);
    perch_json_end_object(s->w);
}

static int speedscope_write(perch__collect *c)
{
    struct speedscope *s = perch__calloc(1, sizeof *s);
    uint64_t active = 0;
    int err;
    if (!s || !(s->w = perch__alloc(sizeof *s->w))) {
        perch__free(s);
        return PERCH_ENOMEM;
    }
    s->c = c;
    perch_json_init(s->w, perch__json_output_sink, c->out);
    perch_json_begin_object(s->w);
    perch_json_key(s->w, "$schema");
    perch_json_string(s->w, "https://www.speedscope.app/file-format-schema.json");
    perch_json_key(s->w, "exporter");
    perch_json_string(s->w, "perch");
    perch_json_key(s->w, "name");
    perch_json_string(s->w, "perch CPU samples");
    err = write_profiles(s, &active);
    write_frames(s);
    perch_json_key(s->w, "activeProfileIndex");
    perch_json_uint(s->w, active);
    perch_json_end_object(s->w);
    perch_json_newline(s->w);
    if (!err)
        err = perch_json_flush(s->w);
    perch__name_cache_free(&s->frames, &c->budget);
    perch__free(s->w);
    perch__free(s);
    return err;
}

static int speedscope_create(const perch_export_options *opt, perch_output *out, void **state)
{
    return perch__collect_create(opt, out, state, speedscope_write);
}

const perch__format perch__format_speedscope = {
    "speedscope",
    "speedscope.app (drop the file on the page)",
    1,
    speedscope_create,
    perch__collect_bind_pass,
    perch__collect_destroy,
};
