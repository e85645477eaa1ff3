/*
 * Memory backends of include/perch/io.h, plus helpers shared by every backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/io.h"
#include "util/mem.h"

struct memory_in {
    const uint8_t *data;
    size_t len;
};

static int memory_read_at(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    const struct memory_in *m = ctx;
    size_t n = 0;
    if (off < m->len) {
        n = m->len - (size_t)off;
        if (n > len)
            n = len;
        memcpy(buf, m->data + off, n);
    }
    *got = n;
    return 0;
}

static void memory_in_close(void *ctx)
{
    perch__free(ctx);
}

void perch_input_memory(perch_input *in, const void *data, size_t len)
{
    struct memory_in *m = perch__alloc(sizeof *m);
    memset(in, 0, sizeof *in);
    if (!m)
        return; /* read_at stays NULL: perch_input_read_exact reports ENOMEM */
    m->data = data;
    m->len = len;
    in->read_at = memory_read_at;
    in->close = memory_in_close;
    in->size = len;
    in->ctx = m;
}

int perch_input_read_exact(const perch_input *in, uint64_t off, void *buf, size_t len)
{
    size_t got = 0;
    int err;
    if (!in->read_at)
        return PERCH_ENOMEM;
    while (len) {
        err = in->read_at(in->ctx, off, buf, len, &got);
        if (err)
            return err;
        if (got == 0)
            return PERCH_ETRUNC;
        off += got;
        buf = (uint8_t *)buf + got;
        len -= got;
    }
    return 0;
}

void perch_input_close(perch_input *in)
{
    if (in->close)
        in->close(in->ctx);
    memset(in, 0, sizeof *in);
}

static int memory_write(void *ctx, const void *buf, size_t len)
{
    perch_memory_out *m = ctx;
    if (len > m->limit - m->len)
        return PERCH_ELIMIT;
    if (m->len + len > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + len)
            cap = cap > m->limit / 2 ? m->limit : cap * 2;
        uint8_t *p = perch__realloc(m->data, cap);
        if (!p)
            return PERCH_ENOMEM;
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->len, buf, len);
    m->len += len;
    return 0;
}

static int memory_close(void *ctx)
{
    (void)ctx;
    return 0;
}

void perch_output_memory(perch_output *out, perch_memory_out *mem, size_t limit)
{
    memset(mem, 0, sizeof *mem);
    mem->limit = limit;
    out->write = memory_write;
    out->sync = NULL;
    out->close = memory_close;
    out->ctx = mem;
}

uint8_t *perch_output_memory_take(perch_memory_out *mem, size_t *len)
{
    uint8_t *data = mem->data;
    *len = mem->len;
    mem->data = NULL;
    mem->len = mem->cap = 0;
    return data;
}

static int stdout_write(void *ctx, const void *buf, size_t len)
{
    return fwrite(buf, 1, len, (FILE *)ctx) == len ? 0 : PERCH_EIO;
}

static int stdout_close(void *ctx)
{
    return fflush((FILE *)ctx) == 0 ? 0 : PERCH_EIO;
}

void perch_output_stdout(perch_output *out)
{
    out->write = stdout_write;
    out->sync = NULL;
    out->close = stdout_close;
    out->ctx = stdout;
}
