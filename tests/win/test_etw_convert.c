/*
 * Tests for src/win/etw_convert.c, run under Wine: EVENT_RECORDs built byte by byte at the
 * offsets the Windows SDK documents for EVENT_HEADER and EVENT_RECORD (checked against
 * mingw's structures first), converted into perch_events. Covers every combination of the
 * header flags, 32-bit pointer events, PMC and PEBS extended items present, absent and
 * malformed, the copy of other extended items into the .etl item layout, a StackWalk and a
 * SampledProfile handed on to the real decoders, Image Load's hook, and an unknown provider.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "etw_convert.h"
#include "perch/decode.h"
#include "perch/error.h"

/* The SDK layout (evntcons.h, evntprov.h) the builders below write into. */
#define H_SIZE        0
#define H_FLAGS       4
#define H_TID         8
#define H_PID         12
#define H_TIMESTAMP   16
#define H_PROVIDER    24
#define H_ID          40
#define H_VERSION     42
#define H_OPCODE      45
#define R_PROC_NUMBER 80
#define R_PROC_INDEX  80
#define R_LOGGER_ID   82
#define R_EXT_COUNT   84
#define R_USER_LEN    86
#define R_EXT         88
#define R_USER        96
#define R_CONTEXT     104
#define RECORD_SIZE   112

_Static_assert(sizeof(EVENT_HEADER) == 80, "EVENT_HEADER is 80 bytes");
_Static_assert(sizeof(EVENT_RECORD) == RECORD_SIZE, "EVENT_RECORD is 112 bytes on x64");
_Static_assert(offsetof(EVENT_HEADER, Flags) == H_FLAGS, "Flags");
_Static_assert(offsetof(EVENT_HEADER, TimeStamp) == H_TIMESTAMP, "TimeStamp");
_Static_assert(offsetof(EVENT_HEADER, ProviderId) == H_PROVIDER, "ProviderId");
_Static_assert(offsetof(EVENT_HEADER, EventDescriptor) == H_ID, "EventDescriptor");
_Static_assert(offsetof(EVENT_RECORD, BufferContext) == R_PROC_NUMBER, "BufferContext");
_Static_assert(offsetof(EVENT_RECORD, ExtendedDataCount) == R_EXT_COUNT, "ExtendedDataCount");
_Static_assert(offsetof(EVENT_RECORD, UserDataLength) == R_USER_LEN, "UserDataLength");
_Static_assert(offsetof(EVENT_RECORD, ExtendedData) == R_EXT, "ExtendedData");
_Static_assert(offsetof(EVENT_RECORD, UserData) == R_USER, "UserData");
_Static_assert(offsetof(EVENT_RECORD, UserContext) == R_CONTEXT, "UserContext");
_Static_assert(sizeof(EVENT_HEADER_EXTENDED_DATA_ITEM) == 16, "extended item");

/* GUIDs as they sit in memory (Data1..3 little-endian). */
static const char thread_guid[] = "d1a86f3d05fed0119dda00c04fd7ba7c";
static const char perfinfo_guid[] = "b4bf1dce7e13a64d87b03f59aa102cbc";
static const char stackwalk_guid[] = "46fef2ded67b804bbd94f57fe20d0ce3";
static const char image_guid[] = "1d5db12cc15fd211abe100a0c911f518";
static const char unknown_guid[] = "0123456789abcdef0123456789abcdef";

typedef union record_bytes {
    uint8_t b[RECORD_SIZE];
    EVENT_RECORD r;
} record_bytes;

static void put_ptr64(uint8_t *at, const void *p)
{
    uint64_t v = (uint64_t)(uintptr_t)p;
    memcpy(at, &v, 8);
}

