/*
 * The report's interned stacks in bounded memory. Each stack's frames are appended to a spool
 * (util/spool.h) and its entry (frame offset, length, kernel part, timer samples, the thread
 * of its first sample) lives in a paged array (util/paged.h) indexed by id, so only recent
 * entries and a few buffers stay in memory and the rest goes to scratch files past the
 * report's memory budget. At the end the stack hash (S7 of shared/docs/report-reference.md)
 * is computed from them: each stack with a timer sample rendered as text once, in id order,
 * into an external sort (util/extsort.h) that drops repeated texts (a stack interned again
 * after the model's window restarts has a second id) and yields them sorted bytewise for
 * SHA-256. The value is the definition's exactly; only where the texts are held changes.
 * The top stacks of the text report are picked in one pass over the entries (a heap of N).
 */
#include <string.h>

#include "perch/error.h"
#include "report/report_internal.h"
#include "util/mem.h"
#include "util/sha256.h"

#define META_PAGE ((size_t)32 << 10)

void perch__rstacks_init(rstacks *s, uint64_t memory, perch_scratch_open_fn open, void *open_ctx)
{
    memset(s, 0, sizeof *s);
    s->open = open;
    s->open_ctx = open_ctx;
    s->hash_memory = (size_t)(memory / 2);
    perch__paged_init(&s->meta, sizeof(rstack), META_PAGE, (size_t)(memory / 4), open, open_ctx);
    perch__spool_init(&s->frames, (size_t)(memory / 4), open, open_ctx);
}

void perch__rstacks_free(rstacks *s)
{
    perch__paged_free(&s->meta);
    perch__spool_free(&s->frames);
}

int perch__rstacks_add(rstacks *s, const perch_stack_rec *rec)
{
    if (rec->id != s->count + 1)
        return PERCH_EFORMAT;
    if (rec->frame_count > 0 && rec->frames == NULL)
        return PERCH_EINVAL;
    rstack *e = perch__paged_at(&s->meta, rec->id - 1, true);
    if (e == NULL)
        return s->meta.error;
    e->frame_off = perch__spool_size(&s->frames);
    e->count = rec->frame_count;
    e->kernel = rec->kernel_frames;
    e->samples = 0;
    e->thread_key = 0;
    s->count++;
    return perch__spool_append(&s->frames, rec->frames, sizeof *rec->frames * rec->frame_count);
}

rstack *perch__rstacks_get(rstacks *s, uint32_t id)
{
    return id == 0 || id > s->count ? NULL : perch__paged_at(&s->meta, id - 1, true);
}

int perch__rstacks_frames(rstacks *s, const rstack *e, uint64_t **buf, uint32_t *cap)
{
    if (e->count > *cap) {
        uint64_t *p = perch__realloc(*buf, sizeof *p * e->count);
        if (p == NULL)
            return PERCH_ENOMEM;
        *buf = p;
        *cap = e->count;
    }
    return perch__spool_read(&s->frames, e->frame_off, *buf, sizeof **buf * e->count);
}

/* "0x1a2b,0x3c" into out (19 bytes a frame at most); returns the length. */
static size_t stack_text(const uint64_t *f, uint32_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = f[i];
        int digits = 1;
        while (digits < 16 && (v >> (4 * digits)) != 0)
            digits++;
        if (i)
            *p++ = ',';
        *p++ = '0';
        *p++ = 'x';
        for (int d = digits - 1; d >= 0; d--)
            *p++ = hex[(v >> (4 * d)) & 15];
    }
    return (size_t)(p - out);
}

typedef struct hash_ctx {
    perch__sha256 sha;
    bool first;
} hash_ctx;

static int hash_visit(void *ctx, const uint8_t *key, size_t klen, const void *value)
{
    hash_ctx *h = ctx;
    (void)value;
    if (!h->first)
        perch__sha256_update(&h->sha, "\n", 1);
    h->first = false;
    perch__sha256_update(&h->sha, key, klen);
    return 0;
}

/* Adds the text of every stack with a timer sample to the sort. */
static int add_texts(rstacks *s, perch__extsort *sort)
{
    uint64_t *frames = NULL;
    uint32_t cap = 0;
    char *text = NULL;
    size_t text_cap = 0;
    int err = 0;
    for (uint32_t id = 1; id <= s->count && err == 0; id++) {
        rstack *p = perch__rstacks_get(s, id);
        if (p == NULL)
            return s->meta.error;
        rstack e = *p;
        if (e.samples == 0)
            continue;
        if ((size_t)e.count * 19 + 1 > text_cap) {
            char *t = perch__realloc(text, (size_t)e.count * 19 + 1);
            if (t == NULL) {
                err = PERCH_ENOMEM;
                break;
            }
            text = t;
            text_cap = (size_t)e.count * 19 + 1;
        }
        err = perch__rstacks_frames(s, &e, &frames, &cap);
        if (err == 0)
            err = perch__extsort_add(sort, text, stack_text(frames, e.count, text), NULL);
    }
    perch__free(frames);
    perch__free(text);
    return err;
}

int perch__rstacks_hash(rstacks *s, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    perch__extsort_opts o = {0, s->hash_memory, NULL, s->open, s->open_ctx};
    perch__extsort sort;
    hash_ctx h = {.first = true};
    uint8_t d[32];
    perch__extsort_init(&sort, &o);
    perch__sha256_init(&h.sha);
    int err = add_texts(s, &sort);
    if (err == 0)
        err = perch__extsort_finish(&sort, hash_visit, &h);
    s->hash_spilled = sort.spilled;
    perch__extsort_free(&sort);
    if (err)
        return err;
    perch__sha256_final(&h.sha, d);
    for (unsigned i = 0; i < 8; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[16] = '\0';
    return 0;
}

/* Top order: samples descending, then id (first seen) ascending. */
static bool worse(const rstack_ref *a, const rstack_ref *b)
{
    return a->e.samples != b->e.samples ? a->e.samples < b->e.samples : a->id > b->id;
}

static void heap_up(rstack_ref *h, uint32_t i)
{
    while (i > 0 && worse(&h[i], &h[(i - 1) / 2])) {
        rstack_ref t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void heap_down(rstack_ref *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(&h[l], &h[m]))
            m = l;
        if (r < n && worse(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        rstack_ref t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int perch__rstacks_top(rstacks *s, uint32_t top, rstack_ref **out, uint32_t *n,
                       uint32_t *with_samples)
{
    rstack_ref *h = perch__calloc(top ? top : 1, sizeof *h);
    uint32_t k = 0;
    *with_samples = 0;
    if (h == NULL)
        return PERCH_ENOMEM;
    for (uint32_t id = 1; id <= s->count; id++) {
        rstack *p = perch__rstacks_get(s, id);
        if (p == NULL) {
            perch__free(h);
            return s->meta.error;
        }
        if (p->samples == 0)
            continue;
        rstack_ref r = {id, *p};
        (*with_samples)++;
        if (k < top) {
            h[k] = r;
            heap_up(h, k++);
        } else if (top > 0 && worse(&h[0], &r)) {
            h[0] = r;
            heap_down(h, k, 0);
        }
    }
    /* Heap sort: the worst goes last. */
    for (uint32_t m = k; m > 1; m--) {
        rstack_ref t = h[0];
        h[0] = h[m - 1];
        h[m - 1] = t;
        heap_down(h, m - 1, 0);
    }
    *out = h;
    *n = k;
    return 0;
}
