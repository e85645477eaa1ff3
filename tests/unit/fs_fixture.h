/*
 * A directory of the unit tests' own, made empty (include/perch/fs.h): the tests that write
 * files into a directory below the build's test folder (the capture rotation, the symbol
 * worker's names, the snapshot files) start from one with nothing in it. Test code only;
 * include after cmocka.h.
 */
#ifndef PERCH_TEST_FS_FIXTURE_H
#define PERCH_TEST_FS_FIXTURE_H

#include "perch/error.h"
#include "perch/fs.h"

/* Makes dir when missing and deletes every file in it (failing the test when one stays). */
static inline void fx_empty_dir(const char *dir)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    perch_fs_mkdir(dir);
    assert_int_equal(perch_fs_list(dir, 10000, &e, &n), 0);
    for (size_t i = 0; i < n; i++) {
        char *p = perch_fs_join(dir, e[i].name);
        assert_int_equal(perch_fs_remove(p), 0);
        perch_free(p);
    }
    perch_fs_list_free(e, n);
}

#endif
