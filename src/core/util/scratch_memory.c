/*
 * The portable half of include/perch/scratch.h: the memory scratch store (a growable buffer
 * with a cap, for tests and callers that must not touch the disk), the opener over the
 * platform's temporary file, and perch_scratch_close.
 */
#include <string.h>

#include "perch/error.h"
#include "perch/scratch.h"
#include "util/mem.h"

struct mem_scratch {
    uint8_t *data;
    size_t len, cap, limit;
};

static int mem_write_at(void *ctx, uint64_t off, const void *buf, size_t len)
{
    struct mem_scratch *m = ctx;
    if (off > m->limit || len > m->limit - off)
        return PERCH_ELIMIT;
    size_t end = (size_t)off + len;
    if (end > m->cap) {
        size_t ncap = m->cap ? m->cap : 4096;
        while (ncap < end)
            ncap = ncap > SIZE_MAX / 2 ? end : ncap * 2;
        uint8_t *p = perch__realloc(m->data, ncap);
        if (p == NULL)
            return PERCH_ENOMEM;
        m->data = p;
        m->cap = ncap;
    }
    if ((size_t)off > m->len)
        memset(m->data + m->len, 0, (size_t)off - m->len);
    if (len)
        memcpy(m->data + off, buf, len);
    if (end > m->len)
        m->len = end;
    return 0;
}

static int mem_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
    const struct mem_scratch *m = ctx;
    if (off > m->len || len > m->len - off)
        return PERCH_ETRUNC;
    if (len)
        memcpy(buf, m->data + off, len);
    return 0;
}

static void mem_close(void *ctx)
{
    struct mem_scratch *m = ctx;
    perch__free(m->data);
    perch__free(m);
}

int perch_scratch_open_memory(void *ctx, perch_scratch *s)
{
    struct mem_scratch *m = perch__calloc(1, sizeof *m);
    if (m == NULL)
        return PERCH_ENOMEM;
    m->limit = ctx != NULL ? *(const size_t *)ctx : SIZE_MAX;
    s->write_at = mem_write_at;
    s->read_at = mem_read_at;
    s->close = mem_close;
    s->ctx = m;
    return 0;
}

int perch_scratch_open_temp(void *ctx, perch_scratch *s)
{
    return perch_scratch_open_file(s, ctx);
}

void perch_scratch_close(perch_scratch *s)
{
    if (s->close != NULL)
        s->close(s->ctx);
    memset(s, 0, sizeof *s);
}
