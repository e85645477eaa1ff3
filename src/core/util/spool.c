/*
 * The spool of spool.h. In memory it is one growable buffer. Once it would pass its budget
 * the buffer is written to a new scratch store and becomes a write buffer of WBUF bytes;
 * reads then go through a read-ahead buffer of at least RBUF bytes (a sequential scan costs
 * one scratch read per RBUF bytes).
 */
#include <string.h>

#include "perch/error.h"
#include "util/mem.h"
#include "util/spool.h"

#define WBUF ((size_t)64 << 10)
#define RBUF ((size_t)256 << 10)

void perch__spool_init(perch__spool *s, size_t memory, perch_scratch_open_fn open, void *open_ctx)
{
    memset(s, 0, sizeof *s);
    s->memory = memory;
    s->open = open;
    s->open_ctx = open_ctx;
}

uint64_t perch__spool_size(const perch__spool *s)
{
    return s->flushed + s->mem_len;
}

static int reserve(uint8_t **p, size_t *cap, size_t need)
{
    size_t ncap = *cap ? *cap : 4096;
    if (need <= *cap)
        return 0;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    uint8_t *q = perch__realloc(*p, ncap);
    if (q == NULL)
        return PERCH_ENOMEM;
    *p = q;
    *cap = ncap;
    return 0;
}

static int flush(perch__spool *s)
{
    int err = s->mem_len ? s->scratch.write_at(s->scratch.ctx, s->flushed, s->mem, s->mem_len) : 0;
    if (err == 0) {
        s->flushed += s->mem_len;
        s->mem_len = 0;
    }
    return err;
}

/* Moves the in-memory log to a scratch store. */
static int to_scratch(perch__spool *s)
{
    int err = s->open(s->open_ctx, &s->scratch);
    if (err)
        return err;
    s->on_scratch = true;
    err = flush(s);
    if (err == 0 && s->mem_cap > WBUF) {
        uint8_t *q = perch__realloc(s->mem, WBUF);
        if (q == NULL)
            return PERCH_ENOMEM;
        s->mem = q;
        s->mem_cap = WBUF;
    }
    return err;
}

int perch__spool_append(perch__spool *s, const void *data, size_t len)
{
    if (s->error)
        return s->error;
    if (!s->on_scratch && s->open != NULL && s->mem_len + len > s->memory)
        s->error = to_scratch(s);
    if (s->error == 0 && s->on_scratch && s->mem_len + len > WBUF)
        s->error = flush(s);
    if (s->error == 0 && s->on_scratch && len > WBUF) {
        s->error = s->scratch.write_at(s->scratch.ctx, s->flushed, data, len);
        s->flushed += s->error ? 0 : len;
        return s->error;
    }
    if (s->error == 0)
        s->error = reserve(&s->mem, &s->mem_cap, s->mem_len + len);
    if (s->error)
        return s->error;
    if (len)
        memcpy(s->mem + s->mem_len, data, len);
    s->mem_len += len;
    return 0;
}

int perch__spool_read(perch__spool *s, uint64_t off, void *buf, size_t len)
{
    if (s->error)
        return s->error;
    if (off > perch__spool_size(s) || len > perch__spool_size(s) - off)
        return PERCH_ETRUNC;
    if (len == 0)
        return 0;
    if (!s->on_scratch) {
        memcpy(buf, s->mem + off, len);
        return 0;
    }
    if (off + len > s->flushed && (s->error = flush(s)) != 0)
        return s->error;
    if (off < s->rd_off || off + len > s->rd_off + s->rd_len) {
        size_t want = len > RBUF ? len : RBUF;
        if (want > s->flushed - off)
            want = (size_t)(s->flushed - off);
        if ((s->error = reserve(&s->rd, &s->rd_cap, want)) != 0)
            return s->error;
        s->rd_len = 0;
        if ((s->error = s->scratch.read_at(s->scratch.ctx, off, s->rd, want)) != 0)
            return s->error;
        s->rd_off = off;
        s->rd_len = want;
    }
    memcpy(buf, s->rd + (off - s->rd_off), len);
    return 0;
}

void perch__spool_free(perch__spool *s)
{
    if (s->on_scratch)
        perch_scratch_close(&s->scratch);
    perch__free(s->mem);
    perch__free(s->rd);
    memset(s, 0, sizeof *s);
}