/* A record of provider guid_hex with the given header flags, opcode, version, cpu and payload. */
static void build(record_bytes *rb, const char *guid_hex, uint16_t flags, uint8_t opcode,
                  uint8_t version, uint16_t cpu, const void *user, uint16_t user_len)
{
    memset(rb->b, 0, sizeof rb->b);
    perch_test_put_u16(rb->b + H_SIZE, (uint16_t)(80 + user_len));
    perch_test_put_u16(rb->b + H_FLAGS, flags);
    perch_test_put_u32(rb->b + H_TID, 0xFFFFFFFFu);
    perch_test_put_u32(rb->b + H_PID, 0xFFFFFFFFu);
    perch_test_put_u64(rb->b + H_TIMESTAMP, 0x0000123456789ABCull);
    assert_int_equal(perch_test_hex(guid_hex, rb->b + H_PROVIDER, 16), 16);
    rb->b[H_VERSION] = version;
    rb->b[H_OPCODE] = opcode;
    perch_test_put_u16(rb->b + R_PROC_INDEX, cpu);
    perch_test_put_u16(rb->b + R_LOGGER_ID, 3);
    perch_test_put_u16(rb->b + R_USER_LEN, user_len);
    put_ptr64(rb->b + R_USER, user);
}

static void set_ext(record_bytes *rb, EVENT_HEADER_EXTENDED_DATA_ITEM *items, uint16_t n)
{
    perch_test_put_u16(rb->b + R_EXT_COUNT, n);
    put_ptr64(rb->b + R_EXT, items);
    rb->b[H_FLAGS] |= EVENT_HEADER_FLAG_EXTENDED_INFO;
}

static EVENT_HEADER_EXTENDED_DATA_ITEM item(uint16_t type, const void *data, uint16_t size)
{
    EVENT_HEADER_EXTENDED_DATA_ITEM it;
    memset(&it, 0, sizeof it);
    it.ExtType = type;
    it.DataSize = size;
    it.DataPtr = (ULONGLONG)(uintptr_t)data;
    return it;
}

static void prefill(perch_event *ev)
{
    memset(ev, 0xFF, sizeof *ev);
}

static void test_cswitch_kernel_record(void **state)
{
    uint8_t payload[24];
    record_bytes rb;
    perch_event ev;
    for (unsigned i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i + 1);
    build(&rb, thread_guid,
          EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER |
              EVENT_HEADER_FLAG_PROCESSOR_INDEX,
          36, 4, 300, payload, sizeof payload);
    prefill(&ev);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.header_kind, PERCH_HEADER_LIVE);
    assert_int_equal(ev.group, PERCH_GROUP_THREAD);
    assert_int_equal(ev.hook, 0x0524);
    assert_int_equal(ev.opcode, 36);
    assert_int_equal(ev.version, 4);
    assert_int_equal(ev.event_id, 0);
    assert_int_equal(ev.cpu, 300);
    assert_int_equal(ev.pointer_size, 8);
    assert_int_equal(ev.flags, PERCH_EVENT_CLASSIC); /* tid/pid all-ones: none */
    assert_int_equal(ev.tid, UINT32_MAX);
    assert_true(ev.timestamp == 0x0000123456789ABCull);
    assert_ptr_equal(ev.payload, payload);
    assert_int_equal(ev.payload_len, 24);
    assert_int_equal(ev.pmc_count, 0);
    assert_null(ev.ext);
    assert_int_equal(ev.ext_len, 0);
    assert_int_equal(ev.reserved, 0);

    perch_decoded d;
    assert_int_equal(perch_decode(&ev, &d, NULL), 0);
    assert_int_equal(d.type, PERCH_DECODED_CSWITCH);
    assert_int_equal(d.cswitch.new_thread_id, 0x04030201u);
    assert_int_equal(d.cswitch.old_thread_id, 0x08070605u);
}

static int expected_pointer_size(uint16_t flags)
{
    bool p32 = flags & EVENT_HEADER_FLAG_32_BIT_HEADER,
         p64 = flags & EVENT_HEADER_FLAG_64_BIT_HEADER;
    return p32 && p64 ? -1 : p32 ? 4 : p64 ? 8 : 0;
}

