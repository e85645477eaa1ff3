/*
 * SHA-256 against the FIPS 180-4 / NIST example vectors, plus incremental feeding across
 * block boundaries (must equal one-shot hashing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/sha256.h"

static void test_vectors(void **state)
{
    static const struct {
        const char *msg;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
         "mnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[65];
        memset(out, 0xff, sizeof out);
        perch__sha256_hex(v[i].msg, strlen(v[i].msg), out);
        assert_string_equal(out, v[i].hex);
    }
}

static void test_million_a(void **state)
{
    perch__sha256 s;
    uint8_t d[32];
    char chunk[1000];
    (void)state;
    memset(chunk, 'a', sizeof chunk);
    perch__sha256_init(&s);
    for (int i = 0; i < 1000; i++)
        perch__sha256_update(&s, chunk, sizeof chunk);
    perch__sha256_final(&s, d);
    static const char want[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    char hex[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    assert_string_equal(hex, want);
}

static void test_incremental_equals_one_shot(void **state)
{
    uint8_t buf[300], d1[32], d2[32];
    perch__sha256 s;
    (void)state;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t split = 0; split <= sizeof buf; split += 13) {
        perch__sha256_init(&s);
        perch__sha256_update(&s, buf, sizeof buf);
        perch__sha256_final(&s, d1);
        perch__sha256_init(&s);
        perch__sha256_update(&s, buf, split);
        perch__sha256_update(&s, buf + split, sizeof buf - split);
        perch__sha256_final(&s, d2);
        assert_memory_equal(d1, d2, 32);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_incremental_equals_one_shot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
