/*
 * include/perch/fs.h on this platform (natively, and under Wine for the mingw build): a
 * directory made twice, files listed with their sizes, renamed over an existing file,
 * removed, the errors for missing paths, joining, and a wall clock in the right era.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/fs.h"
#include "perch/io.h"

static void write_file(const char *path, size_t n)
{
    perch_output out;
    char buf[256];
    memset(buf, 'x', sizeof buf);
    assert_int_equal(perch_output_open_file(&out, path), 0);
    for (size_t done = 0; done < n; done += sizeof buf)
        assert_int_equal(out.write(out.ctx, buf, n - done < sizeof buf ? n - done : sizeof buf), 0);
    assert_int_equal(out.close(out.ctx), 0);
}

static const perch_fs_entry *find(const perch_fs_entry *e, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].name, name) == 0)
            return &e[i];
    return NULL;
}

static void empty_dir(const char *dir)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    if (perch_fs_list(dir, 1000, &e, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        char *p = perch_fs_join(dir, e[i].name);
        perch_fs_remove(p);
        perch_free(p);
    }
    perch_fs_list_free(e, n);
}

static void test_files(void **state)
{
    const char *dir = "fs_test_dir";
    perch_fs_entry *e = NULL;
    size_t n = 99;
    uint64_t size = 0;
    (void)state;
    assert_int_equal(perch_fs_mkdir(dir), 0);
    assert_int_equal(perch_fs_mkdir(dir), 0); /* exists: fine */
    empty_dir(dir);
    char *a = perch_fs_join(dir, "a.bin"), *b = perch_fs_join(dir, "b.bin");
    char *sub = perch_fs_join(dir, "sub");
    assert_string_equal(a, "fs_test_dir/a.bin");
    write_file(a, 1000);
    write_file(b, 10);
    assert_int_equal(perch_fs_mkdir(sub), 0);
    assert_int_equal(perch_fs_mkdir(a), PERCH_EEXIST); /* a file has that name */
    assert_int_equal(perch_fs_size(a, &size), 0);
    assert_int_equal(size, 1000);
    assert_int_equal(perch_fs_list(dir, 1000, &e, &n), 0);
    assert_int_equal(n, 2); /* the subdirectory is not listed */
    assert_non_null(find(e, n, "a.bin"));
    assert_int_equal(find(e, n, "b.bin")->size, 10);
    assert_true(find(e, n, "a.bin")->mtime_ms > 1500000000000ull);
    perch_fs_list_free(e, n);
    assert_int_equal(perch_fs_list(dir, 1, &e, &n), PERCH_ELIMIT);
    assert_int_equal(perch_fs_rename(a, b), 0); /* replaces b */
    assert_int_equal(perch_fs_size(b, &size), 0);
    assert_int_equal(size, 1000);
    assert_int_equal(perch_fs_size(a, &size), PERCH_ENOENT);
    assert_int_equal(perch_fs_remove(b), 0);
    assert_int_equal(perch_fs_remove(b), PERCH_ENOENT);
    assert_int_equal(perch_fs_list(dir, 1000, &e, &n), 0);
    assert_int_equal(n, 0);
    perch_fs_list_free(e, n);
    assert_int_equal(perch_fs_list("fs_no_such_dir", 10, &e, &n), PERCH_ENOENT);
    assert_int_equal(perch_fs_mkdir("fs_no_such_dir/x"), PERCH_ENOENT);
    perch_free(a);
    perch_free(b);
    perch_free(sub);
}

static void test_join_and_clock(void **state)
{
    (void)state;
    char *p = perch_fs_join("d/", "n");
    assert_string_equal(p, "d/n");
    perch_free(p);
    p = perch_fs_join("", "n");
    assert_string_equal(p, "n");
    perch_free(p);
    p = perch_fs_join("C:\\x\\", "n");
    assert_string_equal(p, "C:\\x\\n");
    perch_free(p);
    uint64_t t = perch_fs_wall_ms(NULL);
    assert_true(t > 1700000000000ull && t < 4102444800000ull); /* 2023 .. 2100 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_join_and_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