/* Every combination of the nine documented header flag bits, with both trace defaults. */
static void test_every_flag_combination(void **state)
{
    static const uint16_t bits[] = {
        EVENT_HEADER_FLAG_EXTENDED_INFO,  EVENT_HEADER_FLAG_PRIVATE_SESSION,
        EVENT_HEADER_FLAG_STRING_ONLY,    EVENT_HEADER_FLAG_TRACE_MESSAGE,
        EVENT_HEADER_FLAG_NO_CPUTIME,     EVENT_HEADER_FLAG_32_BIT_HEADER,
        EVENT_HEADER_FLAG_64_BIT_HEADER,  EVENT_HEADER_FLAG_CLASSIC_HEADER,
        EVENT_HEADER_FLAG_PROCESSOR_INDEX};
    uint8_t payload[16] = {0};
    unsigned checked = 0, refused = 0;
    for (unsigned combo = 0; combo < (1u << 9); combo++) {
        uint16_t flags = 0;
        for (unsigned b = 0; b < 9; b++)
            if (combo & (1u << b))
                flags |= bits[b];
        for (unsigned def = 4; def <= 8; def += 4) {
            record_bytes rb;
            perch_event ev, before;
            build(&rb, perfinfo_guid, flags, 46, 2, 0x1234, payload, sizeof payload);
            prefill(&ev);
            before = ev;
            int rc = perch_etw_convert(&rb.r, def, NULL, 0, &ev);
            int want = expected_pointer_size(flags);
            if (want < 0) {
                assert_int_equal(rc, PERCH_EFORMAT);
                assert_memory_equal(&ev, &before, sizeof ev);
                refused++;
                continue;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(ev.pointer_size, want ? want : (int)def);
            assert_int_equal(ev.cpu, (flags & EVENT_HEADER_FLAG_PROCESSOR_INDEX) ? 0x1234 : 0x34);
            assert_int_equal(!!(ev.flags & PERCH_EVENT_CLASSIC),
                             !!(flags & EVENT_HEADER_FLAG_CLASSIC_HEADER));
            assert_int_equal(ev.event_id, 0);
            assert_int_equal(ev.group, PERCH_GROUP_PERFINFO);
            checked++;
        }
    }
    assert_int_equal(checked, 2 * 384);
    assert_int_equal(refused, 2 * 128);
}

static void test_sampled_profile_32bit(void **state)
{
    uint8_t payload[12], *p = payload;
    record_bytes rb;
    perch_event ev;
    perch_decoded d;
    p = perch_test_put_u32(p, 0x80401234u); /* a kernel IP with 32-bit pointers */
    p = perch_test_put_u32(p, 4242);
    p = perch_test_put_u16(p, 1);
    p = perch_test_put_u8(p, 0x58);
    perch_test_put_u8(p, 0);
    build(&rb, perfinfo_guid, EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_32_BIT_HEADER,
          46, 2, 1, payload, sizeof payload);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.pointer_size, 4);
    assert_int_equal(ev.hook, 0x0F2E);
    assert_int_equal(perch_decode(&ev, &d, NULL), 0);
    assert_int_equal(d.type, PERCH_DECODED_SAMPLED_PROFILE);
    assert_true(d.sampled_profile.instruction_pointer == 0x80401234u);
    assert_int_equal(d.sampled_profile.thread_id, 4242);
    /* The same bytes read as a 64-bit event are too short for its layout. */
    rb.b[H_FLAGS] = (uint8_t)(EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER);
    assert_int_equal(perch_etw_convert(&rb.r, 4, NULL, 0, &ev), 0);
    assert_int_equal(ev.pointer_size, 8);
    assert_int_equal(perch_decode(&ev, &d, NULL), PERCH_ESHORT);
}

