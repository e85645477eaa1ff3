/*
 * CRC-32C: the portable path by slicing-by-8 (eight bytes per step through eight 256-entry
 * tables, then a byte at a time for the tail), and perch__crc32c, which takes the hardware
 * path of cpu/crc32c_*.c when the processor has one.
 */
#include "capture/crc32c.h"

#include "capture/crc32c_table.h"

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t perch__crc32c_portable(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = load_le32(p) ^ crc;
        uint32_t hi = load_le32(p + 4);
        crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
              crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
              crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

uint32_t perch__crc32c(uint32_t crc, const void *data, size_t len)
{
    if (perch__crc32c_hw_ok())
        return perch__crc32c_hw(crc, data, len);
    return perch__crc32c_portable(crc, data, len);
}
