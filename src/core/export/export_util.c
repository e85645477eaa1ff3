/*
 * Small building blocks of the exporters: budgeted growable arrays, the u64 -> u32 map, the
 * string arena and the buffered writer over perch_output. All memory an exporter holds goes
 * through perch__grow, so one budget (perch_export_options.memory_limit) caps it.
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

int perch__grow_slow(perch__budget *b, void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *np;
    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return PERCH_ELIMIT;
        ncap *= 2;
    }
    if (!perch__budget_take(b, (uint64_t)(ncap - *cap) * elem))
        return PERCH_ELIMIT;
    np = perch__realloc(*p, ncap * elem);
    if (!np) {
        perch__budget_give(b, (uint64_t)(ncap - *cap) * elem);
        return PERCH_ENOMEM;
    }
    *p = np;
    *cap = ncap;
    return 0;
}

void perch__release(perch__budget *b, void **p, size_t *cap, size_t elem)
{
    perch__free(*p);
    perch__budget_give(b, (uint64_t)*cap * elem);
    *p = NULL;
    *cap = 0;
}

static void map_insert(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t key, uint32_t val)
{
    size_t i = perch__hash64(key) & (cap - 1);
    while (keys[i] && keys[i] != key)
        i = (i + 1) & (cap - 1);
    keys[i] = key;
    vals[i] = val;
}

static int map_rehash(perch__map *m, perch__budget *b)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    size_t bytes = ncap * (sizeof(uint64_t) + sizeof(uint32_t));
    uint64_t *keys;
    uint32_t *vals;
    size_t count;
    if (!perch__budget_take(b, bytes))
        return PERCH_ELIMIT;
    keys = perch__calloc(ncap, sizeof *keys);
    vals = perch__calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        perch__free(keys);
        perch__free(vals);
        perch__budget_give(b, bytes);
        return PERCH_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            map_insert(keys, vals, ncap, m->keys[i], m->vals[i]);
    count = m->count;
    perch__map_free(m, b);
    m->count = count;
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return 0;
}

int perch__map_put(perch__map *m, perch__budget *b, uint64_t key, uint32_t val)
{
    uint32_t old;
    int err;
    if (key == 0)
        return PERCH_EINVAL;
    if (perch__map_get(m, key, &old)) {
        map_insert(m->keys, m->vals, m->cap, key, val);
        return 0;
    }
    if ((m->count + 1) * 4 > m->cap * 3) {
        err = map_rehash(m, b);
        if (err)
            return err;
    }
    map_insert(m->keys, m->vals, m->cap, key, val);
    m->count++;
    return 0;
}

void perch__map_free(perch__map *m, perch__budget *b)
{
    perch__free(m->keys);
    perch__free(m->vals);
    perch__budget_give(b, (uint64_t)m->cap * (sizeof(uint64_t) + sizeof(uint32_t)));
    memset(m, 0, sizeof *m);
}

int perch__strings_add(perch__strings *s, perch__budget *b, const char *str, size_t n,
                       uint32_t *off)
{
    int err;
    if (s->len + n + 1 > UINT32_MAX)
        return PERCH_ELIMIT;
    err = perch__grow(b, (void **)&s->data, &s->cap, s->len + n + 1, 1);
    if (err)
        return err;
    memcpy(s->data + s->len, str, n);
    s->data[s->len + n] = 0;
    *off = (uint32_t)s->len;
    s->len += n + 1;
    return 0;
}

void perch__writer_init(perch__writer *w, perch_output *out)
{
    w->out = out;
    w->error = 0;
    w->used = 0;
}

int perch__writer_flush(perch__writer *w)
{
    if (w->used && !w->error)
        w->error = w->out->write(w->out->ctx, w->buf, w->used);
    w->used = 0;
    return w->error;
}

void perch__writer_put(perch__writer *w, const void *data, size_t len)
{
    if (w->used + len > sizeof w->buf) {
        perch__writer_flush(w);
        if (len > sizeof w->buf) {
            if (!w->error)
                w->error = w->out->write(w->out->ctx, data, len);
            return;
        }
    }
    memcpy(w->buf + w->used, data, len);
    w->used += len;
}

int perch__json_output_sink(void *ctx, const char *data, size_t n)
{
    perch_output *out = ctx;
    return out->write(out->ctx, data, n);
}

void perch__run_flush(perch__run *r)
{
    if (r->len)
        perch_json_raw_n(r->w, r->buf, r->len);
    r->len = 0;
}

void perch__run_int(perch__run *r, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        *--p = '-';
    perch__run_raw(r, p, (size_t)(tmp + sizeof tmp - p));
}

void perch__run_raw(perch__run *r, const char *text, size_t n)
{
    if (n + 1 > sizeof r->buf) {
        perch__run_flush(r);
        perch_json_raw_n(r->w, text, n);
        return;
    }
    memcpy(perch__run_reserve(r, n), text, n);
    r->len += n;
}

const char perch__digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

/* The 4 digits of v < 10000, zero-padded. */
static inline void put4(char *out, uint32_t v)
{
    uint32_t hi = v / 100;
    memcpy(out, perch__digit_pairs + 2 * hi, 2);
    memcpy(out + 2, perch__digit_pairs + 2 * (v - hi * 100), 2);
}

