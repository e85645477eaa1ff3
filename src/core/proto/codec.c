/*
 * The generic message codec: walks a message schema (schema.c) to encode a struct into a
 * payload, or to decode a payload into a struct. Decoding makes two passes over the bytes:
 * the first checks every field and adds up the memory its strings, blobs and arrays need,
 * the second fills the struct from one block of that size, so a decoded message is freed
 * with one perch_free and a refused one allocates nothing.
 */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "capture/codec.h"
#include "perch/error.h"
#include "perch/proto.h"
#include "perch/utf16.h"
#include "proto/proto_internal.h"
#include "util/mem.h"

#define FIELD(base, off, T)  ((T *)(void *)((char *)(base) + (off)))
#define CFIELD(base, off, T) ((T const *)(const void *)((const char *)(base) + (off)))
#define ALIGN                8u

static size_t align_up(size_t n)
{
    return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static bool valid_utf8(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (p[i] == 0)
            return false;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = perch_utf8_seq_len(p + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

/* ---- encoding --------------------------------------------------------------------------- */

static int enc_bytes(perch__cap_buf *b, const void *p, size_t n)
{
    int err = perch__cap_buf_reserve(b, CAP_VARINT_MAX + n, PERCH_PROTO_MAX_MESSAGE);
    if (err < 0)
        return err;
    cap_put_varint(b, n);
    cap_put_bytes(b, p, n);
    return 0;
}

static int enc_struct(perch__cap_buf *b, const perch__pschema *s, const void *msg, int depth);

static int enc_array(perch__cap_buf *b, const perch__pfield *f, const void *msg, int depth)
{
    uint32_t n = *CFIELD(msg, f->off2, uint32_t);
    const char *elems = *CFIELD(msg, f->off, const char *);
    int err = n > f->max || (n && elems == NULL) ? PERCH_EINVAL : 0;
    if (err == 0)
        err = perch__cap_buf_reserve(b, CAP_VARINT_MAX, PERCH_PROTO_MAX_MESSAGE);
    if (err < 0)
        return err;
    cap_put_varint(b, n);
    for (uint32_t i = 0; i < n && err == 0; i++)
        err = enc_struct(b, f->elem, elems + (size_t)i * f->elem->size, depth + 1);
    return err;
}

static int enc_field(perch__cap_buf *b, const perch__pfield *f, const void *msg, int depth)
{
    uint64_t v = 0;
    switch (f->kind) {
    case PK_U8:
        v = *CFIELD(msg, f->off, uint8_t);
        break;
    case PK_BOOL:
        v = *CFIELD(msg, f->off, bool) ? 1 : 0;
        break;
    case PK_U32:
        v = *CFIELD(msg, f->off, uint32_t);
        break;
    case PK_U64:
        v = *CFIELD(msg, f->off, uint64_t);
        break;
    case PK_I32:
        v = cap_zigzag(*CFIELD(msg, f->off, int32_t));
        break;
    case PK_STR: {
        const char *s = *CFIELD(msg, f->off, const char *);
        size_t n = s ? strlen(s) : 0;
        if (n > f->max || !valid_utf8((const uint8_t *)s, n))
            return PERCH_EINVAL;
        return enc_bytes(b, s, n);
    }
    case PK_BLOB: {
        const uint8_t *p = *CFIELD(msg, f->off, const uint8_t *);
        size_t n = *CFIELD(msg, f->off2, size_t);
        if (n > f->max || (n && p == NULL))
            return PERCH_EINVAL;
        return enc_bytes(b, p, n);
    }
    case PK_ARRAY:
        return enc_array(b, f, msg, depth);
    default:
        return PERCH_EINVAL;
    }
    if (f->kind != PK_U64 && f->kind != PK_I32 && v > f->max)
        return PERCH_EINVAL;
    int err = perch__cap_buf_reserve(b, CAP_VARINT_MAX, PERCH_PROTO_MAX_MESSAGE);
    if (err < 0)
        return err;
    if (f->kind == PK_U8 || f->kind == PK_BOOL)
        cap_put_u8(b, (uint8_t)v);
    else
        cap_put_varint(b, v);
    return 0;
}

static int enc_struct(perch__cap_buf *b, const perch__pschema *s, const void *msg, int depth)
{
    int err = depth > 2 ? PERCH_EINVAL : 0;
    for (uint32_t i = 0; i < s->count && err == 0; i++)
        err = enc_field(b, &s->fields[i], msg, depth);
    return err;
}

int perch_proto_encode(unsigned type, bool reply, const void *msg, uint8_t **out, size_t *len)
{
    bool empty;
    const perch__pschema *s = perch__proto_schema(type, reply, &empty);
    perch__cap_buf b = {NULL, 0, 0};
    int err = s == NULL || (!empty && msg == NULL) ? PERCH_EINVAL : 0;
    if (err == 0)
        err = perch__cap_buf_reserve(&b, 1, PERCH_PROTO_MAX_MESSAGE);
    if (err == 0 && !empty)
        err = enc_struct(&b, s, msg, 0);
    if (err < 0) {
        perch__cap_buf_free(&b);
        return err;
    }
    *out = b.data;
    *len = b.len;
    return 0;
}

/* ---- decoding ----------------------------------------------------------------------------- */

typedef struct dec {
    perch__cap_cursor c;
    uint8_t *block; /* NULL in the measuring pass */
    size_t need;    /* bytes of block used (or needed) so far */
    const char *field;
    const char *what; /* why the field was refused */
} dec;

static void *take(dec *d, size_t n)
{
    void *p = d->block ? d->block + d->need : NULL;
    d->need += align_up(n);
    return p;
}

static int bad(dec *d, const perch__pfield *f, const char *what)
{
    d->field = f->name;
    d->what = what;
    cap_fail(&d->c, PERCH_EFORMAT);
    return PERCH_EFORMAT;
}

static int dec_struct(dec *d, const perch__pschema *s, void *msg, int depth);

static int dec_bytes(dec *d, const perch__pfield *f, void *msg, bool str)
{
    uint64_t n = cap_get_varint(&d->c);
    if (d->c.error == 0 && n > f->max)
        return bad(d, f, "length over its cap");
    const uint8_t *p = cap_get_bytes(&d->c, (size_t)n);
    if (d->c.error)
        return bad(d, f, "cut short");
    if (str && !valid_utf8(p, (size_t)n))
        return bad(d, f, "not UTF-8 without NUL");
    uint8_t *dst = take(d, (size_t)n + (str ? 1 : 0));
    if (dst == NULL)
        return 0;
    if (n)
        memcpy(dst, p, (size_t)n);
    if (str) {
        dst[n] = '\0';
        *FIELD(msg, f->off, const char *) = (const char *)dst;
    } else {
        *FIELD(msg, f->off, const uint8_t *) = n ? dst : NULL;
        *FIELD(msg, f->off2, size_t) = (size_t)n;
    }
    return 0;
}

static int dec_array(dec *d, const perch__pfield *f, void *msg, int depth)
{
    uint64_t n = cap_get_varint(&d->c);
    if (d->c.error)
        return bad(d, f, "cut short");
    /* Every element takes at least one byte: a count past the bytes left is a lie. */
    if (n > f->max || n > d->c.len - d->c.pos)
        return bad(d, f, "count over its cap or the bytes left");
    char *elems = take(d, (size_t)n * f->elem->size);
    if (elems != NULL) {
        memset(elems, 0, (size_t)n * f->elem->size);
        *FIELD(msg, f->off, const void *) = n ? elems : NULL;
        *FIELD(msg, f->off2, uint32_t) = (uint32_t)n;
    }
    for (uint64_t i = 0; i < n; i++) {
        int err = dec_struct(d, f->elem, elems ? elems + i * f->elem->size : NULL, depth + 1);
        if (err < 0)
            return err;
    }
    return 0;
}

static int dec_field(dec *d, const perch__pfield *f, void *msg, int depth)
{
    uint64_t v;
    if (f->kind == PK_STR || f->kind == PK_BLOB)
        return dec_bytes(d, f, msg, f->kind == PK_STR);
    if (f->kind == PK_ARRAY)
        return dec_array(d, f, msg, depth);
    v = f->kind == PK_U8 || f->kind == PK_BOOL ? cap_get_u8(&d->c) : cap_get_varint(&d->c);
    if (d->c.error)
        return bad(d, f, d->c.error == PERCH_ETRUNC ? "cut short" : "a varint over 64 bits");
    if (f->kind == PK_I32 && (int64_t)cap_unzigzag(v) != (int32_t)cap_unzigzag(v))
        return bad(d, f, "out of range");
    if (f->kind != PK_U64 && f->kind != PK_I32 && v > f->max)
        return bad(d, f, "out of range");
    if (msg == NULL)
        return 0;
    switch (f->kind) {
    case PK_U8:
        *FIELD(msg, f->off, uint8_t) = (uint8_t)v;
        break;
    case PK_BOOL:
        *FIELD(msg, f->off, bool) = v != 0;
        break;
    case PK_U32:
        *FIELD(msg, f->off, uint32_t) = (uint32_t)v;
        break;
    case PK_U64:
        *FIELD(msg, f->off, uint64_t) = v;
        break;
    default:
        *FIELD(msg, f->off, int32_t) = (int32_t)cap_unzigzag(v);
        break;
    }
    return 0;
}

static int dec_struct(dec *d, const perch__pschema *s, void *msg, int depth)
{
    for (uint32_t i = 0; i < s->count; i++) {
        int err = dec_field(d, &s->fields[i], msg, depth);
        if (err < 0)
            return err;
    }
    return 0;
}

static int dec_pass(dec *d, const perch__pschema *s, const void *payload, size_t len, void *msg)
{
    cap_cursor_init(&d->c, payload, len);
    d->need = 0;
    int err = dec_struct(d, s, msg, 0);
    if (err == 0 && d->c.pos != len) {
        d->field = "end";
        d->what = "bytes after the last field";
        err = PERCH_EFORMAT;
    }
    return err;
}

int perch_proto_decode(unsigned type, bool reply, const void *payload, size_t len, void *msg,
                       size_t msg_size, void **mem, char *reason, size_t reason_len)
{
    bool empty;
    const perch__pschema *s = perch__proto_schema(type, reply, &empty);
    dec d = {{NULL, 0, 0, 0}, NULL, 0, NULL, NULL};
    if (s == NULL || (!empty && (msg == NULL || msg_size != s->size)))
        return PERCH_EINVAL;
    int err = dec_pass(&d, s, payload, len, NULL); /* measure and check */
    if (err == 0 && d.need > 0 && (d.block = perch__alloc(d.need)) == NULL)
        err = PERCH_ENOMEM;
    if (err == 0 && !empty) {
        memset(msg, 0, s->size);
        dec_pass(&d, s, payload, len, msg); /* cannot fail: the same bytes passed the check */
    }
    if (err == PERCH_EFORMAT && reason != NULL && reason_len > 0)
        snprintf(reason, reason_len, "malformed %s: field %s: %s (byte %zu of %zu)", s->name,
                 d.field ? d.field : "?", d.what ? d.what : "invalid", d.c.pos, len);
    if (err < 0)
        return err;
    *mem = d.block;
    return 0;
}
