/*
 * Container tests on synthetic .etl images (tests/unit/etl_image.h): every record header
 * kind as a byte table with the event pre-filled with 0xff, the PMC/PEBS extension bits,
 * compact headers, a 32-bit trace, the merge order (ties, sequence numbers), compressed
 * buffers, damaged input (each error reason with its offset, the rest still read) and
 * truncation at every byte of a small file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etl_image.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/kind.h"

static const uint8_t payload16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void prefill(perch_event *ev)
{
    memset(ev, 0xff, sizeof *ev);
}

static void test_system_header_fields(void **state)
{
    uint8_t rec[128];
    perch_event ev;
    size_t step = 0;
    size_t n = img_kernel(rec, 0x02, 3, 0x0503, 111, 222, 0x1122334455667788ull, NULL, 0,
                          payload16, 16);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 5, &ev, &step), 0);
    assert_int_equal(step, 0x30);
    assert_int_equal(ev.timestamp, 0x1122334455667788ull);
    assert_int_equal(ev.tid, 111);
    assert_int_equal(ev.pid, 222);
    assert_int_equal(ev.cpu, 5);
    assert_int_equal(ev.group, PERCH_GROUP_THREAD);
    assert_int_equal(ev.hook, 0x0503);
    assert_int_equal(ev.event_id, 0);
    assert_int_equal(ev.flags, PERCH_EVENT_HAS_TID | PERCH_EVENT_CLASSIC);
    assert_int_equal(ev.opcode, 3);
    assert_int_equal(ev.version, 3);
    assert_int_equal(ev.pointer_size, 8);
    assert_int_equal(ev.header_kind, PERCH_HEADER_SYSTEM);
    assert_int_equal(ev.pmc_count, 0);
    assert_int_equal(ev.reserved, 0);
    assert_int_equal(ev.pebs_index, 0);
    for (int i = 0; i < PERCH_EVENT_MAX_PMC; i++)
        assert_int_equal(ev.pmc[i], 0);
    assert_ptr_equal(ev.payload, rec + 0x20);
    assert_int_equal(ev.payload_len, 16);
    assert_null(ev.ext);
    assert_int_equal(ev.ext_len, 0);
    assert_true(perch_guid_equal(&ev.provider, perch_kernel_group_guid(PERCH_GROUP_THREAD)));
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_ThreadDCStart);
}

static void test_compact_and_perfinfo_32(void **state)
{
    uint8_t rec[128];
    perch_event ev;
    size_t step = 0, n;
    n = img_kernel(rec, 0x03, 2, 0x0524, 9, 10, 77, NULL, 0, payload16, 12);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 1, &ev, &step), 0);
    assert_int_equal(step, 0x18 + 16);
    assert_int_equal(ev.header_kind, PERCH_HEADER_COMPACT);
    assert_int_equal(ev.pointer_size, 4);
    assert_int_equal(ev.tid, 9);
    assert_int_equal(ev.pid, 10);
    assert_int_equal(ev.timestamp, 77);
    assert_ptr_equal(ev.payload, rec + 0x18);
    assert_int_equal(ev.payload_len, 12);
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_CSwitch);
    n = img_kernel(rec, 0x10, 2, 0x0F2E, 0, 0, 78, NULL, 0, payload16, 12);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 1, &ev, &step), 0);
    assert_int_equal(step, 0x20);
    assert_int_equal(ev.header_kind, PERCH_HEADER_PERFINFO);
    assert_int_equal(ev.pointer_size, 4);
    assert_int_equal(ev.tid, UINT32_MAX);
    assert_int_equal(ev.pid, UINT32_MAX);
    assert_int_equal(ev.flags, PERCH_EVENT_CLASSIC);
    assert_int_equal(ev.timestamp, 78);
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_SampledProfile);
}

static void test_image_load_normalized(void **state)
{
    uint8_t rec[128];
    perch_event ev;
    size_t step, n = img_kernel(rec, 0x02, 3, 0x030A, 1, 2, 3, NULL, 0, payload16, 16);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 0, &ev, &step), 0);
    assert_int_equal(ev.group, PERCH_GROUP_IMAGE);
    assert_int_equal(ev.opcode, 10);
    assert_int_equal(ev.hook, 0x030A);
    assert_true(perch_guid_equal(&ev.provider, perch_kernel_group_guid(PERCH_GROUP_IMAGE)));
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_ImageLoad);
    /* A group Perch has no GUID for: zero GUID, group still set. */
    n = img_kernel(rec, 0x11, 2, 0x7F01, 0, 0, 3, NULL, 0, payload16, 8);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 0, &ev, &step), 0);
    assert_int_equal(ev.group, 0x7F);
    assert_int_equal(ev.provider.data1, 0);
    assert_int_equal(ev.provider.data4[7], 0);
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_OTHER_KERNEL);
}

