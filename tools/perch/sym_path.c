/*
 * The perch commands' symbol path: --symbols, PERCH_SYMBOL_PATH and _NT_SYMBOL_PATH joined
 * in that order, and the one way they print what a module's search found (see sym_path.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/sym.h"
#include "sym_path.h"

int perch_cli_sympath(const char *cmd, const char *option, perch_sympath **out)
{
    const char *parts[3] = {option, getenv("PERCH_SYMBOL_PATH"), getenv("_NT_SYMBOL_PATH")};
    size_t len = 1;
    for (int i = 0; i < 3; i++)
        len += parts[i] ? strlen(parts[i]) + 1 : 0;
    char *joined = malloc(len);
    if (joined == NULL)
        return PERCH_ENOMEM;
    joined[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (parts[i] && *parts[i]) {
            if (joined[0])
                strcat(joined, ";");
            strcat(joined, parts[i]);
        }
    int err = perch_sympath_parse(joined, out);
    free(joined);
    if (err)
        return err;
    const char *notes = perch_sympath_notes(*out);
    for (const char *p = notes; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "perch %s: %.*s\n", cmd, n, p);
        p += n + (nl != NULL);
    }
    return 0;
}

static void print_kind(FILE *f, const char *what, const char *kind, int status, const char *file,
                       const char *why)
{
    if (status == PERCH_SYMST_UNKNOWN)
        return;
    fprintf(f, "%s: %s %s", what, kind, perch_sym_status_name(status));
    if (file && *file)
        fprintf(f, ": %s", file);
    if (why && *why)
        fprintf(f, " (%s)", why);
    fputc('\n', f);
}

void perch_cli_print_sym_report(FILE *f, const char *what, const perch_sym_report *rep,
                                bool verbose)
{
    print_kind(f, what, "image", rep->image_status, rep->image_file, rep->image_why);
    print_kind(f, what, "pdb", rep->pdb_status, rep->pdb_file, rep->pdb_why);
    fprintf(f, "%s: %zu names\n", what, rep->names);
    if (!verbose || !rep->searched || !*rep->searched)
        return;
    fprintf(f, "%s: searched:\n", what);
    for (const char *p = rep->searched; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(f, "  %.*s\n", n, p);
        p += n + (nl != NULL);
    }
}
