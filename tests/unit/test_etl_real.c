/*
 * The .etl reader against the real traces in ../shared/data/etl, checked with the
 * independent reference decodes in ../shared/data/reference:
 * - model.json: logfile header fields and record counts by kind;
 * - *.ref.jsonl: every TRACE_LOGFILE_HEADER field, record counts per (hook, version, header
 *   type) and per non-kernel header type, and the first events of each kind (raw bytes,
 *   timestamp, cpu, header tid/pid, FILETIME).
 * Also: the merged stream is in time order, and every file parses with zero errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/kind.h"
#include "testdata.h"

static const char *const all_files[] = {
    "airbus_AMSITrace.etl",         "airbus_ShutdownPerfDiagLogger.etl",
    "airbus_lxcore_kernel.etl",     "perfview_SelfDescribingSingleEvent.etl",
    "perfview_net.4.5.2.x64.etl",   "perfview_primitive-types.etl",
    "perfview_smallEtlFile.etl",
};

/* Header type byte of the reference (17, 2, ...) -> our header kind. */
static int header_kind_of_type(unsigned t)
{
    switch (t) {
    case 1: case 2: return PERCH_HEADER_SYSTEM;
    case 3: case 4: return PERCH_HEADER_COMPACT;
    case 16: case 17: return PERCH_HEADER_PERFINFO;
    case 10: case 20: return PERCH_HEADER_FULL;
    case 11: case 21: return PERCH_HEADER_INSTANCE;
    case 18: case 19: return PERCH_HEADER_EVENT;
    default: return -1;
    }
}

static perch_etl_reader *open_data(const char *name, uint8_t **bytes, size_t *len)
{
    char rel[256];
    perch_etl_reader *r = NULL;
    snprintf(rel, sizeof rel, "etl/%s", name);
    *bytes = perch_test_read_file(perch_test_require_data(rel), len);
    assert_int_equal(perch_etl_open_memory(*bytes, *len, NULL, &r, NULL), 0);
    return r;
}

static char *read_text(const char *rel)
{
    size_t len;
    uint8_t *t = perch_test_read_file(perch_test_require_data(rel), &len);
    t[len] = 0;
    return (char *)t;
}

/* ---- model.json: header + by_kind ------------------------------------------------------ */

/* The number after "key": inside text[from, to), or fails. */
static uint64_t json_number(const char *from, const char *to, const char *key)
{
    char pat[96];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(from, pat);
    if (p == NULL || p >= to)
        fail_msg("key %s missing", key);
    return strtoull(p + strlen(pat), NULL, 10);
}

static bool json_has(const char *from, const char *to, const char *key)
{
    char pat[96];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(from, pat);
    return p != NULL && p < to;
}

static void check_model(const char *name)
{
    char *model = read_text("reference/model.json"), pat[128];
    const char *obj, *kinds, *hdr, *end;
    uint8_t *bytes;
    size_t len;
    perch_etl_reader *r = open_data(name, &bytes, &len);
    const perch_etl_header *h = perch_etl_header_of(r);
    const perch_etl_stats *st;
    perch_event ev;
    snprintf(pat, sizeof pat, "\"%s\": {", name);
    obj = strstr(model, pat);
    assert_non_null(obj);
    kinds = strstr(obj, "\"by_kind\"");
    hdr = strstr(obj, "\"header\"");
    end = strstr(hdr, "}");
    while (perch_etl_next(r, &ev) == 0)
        ;
    st = perch_etl_stats_of(r);
    /* model.json names every kind but PmcCounterConfig; a missing name must have count 0. */
    for (int k = 0; k < PERCH_KIND_COUNT; k++) {
        const char *kn = perch_kind_name((perch_kind)k);
        uint64_t want = json_has(kinds, hdr, kn) ? json_number(kinds, hdr, kn) : 0;
        if (k != PERCH_KIND_PmcCounterConfig)
            assert_true(json_has(kinds, hdr, kn));
        assert_int_equal(st->by_kind[k], want);
    }
    assert_int_equal(h->pointer_size, json_number(hdr, end, "pointer_size"));
    assert_int_equal(h->perf_freq, json_number(hdr, end, "perf_freq"));
    assert_int_equal(h->start_time, json_number(hdr, end, "start_time"));
    assert_int_equal(h->end_time, json_number(hdr, end, "end_time"));
    assert_int_equal(h->cpus, json_number(hdr, end, "cpus"));
    assert_int_equal(h->events_lost, json_number(hdr, end, "events_lost"));
    assert_int_equal(h->buffers_lost, json_number(hdr, end, "buffers_lost"));
    assert_int_equal(h->build, json_number(hdr, end, "build"));
    assert_int_equal(h->clock_type, json_number(hdr, end, "clock_type"));
    perch_etl_destroy(r);
    free(bytes);
    free(model);
}

