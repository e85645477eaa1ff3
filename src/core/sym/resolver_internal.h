/*
 * The resolver's search for one module (resolver_search.c), used by resolver.c: candidate
 * paths from the symbol path and the module's directory, each opened and checked (PE stamp
 * and size, PDB GUID and age), then the found files loaded into one symbol table.
 */
#ifndef PERCH_SYM_RESOLVER_INTERNAL_H
#define PERCH_SYM_RESOLVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "perch/sym.h"

#define PERCH__SYM_PATH_MAX 4096

/* Text collected while searching ("searched" lines, reasons), capped. */
typedef struct perch__sym_text {
    char *data;
    size_t len, cap;
} perch__sym_text;

typedef struct perch__sym_search {
    const perch_sympath *sp;
    bool module_dir;
    perch_sym_report rep;
    perch__sym_text searched;
    char pdb_file[PERCH__SYM_PATH_MAX], image_file[PERCH__SYM_PATH_MAX];
    char pdb_why[256], image_why[256];
    perch_pe *pe; /* the image found, if any */
    uint64_t files_opened;
} perch__sym_search;

/* Searches for m's image and PDB and loads what was found into a new table (*tab, NULL
 * when nothing was found). s->rep and the buffers describe the outcome. 0 or PERCH_ENOMEM /
 * PERCH_ELIMIT. */
int perch__sym_search_module(perch__sym_search *s, const perch_sym_module *m, perch_symtab **tab);

/* Loads the PE image or PDB at path itself (an image's PDB is then searched for). Errors of
 * that file are returned with *why. */
int perch__sym_search_file(perch__sym_search *s, const char *path, perch_symtab **tab,
                           const char **why);

void perch__sym_search_free(perch__sym_search *s);

#endif