static void test_pmc_and_pebs_items(void **state)
{
    uint64_t counters[3] = {111, 222, 0xFFFFFFFFFFFFull}, pebs = 0xABCDEF;
    uint8_t sid[12] = {1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0}, payload[24] = {0}, ext[64];
    uint32_t ts_id = 7;
    EVENT_HEADER_EXTENDED_DATA_ITEM items[4] = {
        item(EVENT_HEADER_EXT_TYPE_SID, sid, sizeof sid),
        item(EVENT_HEADER_EXT_TYPE_PMC_COUNTERS, counters, sizeof counters),
        item(EVENT_HEADER_EXT_TYPE_PEBS_INDEX, &pebs, sizeof pebs),
        item(EVENT_HEADER_EXT_TYPE_TS_ID, &ts_id, sizeof ts_id),
    };
    record_bytes rb;
    perch_event ev;
    build(&rb, thread_guid, EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER, 36,
          4, 2, payload, sizeof payload);
    set_ext(&rb, items, 4);
    memset(ext, 0xEE, sizeof ext);
    assert_int_equal(perch_etw_convert(&rb.r, 8, ext, sizeof ext, &ev), 0);
    assert_int_equal(ev.pmc_count, 3);
    assert_true(ev.pmc[0] == 111 && ev.pmc[1] == 222 && ev.pmc[2] == 0xFFFFFFFFFFFFull);
    assert_true(ev.flags & PERCH_EVENT_HAS_PEBS);
    assert_true(ev.pebs_index == 0xABCDEF);
    /* SID (12 bytes → 24 with header and padding) then TS_ID (4 → 16), in the .etl layout. */
    assert_ptr_equal(ev.ext, ext);
    assert_int_equal(ev.ext_len, 24 + 16);
    uint8_t want[40] = {0, 0, 2, 0, 1, 0, 12, 0, 1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0,
                        0, 0, 0, 0, 0, 0, 3,  0, 0, 0, 4, 0, 7, 0, 0, 0, 0,  0, 0, 0};
    assert_memory_equal(ext, want, sizeof want);

    perch_decoded d;
    assert_int_equal(perch_decode(&ev, &d, NULL), 0);
    assert_int_equal(d.pmc_count, 3);
    assert_true(d.pmc[1] == 222);
}

static void test_pmc_malformed(void **state)
{
    uint64_t nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    uint8_t payload[24] = {0};
    const struct {
        const void *data;
        uint16_t size;
    } bad[] = {{nine, 12}, {nine, 0}, {nine, sizeof nine}, {NULL, 16}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EVENT_HEADER_EXTENDED_DATA_ITEM it =
            item(EVENT_HEADER_EXT_TYPE_PMC_COUNTERS, bad[i].data, bad[i].size);
        record_bytes rb;
        perch_event ev;
        build(&rb, thread_guid, EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER,
              36, 4, 0, payload, sizeof payload);
        set_ext(&rb, &it, 1);
        assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev),
                         PERCH_ETW_CONVERT_PMC_MALFORMED);
        assert_int_equal(ev.pmc_count, 0);
        assert_int_equal(ev.payload_len, 24); /* the event itself still converts */
    }
    /* A malformed PEBS item, and no extended data at all although the flag is set. */
    uint64_t pebs = 1;
    EVENT_HEADER_EXTENDED_DATA_ITEM it = item(EVENT_HEADER_EXT_TYPE_PEBS_INDEX, &pebs, 4);
    record_bytes rb;
    perch_event ev;
    build(&rb, thread_guid, EVENT_HEADER_FLAG_64_BIT_HEADER, 36, 4, 0, payload, sizeof payload);
    set_ext(&rb, &it, 1);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), PERCH_ETW_CONVERT_PEBS_MALFORMED);
    assert_false(ev.flags & PERCH_EVENT_HAS_PEBS);
    set_ext(&rb, NULL, 3);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.pmc_count, 0);
}

static void test_ext_buffer_too_small(void **state)
{
    uint8_t blob[40] = {0}, ext[32], payload[4] = {0};
    EVENT_HEADER_EXTENDED_DATA_ITEM items[2] = {item(EVENT_HEADER_EXT_TYPE_SID, blob, 40),
                                                item(EVENT_HEADER_EXT_TYPE_TS_ID, blob, 4)};
    record_bytes rb;
    perch_event ev;
    build(&rb, unknown_guid, EVENT_HEADER_FLAG_64_BIT_HEADER, 1, 0, 0, payload, sizeof payload);
    set_ext(&rb, items, 2);
    /* The SID item (48 bytes) does not fit, the TS_ID one (16) does. */
    assert_int_equal(perch_etw_convert(&rb.r, 8, ext, sizeof ext, &ev),
                     PERCH_ETW_CONVERT_EXT_TRUNCATED);
    assert_int_equal(ev.ext_len, 16);
    assert_int_equal(ext[2], EVENT_HEADER_EXT_TYPE_TS_ID);
    assert_int_equal(ext[4] & 1, 0); /* the last item copied: no linkage */
}

