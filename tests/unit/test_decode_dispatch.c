/*
 * Tests for the dispatcher itself: unknown (group, opcode) and providers, invalid records,
 * version windows, the stats ledger, type names, and that every (group, opcode) in the kind
 * table that Perch names has a decoder.
 */
#include "decode_fixture.h"

static void test_unknown_and_invalid(void **state)
{
    static fixture f;
    /* Kernel events Perch does not decode: DiskIo, Process Terminate (0x21), CompCS (37). */
    fixture_kernel(&f, 0x01, 10, 2, 8, "00000000");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    assert_false(perch_decode_known(&f.ev));
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 0x21, 2, 8, "00000000");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    fixture_kernel(&f, PERCH_GROUP_THREAD, 37, 2, 8, "00000000");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    /* A group far outside the table. */
    fixture_kernel(&f, 0x7fff, 36, 2, 8, "00000000");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    /* Non-kernel event from an unknown provider. */
    fixture_kernel(&f, PERCH_GROUP_NONE, 36, 2, 8, "");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    /* Known event, bad pointer size or missing payload: invalid. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 46, 2, 6, "0330d0ffffffffffc40e000001005800");
    assert_true(perch_decode_known(&f.ev));
    fixture_expect_error(&f, PERCH_EINVAL);
    f.ev.pointer_size = 8;
    f.ev.payload = NULL;
    fixture_expect_error(&f, PERCH_EINVAL);
    assert_int_equal(perch_decode(NULL, &f.out, NULL), PERCH_EINVAL);
    f.ev.payload = f.payload;
    assert_int_equal(perch_decode(&f.ev, NULL, NULL), PERCH_EINVAL);
    /* diag may be NULL on both paths. */
    assert_int_equal(perch_decode(&f.ev, &f.out, NULL), 0);
    f.ev.payload_len = 3;
    assert_int_equal(perch_decode(&f.ev, &f.out, NULL), PERCH_ESHORT);
}

static void test_every_named_kind_decodes(void **state)
{
    static fixture f;
    static const uint16_t groups[] = {
        PERCH_GROUP_HEADER,   PERCH_GROUP_PROCESS, PERCH_GROUP_THREAD,   PERCH_GROUP_SPARE1,
        PERCH_GROUP_PERFINFO, PERCH_GROUP_IMAGE,   PERCH_GROUP_STACKWALK};
    int named = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        for (unsigned op = 0; op < 256; op++) {
            perch_kind k = perch_kind_of(groups[g], (uint8_t)op);
            fixture_kernel(&f, groups[g], (uint8_t)op, 2, 8, "");
            bool known = perch_decode_known(&f.ev);
            if (k != PERCH_KIND_OTHER_KERNEL) {
                named++;
                assert_true(known);
            }
            if (!known)
                continue;
            /* Zeros decode for every family (empty strings, no SID, no counters); the kind
             * the table carries must be the one kind.c gives. */
            memset(f.payload, 0, 512);
            f.ev.payload_len = 512;
            int rc = PERCH_EVERSION;
            for (f.ev.version = 0; rc == PERCH_EVERSION && f.ev.version < 8; f.ev.version++)
                rc = fixture_decode(&f);
            assert_int_equal(rc, 0);
            assert_int_equal(f.out.kind, k);
            assert_int_equal(f.out.opcode, op);
        }
    }
    assert_int_equal(named, PERCH_KIND_OTHER_KERNEL);
}

static void test_stats(void **state)
{
    static fixture f;
    static perch_decode_stats s;
    memset(&s, 0, sizeof s);
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 46, 2, 8, "0330d0ffffffffffc40e000001005800");
    perch_decode_stats_add(&s, fixture_decode(&f), &f.out);
    f.ev.version = 9;
    perch_decode_stats_add(&s, fixture_decode(&f), &f.out);
    f.ev.payload_len = 4;
    perch_decode_stats_add(&s, fixture_decode(&f), &f.out);
    f.ev.group = 0x01;
    perch_decode_stats_add(&s, fixture_decode(&f), &f.out);
    assert_int_equal(s.decoded, 2);
    assert_int_equal(s.newer_version, 1);
    assert_int_equal(s.errors, 1);
    assert_int_equal(s.unknown, 1);
    assert_int_equal(s.by_type[PERCH_DECODED_SAMPLED_PROFILE], 2);
    assert_int_equal(s.by_type[PERCH_DECODED_CSWITCH], 0);
}

static void test_type_names(void **state)
{
    assert_string_equal(perch_decoded_type_name(PERCH_DECODED_NONE), "none");
    assert_string_equal(perch_decoded_type_name(PERCH_DECODED_CSWITCH), "cswitch");
    assert_string_equal(perch_decoded_type_name(PERCH_DECODED_DBG_ID_RSDS), "dbg_id_rsds");
    assert_null(perch_decoded_type_name(PERCH_DECODED_TYPE_COUNT));
    for (int t = 0; t < PERCH_DECODED_TYPE_COUNT; t++)
        assert_non_null(perch_decoded_type_name((perch_decoded_type)t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_and_invalid),
        cmocka_unit_test(test_every_named_kind_decodes),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
