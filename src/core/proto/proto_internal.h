/*
 * Internals of the protocol codec: the message schemas (one table of fields per message
 * type and direction, in schema.c) that the one generic encoder and decoder (codec.c) walk,
 * and the helpers the server session (session.c) shares with them.
 */
#ifndef PERCH_PROTO_INTERNAL_H
#define PERCH_PROTO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "perch/proto.h"

/* Wire kinds of a field (docs/protocol.md, "Field encodings"). */
typedef enum perch__pkind {
    PK_U8,    /* one byte, uint8_t, <= max */
    PK_BOOL,  /* one byte 0 or 1, bool */
    PK_U32,   /* varint, uint32_t, <= max */
    PK_U64,   /* varint, uint64_t */
    PK_I32,   /* zigzag varint, int32_t */
    PK_STR,   /* varint length <= max, then UTF-8 without NUL; const char * */
    PK_BLOB,  /* varint length <= max, then bytes; const uint8_t * at off, size_t at off2 */
    PK_ARRAY, /* varint count <= max, then count elements of elem; pointer at off, uint32_t
                 count at off2 */
} perch__pkind;

typedef struct perch__pschema perch__pschema;

typedef struct perch__pfield {
    const char *name;
    uint8_t kind;
    uint16_t off, off2;
    uint64_t max;
    const perch__pschema *elem;
} perch__pfield;

struct perch__pschema {
    const char *name; /* "status reply" */
    size_t size;      /* sizeof the struct */
    uint32_t count;
    const perch__pfield *fields;
};

/* The schema of type/reply, or NULL when that direction has no message (or no fields:
 * then *empty is true). */
const perch__pschema *perch__proto_schema(unsigned type, bool reply, bool *empty);

#endif
