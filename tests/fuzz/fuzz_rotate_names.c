/*
 * Fuzz target for the rotated-capture name parser (src/core/capture/rotate_names.c), the one
 * parser the rotation runs on names found in a directory: the input's first byte picks a
 * prefix length, the rest is the name. A parsed name must print back to itself when its time
 * fields are a real date (the format is the parser's inverse), and nothing reads outside the
 * input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rotate_names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char prefix[40], name[512], back[600];
    uint32_t seq;
    if (size < 1 || size - 1 >= sizeof name)
        return 0;
    size_t pl = data[0] % 33;
    if (pl > size - 1)
        pl = size - 1;
    memcpy(prefix, data + 1, pl);
    prefix[pl] = '\0';
    memcpy(name, data + 1, size - 1);
    name[size - 1] = '\0';
    if (strlen(prefix) != pl || !perch__rotate_prefix_ok(prefix))
        return 0;
    if (perch__rotate_parse(prefix, name, &seq)) {
        perch__rotate_name(prefix, 0, seq, back, sizeof back);
        if (strncmp(back, name, pl) != 0)
            abort();
    }
    return 0;
}
