/*
 * Tests for GUID text conversion, the kernel group <-> GUID table and the kind table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/event.h"
#include "perch/kind.h"

static void test_guid_round_trip(void **state)
{
    perch_guid g;
    char text[37];
    memset(&g, 0xff, sizeof g);
    assert_int_equal(perch_guid_parse("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3", &g), 0);
    assert_int_equal(g.data1, 0xdef2fe46u);
    assert_int_equal(g.data2, 0x7bd6);
    assert_int_equal(g.data4[7], 0xe3);
    perch_guid_format(&g, text);
    assert_string_equal(text, "def2fe46-7bd6-4b80-bd94-f57fe20d0ce3");
}

static void test_guid_parse_rejects_garbage(void **state)
{
    perch_guid g, before;
    memset(&g, 0x5a, sizeof g);
    before = g;
    assert_int_equal(perch_guid_parse("def2fe46-7bd6-4b80-bd94-f57fe20d0ce", &g), PERCH_EINVAL);
    assert_int_equal(perch_guid_parse("def2fe46x7bd6-4b80-bd94-f57fe20d0ce3", &g), PERCH_EINVAL);
    assert_int_equal(perch_guid_parse("zef2fe46-7bd6-4b80-bd94-f57fe20d0ce3", &g), PERCH_EINVAL);
    assert_memory_equal(&g, &before, sizeof g);
}

static void test_kernel_groups(void **state)
{
    char text[37];
    perch_guid_format(perch_kernel_group_guid(PERCH_GROUP_PERFINFO), text);
    assert_string_equal(text, "ce1dbfb4-137e-4da6-87b0-3f59aa102cbc");
    perch_guid_format(perch_kernel_group_guid(PERCH_GROUP_THREAD), text);
    assert_string_equal(text, "3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c");
    perch_guid_format(perch_kernel_group_guid(PERCH_GROUP_IMAGE), text);
    assert_string_equal(text, "2cb15d1d-5fc1-11d2-abe1-00a0c911f518");
    assert_int_equal(perch_kernel_group_of(perch_kernel_group_guid(PERCH_GROUP_STACKWALK)),
                     PERCH_GROUP_STACKWALK);
    assert_null(perch_kernel_group_guid(0x77));
    perch_guid other = {1, 2, 3, {4, 5, 6, 7, 8, 9, 10, 11}};
    assert_int_equal(perch_kernel_group_of(&other), PERCH_GROUP_NONE);
}

static void test_kinds(void **state)
{
    assert_int_equal(perch_kind_of(PERCH_GROUP_THREAD, 36), PERCH_KIND_CSwitch);
    assert_int_equal(perch_kind_of(PERCH_GROUP_IMAGE, 10), PERCH_KIND_ImageLoad);
    assert_int_equal(perch_kind_of(PERCH_GROUP_PROCESS, 10), PERCH_KIND_OTHER_KERNEL);
    assert_int_equal(perch_kind_of(PERCH_GROUP_NONE, 36), PERCH_KIND_NON_KERNEL);
    assert_string_equal(perch_kind_name(PERCH_KIND_StackKeyUser), "StackKeyUser");
    assert_string_equal(perch_kind_name(PERCH_KIND_OTHER_KERNEL), "other_kernel");
    assert_string_equal(perch_kind_name(PERCH_KIND_NON_KERNEL), "non_kernel");
    assert_null(perch_kind_name(PERCH_KIND_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guid_round_trip),
        cmocka_unit_test(test_guid_parse_rejects_garbage),
        cmocka_unit_test(test_kernel_groups),
        cmocka_unit_test(test_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
