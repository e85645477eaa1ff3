/*
 * The disk-full perch_output of failio.h.
 */
#include <stdlib.h>
#include <string.h>

#include "failio.h"
#include "perch/error.h"

static void keep(perch_failio *f, const void *buf, size_t len)
{
    if (f->len + len > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + len)
            cap *= 2;
        uint8_t *p = realloc(f->data, cap);
        if (p == NULL)
            abort();
        f->data = p;
        f->cap = cap;
    }
    if (len)
        memcpy(f->data + f->len, buf, len);
    f->len += len;
}

static int failio_write(void *ctx, const void *buf, size_t len)
{
    perch_failio *f = ctx;
    f->writes++;
    if (f->failed)
        return f->error;
    if (f->writes == f->fail_write) {
        keep(f, buf, len / 2);
        f->failed = true;
        return f->error;
    }
    keep(f, buf, len);
    return 0;
}

static int failio_sync(void *ctx)
{
    perch_failio *f = ctx;
    f->syncs++;
    if (f->failed || f->syncs == f->fail_sync) {
        f->failed = true;
        return f->error;
    }
    f->synced_len = f->len;
    return 0;
}

static int failio_close(void *ctx)
{
    perch_failio *f = ctx;
    return f->failed ? f->error : 0;
}

void perch_failio_init(perch_failio *f, perch_output *out, uint64_t fail_write, uint64_t fail_sync)
{
    memset(f, 0, sizeof *f);
    f->fail_write = fail_write;
    f->fail_sync = fail_sync;
    f->error = PERCH_EIO;
    out->write = failio_write;
    out->sync = failio_sync;
    out->close = failio_close;
    out->ctx = f;
}

void perch_failio_free(perch_failio *f)
{
    free(f->data);
    f->data = NULL;
    f->len = f->cap = 0;
}
