/*
 * Byte-table tests for the Thread group decoders: CSwitch v2/v3/v4 (byte 13 meaning), ReadyThread
 * v2, Thread Start/End/DCStart/DCEnd v2/v3/v4 at both pointer sizes (v3 with and without a
 * trailing name), SetName, short payloads and newer versions. Payload bytes were written from
 * the layouts in docs/events.md, not produced by the decoder.
 */
#include "decode_fixture.h"

/* NewThreadId 0x1234, OldThreadId 0x5678, priorities 15/8, CState 2, spare 0, WaitReason 5,
 * byte13 = 1, State 5, IdealProcessor 0x83 (-125), WaitTime 100, Reserved 0xdeadbeef. */
static const char cswitch_hex[] = "34120000785600000f0802000501058364000000efbeadde";

static void check_cswitch_common(const perch_cswitch *s)
{
    assert_int_equal(s->new_thread_id, 0x1234);
    assert_int_equal(s->old_thread_id, 0x5678);
    assert_int_equal(s->new_thread_priority, 15);
    assert_int_equal(s->old_thread_priority, 8);
    assert_int_equal(s->previous_cstate, 2);
    assert_int_equal(s->spare_byte, 0);
    assert_int_equal(s->old_thread_wait_reason, 5);
    assert_int_equal(s->old_thread_state, 5);
    assert_int_equal(s->old_thread_wait_ideal_processor, -125);
    assert_int_equal(s->new_thread_wait_time, 100);
    assert_int_equal(s->reserved, 0xdeadbeef);
}

static void test_cswitch_versions(void **state)
{
    static fixture f;
    static const uint8_t psizes[] = {4, 8};
    for (int ps = 0; ps < 2; ps++) {
        for (uint8_t v = 2; v <= 4; v++) {
            fixture_kernel(&f, PERCH_GROUP_THREAD, 36, v, psizes[ps], cswitch_hex);
            f.ev.pmc_count = 0;
            assert_int_equal(fixture_decode(&f), 0);
            assert_int_equal(f.out.type, PERCH_DECODED_CSWITCH);
            assert_int_equal(f.out.kind, PERCH_KIND_CSwitch);
            assert_int_equal(f.out.version, v);
            assert_int_equal(f.out.flags, 0);
            assert_int_equal(f.out.pmc_count, 0);
            check_cswitch_common(&f.out.cswitch);
            /* Byte 13 is WaitMode in v2 and ThreadFlags from v3 on. */
            assert_int_equal(f.out.cswitch.old_thread_wait_mode, v == 2 ? 1 : 0);
            assert_int_equal(f.out.cswitch.thread_flags, v == 2 ? 0 : 1);
            fixture_expect_prefixes_short(&f, PERCH_ESHORT);
        }
    }
}

static void test_cswitch_pmc_and_newer(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_THREAD, 36, 5, 8, cswitch_hex);
    f.ev.pmc_count = 3;
    f.ev.pmc[0] = 1000;
    f.ev.pmc[1] = 2000;
    f.ev.pmc[2] = 0xffffffffffffull;
    f.ev.pmc[3] = 77; /* beyond pmc_count: must not be copied */
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.flags, PERCH_DECODED_NEWER_VERSION);
    assert_int_equal(f.out.version, 5);
    check_cswitch_common(&f.out.cswitch);
    assert_int_equal(f.out.cswitch.thread_flags, 1);
    assert_int_equal(f.out.pmc_count, 3);
    assert_int_equal(f.out.pmc[0], 1000);
    assert_int_equal(f.out.pmc[1], 2000);
    assert_int_equal(f.out.pmc[2], 0xffffffffffffull);
    assert_int_equal(f.out.pmc[3], UINT64_MAX); /* still the 0xff fill */
    /* A newer version shorter than the newest known layout is a version error. */
    f.ev.payload_len = 23;
    fixture_expect_error(&f, PERCH_EVERSION);
    /* v1 (XP era, 16 bytes) is older than any known layout. */
    fixture_kernel(&f, PERCH_GROUP_THREAD, 36, 1, 8, "34120000785600000f08020005010583");
    fixture_expect_error(&f, PERCH_EVERSION);
}

static void test_cswitch_trailing(void **state)
{
    static fixture f;
    char hex[sizeof cswitch_hex + 8];
    strcpy(hex, cswitch_hex);
    strcat(hex, "aabbccdd");
    fixture_kernel(&f, PERCH_GROUP_THREAD, 36, 4, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.flags, PERCH_DECODED_TRAILING);
    check_cswitch_common(&f.out.cswitch);
}

