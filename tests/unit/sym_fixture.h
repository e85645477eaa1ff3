/*
 * Access to the PE+PDB fixtures that tests/fixtures/sym builds with clang and lld (the path
 * is in PERCH_SYM_FIXTURES, set by ctest). Like the real traces: a missing fixture skips the
 * test locally and fails it under CI.
 */
#ifndef PERCH_TEST_SYM_FIXTURE_H
#define PERCH_TEST_SYM_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "testdata.h"

/* The path of rel (e.g. "x86_64/app.pdb") in the fixture folder, in a static buffer. */
static inline const char *sym_fixture_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("PERCH_SYM_FIXTURES");
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "", rel);
    if (dir != NULL && (f = fopen(path, "rb")) != NULL) {
        fclose(f);
        return path;
    }
    if (getenv("CI"))
        fail_msg("symbol fixture %s is missing (PERCH_SYM_FIXTURES=%s) and CI is set", rel,
                 dir ? dir : "(unset)");
    skip();
    return NULL;
}

/* Reads fixture rel into a malloc'd buffer. */
static inline uint8_t *sym_fixture(const char *rel, size_t *len)
{
    return perch_test_read_file(sym_fixture_path(rel), len);
}

#endif
