/*
 * Tests for perch_decoded_write_json: the exact "fields" text for representative events
 * (field names, hex addresses, signed values, stacks, SIDs, converted and replaced strings,
 * PMC values, version-dependent fields) and a file name longer than the stack buffer.
 */
#include "decode_fixture.h"
#include "perch/json.h"

/* Decodes f and renders {"fields":...} into t. */
static void render(fixture *f, text_sink *t)
{
    static perch_json w;
    assert_int_equal(fixture_decode(f), 0);
    t->len = 0;
    t->text[0] = 0;
    perch_json_init(&w, text_sink_write, t);
    perch_json_begin_object(&w);
    assert_int_equal(perch_decoded_write_json(&w, &f->out), 0);
    perch_json_end_object(&w);
    assert_int_equal(perch_json_flush(&w), 0);
}

static void test_sample_and_stack(void **state)
{
    static fixture f;
    static text_sink t;
    fixture_kernel(&f, PERCH_GROUP_PERFINFO, 46, 2, 8, "0330d0ffffffffffc40e000001005800");
    render(&f, &t);
    assert_string_equal(t.text, "{\"fields\":{\"instruction_pointer\":\"0xffffffffffd03003\","
                                "\"thread_id\":3780,\"count\":1,\"flags\":88,"
                                "\"executing_dpc\":false,\"executing_isr\":false,"
                                "\"priority\":11,\"rank\":0}}");
    fixture_kernel(&f, PERCH_GROUP_STACKWALK, 32, 2, 8,
                   "0f6ece7300000000940f0000c40e00000330d0ffffffffff37ae5d2100f8ffff");
    render(&f, &t);
    assert_string_equal(t.text, "{\"fields\":{\"event_time_stamp\":1942908431,"
                                "\"stack_process\":3988,\"stack_thread\":3780,\"stack\":["
                                "\"0xffffffffffd03003\",\"0xfffff800215dae37\"]}}");
}

static void test_cswitch_with_pmc(void **state)
{
    static fixture f;
    static text_sink t;
    fixture_kernel(&f, PERCH_GROUP_THREAD, 36, 2, 8,
                   "34120000785600000f0802000501058364000000efbeadde");
    f.ev.pmc_count = 2;
    f.ev.pmc[0] = 5;
    f.ev.pmc[1] = 6;
    render(&f, &t);
    assert_string_equal(t.text,
                        "{\"fields\":{\"new_thread_id\":4660,\"old_thread_id\":22136,"
                        "\"new_thread_priority\":15,\"old_thread_priority\":8,"
                        "\"previous_c_state\":2,\"spare_byte\":0,\"old_thread_wait_reason\":5,"
                        "\"old_thread_wait_mode\":1,\"old_thread_state\":5,"
                        "\"old_thread_wait_ideal_processor\":-125,\"new_thread_wait_time\":100,"
                        "\"reserved\":3735928559,\"pmc\":[5,6]}}");
    f.ev.version = 3;
    f.ev.pmc_count = 0;
    render(&f, &t);
    assert_non_null(strstr(t.text, "\"thread_flags\":1,"));
    assert_null(strstr(t.text, "wait_mode"));
    assert_null(strstr(t.text, "pmc"));
}

static void test_process_and_strings(void **state)
{
    static fixture f;
    static text_sink t;
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 3, 4, 8,
                   "00927d2100f8ffff0000000000000000ffffffff00000000007018000000000000000000502bed"
                   "01a0f8ffff0000000049004e0001010000000000051200000049646c6500000000000000");
    render(&f, &t);
    assert_string_equal(t.text,
                        "{\"fields\":{\"unique_process_key\":\"0xfffff800217d9200\","
                        "\"process_id\":0,\"parent_id\":0,\"session_id\":4294967295,"
                        "\"exit_status\":0,\"directory_table_base\":\"0x187000\",\"flags\":0,"
                        "\"user_sid\":\"S-1-5-18\",\"image_file_name\":\"Idle\","
                        "\"command_line\":\"\",\"package_full_name\":\"\","
                        "\"application_id\":\"\"}}");
    /* ANSI name with an invalid byte, UTF-16 command line with e-acute and a lone surrogate;
     * no SID. */
    fixture_kernel(&f, PERCH_GROUP_PROCESS, 1, 3, 4,
                   "0010008adc0500005802000001000000030100000040ae3f00000000"
                   "61ff6200"
                   "e90000dc22000000");
    render(&f, &t);
    assert_non_null(strstr(t.text, "\"user_sid\":null,"));
    assert_non_null(strstr(t.text, "\"image_file_name\":\"a\xef\xbf\xbd"
                                   "b\","));
    assert_non_null(strstr(t.text, "\"command_line\":\"\xc3\xa9\xef\xbf\xbd\\\"\"}}"));
    assert_null(strstr(t.text, "package_full_name"));
}

static void test_long_file_name(void **state)
{
    static fixture f;
    static text_sink t;
    /* Image v2 P=8 whose name is 1500 x U+20AC: 4500 UTF-8 bytes, beyond the stack buffer. */
    memset(f.payload, 0, 56);
    f.payload[0] = 0x10;
    for (int i = 0; i < 1500; i++) {
        f.payload[56 + 2 * i] = 0xac;
        f.payload[57 + 2 * i] = 0x20;
    }
    f.payload[3056] = f.payload[3057] = 0;
    fixture_kernel_raw(&f, PERCH_GROUP_IMAGE, 10, 2, 8, 3058);
    render(&f, &t);
    const char *name = strstr(t.text, "\"file_name\":\"");
    assert_non_null(name);
    name += strlen("\"file_name\":\"");
    for (int i = 0; i < 1500; i++)
        assert_memory_equal(name + 3 * i, "\xe2\x82\xac", 3);
    assert_string_equal(name + 4500, "\"}}");
}

static void test_lbr_and_header(void **state)
{
    static fixture f;
    static text_sink t;
    fixture_kernel(&f, PERCH_GROUP_SPARE1, 32, 2, 4,
                   "6300000000000000010000000200000000020000001040000020400000000000");
    render(&f, &t);
    assert_string_equal(t.text, "{\"fields\":{\"time_stamp\":99,\"process_id\":1,"
                                "\"thread_id\":2,\"filters\":\"0x200\",\"branches\":["
                                "{\"from\":\"0x401000\",\"to\":\"0x402000\"}]}}");
    fixture_kernel(&f, PERCH_GROUP_HEADER, 5, 2, 8,
                   "04000020000000400000006000000080000000a0000000c0000000e00100000012000000");
    render(&f, &t);
    assert_string_equal(t.text, "{\"fields\":{\"group_mask\":[\"0x20000004\",\"0x40000000\","
                                "\"0x60000000\",\"0x80000000\",\"0xa0000000\",\"0xc0000000\","
                                "\"0xe0000000\",\"0x1\"],\"kernel_event_version\":18}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_and_stack),    cmocka_unit_test(test_cswitch_with_pmc),
        cmocka_unit_test(test_process_and_strings), cmocka_unit_test(test_long_file_name),
        cmocka_unit_test(test_lbr_and_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