static void test_model_x64(void **state)
{
    check_model("perfview_net.4.5.2.x64.etl");
}

static void test_model_airbus(void **state)
{
    check_model("airbus_ShutdownPerfDiagLogger.etl");
}

/* ---- *.ref.jsonl ------------------------------------------------------------------------ */

/* "#   Key = value" from the reference comments. */
static const char *ref_field(const char *ref, const char *key)
{
    char pat[96];
    const char *p;
    snprintf(pat, sizeof pat, "#   %s = ", key);
    p = strstr(ref, pat);
    if (p == NULL)
        fail_msg("reference has no %s", key);
    return p + strlen(pat);
}

static uint64_t ref_u64(const char *ref, const char *key)
{
    const char *v = ref_field(ref, key);
    return (uint64_t)strtoll(v, NULL, 0);
}

static void ref_string_equal(const char *ref, const char *key, const char *ours)
{
    const char *v = ref_field(ref, key);
    size_t n = strcspn(v, "\n");
    assert_int_equal(strlen(ours), n);
    assert_memory_equal(ours, v, n);
}

static void check_ref_header(const char *ref, const perch_etl_header *h)
{
    assert_int_equal(h->buffer_size, ref_u64(ref, "BufferSize"));
    assert_int_equal(h->version, ref_u64(ref, "Version"));
    assert_int_equal(h->build, ref_u64(ref, "ProviderVersion"));
    assert_int_equal(h->cpus, ref_u64(ref, "NumberOfProcessors"));
    assert_int_equal(h->end_time, ref_u64(ref, "EndTime"));
    assert_int_equal(h->timer_resolution, ref_u64(ref, "TimerResolution"));
    assert_int_equal(h->max_file_size, ref_u64(ref, "MaximumFileSize"));
    assert_int_equal(h->log_file_mode, ref_u64(ref, "LogFileMode"));
    assert_int_equal(h->buffers_written, ref_u64(ref, "BuffersWritten"));
    assert_int_equal(h->pointer_size, ref_u64(ref, "PointerSize"));
    assert_int_equal(h->events_lost, ref_u64(ref, "EventsLost"));
    assert_int_equal(h->cpu_speed_mhz, ref_u64(ref, "CpuSpeedInMHz"));
    assert_int_equal(h->tz_bias, (int32_t)ref_u64(ref, "TimeZoneBias"));
    assert_int_equal(h->boot_time, ref_u64(ref, "BootTime"));
    assert_int_equal(h->perf_freq, ref_u64(ref, "PerfFreq"));
    assert_int_equal(h->start_time, ref_u64(ref, "StartTime"));
    assert_int_equal(h->clock_type, ref_u64(ref, "ReservedFlags"));
    assert_int_equal(h->buffers_lost, ref_u64(ref, "BuffersLost"));
    assert_int_equal(h->ref_raw, ref_u64(ref, "HeaderEvent.SystemTime"));
    ref_string_equal(ref, "LoggerNameStr", h->logger_name);
    ref_string_equal(ref, "LogFileNameStr", h->log_file_name);
}

/* Counts per (hook, version, header kind) of kernel records; per header kind otherwise. */
struct tally {
    uint32_t kernel[65536][2]; /* [hook][perfinfo? 1 : 0] for the version seen */
    uint8_t version[65536];
    uint64_t other[8];
};

static void tally_event(struct tally *t, const perch_event *ev, uint32_t header_type)
{
    if (ev->group == PERCH_GROUP_NONE) {
        t->other[ev->header_kind & 7]++;
        return;
    }
    (void)header_type;
    t->kernel[ev->hook][ev->header_kind == PERCH_HEADER_PERFINFO]++;
    t->version[ev->hook] = ev->version;
}