static void test_stackwalk(void **state)
{
    uint8_t payload[16 + 3 * 8], *p = payload;
    record_bytes rb;
    perch_event ev;
    perch_decoded d;
    p = perch_test_put_u64(p, 0x0000123456789ABCull); /* EventTimeStamp */
    p = perch_test_put_u32(p, 100);                   /* StackProcess */
    p = perch_test_put_u32(p, 200);                   /* StackThread */
    p = perch_test_put_u64(p, 0xFFFFF80012345678ull);
    p = perch_test_put_u64(p, 0xFFFFF80012340000ull);
    perch_test_put_u64(p, 0x00007FF612345678ull);
    build(&rb, stackwalk_guid,
          EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER |
              EVENT_HEADER_FLAG_PROCESSOR_INDEX,
          32, 2, 5, payload, sizeof payload);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.group, PERCH_GROUP_STACKWALK);
    assert_int_equal(ev.hook, 0x1820);
    assert_int_equal(perch_decode(&ev, &d, NULL), 0);
    assert_int_equal(d.type, PERCH_DECODED_STACK_WALK);
    assert_int_equal(d.stack_walk.thread_id, 200);
    assert_int_equal(d.stack_walk.frames.count, 3);
}

static void test_image_load_hook(void **state)
{
    uint8_t payload[8] = {0};
    record_bytes rb;
    perch_event ev;
    build(&rb, image_guid, EVENT_HEADER_FLAG_CLASSIC_HEADER | EVENT_HEADER_FLAG_64_BIT_HEADER, 10,
          3, 0, payload, sizeof payload);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.group, PERCH_GROUP_IMAGE);
    assert_int_equal(ev.hook, 0x030A); /* logged in the Process group */
    rb.b[H_OPCODE] = 3;
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.hook, 0x1403);
}

static void test_unknown_provider(void **state)
{
    uint8_t payload[3] = {9, 8, 7};
    record_bytes rb;
    perch_event ev;
    perch_decoded d;
    build(&rb, unknown_guid, EVENT_HEADER_FLAG_64_BIT_HEADER, 11, 2, 1, payload, sizeof payload);
    perch_test_put_u32(rb.b + H_TID, 1000);
    perch_test_put_u32(rb.b + H_PID, 4);
    perch_test_put_u16(rb.b + H_ID, 1234);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0);
    assert_int_equal(ev.group, PERCH_GROUP_NONE);
    assert_int_equal(ev.hook, 0);
    assert_int_equal(ev.event_id, 1234);
    assert_int_equal(ev.opcode, 11);
    assert_int_equal(ev.flags, PERCH_EVENT_HAS_TID);
    assert_int_equal(ev.tid, 1000);
    assert_int_equal(ev.pid, 4);
    assert_true(ev.provider.data1 == 0x67452301u && ev.provider.data2 == 0xab89);
    assert_int_equal(ev.cpu, 1); /* ProcessorNumber: no PROCESSOR_INDEX flag */
    assert_int_equal(perch_decode(&ev, &d, NULL), PERCH_EUNKNOWN);
}

static void test_invalid_records(void **state)
{
    record_bytes rb;
    perch_event ev, before;
    build(&rb, thread_guid, EVENT_HEADER_FLAG_64_BIT_HEADER, 36, 2, 0, NULL, 24);
    prefill(&ev);
    before = ev;
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), PERCH_EINVAL);
    assert_int_equal(perch_etw_convert(NULL, 8, NULL, 0, &ev), PERCH_EINVAL);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, NULL), PERCH_EINVAL);
    assert_memory_equal(&ev, &before, sizeof ev);
    build(&rb, thread_guid, EVENT_HEADER_FLAG_64_BIT_HEADER, 36, 2, 0, NULL, 0);
    assert_int_equal(perch_etw_convert(&rb.r, 8, NULL, 0, &ev), 0); /* empty payload is fine */
    assert_int_equal(ev.payload_len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cswitch_kernel_record),
        cmocka_unit_test(test_every_flag_combination),
        cmocka_unit_test(test_sampled_profile_32bit),
        cmocka_unit_test(test_pmc_and_pebs_items),
        cmocka_unit_test(test_pmc_malformed),
        cmocka_unit_test(test_ext_buffer_too_small),
        cmocka_unit_test(test_stackwalk),
        cmocka_unit_test(test_image_load_hook),
        cmocka_unit_test(test_unknown_provider),
        cmocka_unit_test(test_invalid_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
