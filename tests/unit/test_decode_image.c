/*
 * Byte-table tests for the Image decoders (Load/Unload/DCStart/DCEnd v2/v3 at both pointer
 * sizes, KernelBase) and the KernelTraceControl ImageID and DbgID_RSDS events. The P=8 Image
 * payloads are real ones (see the reference vectors); the rest were written from
 * docs/events.md.
 */
#include "decode_fixture.h"

/* Real Image DCStart v3 (airbus trace): SysWOW64 ntdll, SignatureLevel 12, SignatureType 2. */
static const char image_v3_p8[] =
    "000062770000000000a01900000000000400000010ff1900000000000c02000000006277000000000000000000"
    "00000000000000000000005c004400650076006900630065005c0048006100720064006400690073006b005600"
    "6f006c0075006d00650033005c00570069006e0064006f00770073005c0053007900730057004f005700360034"
    "005c006e00740064006c006c002e0064006c006c000000";

static void test_image_v3_p8(void **state)
{
    static fixture f;
    static const uint8_t ops[] = {10, 2, 3, 4};
    static const perch_kind kinds[] = {PERCH_KIND_ImageLoad, PERCH_KIND_ImageUnload,
                                       PERCH_KIND_ImageDCStart, PERCH_KIND_ImageDCEnd};
    for (int i = 0; i < 4; i++) {
        fixture_kernel(&f, PERCH_GROUP_IMAGE, ops[i], 3, 8, image_v3_p8);
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_IMAGE);
        assert_int_equal(f.out.kind, kinds[i]);
        const perch_image *im = &f.out.image;
        assert_int_equal(im->image_base, 0x77620000);
        assert_int_equal(im->image_size, 1679360);
        assert_int_equal(im->process_id, 4);
        assert_int_equal(im->image_checksum, 1703696);
        assert_int_equal(im->time_date_stamp, 0);
        assert_int_equal(im->signature_level, 12);
        assert_int_equal(im->signature_type, 2);
        assert_int_equal(im->reserved0, 0);
        assert_int_equal(im->default_base, 0x77620000);
        assert_int_equal(im->reserved1, 0);
        assert_int_equal(im->reserved4, 0);
        assert_wstr(im->file_name, "\\Device\\HarddiskVolume3\\Windows\\SysWOW64\\ntdll.dll");
        assert_int_equal(f.out.flags, 0);
    }
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

/* Image v3, P=4: base 0x77620000, size 0x19a000, pid 1234, checksum 0x1a0010, stamp
 * 0x5cd3a1b2, level 12, type 2, DefaultBase 0x77620000, Reserved1..4 = 1..4. */
static const char image_v3_p4[] =
    "0000627700a01900d204000010001a00b2a1d35c0c020000000062770100000002000000030000000400000"
    "05c004400650076006900630065005c0058005c006e00740064006c006c002e0064006c006c000000";

static void test_image_p4(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_IMAGE, 10, 3, 4, image_v3_p4);
    assert_int_equal(fixture_decode(&f), 0);
    const perch_image *im = &f.out.image;
    assert_int_equal(im->image_base, 0x77620000);
    assert_int_equal(im->image_size, 0x19a000);
    assert_int_equal(im->process_id, 1234);
    assert_int_equal(im->image_checksum, 0x1a0010);
    assert_int_equal(im->time_date_stamp, 0x5cd3a1b2);
    assert_int_equal(im->signature_level, 12);
    assert_int_equal(im->signature_type, 2);
    assert_int_equal(im->reserved0, 0);
    assert_int_equal(im->default_base, 0x77620000);
    assert_int_equal(im->reserved1, 1);
    assert_int_equal(im->reserved2, 2);
    assert_int_equal(im->reserved3, 3);
    assert_int_equal(im->reserved4, 4);
    assert_wstr(im->file_name, "\\Device\\X\\ntdll.dll");
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* v2: the u32 Reserved0 where v3 has the signature bytes. */
    fixture_kernel(&f, PERCH_GROUP_IMAGE, 2, 2, 4,
                   "000040000050000058000000cdab0000443322110d0c0b0a00004000"
                   "00000000000000000000000000000000"
                   "61002e006500780065000000");
    assert_int_equal(fixture_decode(&f), 0);
    im = &f.out.image;
    assert_int_equal(im->image_base, 0x400000);
    assert_int_equal(im->image_size, 0x5000);
    assert_int_equal(im->process_id, 88);
    assert_int_equal(im->image_checksum, 0xabcd);
    assert_int_equal(im->time_date_stamp, 0x11223344);
    assert_int_equal(im->signature_level, 0);
    assert_int_equal(im->signature_type, 0);
    assert_int_equal(im->reserved0, 0x0a0b0c0d);
    assert_int_equal(im->default_base, 0x400000);
    assert_wstr(im->file_name, "a.exe");
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* v1 is older than any known layout; v4 is newer and marked. */
    f.ev.version = 1;
    fixture_expect_error(&f, PERCH_EVERSION);
    f.ev.version = 4;
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.flags, PERCH_DECODED_NEWER_VERSION);
    assert_int_equal(f.out.image.signature_level, 0x0d); /* read with the v3 layout */
}

