/*
 * Tests for the configuration table (src/core/config/config.c): every default parses and lies
 * in its own range, every key round-trips through its canonical text, refusals name the key,
 * the value and the range and leave the configuration unchanged, each type's parser accepts
 * and refuses what docs/service.md says, and that page's table lists every key with its
 * default and range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/config.h"
#include "perch/error.h"

static const perch_config_key *key(const char *name)
{
    const perch_config_key *k = perch_config_find(name);
    assert_non_null(k);
    return k;
}

static void test_defaults_parse_and_round_trip(void **state)
{
    perch_config c, again;
    char text[PERCH_CONFIG_PATH_MAX], why[PERCH_CONFIG_WHY_MAX];
    perch_config_defaults(&c);
    assert_true(perch_config_key_count() >= 20);
    for (size_t i = 0; i < perch_config_key_count(); i++) {
        const perch_config_key *k = perch_config_key_at(i);
        memset(&again, 0xa5, sizeof again);
        /* the default is valid text for its key, so perch_config_defaults stored it */
        assert_int_equal(perch_config_set(&again, k, k->def, why, sizeof why), 0);
        assert_int_equal(perch_config_format(&c, k, text, sizeof text), 0);
        assert_int_equal(perch_config_set(&again, k, text, why, sizeof why), 0);
        assert_memory_equal((char *)&again + k->offset, (char *)&c + k->offset,
                            perch_config_is_text(k) ? strlen((char *)&c + k->offset) + 1 : k->size);
        if (perch_config_is_number(k)) {
            uint32_t v = perch_config_number(&c, k);
            assert_true(v >= k->min && v <= k->max);
        }
        assert_true(strlen(k->help) > 10);
    }
    assert_null(perch_config_key_at(perch_config_key_count()));
}

static void test_documented_defaults(void **state)
{
    perch_config c;
    perch_config_defaults(&c);
    assert_string_equal(c.capture_dir, "%ProgramData%\\Perch\\captures");
    assert_int_equal(c.sample_interval_us, 1000);
    assert_int_equal(key("SampleIntervalUs")->min, 125);
    assert_int_equal(c.recorder_seconds, 60);
    assert_int_equal(c.recorder_mb, 256);
    assert_int_equal(c.session, PERCH_SESSION_AUTO);
    assert_int_equal(c.event_groups, 0x3f);
    assert_int_equal(c.stack_events, 0x0f);
    assert_string_equal(c.pmc_sources, "");
    assert_int_equal(c.lbr, 0);
    assert_int_equal(c.lbr_events, PERCH_CFG_STACK_PROFILE);
    assert_int_equal(c.buffer_size_kb, 64);
    assert_int_equal(key("BufferSizeKb")->max, 1024);
    assert_int_equal(c.buffer_count, 0);
    assert_int_equal(c.stop_drain_seconds, 10);
    assert_int_equal(key("StopDrainSeconds")->min, 1);
}

static void test_find_is_case_insensitive(void **state)
{
    assert_ptr_equal(perch_config_find("sampleintervalus"), key("SampleIntervalUs"));
    assert_null(perch_config_find("SampleInterval"));
    assert_null(perch_config_find("SampleIntervalUsX"));
    assert_null(perch_config_find(""));
    assert_null(perch_config_find(NULL));
}

static void test_number_range_refusal(void **state)
{
    perch_config c, before;
    char why[PERCH_CONFIG_WHY_MAX];
    perch_config_defaults(&c);
    before = c;
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "50", why, sizeof why),
                     PERCH_ERANGE);
    assert_memory_equal(&c, &before, sizeof c);
    assert_non_null(strstr(why, "SampleIntervalUs"));
    assert_non_null(strstr(why, "'50'"));
    assert_non_null(strstr(why, "125 to 1000000 microseconds"));
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "1000001", why, sizeof why),
                     PERCH_ERANGE);
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "99999999999", why, sizeof why),
                     PERCH_ERANGE);
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "12a", why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "not a number"));
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "-5", why, sizeof why),
                     PERCH_EINVAL);
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", "", why, sizeof why),
                     PERCH_EINVAL);
    assert_memory_equal(&c, &before, sizeof c);
    assert_int_equal(perch_config_set_named(&c, "SampleIntervalUs", " 125 ", why, sizeof why), 0);
    assert_int_equal(c.sample_interval_us, 125);
    assert_int_equal(perch_config_set_named(&c, "QueueMb", "0x10", why, sizeof why), 0);
    assert_int_equal(c.queue_mb, 16);
}

static void test_number_from_registry(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_number(&c, key("FlightRecorderSeconds"), 0, why, sizeof why),
                     0);
    assert_int_equal(c.recorder_seconds, 0);
    assert_int_equal(
        perch_config_set_number(&c, key("FlightRecorderSeconds"), 3601, why, sizeof why),
        PERCH_ERANGE);
    assert_non_null(strstr(why, "FlightRecorderSeconds: '3601'"));
    assert_int_equal(perch_config_set_number(&c, key("Lbr"), 2, why, sizeof why), PERCH_EINVAL);
    assert_int_equal(perch_config_set_number(&c, key("Lbr"), 1, why, sizeof why), 0);
    assert_int_equal(c.lbr, 1);
    assert_int_equal(perch_config_set_number(&c, key("Session"), 1, why, sizeof why), PERCH_EINVAL);
}