static void test_ready_thread(void **state)
{
    static fixture f;
    /* TThreadId 0x0a0b0c0d, AdjustReason 2 (Boost), AdjustIncrement -3, Flag 0x9, Reserved 0. */
    fixture_kernel(&f, PERCH_GROUP_THREAD, 50, 2, 4, "0d0c0b0a02fd0900");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_READY_THREAD);
    assert_int_equal(f.out.kind, PERCH_KIND_ReadyThread);
    assert_int_equal(f.out.ready_thread.thread_id, 0x0a0b0c0d);
    assert_int_equal(f.out.ready_thread.adjust_reason, 2);
    assert_int_equal(f.out.ready_thread.adjust_increment, -3);
    assert_int_equal(f.out.ready_thread.flag, 9);
    assert_int_equal(f.out.ready_thread.reserved, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

/* Thread v2, P=4: pid 500, tid 520, stacks, StartAddr 0x77001234, Win32StartAddr 0x401000,
 * TEB 0x7ffdf000, SubProcessTag 7 (40 bytes). */
static const char thread_v2_p4[] = "f401000008020000"
                                   "0000008a00d0ff8900001300"
                                   "00c012003412007700104000"
                                   "00f0fd7f07000000";

static void test_thread_v2_p4(void **state)
{
    static fixture f;
    for (uint8_t op = 1; op <= 4; op++) {
        fixture_kernel(&f, PERCH_GROUP_THREAD, op, 2, 4, thread_v2_p4);
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_THREAD);
        assert_int_equal(f.out.kind, PERCH_KIND_ThreadStart + (op - 1));
        const perch_thread *t = &f.out.thread;
        assert_int_equal(t->process_id, 500);
        assert_int_equal(t->thread_id, 520);
        assert_int_equal(t->stack_base, 0x8a000000);
        assert_int_equal(t->stack_limit, 0x89ffd000);
        assert_int_equal(t->user_stack_base, 0x00130000);
        assert_int_equal(t->user_stack_limit, 0x0012c000);
        assert_int_equal(t->start_addr, 0x77001234);
        assert_int_equal(t->affinity, 0);
        assert_int_equal(t->win32_start_addr, 0x00401000);
        assert_int_equal(t->teb_base, 0x7ffdf000);
        assert_int_equal(t->sub_process_tag, 7);
        assert_int_equal(t->base_priority, 0);
        assert_int_equal(t->thread_flags, 0);
        assert_null(t->thread_name.data);
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    }
}

static const char thread_v2_p8[] =
    "0700000009000000010000000000000002000000000000000300000000000000040000000000000000003412"
    "f67f0000060000000000000000100000f67f000001efcdab";

static void test_thread_v2_p8(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_THREAD, 3, 2, 8, thread_v2_p8);
    assert_int_equal(fixture_decode(&f), 0);
    const perch_thread *t = &f.out.thread;
    assert_int_equal(t->process_id, 7);
    assert_int_equal(t->thread_id, 9);
    assert_int_equal(t->stack_base, 1);
    assert_int_equal(t->stack_limit, 2);
    assert_int_equal(t->user_stack_base, 3);
    assert_int_equal(t->user_stack_limit, 4);
    assert_int_equal(t->start_addr, 0x7ff612340000);
    assert_int_equal(t->win32_start_addr, 6);
    assert_int_equal(t->teb_base, 0x7ff600001000);
    assert_int_equal(t->sub_process_tag, 0xabcdef01);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

/* Thread v3, P=8: pid 4, tid 12, Affinity 3, priorities 13/5/2, ThreadFlags 0x40 (72 bytes). */
static const char thread_v3_p8[] =
    "040000000c000000000081f680f5ffff009080f680f5ffff0000b0a1d000000000f0afa1d00000000300000000"
    "0000000058644202f8ffff00e0c3a1d0000000110000000d050240";
static const char win32k_name[] =
    "570069006e00330032006b002000520061007700200049006e0070007500740020005400680072006500610064"
    "000000";

static void check_thread_v3_p8(const perch_thread *t)
{
    assert_int_equal(t->process_id, 4);
    assert_int_equal(t->thread_id, 12);
    assert_int_equal(t->stack_base, 0xfffff580f6810000);
    assert_int_equal(t->stack_limit, 0xfffff580f6809000);
    assert_int_equal(t->user_stack_base, 0xd0a1b00000);
    assert_int_equal(t->user_stack_limit, 0xd0a1aff000);
    assert_int_equal(t->start_addr, 0);
    assert_int_equal(t->affinity, 3);
    assert_int_equal(t->win32_start_addr, 0xfffff80242645800);
    assert_int_equal(t->teb_base, 0xd0a1c3e000);
    assert_int_equal(t->sub_process_tag, 0x11);
    assert_int_equal(t->base_priority, 13);
    assert_int_equal(t->page_priority, 5);
    assert_int_equal(t->io_priority, 2);
    assert_int_equal(t->thread_flags, 0x40);
}