/* "#   Name hook=0x0f2e v2 htype=17  79528" and "#   non-kernel header type 18  1" lines. */
static void check_ref_counts(const char *ref, const struct tally *t)
{
    const char *p = strstr(ref, "# record counts");
    unsigned lines = 0;
    assert_non_null(p);
    while ((p = strstr(p + 1, "\n#   ")) != NULL) {
        unsigned hook, ver, htype;
        unsigned long long n;
        char name[64];
        if (sscanf(p + 5, "%63s hook=0x%x v%u htype=%u %llu", name, &hook, &ver, &htype, &n) == 5) {
            int kind = header_kind_of_type(htype);
            assert_true(kind > 0);
            assert_int_equal(t->kernel[hook][kind == PERCH_HEADER_PERFINFO], n);
            assert_int_equal(t->version[hook], ver);
            lines++;
        } else if (sscanf(p + 5, "non-kernel header type %u %llu", &htype, &n) == 2) {
            uint64_t ours = 0;
            /* 32- and 64-bit forms of one kind share our counter: compare the sum. */
            ours = t->other[header_kind_of_type(htype)];
            assert_true(ours >= n);
            lines++;
        }
    }
    assert_true(lines > 0);
}

struct ref_event {
    uint64_t buffer, record, ts, filetime;
    unsigned cpu, hook, version, htype, size;
    long long tid, pid; /* -1 for null */
    uint8_t raw[4096];
};

static long long json_int_or_null(const char *line, const char *key)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(line, pat);
    assert_non_null(p);
    p += strlen(pat);
    return strncmp(p, "null", 4) == 0 ? -1 : strtoll(p, NULL, 0);
}

static void parse_ref_event(const char *line, struct ref_event *e)
{
    const char *hex = strstr(line, "\"raw_record_hex\": \"");
    char hook[16];
    const char *hp = strstr(line, "\"hook\": \"");
    assert_non_null(hex);
    assert_non_null(hp);
    memcpy(hook, hp + 9, 6);
    hook[6] = 0;
    e->hook = (unsigned)strtoul(hook, NULL, 16);
    e->buffer = (uint64_t)json_int_or_null(line, "file_offset_of_buffer");
    e->record = 0x48 + (uint64_t)json_int_or_null(line, "record_offset_in_payload");
    e->ts = (uint64_t)json_int_or_null(line, "timestamp_raw");
    e->filetime = (uint64_t)json_int_or_null(line, "filetime");
    e->cpu = (unsigned)json_int_or_null(line, "cpu");
    e->version = (unsigned)json_int_or_null(line, "version");
    e->htype = (unsigned)json_int_or_null(line, "header_type");
    e->size = (unsigned)json_int_or_null(line, "size");
    e->tid = json_int_or_null(line, "header_tid");
    e->pid = json_int_or_null(line, "header_pid");
    hex += strlen("\"raw_record_hex\": \"");
    {
        char buf[8300];
        size_t n = strcspn(hex, "\"");
        assert_true(n < sizeof buf);
        memcpy(buf, hex, n);
        buf[n] = 0;
        assert_int_equal(perch_test_hex(buf, e->raw, sizeof e->raw), (long)e->size);
    }
}

static void check_ref_event(const struct ref_event *e, const perch_event *ev,
                            const perch_etl_header *h)
{
    assert_int_equal(ev->timestamp, e->ts);
    assert_int_equal(ev->cpu, e->cpu);
    assert_int_equal(ev->hook, e->hook);
    assert_int_equal(ev->version, e->version);
    assert_int_equal(ev->header_kind, header_kind_of_type(e->htype));
    assert_int_equal(perch_etl_filetime(h, ev->timestamp), e->filetime);
    if (e->tid < 0) {
        assert_false(ev->flags & PERCH_EVENT_HAS_TID);
        assert_int_equal(ev->tid, UINT32_MAX);
        assert_int_equal(ev->pid, UINT32_MAX);
    } else {
        assert_true(ev->flags & PERCH_EVENT_HAS_TID);
        assert_int_equal(ev->tid, e->tid);
        assert_int_equal(ev->pid, e->pid);
    }
    assert_true(ev->payload_len <= e->size);
    assert_memory_equal(ev->payload, e->raw + e->size - ev->payload_len, ev->payload_len);
    assert_int_equal(ev->pmc_count, 0);
    if (ev->hook == 0x030A) {
        assert_int_equal(ev->group, PERCH_GROUP_IMAGE);
        assert_int_equal(ev->opcode, 10);
    } else {
        assert_int_equal(ev->group, ev->hook >> 8);
        assert_int_equal(ev->opcode, ev->hook & 0xff);
    }
    assert_true(perch_guid_equal(&ev->provider, perch_kernel_group_guid(ev->group)));
}