static void test_bool_and_enum(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], text[32];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_named(&c, "Lbr", "ON", why, sizeof why), 0);
    assert_int_equal(c.lbr, 1);
    assert_int_equal(perch_config_set_named(&c, "lbr", "no", why, sizeof why), 0);
    assert_int_equal(c.lbr, 0);
    assert_int_equal(perch_config_set_named(&c, "Lbr", "maybe", why, sizeof why), PERCH_EINVAL);
    assert_non_null(strstr(why, "on or off"));
    assert_int_equal(perch_config_set_named(&c, "Session", "Private", why, sizeof why), 0);
    assert_int_equal(c.session, PERCH_SESSION_PRIVATE);
    assert_int_equal(perch_config_format(&c, key("Session"), text, sizeof text), 0);
    assert_string_equal(text, "private");
    assert_int_equal(perch_config_set_named(&c, "Session", "kernel", why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "one of auto, private"));
}

static void test_flags(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], text[128];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_named(&c, "EventGroups", "cswitch, Process", why, sizeof why),
                     0);
    assert_int_equal(c.event_groups, PERCH_CFG_GROUP_CSWITCH | PERCH_CFG_GROUP_PROCESS);
    assert_int_equal(perch_config_format(&c, key("EventGroups"), text, sizeof text), 0);
    assert_string_equal(text, "process,cswitch");
    assert_int_equal(perch_config_set_named(&c, "EventGroups", "none", why, sizeof why),
                     PERCH_ERANGE);
    assert_non_null(strstr(why, "is empty"));
    assert_int_equal(perch_config_set_named(&c, "EventGroups", "process,disk", why, sizeof why),
                     PERCH_EINVAL);
    assert_int_equal(c.event_groups, PERCH_CFG_GROUP_CSWITCH | PERCH_CFG_GROUP_PROCESS);
    assert_int_equal(perch_config_set_named(&c, "StackEvents", "none", why, sizeof why), 0);
    assert_int_equal(c.stack_events, 0);
    assert_int_equal(perch_config_format(&c, key("StackEvents"), text, sizeof text), 0);
    assert_string_equal(text, "none");
    assert_int_equal(
        perch_config_set_named(&c, "StackEvents", "readythread,profile", why, sizeof why), 0);
    assert_int_equal(c.stack_events, PERCH_CFG_STACK_PROFILE | PERCH_CFG_STACK_READYTHREAD);
}

static void test_names(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], names[PERCH_CONFIG_MAX_NAMES][PERCH_CONFIG_NAME_LEN];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_named(&c, "PmcSources",
                                            " TotalIssues , BranchMispredictions,totalissues", why,
                                            sizeof why),
                     0);
    assert_string_equal(c.pmc_sources, "TotalIssues,BranchMispredictions");
    assert_int_equal(perch_config_split_names(c.pmc_sources, names, PERCH_CONFIG_MAX_NAMES), 2);
    assert_string_equal(names[1], "BranchMispredictions");
    assert_int_equal(perch_config_set_named(&c, "PmcSources", "a b", why, sizeof why),
                     PERCH_EINVAL);
    assert_int_equal(perch_config_set_named(&c, "PmcSources", "A,,B", why, sizeof why),
                     PERCH_EINVAL);
    assert_int_equal(
        perch_config_set_named(&c, "CSwitchCounters", "a,b,c,d,e,f,g,h,i", why, sizeof why),
        PERCH_ERANGE);
    assert_non_null(strstr(why, "too many names"));
    /* "none" is the empty list, so it is no name inside one: it would print as "none" and
     * read back as the empty list (found by fuzz_config) */
    assert_int_equal(perch_config_set_named(&c, "CSwitchCounters", "none,", why, sizeof why),
                     PERCH_EINVAL);
    assert_int_equal(perch_config_set_named(&c, "PmcSources", "A, NONE", why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "not a list of names"));
    assert_string_equal(c.pmc_sources, "TotalIssues,BranchMispredictions");
    assert_int_equal(perch_config_set_named(&c, "PmcSources", "none", why, sizeof why), 0);
    assert_string_equal(c.pmc_sources, "");
    assert_int_equal(perch_config_split_names(c.pmc_sources, names, PERCH_CONFIG_MAX_NAMES), 0);
}

