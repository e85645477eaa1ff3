/*
 * Differential fuzz target for the MS-XCA Plain LZ77 decoder: the fast path
 * (perch__xpress_decompress: word copies, no per-byte checks while both buffers have slack),
 * with the processor's fast loop and with the portable one (perch__xpress_set_portable),
 * against the checked path alone (perch__xpress_decompress_slow, exact match copies). All
 * must give the same result code, the same output length and the same bytes, for three views
 * of the input:
 *   1. the input as a raw stream (the first two bytes choose the output capacity, at most
 *      64 KiB, the usual ETW buffer size);
 *   2. the input as an .etl file: every buffer flagged compressed is decoded into exactly
 *      its decoded size (so the seeds, the real traces, give real streams);
 *   3. the input as a token program, encoded into a valid stream by the tests' encoder (long
 *      matches, every offset class and both ends of the buffers are reached quickly).
 * Outputs live in buffers of exactly the capacity, so ASan sees any write past it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/xpress_encode.h"
#include "etl/xpress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes in[0, len) both ways into out_cap bytes and aborts on any difference. */
static void differ(const uint8_t *in, size_t len, size_t out_cap)
{
    uint8_t *a = malloc(out_cap ? out_cap : 1), *b = malloc(out_cap ? out_cap : 1);
    size_t na = (size_t)-1, nb = (size_t)-1;
    if (a == NULL || b == NULL)
        goto out;
    int rb = perch__xpress_decompress_slow(in, len, b, out_cap, &nb);
    for (int portable = 0; portable <= 1; portable++) {
        perch__xpress_set_portable(portable);
        memset(a, 0xa5, out_cap);
        na = (size_t)-1;
        int ra = perch__xpress_decompress(in, len, a, out_cap, &na);
        if (ra != rb || na != nb || (ra == 0 && memcmp(a, b, na) != 0))
            abort();
    }
    perch__xpress_set_portable(false);
out:
    free(a);
    free(b);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* View 2: walk buffers by BufferSize; decode the compressed ones (flag 0x40 at 0x34), at
 * most 32 per input (a whole trace per run would make the replay driver crawl). */
static void etl_buffers(const uint8_t *data, size_t size)
{
    size_t off = 0;
    int left = 32;
    while (size - off >= 0x48 && left > 0) {
        uint32_t bsize = le32(data + off), used = le32(data + off + 0x30);
        uint16_t flags = (uint16_t)(data[off + 0x34] | (data[off + 0x35] << 8));
        if (bsize < 0x48 || bsize > size - off)
            return;
        if ((flags & 0x40) && used >= 0x48 && used <= (16u << 20)) {
            differ(data + off + 0x48, bsize - 0x48, used - 0x48);
            left--;
        }
        off += bsize;
    }
}

/* View 3: each input byte pair is a token: a literal run or a match of a length class. */
static void token_program(const uint8_t *data, size_t size)
{
    enum { MAX_OUT = 1 << 16 };
    size_t cap = 8 + size * 16, produced = 0, sl;
    uint8_t *stream = malloc(cap);
    struct xenc e;
    if (stream == NULL)
        return;
    xenc_init(&e, stream, cap);
    for (size_t i = 0; i + 1 < size && produced < MAX_OUT; i += 2) {
        uint8_t op = data[i], arg = data[i + 1];
        if (produced == 0 || (op & 3) == 0) {
            for (unsigned k = 0; k <= (op >> 2) % 40u; k++, produced++)
                xenc_literal(&e, (uint8_t)(arg + k));
            continue;
        }
        size_t off = 1 + (((size_t)arg << 5 | (op >> 3)) % (produced < 8192 ? produced : 8192));
        size_t len = (op & 3) == 1   ? 3 + (op >> 2) % 16u
                     : (op & 3) == 2 ? 3 + (size_t)arg * 3
                                     : 3 + (size_t)arg * 257 + (op >> 2);
        xenc_match(&e, off, len);
        produced += len;
    }
    sl = xenc_finish(&e);
    if (sl > 0) {
        differ(stream, sl, produced);                        /* exactly the room needed */
        differ(stream, sl, produced + (size & 63));          /* some room to spare */
        differ(stream, sl, produced > 0 ? produced - 1 : 0); /* one byte short: an overrun */
        differ(stream, sl / 2, produced);                    /* cut: truncated or shorter */
    }
    free(stream);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    differ(data + 2, size - 2, (size_t)(data[0] | (data[1] << 8)));
    etl_buffers(data, size);
    token_program(data, size < 4096 ? size : 4096);
    return 0;
}
