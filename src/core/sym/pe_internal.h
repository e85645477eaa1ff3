/*
 * The PE reader's state while it reads an image (pe.c: headers, sections, cached reads by
 * RVA; pe_tables.c: debug directory, exports, .pdata). Layouts: docs/symbols.md "PE images".
 */
#ifndef PERCH_SYM_PE_INTERNAL_H
#define PERCH_SYM_PE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/io.h"
#include "perch/sym.h"

#define PERCH__PE_CACHE_SLOTS 8
#define PERCH__PE_CACHE_BLOCK 65536u

/* Data directory indexes (PE format, "Optional Header Data Directories"). */
enum { PERCH__PE_DIR_EXPORT = 0, PERCH__PE_DIR_EXCEPTION = 3, PERCH__PE_DIR_DEBUG = 6 };

struct perch__pe_dir {
    uint32_t rva, size;
};

struct perch_pe {
    perch_pe_info info;
    perch_pe_section *sections;
    perch_pe_export *exports;
    perch_pe_function *functions;
    char *pool; /* export names, the PDB path and the DLL name */
    uint32_t pool_len, pool_cap;
    uint32_t *name_off; /* per export: its name's pool offset, UINT32_MAX for none */
    uint32_t pdb_off, dll_off;
    uint32_t export_cap, name_cap, function_cap;
};

/* The reader: the input, the image's directories, and a small block cache. */
typedef struct perch__pe_reader {
    const perch_input *in;
    perch_pe *pe;
    uint32_t size_of_headers;
    struct perch__pe_dir dirs[16];
    uint32_t dir_count;
    const char *why;
    uint8_t *block[PERCH__PE_CACHE_SLOTS];
    uint64_t block_off[PERCH__PE_CACHE_SLOTS];
    size_t block_len[PERCH__PE_CACHE_SLOTS];
    unsigned next_slot;
} perch__pe_reader;

/* Reads len bytes at file offset off through the cache: 0, PERCH_ETRUNC past the end, the
 * input's error or PERCH_ENOMEM. */
int perch__pe_read_file(perch__pe_reader *rd, uint64_t off, void *dst, size_t len);

/* Reads [rva, rva + len) of the mapped image: the range must lie in the headers or in one
 * section; bytes past a section's raw data read as zero. PERCH_EFORMAT (with rd->why) when it
 * does not. */
int perch__pe_read_rva(perch__pe_reader *rd, uint32_t rva, void *dst, size_t len);

/* Reads the NUL-terminated string at rva (at most PERCH__SYM_MAX_NAME bytes) into the pe's
 * pool; *off receives its pool offset. */
int perch__pe_read_string(perch__pe_reader *rd, uint32_t rva, uint32_t *off);

/* The tables (pe_tables.c); each leaves the pe unchanged when its directory is absent. */
int perch__pe_read_codeview(perch__pe_reader *rd);
int perch__pe_read_exports(perch__pe_reader *rd);
int perch__pe_read_pdata(perch__pe_reader *rd);

#endif