static void test_paths(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], long_path[PERCH_CONFIG_PATH_MAX + 8];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_named(&c, "CaptureDirectory", "D:\\traces", why, sizeof why),
                     0);
    assert_string_equal(c.capture_dir, "D:\\traces");
    assert_int_equal(
        perch_config_set_named(&c, "CaptureDirectory", "\\\\srv\\share", why, sizeof why), 0);
    assert_int_equal(perch_config_set_named(&c, "DataDirectory", "%TEMP%\\p", why, sizeof why), 0);
    assert_int_equal(perch_config_set_named(&c, "DataDirectory", "traces", why, sizeof why),
                     PERCH_EINVAL);
    assert_non_null(strstr(why, "not an absolute directory"));
    assert_int_equal(perch_config_set_named(&c, "DataDirectory", "C:\\a|b", why, sizeof why),
                     PERCH_EINVAL);
    memset(long_path, 'a', sizeof long_path);
    memcpy(long_path, "C:\\", 3);
    long_path[sizeof long_path - 1] = '\0';
    assert_int_equal(perch_config_set_named(&c, "DataDirectory", long_path, why, sizeof why),
                     PERCH_ERANGE);
    assert_non_null(strstr(why, "too long"));
    assert_string_equal(c.data_dir, "%TEMP%\\p");
}

static void test_mask_and_unknown_key(void **state)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], text[16];
    perch_config_defaults(&c);
    assert_int_equal(perch_config_set_named(&c, "LbrFilters", "0x21", why, sizeof why), 0);
    assert_int_equal(perch_config_format(&c, key("LbrFilters"), text, sizeof text), 0);
    assert_string_equal(text, "0x21");
    assert_int_equal(perch_config_set_named(&c, "LbrFilters", "0x400", why, sizeof why),
                     PERCH_ERANGE);
    assert_non_null(strstr(why, "0x0 to 0x3ff"));
    assert_int_equal(perch_config_set_named(&c, "Frobnicate", "1", why, sizeof why), PERCH_ENOENT);
    assert_non_null(strstr(why, "'Frobnicate' is not a configuration key"));
    assert_int_equal(perch_config_format(&c, key("LbrFilters"), text, 3), PERCH_ERANGE);
}

/* SymbolPath takes what _NT_SYMBOL_PATH takes (absolute folders, store forms, URLs), refuses
 * a relative entry with the sentence of every key, and shows "none" when empty. */
static void test_symbol_path(void **state)
{
    static const char *const good[] = {
        "C:\\sym", "srv*C:\\sym*https://msdl.microsoft.com/download/symbols",
        "C:\\a;;cache*D:\\c;SRV*\\\\server\\share*https://x", "%SYMBOLS%\\local;https://x/y"};
    static const char *const bad[] = {"symbols", "C:\\a;relative", "C:\\a|b", "srv*"};
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], text[PERCH_CONFIG_PATH_MAX];
    const perch_config_key *k = key("SymbolPath");
    (void)state;
    perch_config_defaults(&c);
    assert_string_equal(c.symbol_path, "");
    assert_int_equal(perch_config_format(&c, k, text, sizeof text), 0);
    assert_string_equal(text, "none");
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(perch_config_set(&c, k, good[i], why, sizeof why), 0);
        assert_string_equal(c.symbol_path, good[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(perch_config_set(&c, k, bad[i], why, sizeof why), PERCH_EINVAL);
        assert_non_null(strstr(why, "SymbolPath: '"));
        assert_non_null(strstr(why, "is not a symbol path; allowed: entries separated by ;"));
        assert_string_equal(c.symbol_path, good[3]); /* unchanged */
    }
    assert_int_equal(perch_config_set(&c, k, " none ", why, sizeof why), 0);
    assert_string_equal(c.symbol_path, "");
}

/* docs/service.md has a row "| `Key` | `default` | range ... |" for every key. */
static void test_docs_list_every_key(void **state)
{
    char path[1024], row[PERCH_CONFIG_PATH_MAX + 400], def[PERCH_CONFIG_PATH_MAX], range[256];
    perch_config c;
    snprintf(path, sizeof path, "%s/service.md", PERCH_DOCS_DIR);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char doc[1 << 17];
    doc[fread(doc, 1, sizeof doc - 1, f)] = '\0';
    fclose(f);
    perch_config_defaults(&c);
    for (size_t i = 0; i < perch_config_key_count(); i++) {
        const perch_config_key *k = perch_config_key_at(i);
        assert_int_equal(perch_config_format(&c, k, def, sizeof def), 0);
        perch_config_describe_range(k, range, sizeof range);
        if (k->type == PERCH_CONFIG_PATH)
            *strstr(range, " shorter than") = '\0';
        snprintf(row, sizeof row, "| `%s` | `%s` | %s |", k->name, def, range);
        if (strstr(doc, row) == NULL)
            fail_msg("docs/service.md lacks the row starting \"%s\"", row);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_parse_and_round_trip),
        cmocka_unit_test(test_documented_defaults),
        cmocka_unit_test(test_find_is_case_insensitive),
        cmocka_unit_test(test_number_range_refusal),
        cmocka_unit_test(test_number_from_registry),
        cmocka_unit_test(test_bool_and_enum),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_mask_and_unknown_key),
        cmocka_unit_test(test_symbol_path),
        cmocka_unit_test(test_docs_list_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
