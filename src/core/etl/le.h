/*
 * Little-endian loads for the .etl reader. Callers check bounds before each load; these
 * only assemble bytes (memcpy, so unaligned input and strict aliasing are both fine).
 */
#ifndef PERCH_ETL_LE_H
#define PERCH_ETL_LE_H

#include <stdint.h>
#include <string.h>

#include "perch/event.h"

static inline uint16_t perch__le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t perch__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t perch__le64(const uint8_t *p)
{
    return (uint64_t)perch__le32(p) | ((uint64_t)perch__le32(p + 4) << 32);
}

/* A GUID as stored in Windows structures: u32, u16, u16, 8 bytes. */
static inline void perch__le_guid(const uint8_t *p, perch_guid *g)
{
    g->data1 = perch__le32(p);
    g->data2 = perch__le16(p + 4);
    g->data3 = perch__le16(p + 6);
    memcpy(g->data4, p + 8, 8);
}

#endif
