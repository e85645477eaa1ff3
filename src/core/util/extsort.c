/*
 * The external sort of extsort.h. In memory: an arena of records (u32 key length, key,
 * value) and an array of references sorted with qsort. A run is the sorted, merged records
 * written back to back into the scratch store; the final pass merges the runs through a
 * binary heap of cursors (each with its own read buffer), FANIN runs at a time: more runs
 * are first merged into longer ones.
 */
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "util/extsort.h"
#include "util/mem.h"

#define DEFAULT_MEMORY ((size_t)8 << 20)
#define FANIN          32
#define CURSOR_BUF     ((size_t)64 << 10)
#define WRITE_BUF      ((size_t)64 << 10)

static uint32_t klen_of(const uint8_t *rec)
{
    uint32_t n;
    memcpy(&n, rec, sizeof n);
    return n;
}

static int cmp_keys(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int cmp_rec(const uint8_t *a, const uint8_t *b)
{
    return cmp_keys(a + 4, klen_of(a), b + 4, klen_of(b));
}

static int cmp_ref(const void *x, const void *y)
{
    return cmp_rec(((const perch__extsort_ref *)x)->p, ((const perch__extsort_ref *)y)->p);
}

void perch__extsort_init(perch__extsort *s, const perch__extsort_opts *o)
{
    memset(s, 0, sizeof *s);
    s->o = *o;
    if (s->o.memory == 0)
        s->o.memory = DEFAULT_MEMORY;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 1024;
    void *q;
    if (need <= *cap)
        return 0;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elem || (q = perch__realloc(*p, ncap * elem)) == NULL)
        return PERCH_ENOMEM;
    *p = q;
    *cap = ncap;
    return 0;
}

/* Sorts the held records and merges adjacent equal keys; returns how many remain. */
static size_t sort_held(perch__extsort *s)
{
    size_t out = 0;
    for (size_t i = 0; i < s->count; i++)
        s->refs[i].p = s->arena + s->refs[i].off;
    if (s->count > 1) /* refs is NULL while nothing is held */
        qsort(s->refs, s->count, sizeof *s->refs, cmp_ref);
    for (size_t i = 0; i < s->count; i++) {
        if (out > 0 && cmp_rec(s->refs[out - 1].p, s->refs[i].p) == 0) {
            const uint8_t *a = s->refs[out - 1].p, *b = s->refs[i].p;
            if (s->o.merge != NULL)
                s->o.merge((uint8_t *)a + 4 + klen_of(a), b + 4 + klen_of(b));
            continue;
        }
        s->refs[out++] = s->refs[i];
    }
    return out;
}

/* A buffered appender at the end of the scratch store. */
typedef struct appender {
    perch__extsort *s;
    uint8_t *buf;
    size_t len;
} appender;

static int app_flush(appender *a)
{
    perch__extsort *s = a->s;
    int err = a->len ? s->scratch.write_at(s->scratch.ctx, s->scratch_end, a->buf, a->len) : 0;
    if (err == 0) {
        s->scratch_end += a->len;
        s->spilled += a->len;
    }
    a->len = 0;
    return err;
}

static int app_put(appender *a, const uint8_t *rec, size_t n)
{
    int err = 0;
    if (a->len + n > WRITE_BUF)
        err = app_flush(a);
    if (err == 0 && n > WRITE_BUF)
        err = a->s->scratch.write_at(a->s->scratch.ctx, a->s->scratch_end, rec, n);
    if (err == 0 && n > WRITE_BUF) {
        a->s->scratch_end += n;
        a->s->spilled += n;
    } else if (err == 0) {
        memcpy(a->buf + a->len, rec, n);
        a->len += n;
    }
    return err;
}

static int add_run(perch__extsort *s, uint64_t begin)
{
    int err = grow((void **)&s->runs, &s->run_cap, s->run_count + 1, sizeof *s->runs);
    if (err == 0)
        s->runs[s->run_count++] = (perch__extsort_run){begin, s->scratch_end};
    return err;
}

static int ensure_scratch(perch__extsort *s)
{
    if (s->scratch_open)
        return 0;
    int err = s->o.open(s->o.open_ctx, &s->scratch);
    s->scratch_open = err == 0;
    return err;
}

