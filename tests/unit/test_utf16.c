/*
 * Tests for the UTF-16LE to UTF-8 converter: ASCII, 2/3/4-byte characters, unpaired and
 * reversed surrogates, an odd trailing byte, and output capacity never split mid-character;
 * and the repair of a UTF-8 text that a bounded formatter cut mid-character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/utf16.h"

struct utf16_case {
    const char *hex;  /* UTF-16LE input */
    const char *utf8; /* expected output */
};

static const struct utf16_case cases[] = {
    {"", ""},
    {"41004200", "AB"},
    {"e900", "\xc3\xa9"},             /* U+00E9 */
    {"ac20", "\xe2\x82\xac"},         /* U+20AC */
    {"3dd800de", "\xf0\x9f\x98\x80"}, /* U+1F600 as a surrogate pair */
    {"3dd84100", "\xef\xbf\xbd"
                 "A"}, /* high surrogate then 'A' */
    {"00de4100", "\xef\xbf\xbd"
                 "A"},                        /* lone low surrogate */
    {"3dd8", "\xef\xbf\xbd"},                 /* high surrogate at the end */
    {"410042", "A\xef\xbf\xbd"},              /* odd trailing byte */
    {"00de3dd8", "\xef\xbf\xbd\xef\xbf\xbd"}, /* reversed pair */
    {"0000", "\x00"},                         /* NUL passes through */
};

static void test_cases(void **state)
{
    uint8_t in[64];
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long n = perch_test_hex(cases[i].hex, in, sizeof in);
        size_t want = strcmp(cases[i].hex, "0000") == 0 ? 1 : strlen(cases[i].utf8);
        assert_true(n >= 0);
        assert_int_equal(perch_utf16le_utf8_len(in, (size_t)n), want);
        memset(out, 'x', sizeof out);
        assert_int_equal(perch_utf16le_to_utf8(in, (size_t)n, out, sizeof out), want);
        assert_memory_equal(out, cases[i].utf8, want);
        assert_int_equal(out[want], 'x'); /* nothing written past the end */
    }
}

static void test_capacity(void **state)
{
    uint8_t in[16];
    char out[8];
    /* "A" + U+20AC + U+1F600: 1 + 3 + 4 bytes. */
    long n = perch_test_hex("4100ac203dd800de", in, sizeof in);
    assert_int_equal(n, 8);
    memset(out, 'x', sizeof out);
    assert_int_equal(perch_utf16le_to_utf8(in, 8, out, 3), 1); /* the euro sign does not fit */
    assert_int_equal(out[1], 'x');
    assert_int_equal(perch_utf16le_to_utf8(in, 8, out, 7), 4); /* nor does the emoji */
    assert_int_equal(perch_utf16le_to_utf8(in, 8, out, 8), 8);
    assert_int_equal(perch_utf16le_to_utf8(in, 8, out, 0), 0);
    assert_int_equal(perch_utf16le_to_utf8(NULL, 0, out, 8), 0);
}

static void test_make_valid(void **state)
{
    static const char *const repairs[][2] = {
        {"", ""},
        {"plain", "plain"},
        {"a\xe2\x82\xac", "a\xe2\x82\xac"},       /* whole at the end: kept */
        {"a\xe2\x82", "a"},                       /* cut after 2 of 3 bytes */
        {"a\xe2", "a"},                           /* cut after 1 of 3 */
        {"a\xf0\x9f\x98", "a"},                   /* cut after 3 of 4 */
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"}, /* whole 4-byte */
        {"a\x80"
         "b",
         "a?b"}, /* a stray continuation byte */
        {"a\xc0\xaf"
         "b",
         "a??b"},                     /* overlong */
        {"\xed\xa0\x80x", "???x"},    /* a surrogate */
        {"\xe2\x82x\xe2\x82", "??x"}, /* broken inside, cut at the end */
        {"\xe9t\xe9", "?t"}, /* Latin-1: the last byte looks like a cut, the first does not */
    };
    char buf[32];
    for (size_t i = 0; i < sizeof repairs / sizeof repairs[0]; i++) {
        snprintf(buf, sizeof buf, "%s", repairs[i][0]);
        assert_ptr_equal(perch_utf8_make_valid(buf), buf);
        assert_string_equal(buf, repairs[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_make_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
