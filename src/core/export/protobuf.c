/*
 * A minimal protocol-buffers encoder for the pprof writer: varints, varint fields,
 * length-delimited fields and packed repeated varints into a budgeted growable buffer.
 * Nested messages are encoded into their own perch__pb, then added with perch__pb_bytes.
 * Errors are sticky (checked once at the end).
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

static void reserve(perch__pb *p, size_t n)
{
    if (!p->error)
        p->error = perch__grow(p->budget, (void **)&p->data, &p->cap, p->len + n, 1);
}

void perch__pb_varint(perch__pb *p, uint64_t v)
{
    reserve(p, 10);
    if (p->error)
        return;
    while (v >= 0x80) {
        p->data[p->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p->data[p->len++] = (uint8_t)v;
}

void perch__pb_uint(perch__pb *p, uint32_t field, uint64_t v)
{
    if (v == 0)
        return;
    perch__pb_varint(p, (uint64_t)field << 3 | 0);
    perch__pb_varint(p, v);
}

void perch__pb_int(perch__pb *p, uint32_t field, int64_t v)
{
    perch__pb_uint(p, field, (uint64_t)v); /* int64: two's complement, 10 bytes if negative */
}

void perch__pb_raw(perch__pb *p, const void *data, size_t len)
{
    reserve(p, len);
    if (p->error || len == 0)
        return;
    memcpy(p->data + p->len, data, len);
    p->len += len;
}

void perch__pb_bytes(perch__pb *p, uint32_t field, const void *data, size_t len)
{
    perch__pb_varint(p, (uint64_t)field << 3 | 2);
    perch__pb_varint(p, len);
    reserve(p, len);
    if (p->error || len == 0)
        return;
    memcpy(p->data + p->len, data, len);
    p->len += len;
}

void perch__pb_packed(perch__pb *p, uint32_t field, const uint64_t *v, size_t count)
{
    uint64_t head[2];
    size_t n, len;
    if (count == 0)
        return;
    /* the values 20 bytes ahead (room for the key and the length), then the key and length in
     * front of them, and the values moved up against them */
    reserve(p, 20 + count * 10);
    if (p->error)
        return;
    len = perch__put_varints(p->data + p->len + 20, v, count);
    head[0] = (uint64_t)field << 3 | 2;
    head[1] = len;
    n = perch__put_varints(p->data + p->len, head, 2);
    memmove(p->data + p->len + n, p->data + p->len + 20, len);
    p->len += n + len;
}

void perch__pb_free(perch__pb *p)
{
    perch__release(p->budget, (void **)&p->data, &p->cap, 1);
    p->len = 0;
}
