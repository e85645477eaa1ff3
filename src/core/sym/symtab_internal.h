/*
 * The layout of a symbol table, shared by the file that fills and queries it (symtab.c) and
 * the one that seals it (symtab_seal.c). Nothing outside src/core/sym sees it.
 */
#ifndef PERCH_SYM_SYMTAB_INTERNAL_H
#define PERCH_SYM_SYMTAB_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/sym.h"

#define PERCH__SYMTAB_MAX_ENTRIES (64u << 20)
#define PERCH__SYMTAB_MAX_POOL    0xF0000000u

/* One name as added. */
struct perch__sym_entry {
    uint32_t rva, size;  /* the function */
    uint32_t range, end; /* the addresses it names: [range, end) */
    uint32_t name;       /* offset in the pool */
    uint8_t source;      /* perch_sym_source */
    uint8_t unsized;     /* its extent is computed when sealing */
};

/* A section, section contribution or .pdata range: [start, end). */
struct perch__sym_range {
    uint32_t start, end, flags;
};

/* One run of the sealed map: [start, end) is named by entry. */
struct perch__sym_piece {
    uint32_t start, end, entry;
};

struct perch_symtab {
    struct perch__sym_entry *e;
    uint32_t count, cap;
    char *pool;
    uint32_t pool_len, pool_cap;
    struct perch__sym_range *sec, *con;
    uint32_t sec_count, sec_cap, con_count, con_cap;
    struct perch__sym_piece *map;
    uint32_t map_count;
    bool sealed;
};

/* Index of the piece of p[0..n) (sorted, disjoint) holding rva, or n when none does. */
uint32_t perch__sym_piece_at(const struct perch__sym_piece *p, uint32_t n, uint32_t rva);

/* end of [rva, rva + size), clamped to the 32-bit RVA space. */
static inline uint32_t perch__sym_end(uint32_t rva, uint32_t size)
{
    return size > UINT32_MAX - rva ? UINT32_MAX : rva + size;
}

#endif