static void test_pmc_and_pebs_extension(void **state)
{
    const uint64_t ext[4] = {0xAAAA, 100, 200, 300};
    uint8_t rec[128];
    perch_event ev;
    size_t step, n;
    /* CSwitch v4 with PEBS + 3 counters: version word 0x8304. */
    n = img_kernel(rec, 0x11, 0x8304, 0x0524, 0, 0, 5, ext, 4, payload16, 16);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 0, &ev, &step), 0);
    assert_int_equal(ev.version, 4);
    assert_true(ev.flags & PERCH_EVENT_HAS_PEBS);
    assert_int_equal(ev.pebs_index, 0xAAAA);
    assert_int_equal(ev.pmc_count, 3);
    assert_int_equal(ev.pmc[0], 100);
    assert_int_equal(ev.pmc[1], 200);
    assert_int_equal(ev.pmc[2], 300);
    assert_int_equal(ev.pmc[3], 0);
    assert_ptr_equal(ev.payload, rec + 0x10 + 32);
    assert_int_equal(ev.payload_len, 16);
    /* Counters only (0x0702: 7 counters) on a full system header. */
    {
        const uint64_t seven[7] = {1, 2, 3, 4, 5, 6, 7};
        n = img_kernel(rec, 0x02, 0x0702, 0x0524, 4, 5, 6, seven, 7, payload16, 0);
        prefill(&ev);
        assert_int_equal(perch_etl_parse_record(rec, n, 8, 0, &ev, &step), 0);
        assert_int_equal(ev.pmc_count, 7);
        assert_int_equal(ev.pmc[6], 7);
        assert_false(ev.flags & PERCH_EVENT_HAS_PEBS);
        assert_int_equal(ev.payload_len, 0);
    }
    /* Extension bits announcing more bytes than Size holds: an error, event untouched. */
    n = img_kernel(rec, 0x11, 0x0302, 0x0524, 0, 0, 5, ext, 1, payload16, 0);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 0, &ev, &step), PERCH_ERANGE);
    assert_int_equal(ev.version, 0xff);
}

static void test_event_header_and_ext_items(void **state)
{
    uint8_t ext[32], rec[256];
    perch_event ev;
    size_t step, n;
    /* Two items, each {reserved, type, linkage, size} + 8 data bytes, 8-aligned. */
    memset(ext, 0, sizeof ext);
    perch_test_put_u16(ext + 2, 5);
    perch_test_put_u16(ext + 4, 1); /* another item follows */
    perch_test_put_u16(ext + 6, 8);
    perch_test_put_u64(ext + 8, 0xdeadbeef);
    perch_test_put_u16(ext + 16 + 2, 8);
    perch_test_put_u16(ext + 16 + 6, 8);
    n = img_event(rec, 40, 41, 999, 0x12345678, 7, 1, 11, ext, 32, payload16, 10);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 3, &ev, &step), 0);
    assert_int_equal(ev.header_kind, PERCH_HEADER_EVENT);
    assert_int_equal(ev.group, PERCH_GROUP_NONE);
    assert_int_equal(ev.hook, 0);
    assert_int_equal(ev.provider.data1, 0x12345678);
    assert_int_equal(ev.provider.data2, 0x1234);
    assert_int_equal(ev.provider.data4[7], 8);
    assert_int_equal(ev.event_id, 7);
    assert_int_equal(ev.version, 1);
    assert_int_equal(ev.opcode, 11);
    assert_int_equal(ev.tid, 40);
    assert_int_equal(ev.pid, 41);
    assert_int_equal(ev.flags, PERCH_EVENT_HAS_TID);
    assert_ptr_equal(ev.ext, rec + 0x50);
    assert_int_equal(ev.ext_len, 32);
    assert_ptr_equal(ev.payload, rec + 0x50 + 32);
    assert_int_equal(ev.payload_len, 10);
    assert_int_equal(perch_event_kind(&ev), PERCH_KIND_NON_KERNEL);
    /* An item running past Size. */
    perch_test_put_u16(rec + 0x50 + 16 + 6, 40);
    assert_int_equal(perch_etl_parse_record(rec, n, 8, 3, &ev, &step), PERCH_ERANGE);
}

