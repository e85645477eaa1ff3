/*
 * GUID text conversion and the kernel group <-> MOF class GUID table.
 *
 * Kernel records in an .etl file carry a HookId ((group << 8) | type) instead of a provider
 * GUID; the live consumer delivers the GUID instead. This table is the one place that maps
 * between the two, so both sources produce the same normalized perch_event. GUIDs are from
 * docs/events.md section "Provider GUIDs".
 */
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/event.h"

struct group_guid {
    uint16_t group;
    perch_guid guid;
};

/* 3d6fa8dX-fe05-11d0-9dda-00c04fd7ba7c is the family of the oldest kernel classes. */
#define NT_CLASS(x) {0x3d6fa8d0u + (x), 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}}

static const struct group_guid kernel_groups[] = {
    {0x00, {0x68fdd900, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}}},
    {0x01, NT_CLASS(4)}, /* DiskIo */
    {0x02, NT_CLASS(3)}, /* PageFault */
    {0x03, NT_CLASS(0)}, /* Process */
    {0x04, {0x90cbdc39, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}}},
    {0x05, NT_CLASS(1)}, /* Thread */
    {0x06, {0x9a280ac0, 0xc8e0, 0x11d1, {0x84, 0xe2, 0x00, 0xc0, 0x4f, 0xb9, 0x98, 0xa2}}},
    {0x08, {0xbf3a50c5, 0xa9c9, 0x4988, {0xa0, 0x05, 0x2d, 0xf0, 0xb7, 0xc8, 0x0f, 0x80}}},
    {0x09, {0xae53722e, 0xc863, 0x11d2, {0x86, 0x59, 0x00, 0xc0, 0x4f, 0xa3, 0x21, 0xa1}}},
    {0x0B, {0x01853a65, 0x418f, 0x4f36, {0xae, 0xfc, 0xdc, 0x0f, 0x1d, 0x2f, 0xd2, 0x35}}},
    {0x0C, {0x99134383, 0x5248, 0x43fc, {0x83, 0x4b, 0x52, 0x94, 0x54, 0xe7, 0x5d, 0xf3}}},
    {0x0F, {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}}},
    {0x14, {0x2cb15d1d, 0x5fc1, 0x11d2, {0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18}}},
    {0x18, {0xdef2fe46, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}}},
    {0x1A, {0x45d8cccd, 0x539f, 0x4b72, {0xa8, 0xb7, 0x5c, 0x68, 0x31, 0x42, 0x60, 0x9a}}},
};

const perch_guid *perch_kernel_group_guid(uint16_t group)
{
    for (size_t i = 0; i < sizeof kernel_groups / sizeof kernel_groups[0]; i++)
        if (kernel_groups[i].group == group)
            return &kernel_groups[i].guid;
    return NULL;
}

uint16_t perch_kernel_group_of(const perch_guid *g)
{
    for (size_t i = 0; i < sizeof kernel_groups / sizeof kernel_groups[0]; i++)
        if (perch_guid_equal(&kernel_groups[i].guid, g))
            return kernel_groups[i].group;
    return PERCH_GROUP_NONE;
}

void perch_guid_format(const perch_guid *g, char out[37])
{
    snprintf(out, 37, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", g->data1, g->data2,
             g->data3, g->data4[0], g->data4[1], g->data4[2], g->data4[3], g->data4[4],
             g->data4[5], g->data4[6], g->data4[7]);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int perch_guid_parse(const char *text, perch_guid *g)
{
    static const int dash_at[] = {8, 13, 18, 23};
    uint8_t bytes[16];
    size_t nbytes = 0;

    if (!text || strlen(text) != 36)
        return PERCH_EINVAL;
    for (size_t i = 0, d = 0; i < 36;) {
        if (d < 4 && (int)i == dash_at[d]) {
            if (text[i] != '-')
                return PERCH_EINVAL;
            i++, d++;
            continue;
        }
        int hi = hex_value(text[i]), lo = hex_value(text[i + 1]);
        if (hi < 0 || lo < 0)
            return PERCH_EINVAL;
        bytes[nbytes++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    g->data1 = (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
               bytes[3];
    g->data2 = (uint16_t)(bytes[4] << 8 | bytes[5]);
    g->data3 = (uint16_t)(bytes[6] << 8 | bytes[7]);
    memcpy(g->data4, bytes + 8, 8);
    return 0;
}
