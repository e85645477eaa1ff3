/*
 * The symbol path the perch commands search (perch resolve, perch symbolize): the --symbols
 * option's value, then PERCH_SYMBOL_PATH, then _NT_SYMBOL_PATH, joined in that order
 * (docs/symbols.md "Search order").
 */
#ifndef PERCH_TOOLS_SYM_PATH_H
#define PERCH_TOOLS_SYM_PATH_H

#include <stdbool.h>
#include <stdio.h>

#include "perch/sym.h"

/* Parses the joined path (option may be NULL). Prints the path's notes (skipped entries) to
 * stderr prefixed with "perch <cmd>: ". 0 or PERCH_ENOMEM. */
int perch_cli_sympath(const char *cmd, const char *option, perch_sympath **out);

/* Prints one module's search report to f: what was found, mismatched or unreadable, and with
 * verbose every path tried. */
void perch_cli_print_sym_report(FILE *f, const char *what, const perch_sym_report *rep,
                                bool verbose);

#endif
