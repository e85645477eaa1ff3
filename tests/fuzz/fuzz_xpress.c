/*
 * Fuzz target for the MS-XCA Plain LZ77 decoder alone. The first two input bytes choose the
 * output capacity (so overrun checks at every size are reached); the rest is the stream.
 * The output buffer is exactly that size, so ASan sees any write past it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "etl/xpress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t cap, produced = 0;
    uint8_t *out;
    if (size < 2)
        return 0;
    cap = (size_t)(data[0] | (data[1] << 8)) * 4;
    out = malloc(cap ? cap : 1);
    if (out == NULL)
        return 0;
    if (perch__xpress_decompress(data + 2, size - 2, out, cap, &produced) == 0 && produced > cap)
        abort();
    free(out);
    return 0;
}
