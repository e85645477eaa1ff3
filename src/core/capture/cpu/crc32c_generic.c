/*
 * CRC-32C "hardware" path for processors without one in this build (CMake picks this file
 * on every target but x86-64): never available, and the portable code if called anyway.
 */
#include "capture/crc32c.h"

bool perch__crc32c_hw_ok(void)
{
    return false;
}

uint32_t perch__crc32c_hw(uint32_t crc, const void *data, size_t len)
{
    return perch__crc32c_portable(crc, data, len);
}
