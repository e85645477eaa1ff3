/*
 * The packed decoded form that rides after a record in the import's queue (predecode.h). A
 * pack is a 16-byte head (perch_decode's result, then perch_decoded's first eight bytes: type,
 * kind, opcode, version, pointer size, PMC count, flags) and, when the result is 0, the union
 * member of that type, copied as the decoder left it. The PMC values are not packed: they are
 * the record's own (perch_decode copies them from it), which the consumer has popped.
 */
#include <string.h>

#include "pipeline/predecode.h"

#define HEAD  16u
#define FIRST offsetof(perch_decoded, pmc) /* type .. flags */

_Static_assert(FIRST == 8, "perch_decoded's fields before pmc are eight bytes");

/* The size of each type's union member (0 for PERCH_DECODED_NONE). */
static const uint16_t member_size[PERCH_DECODED_TYPE_COUNT] = {
#define MEMBER_SIZE(upper, lower) [PERCH_DECODED_##upper] = sizeof(perch_##lower),
    PERCH_DECODED_TYPE_MAP(MEMBER_SIZE)
#undef MEMBER_SIZE
};

#define UNION_AT offsetof(perch_decoded, cswitch)

size_t perch__predecode_max(void)
{
    return HEAD + sizeof(perch_decoded) - UNION_AT;
}

/* Packs the union member (n bytes) at out: the common small sizes as one fixed-size copy (the
 * ring has room for the largest pack after every record, and the union is larger), the rest
 * through memcpy. */
#define SMALL 48u
_Static_assert(SMALL <= sizeof(perch_decoded) - UNION_AT, "a small copy stays in the union");

static inline void pack_member(uint8_t *out, const perch_decoded *d, size_t n)
{
    const uint8_t *src = (const uint8_t *)d + UNION_AT;
    if (n <= SMALL)
        memcpy(out, src, SMALL);
    else
        memcpy(out, src, n);
}

size_t perch__predecode_pack(void *ctx, const perch_event *ev, uint8_t *out)
{
    perch_decoded d;
    int64_t rc = perch_decode(ev, &d, NULL);
    size_t n;
    (void)ctx;
    memcpy(out, &rc, sizeof rc);
    if (rc != 0)
        return HEAD;
    memcpy(out + 8, &d, FIRST);
    n = d.type < PERCH_DECODED_TYPE_COUNT ? member_size[d.type] : 0;
    pack_member(out + HEAD, &d, n);
    return HEAD + ((n + 7u) & ~(size_t)7u);
}

/* Unpacks the union member (n bytes, padded to 8) into d: the sizes of the frequent records as
 * fixed-size copies. */
static inline void unpack_member(perch_decoded *d, const uint8_t *src, size_t n)
{
    uint8_t *dst = (uint8_t *)d + UNION_AT;
    switch (n) {
    case 8:
        memcpy(dst, src, 8);
        break;
    case 16:
        memcpy(dst, src, 16);
        break;
    case 32:
        memcpy(dst, src, 32);
        break;
    case 40:
        memcpy(dst, src, 40);
        break;
    default:
        memcpy(dst, src, n);
    }
}

int perch__predecode_unpack(const perch_event *ev, const uint8_t *p, uint32_t len, perch_decoded *d)
{
    int64_t rc;
    memcpy(&rc, p, sizeof rc);
    if (rc != 0)
        return (int)rc;
    memcpy(d, p + 8, FIRST);
    memcpy(d->pmc, ev->pmc, sizeof d->pmc); /* the popped record's: zero past pmc_count */
    unpack_member(d, p + HEAD, len - HEAD);
    return 0;
}
