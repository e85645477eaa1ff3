/*
 * The MSF 7.00 ("big MSF") container of PDB files: the superblock, the stream directory
 * (reached through the page map listed in the superblock, which may span several pages), and
 * stream reads over non-contiguous pages. Block sizes 512 to 65536 are accepted; a PDB 2.00
 * ("JG", small MSF) file is recognised and refused. Layout: docs/symbols.md "MSF".
 */
#ifndef PERCH_SYM_MSF_H
#define PERCH_SYM_MSF_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/io.h"

#define PERCH__MSF_NIL 0xFFFFFFFFu

typedef struct perch__msf {
    const perch_input *in; /* borrowed */
    uint32_t block_size, block_count;
    uint32_t stream_count;
    uint32_t *sizes;  /* per stream, PERCH__MSF_NIL for a nil stream */
    uint32_t *first;  /* per stream: index in blocks of its first block */
    uint32_t *blocks; /* every stream's blocks, concatenated */
} perch__msf;

/* Reads the superblock and the stream directory. 0, PERCH_EVERSION (PDB 2.00),
 * PERCH_EFORMAT / PERCH_ETRUNC (with *why), PERCH_ENOMEM or the input's error. */
int perch__msf_open(perch__msf *m, const perch_input *in, const char **why);
void perch__msf_close(perch__msf *m);

/* True when stream s exists and is not nil. */
bool perch__msf_has(const perch__msf *m, uint32_t s);

/* Size of stream s in bytes (0 for a nil or absent stream). */
uint32_t perch__msf_size(const perch__msf *m, uint32_t s);

/* Reads the first min(size, max) bytes of stream s into a new buffer (*buf, *len; the caller
 * frees it with perch__free). A nil or absent stream reads as empty (*buf NULL). */
int perch__msf_read(const perch__msf *m, uint32_t s, uint32_t max, uint8_t **buf, uint32_t *len,
                    const char **why);

#endif