static void check_reference_file(const char *etl, const char *refname)
{
    char rel[256];
    char *ref;
    uint8_t *bytes;
    size_t len, nref = 0, matched = 0;
    struct ref_event *refs = calloc(256, sizeof *refs);
    struct tally *t = calloc(1, sizeof *t);
    perch_etl_reader *r;
    perch_event ev;
    snprintf(rel, sizeof rel, "reference/%s", refname);
    ref = read_text(rel);
    r = open_data(etl, &bytes, &len);
    assert_non_null(refs);
    assert_non_null(t);
    check_ref_header(ref, perch_etl_header_of(r));
    for (char *line = strtok(strstr(ref, "\n{"), "\n"); line != NULL; line = strtok(NULL, "\n"))
        if (line[0] == '{' && nref < 256)
            parse_ref_event(line, &refs[nref++]);
    /* strtok cut the comments' lines: re-read the reference for the counts below. */
    free(ref);
    ref = read_text(rel);
    assert_true(nref > 0);
    while (perch_etl_next(r, &ev) == 0) {
        perch_etl_position pos = perch_etl_last_position(r);
        tally_event(t, &ev, 0);
        for (size_t i = 0; i < nref; i++)
            if (refs[i].buffer == pos.buffer && refs[i].record == pos.record) {
                check_ref_event(&refs[i], &ev, perch_etl_header_of(r));
                matched++;
            }
    }
    assert_int_equal(matched, nref);
    check_ref_counts(ref, t);
    perch_etl_destroy(r);
    free(bytes);
    free(ref);
    free(refs);
    free(t);
}

static void test_reference_x64(void **state)
{
    check_reference_file("perfview_net.4.5.2.x64.etl", "perfview_net.4.5.2.x64.ref.jsonl");
}

static void test_reference_airbus(void **state)
{
    check_reference_file("airbus_ShutdownPerfDiagLogger.etl",
                         "airbus_ShutdownPerfDiagLogger.ref.jsonl");
}

static void test_reference_small_header(void **state)
{
    char *ref = read_text("reference/perfview_smallEtlFile.ref.jsonl");
    uint8_t *bytes;
    size_t len;
    perch_etl_reader *r = open_data("perfview_smallEtlFile.etl", &bytes, &len);
    check_ref_header(ref, perch_etl_header_of(r));
    assert_int_equal(perch_etl_header_of(r)->pointer_size, 4);
    perch_etl_destroy(r);
    free(bytes);
    free(ref);
}

/* ---- properties over every file ------------------------------------------------------ */

static void test_every_file_ordered_and_clean(void **state)
{
    for (size_t i = 0; i < sizeof all_files / sizeof all_files[0]; i++) {
        uint8_t *bytes;
        size_t len;
        perch_etl_reader *r = open_data(all_files[i], &bytes, &len);
        const perch_etl_stats *st;
        perch_event ev;
        uint64_t prev = 0, n = 0, kinds = 0;
        while (perch_etl_next(r, &ev) == 0) {
            if (ev.timestamp < prev)
                fail_msg("%s: record %llu goes back in time", all_files[i], (unsigned long long)n);
            prev = ev.timestamp;
            assert_true(ev.pointer_size == 4 || ev.pointer_size == 8);
            assert_true(ev.payload_len == 0 || ev.payload != NULL);
            if (ev.group == PERCH_GROUP_NONE)
                assert_int_equal(ev.hook, 0);
            n++;
        }
        st = perch_etl_stats_of(r);
        for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++)
            if (st->errors[e] != 0)
                fail_msg("%s: %llu %s errors", all_files[i], (unsigned long long)st->errors[e],
                         perch_etl_reason_name((perch_etl_reason)e));
        for (int k = 0; k < PERCH_KIND_COUNT; k++)
            kinds += st->by_kind[k];
        assert_int_equal(st->records, n);
        assert_int_equal(kinds, n);
        assert_true(n >= 2);
        perch_etl_destroy(r);
        free(bytes);
    }
}

