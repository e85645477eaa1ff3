/*
 * Byte-table tests for the StackWalk group decoders (StackWalk_Event, key references and key
 * definitions) at both pointer sizes, and for the LBR sample decoder. The P=8 StackWalk and
 * StackKey payloads are real ones from perfview_net.4.5.2.x64 (see the reference vectors);
 * the rest were written from docs/events.md.
 */
#include "decode_fixture.h"

/* Real StackWalk payload: EventTimeStamp 1942908431, process 3988, thread 3780, 2 frames. */
static const char stack_p8[] = "0f6ece7300000000940f0000c40e00000330d0ffffffffff37ae5d2100f8ffff";

static void test_stack_walk(void **state)
{
    static fixture f;
    fixture_kernel(&f, PERCH_GROUP_STACKWALK, 32, 2, 8, stack_p8);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_STACK_WALK);
    assert_int_equal(f.out.kind, PERCH_KIND_StackWalk);
    const perch_stack_walk *s = &f.out.stack_walk;
    assert_int_equal(s->event_timestamp, 1942908431);
    assert_int_equal(s->process_id, 3988);
    assert_int_equal(s->thread_id, 3780);
    assert_int_equal(s->frames.count, 2);
    assert_int_equal(s->frames.pointer_size, 8);
    assert_int_equal(perch_ptr_at(&s->frames, 0), 0xffffffffffd03003);
    assert_int_equal(perch_ptr_at(&s->frames, 1), 0xfffff800215dae37);
    /* Only the 16-byte header is required: fewer bytes are short. */
    f.ev.payload_len = 16;
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.stack_walk.frames.count, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* A partial frame is ignored and flagged. */
    f.ev.payload_len = 16 + 8 + 5;
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.stack_walk.frames.count, 1);
    assert_int_equal(f.out.flags, PERCH_DECODED_TRAILING);
    /* P=4: three 4-byte frames. */
    fixture_kernel(&f, PERCH_GROUP_STACKWALK, 32, 2, 4,
                   "ff35ce730000000064000000c80000003412007778560077cdab4000");
    assert_int_equal(fixture_decode(&f), 0);
    s = &f.out.stack_walk;
    assert_int_equal(s->event_timestamp, 0x73ce35ff);
    assert_int_equal(s->process_id, 100);
    assert_int_equal(s->thread_id, 200);
    assert_int_equal(s->frames.count, 3);
    assert_int_equal(perch_ptr_at(&s->frames, 0), 0x77001234);
    assert_int_equal(perch_ptr_at(&s->frames, 1), 0x77005678);
    assert_int_equal(perch_ptr_at(&s->frames, 2), 0x0040abcd);
}

static void test_stack_key_ref(void **state)
{
    static fixture f;
    /* Real StackKeyKernel: EventTimeStamp 1943093607, 3988/3780, key 0xfffffa830343ed90. */
    for (uint8_t op = 37; op <= 38; op++) {
        fixture_kernel(&f, PERCH_GROUP_STACKWALK, op, 2, 8,
                       "6741d17300000000940f0000c40e000090ed4303"
                       "83faffff");
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_STACK_KEY_REF);
        assert_int_equal(f.out.kind,
                         op == 37 ? PERCH_KIND_StackKeyKernel : PERCH_KIND_StackKeyUser);
        assert_int_equal(f.out.stack_key_ref.event_timestamp, 1943093607);
        assert_int_equal(f.out.stack_key_ref.process_id, 3988);
        assert_int_equal(f.out.stack_key_ref.thread_id, 3780);
        assert_int_equal(f.out.stack_key_ref.stack_key, 0xfffffa830343ed90);
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    }
    fixture_kernel(&f, PERCH_GROUP_STACKWALK, 38, 2, 4, "881300000000000006000000070000003012008a");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.stack_key_ref.event_timestamp, 5000);
    assert_int_equal(f.out.stack_key_ref.process_id, 6);
    assert_int_equal(f.out.stack_key_ref.thread_id, 7);
    assert_int_equal(f.out.stack_key_ref.stack_key, 0x8a001230);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

