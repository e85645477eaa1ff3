/*
 * Tests for the I/O interfaces: memory input bounds, exact reads at the end, the memory
 * output's hard cap, a file round trip through the platform backend, a file deleted while a
 * reader has it open, a deferred output's late truncation, and a directory refused as one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/fs.h"
#include "perch/io.h"

static void test_memory_input(void **state)
{
    const uint8_t data[] = {1, 2, 3, 4, 5};
    uint8_t buf[8];
    size_t got = 99;
    perch_input in;
    perch_input_memory(&in, data, sizeof data);
    assert_int_equal(in.size, 5);
    assert_int_equal(in.read_at(in.ctx, 3, buf, 8, &got), 0);
    assert_int_equal(got, 2);
    assert_int_equal(buf[0], 4);
    assert_int_equal(in.read_at(in.ctx, 9, buf, 8, &got), 0);
    assert_int_equal(got, 0);
    memset(buf, 0xff, sizeof buf);
    assert_int_equal(perch_input_read_exact(&in, 1, buf, 4), 0);
    assert_memory_equal(buf, data + 1, 4);
    assert_int_equal(perch_input_read_exact(&in, 2, buf, 4), PERCH_ETRUNC);
    perch_input_close(&in);
    assert_null(in.read_at);
}

static void test_memory_output_cap(void **state)
{
    perch_output out;
    perch_memory_out mem;
    uint8_t block[3000];
    size_t len;
    memset(block, 7, sizeof block);
    perch_output_memory(&out, &mem, 10000);
    assert_int_equal(out.write(out.ctx, block, sizeof block), 0);
    assert_int_equal(out.write(out.ctx, block, sizeof block), 0);
    assert_int_equal(out.write(out.ctx, block, sizeof block), 0);
    assert_int_equal(out.write(out.ctx, block, sizeof block), PERCH_ELIMIT);
    assert_int_equal(mem.len, 9000);
    uint8_t *data = perch_output_memory_take(&mem, &len);
    assert_int_equal(len, 9000);
    assert_int_equal(data[8999], 7);
    free(data);
}

static void test_file_round_trip(void **state)
{
    const char *path = "test_io_round_trip.bin";
    perch_output out;
    perch_input in;
    uint8_t buf[6];
    assert_int_equal(perch_output_open_file(&out, path), 0);
    assert_int_equal(out.write(out.ctx, "abc", 3), 0);
    assert_int_equal(out.write(out.ctx, "defg", 4), 0);
    assert_int_equal(out.sync(out.ctx), 0);
    assert_int_equal(out.close(out.ctx), 0);
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(in.size, 7);
    assert_int_equal(perch_input_read_exact(&in, 1, buf, 6), 0);
    assert_memory_equal(buf, "bcdefg", 6);
    perch_input_close(&in);
    remove(path);
    assert_int_equal(perch_input_open_file(&in, "no/such/file.etl"), PERCH_ENOENT);
}

/* A file open for reading can be deleted meanwhile (perchd's disk cap deletes old captures a
 * client may be fetching), and the reader keeps its bytes until it closes. */
static void test_open_input_lets_delete(void **state)
{
    (void)state;
    const char *path = "test_io_delete_while_open.bin";
    perch_output out;
    perch_input in;
    uint8_t buf[3];
    assert_int_equal(perch_output_open_file(&out, path), 0);
    assert_int_equal(out.write(out.ctx, "xyz", 3), 0);
    assert_int_equal(out.close(out.ctx), 0);
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(perch_fs_remove(path), 0);
    assert_int_equal(perch_input_read_exact(&in, 0, buf, 3), 0);
    assert_memory_equal(buf, "xyz", 3);
    perch_input_close(&in);
    assert_int_equal(perch_input_open_file(&in, path), PERCH_ENOENT); /* gone once closed */
}

/* The size of the file at path (as an input), or -1. */
static int64_t file_size(const char *path)
{
    perch_input in;
    int64_t size = perch_input_open_file(&in, path) == 0 ? (int64_t)in.size : -1;
    perch_input_close(&in);
    return size;
}

/* Writes an old file of 100 bytes at path. */
static void old_file(const char *path)
{
    perch_output out;
    uint8_t old[100];
    memset(old, 'o', sizeof old);
    assert_int_equal(perch_output_open_file(&out, path), 0);
    assert_int_equal(out.write(out.ctx, old, sizeof old), 0);
    assert_int_equal(out.close(out.ctx), 0);
}

/* A deferred output over an older, longer file: the old bytes stay until the first write (an
 * empty one too) or the close, and the file ends as the new bytes alone. */
static void test_file_deferred(void **state)
{
    const char *path = "test_io_deferred.bin";
    perch_output out;
    perch_input in;
    uint8_t buf[7];
    old_file(path);
    assert_int_equal(perch_output_open_file_deferred(&out, path), 0);
    assert_int_equal(file_size(path), 100); /* not truncated at the open */
    assert_int_equal(out.write(out.ctx, "", 0), 0);
    assert_int_equal(file_size(path), 0); /* the first write truncates */
    assert_int_equal(out.write(out.ctx, "abc", 3), 0);
    assert_int_equal(out.write(out.ctx, "defg", 4), 0);
    assert_int_equal(out.close(out.ctx), 0);
    assert_int_equal(perch_input_open_file(&in, path), 0);
    assert_int_equal(in.size, 7);
    assert_int_equal(perch_input_read_exact(&in, 0, buf, 7), 0);
    assert_memory_equal(buf, "abcdefg", 7);
    perch_input_close(&in);
    /* never written: the close truncates, as an open with truncation would have */
    old_file(path);
    assert_int_equal(perch_output_open_file_deferred(&out, path), 0);
    assert_int_equal(out.close(out.ctx), 0);
    assert_int_equal(file_size(path), 0);
    remove(path);
    assert_int_equal(perch_output_open_file_deferred(&out, "."), PERCH_EISDIR);
}

/* A directory is not a file: both backends say so by name, for reading and for writing. */
static void test_directory_is_not_a_file(void **state)
{
    perch_input in;
    perch_output out;
    memset(&in, 0, sizeof in);
    assert_int_equal(perch_input_open_file(&in, "."), PERCH_EISDIR);
    assert_null(in.read_at);
    assert_int_equal(perch_output_open_file(&out, "."), PERCH_EISDIR);
    assert_string_equal(perch_strerror(PERCH_EISDIR), "is a directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_input),    cmocka_unit_test(test_memory_output_cap),
        cmocka_unit_test(test_file_round_trip), cmocka_unit_test(test_open_input_lets_delete),
        cmocka_unit_test(test_file_deferred),   cmocka_unit_test(test_directory_is_not_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
