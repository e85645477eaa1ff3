/*
 * A module's identity as the symbol code sees it: the PDB's name, GUID and age (what a symbol
 * store indexes), and the image's name, TimeDateStamp and SizeOfImage. Two modules with equal
 * identities are the same file (ntdll.dll in every process), so they share one search, one
 * symbol table and one set of names.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perch/sym.h"
#include "sym/sym_internal.h"

void perch_sym_module_from_rec(const perch_module_rec *rec, perch_sym_module *m)
{
    m->path = rec->path;
    m->size_of_image = rec->size > UINT32_MAX ? 0 : (uint32_t)rec->size;
    m->time_date_stamp = rec->time_date_stamp;
    m->has_pdb = rec->has_pdb;
    m->pdb_guid = rec->pdb_guid;
    m->pdb_age = rec->pdb_age;
    m->pdb_name = rec->pdb_name;
}

static void lower_copy(char *out, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

size_t perch_sym_module_identity(const perch_sym_module *m, char *buf, size_t cap)
{
    static const perch_guid no_guid; /* all zero (a compound literal in the if below would
                                      * end with the if's substatement, before g is read) */
    char img[256], pdb[256];
    const perch_guid *g = &m->pdb_guid;
    lower_copy(img, sizeof img, m->path ? perch__sym_basename(m->path) : "");
    lower_copy(pdb, sizeof pdb, m->has_pdb && m->pdb_name ? perch__sym_basename(m->pdb_name) : "");
    if (!m->has_pdb)
        g = &no_guid;
    int n = snprintf(buf, cap,
                     "%s|%08" PRIx32 "%04x%04x%02x%02x%02x%02x%02x%02x%02x%02x|%" PRIu32
                     "|%s|%08" PRIx32 "|%" PRIx32,
                     pdb, g->data1, g->data2, g->data3, g->data4[0], g->data4[1], g->data4[2],
                     g->data4[3], g->data4[4], g->data4[5], g->data4[6], g->data4[7],
                     m->has_pdb ? m->pdb_age : 0, img, m->time_date_stamp, m->size_of_image);
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}