static void test_stack_key_def(void **state)
{
    static fixture f;
    static const perch_kind kinds[] = {PERCH_KIND_StackKeyCreate, PERCH_KIND_StackKeyDelete,
                                       PERCH_KIND_StackKeyRundown};
    for (uint8_t op = 34; op <= 36; op++) {
        fixture_kernel(&f, PERCH_GROUP_STACKWALK, op, 2, 4, "3012008a31b99073d3199273ef3a9573");
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_STACK_KEY_DEF);
        assert_int_equal(f.out.kind, kinds[op - 34]);
        assert_int_equal(f.out.stack_key_def.stack_key, 0x8a001230);
        assert_int_equal(f.out.stack_key_def.frames.count, 3);
        assert_int_equal(perch_ptr_at(&f.out.stack_key_def.frames, 0), 0x7390b931);
        assert_int_equal(perch_ptr_at(&f.out.stack_key_def.frames, 2), 0x73953aef);
    }
    /* WOW64 user frames in 8-byte slots (P=8). */
    fixture_kernel(&f, PERCH_GROUP_STACKWALK, 35, 2, 8, "10f0440383faffff31b9907300000000");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.stack_key_def.stack_key, 0xfffffa830344f010);
    assert_int_equal(f.out.stack_key_def.frames.count, 1);
    assert_int_equal(perch_ptr_at(&f.out.stack_key_def.frames, 0), 0x7390b931);
    f.ev.payload_len = 8;
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.stack_key_def.frames.count, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

static void test_lbr(void **state)
{
    static fixture f;
    /* P=8: 20-byte header + 4 bytes padding, then two {From, To, Reserved} entries. */
    fixture_kernel(
        &f, PERCH_GROUP_SPARE1, 32, 2, 8,
        "887766554433221192100000f7100000030000000000000000100000f67f000000200000f67f0000"
        "000000000000000034120000"
        "00f8ffff7856000000f8ffff0000000000000000");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_LBR);
    assert_int_equal(f.out.kind, PERCH_KIND_LastBranchRecord);
    const perch_lbr *l = &f.out.lbr;
    assert_int_equal(l->timestamp, 0x1122334455667788);
    assert_int_equal(l->process_id, 4242);
    assert_int_equal(l->thread_id, 4343);
    assert_int_equal(l->filters, 3);
    assert_int_equal(l->entry_count, 2);
    assert_int_equal(l->entry_stride, 24);
    assert_int_equal(perch_lbr_from(l, 0), 0x7ff600001000);
    assert_int_equal(perch_lbr_to(l, 0), 0x7ff600002000);
    assert_int_equal(perch_lbr_from(l, 1), 0xfffff80000001234);
    assert_int_equal(perch_lbr_to(l, 1), 0xfffff80000005678);
    f.ev.payload_len = 24;
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.lbr.entry_count, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* P=4: entries right after the 20-byte header. */
    fixture_kernel(&f, PERCH_GROUP_SPARE1, 32, 2, 4,
                   "6300000000000000010000000200000000020000001040000020400000000000003040000040"
                   "400000000000");
    assert_int_equal(fixture_decode(&f), 0);
    l = &f.out.lbr;
    assert_int_equal(l->timestamp, 99);
    assert_int_equal(l->process_id, 1);
    assert_int_equal(l->thread_id, 2);
    assert_int_equal(l->filters, 0x200);
    assert_int_equal(l->entry_count, 2);
    assert_int_equal(l->entry_stride, 12);
    assert_int_equal(perch_lbr_from(l, 1), 0x403000);
    assert_int_equal(perch_lbr_to(l, 1), 0x404000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stack_walk),
        cmocka_unit_test(test_stack_key_ref),
        cmocka_unit_test(test_stack_key_def),
        cmocka_unit_test(test_lbr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
