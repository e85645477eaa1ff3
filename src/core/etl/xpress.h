/*
 * MS-XCA "Plain LZ77" (XPRESS without Huffman) decompression, the codec of compressed .etl
 * buffers. Written from the public specification ([MS-XCA] 2.3 and 2.4): 32-bit flag words
 * read from the most significant bit, a 0 flag for one literal byte, a 1 flag for a 16-bit
 * match token (offset in the high 13 bits + 1, length code in the low 3 bits + 3), with the
 * length extended by a shared half byte, then a byte, then 16 or 32 bits.
 */
#ifndef PERCH_ETL_XPRESS_H
#define PERCH_ETL_XPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decompresses in[0, in_len) into out[0, out_cap) and stores the output length in *produced.
 * Returns 0; PERCH_EOVERRUN when the stream would write past out_cap; PERCH_EFORMAT for a
 * match reaching before the start of the output; PERCH_ETRUNC when the input ends inside a
 * token. Never reads or writes outside the two ranges. On error *produced is untouched. */
int perch__xpress_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                             size_t *produced);

/* For tests: with on, perch__xpress_decompress uses its portable fast loop even where the
 * processor has a faster one (etl/cpu/xpress_*.c), so both can be checked on one machine.
 * Returns the previous setting. The setting is global: set it before decoding starts. */
bool perch__xpress_set_portable(bool on);

/* The same decoder with every byte checked and matches copied one byte at a time, as the
 * specification's loop does: the reference the differential fuzz target holds the fast path
 * to (same result code, length and bytes). */
int perch__xpress_decompress_slow(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                                  size_t *produced);

#endif