/* Writes the held records as a run and empties memory. */
static int spill(perch__extsort *s)
{
    size_t n = sort_held(s), rl = 4 + s->o.value_len;
    appender a = {s, perch__alloc(WRITE_BUF), 0};
    uint64_t begin = s->scratch_end;
    int err = a.buf ? ensure_scratch(s) : PERCH_ENOMEM;
    for (size_t i = 0; i < n && err == 0; i++)
        err = app_put(&a, s->refs[i].p, rl + klen_of(s->refs[i].p));
    if (err == 0)
        err = app_flush(&a);
    if (err == 0)
        err = add_run(s, begin);
    perch__free(a.buf);
    s->count = 0;
    s->arena_len = 0;
    return err;
}

int perch__extsort_add(perch__extsort *s, const void *key, size_t klen, const void *value)
{
    size_t rl = 4 + klen + s->o.value_len;
    uint32_t k32 = (uint32_t)klen;
    if (s->error)
        return s->error;
    if (klen > UINT32_MAX - 64)
        return s->error = PERCH_ELIMIT;
    if (s->o.open != NULL && s->count > 0 &&
        s->arena_len + rl + (s->count + 1) * sizeof *s->refs > s->o.memory)
        s->error = spill(s);
    if (s->error == 0)
        s->error = grow((void **)&s->arena, &s->arena_cap, s->arena_len + rl, 1);
    if (s->error == 0)
        s->error = grow((void **)&s->refs, &s->refs_cap, s->count + 1, sizeof *s->refs);
    if (s->error)
        return s->error;
    uint8_t *p = s->arena + s->arena_len;
    memcpy(p, &k32, 4);
    if (klen)
        memcpy(p + 4, key, klen);
    if (s->o.value_len)
        memcpy(p + 4 + klen, value, s->o.value_len);
    s->refs[s->count++].off = s->arena_len;
    s->arena_len += rl;
    s->records++;
    return 0;
}

/* ---- merging runs -------------------------------------------------------------------------- */

typedef struct cursor {
    uint64_t pos, end; /* unread bytes of the run in the scratch store */
    uint8_t *buf;
    size_t cap, len, at; /* buffered bytes [at, len) */
} cursor;

/* Makes the next record whole in the buffer; *rec NULL at the end of the run. */
static int cursor_fill(perch__extsort *s, cursor *c, size_t need)
{
    if (c->len - c->at >= need)
        return 0;
    if (c->at > 0) { /* buf is NULL before the first fill */
        memmove(c->buf, c->buf + c->at, c->len - c->at);
        c->len -= c->at;
        c->at = 0;
    }
    if (need > c->cap) {
        int err = grow((void **)&c->buf, &c->cap, need, 1);
        if (err)
            return err;
    }
    size_t want = c->cap - c->len;
    if (want > c->end - c->pos)
        want = (size_t)(c->end - c->pos);
    int err = want ? s->scratch.read_at(s->scratch.ctx, c->pos, c->buf + c->len, want) : 0;
    if (err)
        return err;
    c->pos += want;
    c->len += want;
    return c->len - c->at >= need ? 0 : PERCH_EFORMAT;
}

static int cursor_head(perch__extsort *s, cursor *c, const uint8_t **rec)
{
    *rec = NULL;
    if (c->at == c->len && c->pos == c->end)
        return 0;
    int err = cursor_fill(s, c, 4);
    if (err == 0)
        err = cursor_fill(s, c, 4 + s->o.value_len + klen_of(c->buf + c->at));
    if (err == 0)
        *rec = c->buf + c->at;
    return err;
}

typedef struct merger {
    perch__extsort *s;
    cursor *cur;
    const uint8_t **head; /* per cursor: its current record */
    size_t *heap, heap_n;
} merger;

static bool heap_less(const merger *m, size_t a, size_t b)
{
    int c = cmp_rec(m->head[a], m->head[b]);
    return c < 0 || (c == 0 && a < b);
}

static void heap_down(merger *m, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < m->heap_n && heap_less(m, m->heap[l], m->heap[best]))
            best = l;
        if (r < m->heap_n && heap_less(m, m->heap[r], m->heap[best]))
            best = r;
        if (best == i)
            return;
        size_t t = m->heap[i];
        m->heap[i] = m->heap[best];
        m->heap[best] = t;
        i = best;
    }
}

/* Moves cursor k past its record and fixes the heap top (k is the top). */
static int advance_top(merger *m)
{
    size_t k = m->heap[0];
    cursor *c = &m->cur[k];
    c->at += 4 + m->s->o.value_len + klen_of(m->head[k]);
    int err = cursor_head(m->s, c, &m->head[k]);
    if (err)
        return err;
    if (m->head[k] == NULL)
        m->heap[0] = m->heap[--m->heap_n];
    if (m->heap_n)
        heap_down(m, 0);
    return 0;
}

