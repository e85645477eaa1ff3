/*
 * Byte-table tests for the PerfInfo decoders: SampledProfile v2 and PmcCounterProf v2 at both
 * pointer sizes, PmcCounterConfig names, the profile-interval events, short payloads and newer
 * versions. Payload bytes were written from docs/events.md, not produced by the decoder.
 */
#include "decode_fixture.h"

struct sample_case {
    uint8_t psize;
    const char *hex;
    uint64_t ip;
    uint32_t tid;
    uint16_t count;
    uint8_t flags, rank;
    bool dpc, isr;
    uint8_t priority;
};

static const struct sample_case samples[] = {
    /* The real-trace example: flags 0x58 = priority 11, not DPC, not ISR. */
    {8, "0330d0ffffffffffc40e000001005800", 0xffffffffffd03003, 3780, 1, 0x58, 0, false, false, 11},
    {8, "3142554100f8ffff0400000002000103", 0xfffff80041554231, 4, 2, 0x01, 3, true, false, 0},
    {4, "78563412e80300000100fa07", 0x12345678, 1000, 1, 0xfa, 7, false, true, 31},
};

static void test_sampled_profile(void **state)
{
    static fixture f;
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        const struct sample_case *c = &samples[i];
        fixture_kernel(&f, PERCH_GROUP_PERFINFO, 46, 2, c->psize, c->hex);
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_SAMPLED_PROFILE);
        assert_int_equal(f.out.kind, PERCH_KIND_SampledProfile);
        assert_int_equal(f.out.pointer_size, c->psize);
        assert_int_equal(f.out.flags, 0);
        const perch_sampled_profile *s = &f.out.sampled_profile;
        assert_int_equal(s->instruction_pointer, c->ip);
        assert_int_equal(s->thread_id, c->tid);
        assert_int_equal(s->count, c->count);
        assert_int_equal(s->flags, c->flags);
        assert_int_equal(s->rank, c->rank);
        assert_int_equal(perch_sampled_profile_dpc(s), c->dpc);
        assert_int_equal(perch_sampled_profile_isr(s), c->isr);
        assert_int_equal(perch_sampled_profile_priority(s), c->priority);
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
        /* A version 3 would be newer: same fields, marked. */
        f.ev.version = 3;
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.flags, PERCH_DECODED_NEWER_VERSION);
        assert_int_equal(f.out.sampled_profile.instruction_pointer, c->ip);
        f.ev.payload_len--;
        fixture_expect_error(&f, PERCH_EVERSION);
    }
}

static void test_pmc_sample(void **state)
{
    static fixture f;
    /* P=8: IP 0x7ff612345678, tid 0x1d4c, ProfileSource 0x19, Reserved 0xbeef. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 47, 2, 8, "78563412f67f00004c1d00001900efbe");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_PMC_SAMPLE);
    assert_int_equal(f.out.kind, PERCH_KIND_PmcCounterProf);
    assert_int_equal(f.out.pmc_sample.instruction_pointer, 0x7ff612345678);
    assert_int_equal(f.out.pmc_sample.thread_id, 0x1d4c);
    assert_int_equal(f.out.pmc_sample.profile_source, 0x19);
    assert_int_equal(f.out.pmc_sample.reserved, 0xbeef);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* P=4: IP 0x00401000, tid 8, ProfileSource 2. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 47, 2, 4,
                   "00104000080000000200"
                   "0000");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.pmc_sample.instruction_pointer, 0x00401000);
    assert_int_equal(f.out.pmc_sample.thread_id, 8);
    assert_int_equal(f.out.pmc_sample.profile_source, 2);
    assert_int_equal(f.out.pmc_sample.reserved, 0);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

static const char pmc_config_hex[] =
    "0300000054006f00740061006c004300790063006c0065007300000049006e007300740072007500630074006900"
    "6f006e00520065007400690072006500640000004200720061006e00630068004d00690073007000720065006400"
    "69006300740069006f006e0073000000";

static void test_pmc_config(void **state)
{
    static fixture f;
    static const char *const names[] = {"TotalCycles", "InstructionRetired",
                                        "BranchMispredictions"};
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 48, 2, 8, pmc_config_hex);
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.type, PERCH_DECODED_PMC_CONFIG);
    assert_int_equal(f.out.pmc_config.counter_count, 3);
    assert_int_equal(f.out.pmc_config.counter_names.count, 3);
    assert_int_equal(f.out.pmc_config.counter_names.len, 104);
    uint32_t pos = 0, n = 0;
    perch_wstr name;
    while (perch_wstr_list_next(&f.out.pmc_config.counter_names, &pos, &name)) {
        assert_true(n < 3);
        assert_wstr(name, names[n]);
        n++;
    }
    assert_int_equal(n, 3);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    /* A count the payload cannot hold is short, reported without scanning. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 48, 2, 8, "ffffff7f0000");
    fixture_expect_error(&f, PERCH_ESHORT);
    assert_int_equal(f.diag.offset, 4);
    assert_int_equal(f.diag.need, 0xfffffffeu);
    /* Zero counters: an empty list. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 48, 2, 8, "00000000");
    assert_int_equal(fixture_decode(&f), 0);
    pos = 0;
    assert_false(perch_wstr_list_next(&f.out.pmc_config.counter_names, &pos, &name));
}

static void test_profile_interval(void **state)
{
    static fixture f;
    /* CollectionStart v3 from the real trace: Source 0, 10000 / 10000, "Timer". */
    for (uint8_t op = 0x49; op <= 0x4A; op++) {
        fixture_kernel(&f, PERCH_GROUP_PERFINFO, op, 3, 8,
                       "00000000102700001027000054006900"
                       "6d00650072000000");
        assert_int_equal(fixture_decode(&f), 0);
        assert_int_equal(f.out.type, PERCH_DECODED_PROFILE_INTERVAL);
        assert_int_equal(f.out.profile_interval.source, 0);
        assert_int_equal(f.out.profile_interval.new_interval, 10000);
        assert_int_equal(f.out.profile_interval.old_interval, 10000);
        assert_wstr(f.out.profile_interval.source_name, "Timer");
        fixture_expect_prefixes_short(&f, PERCH_ESHORT);
    }
    /* SetInterval v2: Source 1, 1221 -> 10000, no name. */
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 0x48, 2, 4, "01000000102700000c050000");
    assert_int_equal(fixture_decode(&f), 0);
    assert_int_equal(f.out.profile_interval.source, 1);
    assert_int_equal(f.out.profile_interval.new_interval, 10000);
    assert_int_equal(f.out.profile_interval.old_interval, 0x050c);
    assert_null(f.out.profile_interval.source_name.data);
    fixture_expect_prefixes_short(&f, PERCH_ESHORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_profile),
        cmocka_unit_test(test_pmc_sample),
        cmocka_unit_test(test_pmc_config),
        cmocka_unit_test(test_profile_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