static void test_classic_and_skipped(void **state)
{
    uint8_t rec[128];
    perch_event ev;
    size_t step = 0;
    memset(rec, 0, sizeof rec);
    perch_test_put_u16(rec, 0x30 + 4);
    rec[2] = 0x0A;
    rec[3] = 0xC0;
    rec[4] = 12; /* Class.Type */
    perch_test_put_u16(rec + 6, 2);
    perch_test_put_u32(rec + 8, 7);
    perch_test_put_u32(rec + 12, 8);
    perch_test_put_u64(rec + 16, 4444);
    perch_test_put_u32(rec + 0x18, 0x3d6fa8d0); /* a kernel GUID in a classic header */
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, 0x34, 8, 0, &ev, &step), 0);
    assert_int_equal(step, 0x38);
    assert_int_equal(ev.header_kind, PERCH_HEADER_FULL);
    assert_int_equal(ev.pointer_size, 4);
    assert_int_equal(ev.group, PERCH_GROUP_NONE);
    assert_int_equal(ev.flags, PERCH_EVENT_HAS_TID | PERCH_EVENT_CLASSIC);
    assert_int_equal(ev.opcode, 12);
    assert_int_equal(ev.version, 2);
    assert_int_equal(ev.provider.data1, 0x3d6fa8d0);
    assert_int_equal(ev.payload_len, 4);
    /* A WPP message (marker 0x9xxxxxxx): skipped with its step, the event untouched. */
    perch_test_put_u32(rec, 0x9A000000u | 20);
    prefill(&ev);
    assert_int_equal(perch_etl_parse_record(rec, 64, 8, 0, &ev, &step), PERCH_EUNKNOWN);
    assert_int_equal(step, 24);
    assert_int_equal(ev.version, 0xff);
    /* Unknown header type, end markers, short sizes. */
    perch_test_put_u32(rec, 0xC0770010u);
    assert_int_equal(perch_etl_parse_record(rec, 64, 8, 0, &ev, &step), PERCH_EFORMAT);
    perch_test_put_u32(rec, 0xFFFFFFFFu);
    assert_int_equal(perch_etl_parse_record(rec, 64, 8, 0, &ev, &step), PERCH_EOF);
    img_kernel(rec, 0x02, 2, 0x0501, 0, 0, 0, NULL, 0, payload16, 0);
    perch_test_put_u16(rec + 4, 0x1F);
    assert_int_equal(perch_etl_parse_record(rec, 64, 8, 0, &ev, &step), PERCH_ESHORT);
    perch_test_put_u16(rec + 4, 0x41);
    assert_int_equal(perch_etl_parse_record(rec, 64, 8, 0, &ev, &step), PERCH_ETRUNC);
    assert_int_equal(perch_etl_parse_record(rec, 8, 8, 0, &ev, &step), PERCH_ETRUNC);
    assert_int_equal(ev.version, 0xff);
}

/* ---- whole images ------------------------------------------------------------------------ */

/* Two CPUs, two buffers each, written out of sequence order; timestamps interleave and tie. */
static void build_two_cpu_image(struct img *m, unsigned ptr, bool compress)
{
    uint8_t rec[128];
    static const uint64_t ts[2][2][3] = {{{10, 30, 50}, {70, 90, 110}}, {{20, 30, 60}, {80, 100, 120}}};
    img_init(m, 1 << 16);
    img_header_buffer(m, ptr, 2);
    for (int b = 1; b >= 0; b--)
        for (uint16_t cpu = 0; cpu < 2; cpu++) {
            img_begin(m, cpu, (uint64_t)(b + 1) * 10 + cpu, 0, 0);
            for (int i = 0; i < 3; i++) {
                size_t n = img_kernel(rec, ptr == 4 ? 0x03 : 0x11, 2,
                                      (uint16_t)(0x0F2E + (cpu << 8) * 0), 100 + cpu, 4,
                                      ts[cpu][b][i], NULL, 0, payload16, (size_t)(ptr + 8));
                img_record(m, rec, n);
            }
            if (compress)
                img_end_compressed(m);
            else
                img_end(m, 0x100);
        }
}

