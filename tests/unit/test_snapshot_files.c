/*
 * Snapshot files of a capture directory (src/core/capture/snapshot_files.h): which names count
 * as perchd's snapshots, and their total size in a directory that also holds recordings and
 * other files; a directory that does not exist holds none; SnapshotCapMb's check at its
 * boundary, with its sentence, and the cap on their number. (A listing that fails could not be made
 * to fail here: as root, and with ENOTDIR read as "no such directory", every listing succeeds.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs_fixture.h"
#include "capture/snapshot_files.h"
#include "perch/error.h"
#include "perch/fs.h"

static void put(const char *dir, const char *name, size_t size)
{
    static unsigned char block[4096];
    char *path = perch_fs_join(dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t left = size, k; left > 0; left -= k) {
        k = left < sizeof block ? left : sizeof block;
        assert_int_equal(fwrite(block, 1, k, f), k);
    }
    assert_int_equal(fclose(f), 0);
    perch_free(path);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(perch__snapshot_file("snapshot-20261205-212249.perch"));
    assert_true(perch__snapshot_file("snapshot-20261205-212249-3.perch"));
    assert_true(perch__snapshot_file("snapshot-x.perch"));
    assert_false(perch__snapshot_file("snapshot-.perch")); /* nothing between */
    assert_false(perch__snapshot_file("snapshot.perch"));
    assert_false(perch__snapshot_file("snapshot-20261205-212249.perch.tmp"));
    assert_false(perch__snapshot_file("snapshot-20261205-212249.txt"));
    assert_false(perch__snapshot_file("perch-20261205-212249-000001.perch"));
    assert_false(perch__snapshot_file("my-snapshot-1.perch"));
    assert_false(perch__snapshot_file(""));
}

static void test_usage_counts_only_snapshots(void **state)
{
    const char *dir = "snapshot_usage";
    uint64_t bytes = 1;
    size_t files = 1;
    (void)state;
    fx_empty_dir(dir);
    assert_int_equal(perch__snapshot_usage(dir, &bytes, &files), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(files, 0);
    put(dir, "snapshot-20261205-212249.perch", 1000);
    put(dir, "snapshot-20261205-212249-1.perch", 234);
    put(dir, "perch-20261205-212249-000001.perch", 5000); /* a recording's */
    put(dir, "notes.perch", 700);
    put(dir, "snapshot-20261205-212249.txt", 900);
    assert_int_equal(perch__snapshot_usage(dir, &bytes, &files), 0);
    assert_int_equal(bytes, 1234);
    assert_int_equal(files, 2);
    fx_empty_dir(dir);
}

static void test_missing_directory_holds_none(void **state)
{
    uint64_t bytes = 1;
    size_t files = 1;
    (void)state;
    assert_int_equal(perch__snapshot_usage("snapshot_usage_never_made", &bytes, &files), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(files, 0);
}

/* The cap counts the snapshots already there: one byte under it passes, at it the next is
 * refused with the sentence, and other files never count. */
static void test_cap_boundary(void **state)
{
    const char *dir = "snapshot_cap";
    char why[400] = "x";
    (void)state;
    fx_empty_dir(dir);
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 100, why, sizeof why), 0);
    put(dir, "snapshot-20261205-212249.perch", (1u << 20) - 1);
    put(dir, "perch-20261205-212249-000001.perch", 3u << 20); /* a recording's: not counted */
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 100, why, sizeof why), 0);
    put(dir, "snapshot-20261205-212250.perch", 1);
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 100, why, sizeof why), PERCH_ELIMIT);
    assert_string_equal(why, "the snapshots already kept reach SnapshotCapMb (1 MiB): 2 file(s), "
                             "1.0 MiB; delete old ones (snapshot-*.perch) or raise the cap "
                             "('perchd config set SnapshotCapMb N', then restart perchd); they "
                             "are in snapshot_cap");
    assert_int_equal(perch__snapshot_cap_check(dir, 2, 100, why, sizeof why), 0);
    fx_empty_dir(dir);
}

/* However small, no more than max_files snapshots: at the count the next is refused with its
 * sentence; other files never count. */
static void test_cap_on_count(void **state)
{
    const char *dir = "snapshot_count";
    char why[400] = "x";
    (void)state;
    fx_empty_dir(dir);
    put(dir, "snapshot-20261206-000001.perch", 10);
    put(dir, "snapshot-20261206-000002.perch", 10);
    put(dir, "notes.perch", 10);
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 3, why, sizeof why), 0);
    put(dir, "snapshot-20261206-000003.perch", 10);
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 3, why, sizeof why), PERCH_ELIMIT);
    assert_string_equal(why, "the snapshots already kept number 3, the most perchd keeps (0.0 "
                             "MiB in all); delete old ones (snapshot-*.perch); they are in "
                             "snapshot_count");
    assert_int_equal(perch__snapshot_cap_check(dir, 1, 4, why, sizeof why), 0);
    fx_empty_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_usage_counts_only_snapshots),
        cmocka_unit_test(test_missing_directory_holds_none),
        cmocka_unit_test(test_cap_boundary),
        cmocka_unit_test(test_cap_on_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