static void test_thread_v3_p8_names(void **state)
{
    static fixture f;
    char hex[512];
    /* Plain 72-byte v3 (Windows 8): no name. */
    fixture_kernel(&f, PERCH_GROUP_THREAD, 3, 3, 8, thread_v3_p8);
    assert_int_equal(fixture_decode(&f), 0);
    check_thread_v3_p8(&f.out.thread);
    assert_null(f.out.thread.thread_name.data);
    assert_int_equal(f.out.flags, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* Windows 10 1903: an empty name. */
    snprintf(hex, sizeof hex, "%s0000", thread_v3_p8);
    fixture_kernel(&f, PERCH_GROUP_THREAD, 3, 3, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    check_thread_v3_p8(&f.out.thread);
    assert_non_null(f.out.thread.thread_name.data);
    assert_int_equal(f.out.thread.thread_name.len, 0);
    /* ... or a real one. */
    snprintf(hex, sizeof hex, "%s%s", thread_v3_p8, win32k_name);
    fixture_kernel(&f, PERCH_GROUP_THREAD, 1, 3, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    check_thread_v3_p8(&f.out.thread);
    assert_wstr(f.out.thread.thread_name, "Win32k Raw Input Thread");
    assert_int_equal(f.out.flags, 0);
    /* v4: the name is part of the layout, so an unterminated one is short. */
    fixture_kernel(&f, PERCH_GROUP_THREAD, 1, 4, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    assert_wstr(f.out.thread.thread_name, "Win32k Raw Input Thread");
    f.ev.payload_len -= 2;
    fixture_expect_error(&f, PERCH_ESHORT);
    assert_int_equal(f.diag.offset, 72);
    f.ev.payload_len = 72;
    fixture_expect_error(&f, PERCH_ESHORT);
    /* v5 is newer: decoded with the v4 layout and marked. */
    fixture_kernel(&f, PERCH_GROUP_THREAD, 1, 5, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.flags, PERCH_DECODED_NEWER_VERSION);
    assert_wstr(f.out.thread.thread_name, "Win32k Raw Input Thread");
}

/* Thread v3, P=4: 44 bytes. */
static const char thread_v3_p4[] =
    "08000000100000000000009a00d0ff990000130000c01200ff0000000010400000e0fd7f0000000008050201";

static void test_thread_v3_p4(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_THREAD, 4, 3, 4, thread_v3_p4);
    assert_int_equal(fixture_decode(&f), 0);
    const perch_thread *t = &f.out.thread;
    assert_int_equal(t->process_id, 8);
    assert_int_equal(t->thread_id, 16);
    assert_int_equal(t->stack_base, 0x9a000000);
    assert_int_equal(t->stack_limit, 0x99ffd000);
    assert_int_equal(t->affinity, 0xff);
    assert_int_equal(t->start_addr, 0);
    assert_int_equal(t->win32_start_addr, 0x00401000);
    assert_int_equal(t->teb_base, 0x7ffde000);
    assert_int_equal(t->sub_process_tag, 0);
    assert_int_equal(t->base_priority, 8);
    assert_int_equal(t->page_priority, 5);
    assert_int_equal(t->io_priority, 2);
    assert_int_equal(t->thread_flags, 1);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

static void test_thread_set_name(void **state)
{
    static fixture f;
    char hex[256];
    snprintf(hex, sizeof hex, "e8030000%s%s", "2c010000", win32k_name);
    fixture_kernel(&f, PERCH_GROUP_THREAD, 72, 2, 8, hex);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_THREAD_SET_NAME);
    assert_int_equal(f.out.thread_set_name.process_id, 1000);
    assert_int_equal(f.out.thread_set_name.thread_id, 300);
    assert_wstr(f.out.thread_set_name.thread_name, "Win32k Raw Input Thread");
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cswitch_versions),   cmocka_unit_test(test_cswitch_pmc_and_newer),
        cmocka_unit_test(test_cswitch_trailing),   cmocka_unit_test(test_ready_thread),
        cmocka_unit_test(test_thread_v2_p4),       cmocka_unit_test(test_thread_v2_p8),
        cmocka_unit_test(test_thread_v3_p8_names), cmocka_unit_test(test_thread_v3_p4),
        cmocka_unit_test(test_thread_set_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
