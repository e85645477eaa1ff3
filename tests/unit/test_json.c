/*
 * Tests for the streaming JSON writer: separators, nesting, escaping, numbers, buffering
 * past the internal buffer size, and sink errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "perch/json.h"

struct capture {
    char text[1 << 16];
    size_t len;
    int fail_with;
};

static int capture_sink(void *ctx, const char *data, size_t n)
{
    struct capture *c = ctx;
    if (c->fail_with)
        return c->fail_with;
    assert_true(c->len + n < sizeof c->text);
    memcpy(c->text + c->len, data, n);
    c->len += n;
    c->text[c->len] = 0;
    return 0;
}

static void test_object_and_array(void **state)
{
    static struct capture c;
    static perch_json w;
    memset(&c, 0, sizeof c);
    perch_json_init(&w, capture_sink, &c);
    perch_json_begin_object(&w);
    perch_json_key(&w, "a");
    perch_json_uint(&w, 18446744073709551615u);
    perch_json_key(&w, "b");
    perch_json_begin_array(&w);
    perch_json_int(&w, -5);
    perch_json_bool(&w, true);
    perch_json_null(&w);
    perch_json_hex(&w, 0xfffff80020aca000u);
    perch_json_begin_object(&w);
    perch_json_end_object(&w);
    perch_json_end_array(&w);
    perch_json_key(&w, "s");
    perch_json_string(&w, "q\"\\\n\x01");
    perch_json_end_object(&w);
    perch_json_newline(&w);
    perch_json_begin_array(&w);
    perch_json_end_array(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_string_equal(c.text, "{\"a\":18446744073709551615,\"b\":[-5,true,null,"
                                "\"0xfffff80020aca000\",{}],\"s\":\"q\\\"\\\\\\n\\u0001\"}\n[]");
}

/* JSON text is UTF-8 (RFC 8259): bytes that are not valid UTF-8 (an ANSI process name from a
 * payload, say) become \u00XX escapes one byte at a time (json.h); valid sequences pass. */
static void test_invalid_utf8_escaped(void **state)
{
    static struct capture c;
    static perch_json w;
    (void)state;
    memset(&c, 0, sizeof c);
    perch_json_init(&w, capture_sink, &c);
    perch_json_begin_array(&w);
    perch_json_string(&w, "a\xff" "b");                /* stray byte */
    perch_json_string(&w, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"); /* valid: kept */
    perch_json_string(&w, "\xe2\x82");                 /* cut short */
    perch_json_string(&w, "\xed\xa0\x80");             /* surrogate */
    perch_json_string(&w, "\xc0\xaf");                 /* overlong */
    perch_json_end_array(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_string_equal(c.text, "[\"a\\u00ffb\",\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
                                "\"\\u00e2\\u0082\",\"\\u00ed\\u00a0\\u0080\","
                                "\"\\u00c0\\u00af\"]");
}

static void test_large_output_is_complete(void **state)
{
    static struct capture c;
    static perch_json w;
    memset(&c, 0, sizeof c);
    perch_json_init(&w, capture_sink, &c);
    perch_json_begin_array(&w);
    for (unsigned i = 0; i < 5000; i++)
        perch_json_uint(&w, i);
    perch_json_end_array(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_true(c.len > PERCH_JSON_BUFFER);
    assert_memory_equal(c.text, "[0,1,2,", 7);
    assert_memory_equal(c.text + c.len - 6, ",4999]", 6);
}

static void test_sink_error_is_sticky(void **state)
{
    static struct capture c;
    static perch_json w;
    memset(&c, 0, sizeof c);
    c.fail_with = PERCH_EIO;
    perch_json_init(&w, capture_sink, &c);
    perch_json_string(&w, "x");
    assert_int_equal(perch_json_flush(&w), PERCH_EIO);
    c.fail_with = 0;
    perch_json_string(&w, "y");
    assert_int_equal(perch_json_flush(&w), PERCH_EIO);
    assert_int_equal(c.len, 0);
}

/* The text of string s (n bytes) alone, written with the writer's buffer empty (room: the
 * fast path) or full to 4 bytes of its end (the byte-by-byte path); into out, its length. */
static size_t string_text(const char *s, size_t n, bool full, char *out)
{
    static struct capture c;
    static perch_json w;
    static char filler[PERCH_JSON_BUFFER];
    size_t skip = full ? PERCH_JSON_BUFFER - 4 : 0;
    memset(&c, 0, sizeof c);
    memset(filler, ' ', sizeof filler);
    perch_json_init(&w, capture_sink, &c);
    perch_json_verbatim(&w, filler, skip);
    perch_json_string_n(&w, s, n);
    assert_int_equal(perch_json_flush(&w), 0);
    assert_true(c.len >= skip);
    memcpy(out, c.text + skip, c.len - skip);
    return c.len - skip;
}

/* Every byte value at every place of plain strings of 8 to 24 bytes: the fast path, which
 * tests eight bytes at once for one needing a look, writes what the byte-by-byte path writes;
 * and the bytes that need one are escaped there. */
static void test_every_byte_every_place(void **state)
{
    char s[24], fast[256], slow[256];
    (void)state;
    for (size_t n = 8; n <= sizeof s; n += 5) {
        for (size_t at = 0; at < n; at++) {
            for (unsigned b = 0; b < 256; b++) {
                memset(s, 'a' + (int)(at % 20), n);
                s[at] = (char)b;
                size_t fl = string_text(s, n, false, fast);
                size_t sl = string_text(s, n, true, slow);
                assert_int_equal(fl, sl);
                assert_memory_equal(fast, slow, fl);
                bool plain = b >= 0x20 && b < 0x7f && b != '"' && b != '\\';
                bool two = b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t';
                assert_int_equal(fl, n + (plain ? 2 : two ? 3 : 7));
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object_and_array),
        cmocka_unit_test(test_invalid_utf8_escaped),
        cmocka_unit_test(test_large_output_is_complete),
        cmocka_unit_test(test_sink_error_is_sticky),
        cmocka_unit_test(test_every_byte_every_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