/* The 8 digits of v < 10^8, zero-padded. */
static inline void put8(char *out, uint32_t v)
{
    uint32_t hi = v / 10000;
    put4(out, hi);
    put4(out + 4, v - hi * 10000);
}

/* v < 10000 without padding; returns the length. */
static inline size_t put_small(char *out, uint32_t v)
{
    uint32_t hi;
    if (v < 100) {
        if (v < 10) {
            out[0] = (char)('0' + v);
            return 1;
        }
        memcpy(out, perch__digit_pairs + 2 * v, 2);
        return 2;
    }
    hi = v / 100;
    if (hi < 10) {
        out[0] = (char)('0' + hi);
        memcpy(out + 1, perch__digit_pairs + 2 * (v - hi * 100), 2);
        return 3;
    }
    memcpy(out, perch__digit_pairs + 2 * hi, 2);
    memcpy(out + 2, perch__digit_pairs + 2 * (v - hi * 100), 2);
    return 4;
}

/* v < 10^8 without padding: the high part, then 4 digits (32-bit arithmetic). */
static inline size_t put_mid(char *out, uint32_t v)
{
    uint32_t hi;
    size_t n;
    if (v < 10000)
        return put_small(out, v);
    hi = v / 10000;
    n = put_small(out, hi);
    put4(out + n, v - hi * 10000);
    return n + 4;
}

/* Most numbers of a trace's events have at most 8 digits (CPUs, ids, microseconds of a few
 * minutes): those take 32-bit divisions by constants, in groups of 4 and 2 digits; longer ones
 * are split at 10^8 and 10^16. */
size_t perch__put_uint(char *out, uint64_t v)
{
    uint64_t hi;
    size_t n;
    if (v < 100000000u)
        return put_mid(out, (uint32_t)v);
    if (v < 10000000000000000u) {
        hi = v / 100000000u;
        n = put_mid(out, (uint32_t)hi);
        put8(out + n, (uint32_t)(v - hi * 100000000u));
        return n + 8;
    }
    hi = v / 10000000000000000u; /* at most 1844 */
    n = put_small(out, (uint32_t)hi);
    v -= hi * 10000000000000000u;
    hi = v / 100000000u;
    put8(out + n, (uint32_t)hi);
    put8(out + n + 8, (uint32_t)(v - hi * 100000000u));
    return n + 16;
}

void perch__put_digits(char *out, uint64_t v, size_t n)
{
    char *p = out + n;
    while (n >= 2) {
        p -= 2;
        memcpy(p, perch__digit_pairs + 2 * (v % 100), 2);
        v /= 100;
        n -= 2;
    }
    if (n)
        *--p = (char)('0' + v % 10);
}

struct text_buf {
    char *p;
    size_t len, cap;
};

static int text_sink(void *ctx, const char *data, size_t n)
{
    struct text_buf *t = ctx;
    if (n > t->cap - t->len)
        return PERCH_ELIMIT;
    memcpy(t->p + t->len, data, n);
    t->len += n;
    return 0;
}

size_t perch__json_string_text(const char *s, size_t n, char *out, size_t cap)
{
    struct text_buf t = {out, 0, cap};
    perch_json w;
    if (n + 2 <= cap && perch_json_plain_prefix(s, n) == n) { /* nothing to escape */
        out[0] = '"';
        memcpy(out + 1, s, n);
        out[n + 1] = '"';
        return n + 2;
    }
    perch_json_init(&w, text_sink, &t);
    perch_json_string_n(&w, s, n);
    return perch_json_flush(&w) == 0 ? t.len : 0;
}