static void test_kernel_base(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_IMAGE, 0x21, 2, 8, "0090482100f8ffff");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_KERNEL_BASE);
    assert_int_equal(f.out.kind, PERCH_KIND_OTHER_KERNEL);
    assert_int_equal(f.out.kernel_base.image_base, 0xfffff80021489000);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    fixture_kernel(&f, PERCH_GROUP_IMAGE, 0x21, 2, 4, "00004082");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.kernel_base.image_base, 0x82400000);
}

static void ktc_event(fixture *f, uint8_t opcode, uint8_t psize, const char *hex)
{
    fixture_kernel(f, PERCH_GROUP_NONE, opcode, 2, psize, hex);
    f->ev.provider = perch_kernel_trace_control_guid;
    f->ev.flags = PERCH_EVENT_CLASSIC;
}

static void test_kernel_trace_control(void **state)
{
    static fixture f;
    /* DbgID_RSDS: base 0x7ff993b80000, pid 0, GUID 0123abcd-4567-89ef-0011-223344556677,
     * age 2, "ntdll.pdb". */
    for (uint8_t op = 36; op <= 37; op++) {
        ktc_event(&f, op, 8,
                  "0000b893f97f000000000000cdab23016745ef8900112233445566770200000"
                  "06e74646c6c2e70646200");
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_DBG_ID_RSDS);
        assert_int_equal(f.out.kind, PERCH_KIND_NON_KERNEL);
        char text[37];
        perch_guid_format(&f.out.dbg_id_rsds.guid, text);
        assert_string_equal(text, "0123abcd-4567-89ef-0011-223344556677");
        assert_int_equal(f.out.dbg_id_rsds.image_base, 0x7ff993b80000);
        assert_int_equal(f.out.dbg_id_rsds.process_id, 0);
        assert_int_equal(f.out.dbg_id_rsds.age, 2);
        assert_astr(f.out.dbg_id_rsds.pdb_file_name, "ntdll.pdb");
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    }
    /* ImageID: base, size 0x1f0000, pid 0, stamp 0x5cd3a1b2, "ntdll.dll". */
    ktc_event(&f, 0, 8,
              "0000b893f97f000000001f000000000000000000b2a1d35c6e00740064006c006c002e00"
              "64006c006c000000");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_IMAGE_ID);
    assert_int_equal(f.out.image_id.image_base, 0x7ff993b80000);
    assert_int_equal(f.out.image_id.image_size, 0x1f0000);
    assert_int_equal(f.out.image_id.process_id, 0);
    assert_int_equal(f.out.image_id.time_date_stamp, 0x5cd3a1b2);
    assert_wstr(f.out.image_id.original_file_name, "ntdll.dll");
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* Another opcode of the provider, or the same opcode from another provider: unknown. */
    ktc_event(&f, 64, 8, "00");
    fixture_expect_error(&f, PERCH_EUNKNOWN);
    ktc_event(&f, 0, 8, "00");
    f.ev.provider.data1 ^= 1;
    fixture_expect_error(&f, PERCH_EUNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_v3_p8),
        cmocka_unit_test(test_image_p4),
        cmocka_unit_test(test_kernel_base),
        cmocka_unit_test(test_kernel_trace_control),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