static void check_two_cpu_stream(const struct img *m, unsigned ptr)
{
    static const uint64_t want_ts[] = {5, 10, 20, 30, 30, 50, 60, 70, 80, 90, 100, 110, 120};
    static const uint16_t want_cpu[] = {0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    perch_etl_reader *r = NULL;
    perch_event ev;
    size_t i = 0;
    assert_int_equal(perch_etl_open_memory(m->p, m->len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_header_of(r)->pointer_size, ptr);
    while (perch_etl_next(r, &ev) == 0) {
        assert_true(i < 13);
        assert_int_equal(ev.timestamp, want_ts[i]);
        assert_int_equal(ev.cpu, want_cpu[i]);
        if (i > 0) {
            assert_int_equal(ev.pointer_size, ptr);
            assert_int_equal(ev.payload_len, ptr + 8);
            assert_memory_equal(ev.payload, payload16, ptr + 8);
        }
        i++;
    }
    assert_int_equal(i, 13);
    assert_int_equal(perch_etl_stats_of(r)->records, 13);
    for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++)
        assert_int_equal(perch_etl_stats_of(r)->errors[e], 0);
    perch_etl_destroy(r);
}

static void test_merge_order_64(void **state)
{
    struct img m;
    build_two_cpu_image(&m, 8, false);
    check_two_cpu_stream(&m, 8);
    free(m.p);
}

static void test_merge_order_32_compact(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    const perch_etl_header *h;
    build_two_cpu_image(&m, 4, false);
    check_two_cpu_stream(&m, 4);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    h = perch_etl_header_of(r);
    assert_int_equal(h->cpus, 2);
    assert_int_equal(h->perf_freq, 10000000);
    assert_int_equal(h->start_time, 132000000000000000ull);
    assert_int_equal(h->boot_time, 132000000000000000ull - 1000);
    assert_int_equal(h->events_lost, 7);
    assert_int_equal(h->buffers_lost, 2);
    assert_int_equal(h->tz_bias, -60);
    assert_int_equal(h->clock_type, 1);
    assert_int_equal(h->ref_raw, 5);
    assert_string_equal(h->logger_name, "Test Logger");
    assert_string_equal(h->log_file_name, "C:\\t.etl");
    assert_int_equal(perch_etl_filetime(h, 15), 132000000000000010ull);
    assert_int_equal(perch_etl_filetime(h, 0), 132000000000000000ull - 5);
    perch_etl_destroy(r);
    free(m.p);
}

static void test_compressed_buffers(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    build_two_cpu_image(&m, 8, true);
    check_two_cpu_stream(&m, 8);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_stats_of(r)->compressed_buffers, 4);
    perch_etl_destroy(r);
    free(m.p);
}

static uint64_t drain(perch_etl_reader *r)
{
    perch_event ev;
    uint64_t n = 0;
    while (perch_etl_next(r, &ev) == 0)
        n++;
    return n;
}

static void test_damaged_record_and_buffer(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    const perch_etl_stats *st;
    size_t second;
    build_two_cpu_image(&m, 8, false);
    /* Buffer 2 (file offset 0x400 + 0x100): its second record claims a size past the buffer. */
    second = 0x400 + 0x100 + 0x48 + 0x20;
    perch_test_put_u16(m.p + second + 4, 0x400);
    /* Buffer 4: BufferFlag says EVENTS_LOST. */
    m.p[0x400 + 0x300 + 0x34] |= 0x02;
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(drain(r), 13 - 2);
    st = perch_etl_stats_of(r);
    assert_int_equal(st->errors[PERCH_ETL_R_RECORD_SIZE], 1);
    assert_int_equal(st->error_offset[PERCH_ETL_R_RECORD_SIZE], second);
    assert_int_equal(st->error_record[PERCH_ETL_R_RECORD_SIZE], 0x48 + 0x20);
    assert_int_equal(st->buffers_events_lost, 1);
    perch_etl_destroy(r);
    /* An unknown marker there instead. */
    perch_test_put_u32(m.p + second, 0xC0660000u);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(drain(r), 11);
    assert_int_equal(perch_etl_stats_of(r)->errors[PERCH_ETL_R_RECORD_MARKER], 1);
    assert_int_equal(perch_etl_stats_of(r)->error_offset[PERCH_ETL_R_RECORD_MARKER], second);
    perch_etl_destroy(r);
    /* BufferSize of buffer 2 zeroed: resynchronized by the session buffer size? No: the
     * session size (64 KiB) does not match these 0x100 buffers, so reading stops there but
     * what came before is kept. */
    perch_test_put_u32(m.p + 0x500, 0);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_stats_of(r)->errors[PERCH_ETL_R_BUFFER_HEADER], 1);
    assert_int_equal(perch_etl_stats_of(r)->error_offset[PERCH_ETL_R_BUFFER_HEADER], 0x500);
    assert_int_equal(drain(r), 1 + 3);
    perch_etl_destroy(r);
    free(m.p);
}