static void test_compressed_and_plain_paths(void **state)
{
    uint8_t *bytes;
    size_t len;
    perch_etl_reader *r = open_data("perfview_net.4.5.2.x64.etl", &bytes, &len);
    perch_event ev;
    assert_int_equal(perch_etl_stats_of(r)->compressed_buffers, 359);
    assert_int_equal(perch_etl_stats_of(r)->buffers, 360);
    while (perch_etl_next(r, &ev) == 0)
        ;
    assert_int_equal(perch_etl_stats_of(r)->records, 179474);
    perch_etl_destroy(r);
    free(bytes);
    r = open_data("airbus_ShutdownPerfDiagLogger.etl", &bytes, &len);
    assert_int_equal(perch_etl_stats_of(r)->compressed_buffers, 0);
    assert_int_equal(perch_etl_stats_of(r)->buffers, 49);
    perch_etl_destroy(r);
    free(bytes);
}

/* Non-kernel records keep their own GUID and group NONE; EVENT_HEADER ids are filled. */
static void test_event_header_files(void **state)
{
    static const char *const names[] = {"airbus_AMSITrace.etl", "airbus_lxcore_kernel.etl",
                                        "perfview_primitive-types.etl",
                                        "perfview_SelfDescribingSingleEvent.etl"};
    for (size_t i = 0; i < 4; i++) {
        uint8_t *bytes;
        size_t len;
        perch_etl_reader *r = open_data(names[i], &bytes, &len);
        perch_event ev;
        uint64_t event_headers = 0;
        while (perch_etl_next(r, &ev) == 0) {
            if (ev.header_kind != PERCH_HEADER_EVENT)
                continue;
            event_headers++;
            assert_int_equal(ev.group, PERCH_GROUP_NONE);
            assert_true(ev.flags & PERCH_EVENT_HAS_TID);
            assert_int_equal(perch_kernel_group_of(&ev.provider), PERCH_GROUP_NONE);
            assert_true(ev.ext_len == 0 || ev.ext != NULL);
        }
        assert_true(event_headers > 0);
        assert_int_equal(perch_etl_stats_of(r)->by_kind[PERCH_KIND_NON_KERNEL],
                         perch_etl_stats_of(r)->records -
                             perch_etl_stats_of(r)->by_kind[PERCH_KIND_OTHER_KERNEL]);
        perch_etl_destroy(r);
        free(bytes);
    }
}

/* The file backend gives the same stream as memory. */
static void test_file_matches_memory(void **state)
{
    const char *path = perch_test_require_data("etl/airbus_ShutdownPerfDiagLogger.etl");
    perch_etl_reader *a = NULL, *b = NULL;
    perch_event ea, eb;
    uint8_t *bytes;
    size_t len;
    uint64_t n = 0;
    bytes = perch_test_read_file(path, &len);
    assert_int_equal(perch_etl_open_file(path, NULL, &a, NULL), 0);
    assert_int_equal(perch_etl_open_memory(bytes, len, NULL, &b, NULL), 0);
    for (;;) {
        int ra = perch_etl_next(a, &ea), rb = perch_etl_next(b, &eb);
        assert_int_equal(ra, rb);
        if (ra != 0)
            break;
        assert_int_equal(ea.timestamp, eb.timestamp);
        assert_int_equal(ea.payload_len, eb.payload_len);
        assert_memory_equal(ea.payload, eb.payload, ea.payload_len);
        n++;
    }
    assert_int_equal(n, 17078);
    perch_etl_destroy(a);
    perch_etl_destroy(b);
    free(bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_x64),
        cmocka_unit_test(test_model_airbus),
        cmocka_unit_test(test_reference_x64),
        cmocka_unit_test(test_reference_airbus),
        cmocka_unit_test(test_reference_small_header),
        cmocka_unit_test(test_every_file_ordered_and_clean),
        cmocka_unit_test(test_compressed_and_plain_paths),
        cmocka_unit_test(test_event_header_files),
        cmocka_unit_test(test_file_matches_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
