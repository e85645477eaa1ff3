/*
 * Byte-table tests for the Process decoders (v3, v4, v5 at both pointer sizes, with and
 * without a SID, malformed SIDs), the SID text form, and the Header group Extension event.
 * The P=8 payloads are real ones (see the reference vectors); the rest were written from
 * docs/events.md.
 */
#include "decode_fixture.h"

/* Real Process DCStart v4 (perfview x64): Idle, S-1-5-18, 75 bytes. */
static const char idle_v4_p8[] =
    "00927d2100f8ffff0000000000000000ffffffff00000000007018000000000000000000502bed01a0f8ffff00"
    "00000049004e0001010000000000051200000049646c6500000000000000";

static void check_sid(const perch_bytes *sid, const char *text)
{
    char buf[PERCH_SID_TEXT_MAX];
    assert_int_equal(perch_sid_format(sid, buf, sizeof buf), (int)strlen(text));
    assert_string_equal(buf, text);
}

static void test_process_v4_p8(void **state)
{
    static fixture f;
    static const uint8_t ops[] = {1, 2, 3, 4, 39};
    for (int i = 0; i < 5; i++) {
        fixture_kernel(&f, PERCH_GROUP_PROCESS, ops[i], 4, 8, idle_v4_p8);
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_PROCESS);
        assert_int_equal(f.out.kind, PERCH_KIND_ProcessStart + i);
        const perch_process *p = &f.out.process;
        assert_int_equal(p->unique_process_key, 0xfffff800217d9200);
        assert_int_equal(p->process_id, 0);
        assert_int_equal(p->parent_id, 0);
        assert_int_equal(p->session_id, 0xffffffff);
        assert_int_equal(p->exit_status, 0);
        assert_int_equal(p->directory_table_base, 0x187000);
        assert_int_equal(p->flags, 0);
        assert_int_equal(p->user_sid.len, 12);
        check_sid(&p->user_sid, "S-1-5-18");
        assert_astr(p->image_file_name, "Idle");
        assert_wstr(p->command_line, "");
        assert_wstr(p->package_full_name, "");
        assert_wstr(p->application_id, "");
        assert_false(p->has_exit_time);
        assert_int_equal(p->exit_time, 0);
        assert_int_equal(f.out.flags, 0);
    }
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

/* Real Defunct v5 (airbus): svchost.exe, S-1-5-20, ExitTime 132273837514816615. */
static const char defunct_v5_p8[] =
    "0013588886cafffff001000058020000000000000000000000a0253c000000000000000060d59cfc88b4ffff00"
    "00000000000000010100000000000514000000737663686f73742e6578650000000000000067fc25ba5aeed501";

static void test_process_v5_defunct(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 39, 5, 8, defunct_v5_p8);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.kind, PERCH_KIND_ProcessDefunct);
    const perch_process *p = &f.out.process;
    assert_int_equal(p->unique_process_key, 0xffffca8688581300);
    assert_int_equal(p->process_id, 496);
    assert_int_equal(p->parent_id, 600);
    assert_int_equal(p->session_id, 0);
    assert_int_equal(p->directory_table_base, 0x3c25a000);
    check_sid(&p->user_sid, "S-1-5-20");
    assert_astr(p->image_file_name, "svchost.exe");
    assert_wstr(p->command_line, "");
    assert_true(p->has_exit_time);
    assert_int_equal(p->exit_time, 132273837514816615ull);
    /* Without the ExitTime the record still decodes (no source says every v5 has it). */
    f.ev.payload_len -= 8;
    assert_int_equal(fixture_decode(&f), 0);
    assert_false(f.out.process.has_exit_time);
    assert_int_equal(f.out.process.exit_time, 0);
    /* v6 is newer: v5 layout, marked. */
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 39, 6, 8, defunct_v5_p8);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.flags, PERCH_DECODED_NEWER_VERSION);
    assert_int_equal(f.out.process.exit_time, 132273837514816615ull);
}

/* v4, P=4: pid 3856, parent 3476, session 1, ExitStatus 0xc000013a, Flags 4, a TOKEN_USER
 * of 8 bytes, then S-1-5-21-1-2-3-1000, explorer.exe, a command line, package and app id. */
static const char explorer_v4_p4[] =
    "0020008a100f0000940d0000010000003a0100c00020b16b040000007856341200000000010500000000000515"
    "000000010000000200000003000000e80300006578706c6f7265722e6578650043003a005c00570069006e0064"
    "006f00770073005c006500780070006c006f007200650072002e00650078006500000050006b0067005f003100"
    "2e00300000004100700070000000";

