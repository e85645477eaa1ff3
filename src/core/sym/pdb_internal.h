/*
 * The PDB reader's state (pdb.c: the info stream and the DBI header; pdb_dbi.c: section
 * headers, section contributions and the module list; pdb_syms.c: symbol records). Layouts:
 * docs/symbols.md "PDB streams".
 */
#ifndef PERCH_SYM_PDB_INTERNAL_H
#define PERCH_SYM_PDB_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/sym.h"
#include "sym/msf.h"

/* Fixed stream indexes. */
enum { PERCH__PDB_STREAM_INFO = 1, PERCH__PDB_STREAM_DBI = 3 };

typedef struct perch__pdb_reader {
    perch__msf msf;
    perch_pdb_info *info;
    perch_symtab *tab;
    const char **why;
    uint8_t *dbi; /* the DBI stream (NULL without one) */
    uint32_t dbi_len;
    uint16_t sym_stream; /* symbol record stream, 0xFFFF when none */
    uint32_t mod_off, mod_len, con_off, con_len, dbg_off, dbg_len; /* DBI substreams */
    const perch_pe_section *secs;                                  /* how segments map to RVAs */
    uint32_t sec_count;
    perch_pe_section *own_secs; /* the PDB's own section headers, when read */
} perch__pdb_reader;

/* pdb_dbi.c */
int perch__pdb_read_sections(perch__pdb_reader *rd);
int perch__pdb_read_contributions(perch__pdb_reader *rd);
int perch__pdb_read_modules(perch__pdb_reader *rd);

/* pdb_syms.c: the records of sym[0..len) (a module stream's symbols, or the symbol record
 * stream), adding procedures and thunks (modules) or publics (publics true) to rd->tab.
 * base: the stream offset of sym[0] (procedure records point at their S_END by stream
 * offset). */
int perch__pdb_read_records(perch__pdb_reader *rd, const uint8_t *sym, uint32_t len,
                            uint32_t base, bool publics);

/* segment:offset as an RVA through rd's sections; false when the segment is unknown. */
bool perch__pdb_rva(const perch__pdb_reader *rd, uint16_t seg, uint32_t off, uint32_t *rva);

#endif
