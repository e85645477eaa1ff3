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

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void perch__pb_packed(perch__pb *p, uint32_t field, const uint64_t *v, size_t count)
{
    size_t len = 0;
    if (count == 0)
        return;
    for (size_t i = 0; i < count; i++)
        len += varint_len(v[i]);
    perch__pb_varint(p, (uint64_t)field << 3 | 2);
    perch__pb_varint(p, len);
    for (size_t i = 0; i < count; i++)
        perch__pb_varint(p, v[i]);
}

void perch__pb_free(perch__pb *p)
{
    perch__release(p->budget, (void **)&p->data, &p->cap, 1);
    p->len = 0;
}