static void test_process_v4_p4(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 1, 4, 4, explorer_v4_p4);
    assert_int_equal(fixture_decode(&f), 0);
    const perch_process *p = &f.out.process;
    assert_int_equal(p->unique_process_key, 0x8a002000);
    assert_int_equal(p->process_id, 3856);
    assert_int_equal(p->parent_id, 3476);
    assert_int_equal(p->session_id, 1);
    assert_int_equal(p->exit_status, (int32_t)0xc000013a);
    assert_int_equal(p->directory_table_base, 0x6bb12000);
    assert_int_equal(p->flags, 4);
    check_sid(&p->user_sid, "S-1-5-21-1-2-3-1000");
    assert_astr(p->image_file_name, "explorer.exe");
    assert_wstr(p->command_line, "C:\\Windows\\explorer.exe");
    assert_wstr(p->package_full_name, "Pkg_1.0");
    assert_wstr(p->application_id, "App");
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* 16 sub-authorities is more than a SID can have. */
    f.payload[28 + 8 + 1] = 16;
    fixture_expect_error(&f, PERCH_EFORMAT);
    assert_int_equal(f.diag.offset, 29);
}

/* v3, P=4: no Flags, no SID (u32 0), cmd.exe, no package strings. */
static const char cmd_v3_p4[] =
    "0010008adc0500005802000001000000030100000040ae3f00000000636d642e6578650063006d006400200"
    "02f00630020006400690072000000";

static void test_process_v3_p4(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 3, 3, 4, cmd_v3_p4);
    assert_int_equal(fixture_decode(&f), 0);
    const perch_process *p = &f.out.process;
    assert_int_equal(p->unique_process_key, 0x8a001000);
    assert_int_equal(p->process_id, 1500);
    assert_int_equal(p->parent_id, 600);
    assert_int_equal(p->session_id, 1);
    assert_int_equal(p->exit_status, 259);
    assert_int_equal(p->directory_table_base, 0x3fae4000);
    assert_int_equal(p->flags, 0);
    assert_int_equal(p->user_sid.len, 0);
    assert_null(p->user_sid.data);
    assert_astr(p->image_file_name, "cmd.exe");
    assert_wstr(p->command_line, "cmd /c dir");
    assert_null(p->package_full_name.data);
    assert_null(p->application_id.data);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    f.ev.version = 2;
    fixture_expect_error(&f, PERCH_EVERSION);
}

static void test_sid_format(void **state)
{
    static const uint8_t max[8 + 60] = {255, 15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    uint8_t bytes[8 + 60];
    char buf[PERCH_SID_TEXT_MAX];
    memcpy(bytes, max, sizeof bytes);
    memset(bytes + 8, 0xff, 60);
    perch_bytes sid = {bytes, sizeof bytes};
    int n = perch_sid_format(&sid, buf, sizeof buf);
    assert_true(n > 0 && n < PERCH_SID_TEXT_MAX);
    assert_memory_equal(buf, "S-255-281474976710655-4294967295-", 33);
    /* Too small a buffer, a length that disagrees with the count: errors, buffer untouched. */
    memset(buf, 'x', sizeof buf);
    assert_int_equal(perch_sid_format(&sid, buf, 10), PERCH_ELIMIT);
    assert_int_equal(buf[0], 'x');
    sid.len--;
    assert_int_equal(perch_sid_format(&sid, buf, sizeof buf), PERCH_EFORMAT);
    assert_int_equal(perch_sid_format(NULL, buf, sizeof buf), PERCH_EFORMAT);
}

static void test_header_extension(void **state)
{
    static fixture f;
    for (uint8_t op = 5; op <= 32; op += 27) {
        fixture_kernel(&f, PERCH_GROUP_HEADER, op, 2, 8,
                       "04000020000000400000006000000080000000a0000000c0000000e00100000012000000");
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_HEADER_EXTENSION);
        assert_int_equal(f.out.header_extension.group_mask[0], 0x20000004);
        assert_int_equal(f.out.header_extension.group_mask[1], 0x40000000);
        assert_int_equal(f.out.header_extension.group_mask[6], 0xe0000000);
        assert_int_equal(f.out.header_extension.group_mask[7], 1);
        assert_int_equal(f.out.header_extension.kernel_event_version, 0x12);
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_process_v4_p8), cmocka_unit_test(test_process_v5_defunct),
        cmocka_unit_test(test_process_v4_p4), cmocka_unit_test(test_process_v3_p4),
        cmocka_unit_test(test_sid_format),    cmocka_unit_test(test_header_extension),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
