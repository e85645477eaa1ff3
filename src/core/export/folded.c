/*
 * Folded stacks ("collapsed" format of flamegraph.pl and inferno): one line per distinct
 * stack, frames root first separated by ';', then a space and the sample count. Optionally
 * prefixed by "process (pid)" and/or "thread (tid)" frames. One kind of sample per file, so
 * events never add up with CPU time: the timer samples by default, or the PMC samples of one
 * profile source (folded_pmc). Lines are merged by text (two threads with the same stack make
 * one line without the thread prefix) and written sorted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

struct line {
    const char *text;
    uint32_t len;
    uint64_t count;
};

struct folded {
    perch__collect *c;
    perch__interner lines; /* distinct line texts */
    uint64_t *counts;      /* per line */
    size_t count_cap;
    char *buf; /* the line being built */
    size_t buf_len, buf_cap;
};

static int put_frame(struct folded *f, const char *s, size_t n)
{
    int err = perch__grow(&f->c->budget, (void **)&f->buf, &f->buf_cap, f->buf_len + n + 2, 1);
    if (err)
        return err;
    if (f->buf_len)
        f->buf[f->buf_len++] = ';';
    for (size_t i = 0; i < n; i++)
        f->buf[f->buf_len + i] = (s[i] == ';' || s[i] == '\n' || s[i] == '\r') ? '_' : s[i];
    f->buf_len += n;
    return 0;
}

static int put_prefix(struct folded *f, const perch__agg_row *r)
{
    const perch__entities *e = &f->c->ents;
    const perch__thread *t = perch__entities_thread_at(e, r->thread_key);
    char tmp[PERCH_FRAME_NAME_MAX + 32];
    int n, err = 0;
    if (f->c->opt.folded_process) {
        const char *name = t ? perch__thread_process_name(e, t) : "";
        uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
        n = pid == UINT32_MAX
                ? snprintf(tmp, sizeof tmp, "%.120s (?)", *name ? name : "?")
                : snprintf(tmp, sizeof tmp, "%.120s (%" PRIu32 ")", *name ? name : "?", pid);
        err = put_frame(f, tmp, (size_t)n);
    }
    if (!err && f->c->opt.folded_thread)
        err = put_frame(f, tmp,
                        perch__thread_short_name(e, t, t ? t->tid : UINT32_MAX, tmp, sizeof tmp));
    return err;
}

static int build_line(struct folded *f, const perch__agg_row *r)
{
    char name[PERCH_FRAME_NAME_MAX];
    uint32_t count;
    const uint64_t *frames = perch__agg_frames(&f->c->stacks, r, &count);
    int err;
    f->buf_len = 0;
    err = put_prefix(f, r);
    for (uint32_t i = count; !err && i-- > 0;) {
        const perch__module *m = perch__frame_module(&f->c->ents, r, frames[i], r->stack_id == 0);
        err = put_frame(f, name, perch__frame_name(&f->c->ents, m, frames[i], name, sizeof name));
    }
    return err;
}

/* Adds the built line with count, merging it with an equal line. */
static int add_line(struct folded *f, uint64_t count)
{
    uint32_t idx;
    int err = perch__intern(&f->lines, &f->c->budget, f->buf, f->buf_len, &idx);
    if (!err)
        err = perch__grow_zeroed(&f->c->budget, (void **)&f->counts, &f->count_cap, idx + 1,
                                 sizeof *f->counts);
    if (err)
        return err;
    f->counts[idx] += count;
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const struct line *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int write_lines(struct folded *f)
{
    perch__writer *w = perch__alloc(sizeof *w);
    struct line *sorted = NULL;
    size_t cap = 0, n = f->lines.count;
    char num[32];
    int err = perch__grow(&f->c->budget, (void **)&sorted, &cap, n + 1, sizeof *sorted);
    if (err || !w) {
        perch__free(w);
        perch__release(&f->c->budget, (void **)&sorted, &cap, sizeof *sorted);
        return err ? err : PERCH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        sorted[i] =
            (struct line){perch__interned(&f->lines, (uint32_t)i), f->lines.len[i], f->counts[i]};
    qsort(sorted, n, sizeof *sorted, cmp_line);
    perch__writer_init(w, f->c->out);
    for (size_t i = 0; i < n && !w->error; i++) {
        int k = snprintf(num, sizeof num, " %" PRIu64 "\n", sorted[i].count);
        perch__writer_put(w, sorted[i].text, sorted[i].len);
        perch__writer_put(w, num, (size_t)k);
    }
    err = perch__writer_flush(w);
    perch__free(w);
    perch__release(&f->c->budget, (void **)&sorted, &cap, sizeof *sorted);
    return err;
}

/* The kind of samples this file holds: timer samples, or one PMC source. */
static bool wanted(const perch__collect *c, const perch__agg_row *r)
{
    if (!c->opt.folded_pmc)
        return r->kind == PERCH_SAMPLE_TIMER;
    return r->kind == PERCH_SAMPLE_PMC && r->profile_source == c->opt.folded_pmc_source;
}

static int folded_group(void *ctx, const perch__group *g)
{
    struct folded *f = ctx;
    int err = 0;
    for (size_t i = 0; i < g->row_count && !err; i++) {
        if (!wanted(f->c, &g->rows[i]))
            continue;
        err = build_line(f, &g->rows[i]);
        if (!err)
            err = add_line(f, g->rows[i].count);
    }
    return err;
}

static int folded_write(perch__collect *c)
{
    struct folded f;
    int err;
    memset(&f, 0, sizeof f);
    f.c = c;
    err = perch__samplelog_each(c, folded_group, &f);
    if (!err)
        err = write_lines(&f);
    perch__release(&c->budget, (void **)&f.buf, &f.buf_cap, 1);
    perch__release(&c->budget, (void **)&f.counts, &f.count_cap, sizeof *f.counts);
    perch__interner_free(&f.lines, &c->budget);
    return err;
}

static int folded_create(const perch_export_options *opt, perch_output *out, void **state)
{
    return perch__collect_create(opt, out, state, folded_write);
}

const perch__format perch__format_folded = {
    "folded",
    "flamegraph.pl, inferno-flamegraph, speedscope (collapsed stacks)",
    1,
    folded_create,
    perch__collect_bind_pass,
    perch__collect_destroy,
};