static void test_compressed_overrun(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    const perch_etl_stats *st;
    build_two_cpu_image(&m, 8, true);
    /* The first compressed buffer claims fewer decoded bytes than its stream holds. */
    perch_test_put_u32(m.p + 0x400 + 0x30, 0x48 + 16);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(drain(r), 13 - 3);
    st = perch_etl_stats_of(r);
    assert_int_equal(st->errors[PERCH_ETL_R_DECOMPRESS], 1);
    assert_int_equal(st->error_offset[PERCH_ETL_R_DECOMPRESS], 0x400);
    perch_etl_destroy(r);
    /* ... or more than it holds. */
    perch_test_put_u32(m.p + 0x400 + 0x30, 0x48 + 200);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(drain(r), 13 - 3);
    assert_int_equal(perch_etl_stats_of(r)->errors[PERCH_ETL_R_DECOMPRESSED_SIZE], 1);
    perch_etl_destroy(r);
    free(m.p);
}

static void test_memory_cap(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    perch_etl_options o = {sizeof o, 0, 0x180};
    build_two_cpu_image(&m, 8, false);
    /* Room for CPU 0's stream (its largest buffer is the header buffer), not for CPU 1's. */
    assert_int_equal(perch_etl_open_memory(m.p, m.len, &o, &r, NULL), 0);
    assert_true(drain(r) < 13);
    assert_true(perch_etl_stats_of(r)->errors[PERCH_ETL_R_BUFFER_LIMIT] > 0);
    perch_etl_destroy(r);
    free(m.p);
}

static void test_not_an_etl(void **state)
{
    uint8_t junk[0x200];
    perch_etl_reader *r = (perch_etl_reader *)junk;
    perch_etl_open_error d = {0, 0, NULL};
    memset(junk, 0x41, sizeof junk);
    assert_int_equal(perch_etl_open_memory(junk, sizeof junk, NULL, &r, &d), PERCH_EFORMAT);
    assert_ptr_equal(r, (perch_etl_reader *)junk);
    assert_int_equal(d.err, PERCH_EFORMAT);
    assert_non_null(d.what);
    assert_int_equal(perch_etl_open_memory(junk, 0x20, NULL, &r, &d), PERCH_ETRUNC);
    assert_int_equal(d.offset, 0x20);
}

/* Every prefix of a small compressed and uncompressed image: never a crash (ASan checks
 * reads), and a cut file is always reported: open fails or an error is counted. */
static void check_every_cut(const struct img *m)
{
    for (size_t cut = 0; cut <= m->len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        perch_etl_reader *r = NULL;
        perch_etl_open_error d = {0, 0, NULL};
        int err;
        memcpy(copy, m->p, cut);
        err = perch_etl_open_memory(copy, cut, NULL, &r, &d);
        if (err == 0) {
            uint64_t n = drain(r), errors = 0;
            for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++)
                errors += perch_etl_stats_of(r)->errors[e];
            if (cut < m->len && errors == 0 && n == 13)
                fail_msg("cut at %zu went unnoticed", cut);
            if (cut == m->len)
                assert_int_equal(n, 13);
            perch_etl_destroy(r);
        } else {
            assert_true(err == PERCH_ETRUNC || err == PERCH_EFORMAT);
            assert_true(cut < 0x400);
            assert_int_equal(d.err, err);
        }
        free(copy);
    }
}

static void test_truncation_every_byte(void **state)
{
    struct img m;
    build_two_cpu_image(&m, 8, false);
    check_every_cut(&m);
    free(m.p);
    build_two_cpu_image(&m, 4, true);
    check_every_cut(&m);
    free(m.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_header_fields),
        cmocka_unit_test(test_compact_and_perfinfo_32),
        cmocka_unit_test(test_image_load_normalized),
        cmocka_unit_test(test_pmc_and_pebs_extension),
        cmocka_unit_test(test_event_header_and_ext_items),
        cmocka_unit_test(test_classic_and_skipped),
        cmocka_unit_test(test_merge_order_64),
        cmocka_unit_test(test_merge_order_32_compact),
        cmocka_unit_test(test_compressed_buffers),
        cmocka_unit_test(test_damaged_record_and_buffer),
        cmocka_unit_test(test_compressed_overrun),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_not_an_etl),
        cmocka_unit_test(test_truncation_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