/* The output of a merge: another run, or the caller's visitor. */
typedef struct sink {
    appender *app;
    perch__extsort_visit visit;
    void *ctx;
} sink;

static int emit(perch__extsort *s, const sink *o, const uint8_t *rec)
{
    if (o->app)
        return app_put(o->app, rec, 4 + s->o.value_len + klen_of(rec));
    return o->visit(o->ctx, rec + 4, klen_of(rec), rec + 4 + klen_of(rec));
}

/* Merges runs [first, first + n) into o, equal keys merged. */
static int merge_runs(perch__extsort *s, size_t first, size_t n, const sink *o)
{
    merger m = {s, perch__calloc(n, sizeof *m.cur), perch__calloc(n, sizeof *m.head),
                perch__calloc(n, sizeof *m.heap), 0};
    uint8_t *acc = NULL;
    size_t acc_cap = 0, acc_len = 0;
    int err = m.cur && m.head && m.heap ? 0 : PERCH_ENOMEM;
    for (size_t i = 0; i < n && err == 0; i++) {
        m.cur[i] = (cursor){s->runs[first + i].begin, s->runs[first + i].end, NULL, 0, 0, 0};
        err = cursor_head(s, &m.cur[i], &m.head[i]);
        if (err == 0 && m.head[i])
            m.heap[m.heap_n++] = i;
    }
    for (size_t i = m.heap_n; i-- > 0 && err == 0;)
        heap_down(&m, i);
    while (err == 0 && m.heap_n > 0) {
        const uint8_t *rec = m.head[m.heap[0]];
        size_t rl = 4 + s->o.value_len + klen_of(rec);
        if (acc_len && cmp_rec(acc, rec) == 0) {
            if (s->o.merge)
                s->o.merge(acc + 4 + klen_of(acc), rec + 4 + klen_of(rec));
        } else {
            if (acc_len)
                err = emit(s, o, acc);
            if (err == 0)
                err = grow((void **)&acc, &acc_cap, rl, 1);
            if (err == 0) {
                memcpy(acc, rec, rl);
                acc_len = rl;
            }
        }
        if (err == 0)
            err = advance_top(&m);
    }
    if (err == 0 && acc_len)
        err = emit(s, o, acc);
    for (size_t i = 0; m.cur && i < n; i++)
        perch__free(m.cur[i].buf);
    perch__free(acc);
    perch__free(m.cur);
    perch__free(m.head);
    perch__free(m.heap);
    return err;
}

/* Merges groups of FANIN runs into longer runs until at most FANIN remain. */
static int cascade(perch__extsort *s)
{
    while (s->run_count > FANIN) {
        size_t old = s->run_count, first = 0;
        appender a = {s, perch__alloc(WRITE_BUF), 0};
        int err = a.buf ? 0 : PERCH_ENOMEM;
        for (; first < old && err == 0; first += FANIN) {
            size_t n = old - first < FANIN ? old - first : FANIN;
            uint64_t begin = s->scratch_end;
            sink o = {&a, NULL, NULL};
            err = merge_runs(s, first, n, &o);
            if (err == 0)
                err = app_flush(&a);
            if (err == 0)
                err = add_run(s, begin);
        }
        perch__free(a.buf);
        if (err)
            return err;
        memmove(s->runs, s->runs + old, (s->run_count - old) * sizeof *s->runs);
        s->run_count -= old;
    }
    return 0;
}

int perch__extsort_finish(perch__extsort *s, perch__extsort_visit visit, void *ctx)
{
    int err = s->error;
    if (err == 0 && s->run_count == 0) {
        size_t n = sort_held(s);
        for (size_t i = 0; i < n && err == 0; i++) {
            const uint8_t *r = s->refs[i].p;
            err = visit(ctx, r + 4, klen_of(r), r + 4 + klen_of(r));
        }
        return err;
    }
    if (err == 0 && s->count > 0)
        err = spill(s);
    if (err == 0)
        err = cascade(s);
    sink o = {NULL, visit, ctx};
    return err ? err : merge_runs(s, 0, s->run_count, &o);
}

void perch__extsort_free(perch__extsort *s)
{
    if (s->scratch_open)
        perch_scratch_close(&s->scratch);
    perch__free(s->arena);
    perch__free(s->refs);
    perch__free(s->runs);
    memset(s, 0, sizeof *s);
}
