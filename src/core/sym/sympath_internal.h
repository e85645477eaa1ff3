/*
 * The parsed symbol path (sympath.c), read by the resolver when it builds candidate paths.
 */
#ifndef PERCH_SYM_SYMPATH_INTERNAL_H
#define PERCH_SYM_SYMPATH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct perch__sym_dir {
    char *path;
    bool store_only; /* from srv* / cache*: searched as a symbol store only */
} perch__sym_dir;

struct perch_sympath {
    perch__sym_dir *dirs;
    uint32_t count, cap;
    char *notes;
};

#endif
