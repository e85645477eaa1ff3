/*
 * The message codec: every message of every type and direction filled from its schema with
 * values across each field's range (strings with multi-byte UTF-8, arrays, blobs), encoded,
 * decoded and compared field by field, then encoded again to the same bytes; every cut of
 * every payload and a byte after it are refused; values out of range, bad bools, NUL and
 * invalid UTF-8 are refused with a reason naming the field; a few payloads pinned as bytes;
 * and a layout check that fails when a struct gains a field its schema does not carry.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/error.h"
#include "perch/proto.h"
#include "proto/proto_internal.h"

#define FIELD(base, off, T) ((T *)(void *)((char *)(base) + (off)))

/* Test allocations for filled messages, freed at the end of each message. */
static void *pool[4096];
static int pooled;

static void *palloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    assert_true(pooled < 4096);
    pool[pooled++] = p;
    return p;
}

static void pool_free(void)
{
    while (pooled > 0)
        free(pool[--pooled]);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const char *const samples_str[] = {"", "perchd 0.1.0", "C:\\Program Files\\x.exe",
                                          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa6"};

static void fill(const perch__pschema *s, void *msg, uint64_t *seed, int depth);

static void fill_field(const perch__pfield *f, void *msg, uint64_t *seed, int depth)
{
    uint64_t v = rnd(seed);
    switch (f->kind) {
    case PK_U8:
        *FIELD(msg, f->off, uint8_t) = (uint8_t)(v % (f->max + 1));
        break;
    case PK_BOOL:
        *FIELD(msg, f->off, bool) = v & 1;
        break;
    case PK_U32:
        *FIELD(msg, f->off, uint32_t) = (uint32_t)(v % 4 == 0 ? f->max : v % (f->max + 1));
        break;
    case PK_U64:
        *FIELD(msg, f->off, uint64_t) = v % 3 == 0 ? UINT64_MAX : v % 3 == 1 ? v >> 40 : v;
        break;
    case PK_I32:
        *FIELD(msg, f->off, int32_t) = v % 3 == 0 ? INT32_MIN : (int32_t)(uint32_t)v;
        break;
    case PK_STR:
        *FIELD(msg, f->off, const char *) = samples_str[v % 4];
        break;
    case PK_BLOB: {
        size_t n = (size_t)(v % 300);
        uint8_t *p = palloc(n);
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)rnd(seed);
        *FIELD(msg, f->off, const uint8_t *) = n ? p : NULL;
        *FIELD(msg, f->off2, size_t) = n;
        break;
    }
    case PK_ARRAY: {
        uint32_t n = depth > 0 ? 0 : (uint32_t)(v % 5);
        char *e = palloc((size_t)n * f->elem->size);
        for (uint32_t i = 0; i < n; i++)
            fill(f->elem, e + (size_t)i * f->elem->size, seed, depth + 1);
        *FIELD(msg, f->off, void *) = n ? e : NULL;
        *FIELD(msg, f->off2, uint32_t) = n;
        break;
    }
    }
}

static void fill(const perch__pschema *s, void *msg, uint64_t *seed, int depth)
{
    for (uint32_t i = 0; i < s->count; i++)
        fill_field(&s->fields[i], msg, seed, depth);
}

/* Field-by-field equality; returns the name of the first field that differs, or NULL. */
static const char *differs(const perch__pschema *s, const void *a, const void *b)
{
    for (uint32_t i = 0; i < s->count; i++) {
        const perch__pfield *f = &s->fields[i];
        const void *pa = (const char *)a + f->off, *pb = (const char *)b + f->off;
        size_t n;
        switch (f->kind) {
        case PK_U8:
            n = 1;
            break;
        case PK_BOOL:
            n = sizeof(bool);
            break;
        case PK_U32:
        case PK_I32:
            n = 4;
            break;
        case PK_U64:
            n = 8;
            break;
        case PK_STR: {
            const char *x = *(const char *const *)pa, *y = *(const char *const *)pb;
            if (strcmp(x ? x : "", y ? y : "") != 0)
                return f->name;
            continue;
        }
        case PK_BLOB: {
            size_t la = *(const size_t *)((const char *)a + f->off2);
            size_t lb = *(const size_t *)((const char *)b + f->off2);
            const void *x = *(const void *const *)pa, *y = *(const void *const *)pb;
            if (la != lb || (la && memcmp(x, y, la) != 0))
                return f->name;
            continue;
        }
        default: {
            uint32_t ca = *(const uint32_t *)((const char *)a + f->off2);
            uint32_t cb = *(const uint32_t *)((const char *)b + f->off2);
            const char *x = *(const char *const *)pa, *y = *(const char *const *)pb;
            if (ca != cb)
                return f->name;
            for (uint32_t j = 0; j < ca; j++) {
                const char *d = differs(f->elem, x + j * f->elem->size, y + j * f->elem->size);
                if (d)
                    return d;
            }
            continue;
        }
        }
        if (memcmp(pa, pb, n) != 0)
            return f->name;
    }
    return NULL;
}

static void roundtrip_one(unsigned type, bool reply, uint64_t seed)
{
    bool empty;
    const perch__pschema *s = perch__proto_schema(type, reply, &empty);
    if (s == NULL || empty)
        return;
    void *msg = palloc(s->size), *back = palloc(s->size);
    uint8_t *p, *p2;
    size_t n, n2;
    void *mem = NULL;
    char why[200];
    fill(s, msg, &seed, 0);
    assert_int_equal(perch_proto_encode(type, reply, msg, &p, &n), 0);
    int err = perch_proto_decode(type, reply, p, n, back, s->size, &mem, why, sizeof why);
    if (err != 0)
        fail_msg("%s: %s", s->name, why);
    const char *d = differs(s, msg, back);
    if (d)
        fail_msg("%s: field %s differs after a round trip", s->name, d);
    assert_int_equal(perch_proto_encode(type, reply, back, &p2, &n2), 0);
    assert_int_equal(n2, n);
    assert_memory_equal(p2, p, n);
    /* Every cut is refused, so is a byte too many, and nothing is allocated then. */
    for (size_t cut = 0; cut < n; cut++) {
        void *m2 = (void *)1;
        assert_int_equal(perch_proto_decode(type, reply, p, cut, back, s->size, &m2, NULL, 0),
                         PERCH_EFORMAT);
        assert_ptr_equal(m2, (void *)1);
    }
    uint8_t *longer = palloc(n + 1);
    memcpy(longer, p, n);
    assert_int_equal(
        perch_proto_decode(type, reply, longer, n + 1, back, s->size, &mem, why, sizeof why),
        PERCH_EFORMAT);
    perch_free(p);
    perch_free(p2);
    perch_free(mem);
    pool_free();
}

static void test_roundtrip_every_message(void **state)
{
    (void)state;
    int messages = 0;
    for (unsigned t = 1; t < PERCH_MSG_TYPE_LIMIT; t++)
        for (int reply = 0; reply < 2; reply++) {
            messages += perch_proto_has_message(t, reply);
            for (uint64_t seed = 1; seed <= 40; seed++)
                roundtrip_one(t, reply, seed * 0x9e3779b97f4a7c15ull);
        }
    assert_int_equal(messages, 2 * (PERCH_MSG_TYPE_LIMIT - 1) - 4); /* no DATA/ERROR/UPDATE req,
                                                                      no DATA reply */
}

/* The C layout a schema implies (its members in offset order, each at its natural alignment)
 * must be the struct itself: a field added to a struct but not to its schema shows up as
 * bytes no member carries. */
typedef struct member {
    size_t off, size;
} member;

static int cmp_member(const void *a, const void *b)
{
    const member *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void check_layout(const perch__pschema *s)
{
    static const size_t sizes[] = {[PK_U8] = 1,
                                   [PK_BOOL] = sizeof(bool),
                                   [PK_U32] = 4,
                                   [PK_U64] = 8,
                                   [PK_I32] = 4,
                                   [PK_STR] = sizeof(void *),
                                   [PK_BLOB] = sizeof(void *),
                                   [PK_ARRAY] = sizeof(void *)};
    member m[64];
    size_t n = 0, pos = 0, max_align = 1;
    for (uint32_t i = 0; i < s->count; i++) {
        const perch__pfield *f = &s->fields[i];
        m[n++] = (member){f->off, sizes[f->kind]};
        if (f->kind == PK_BLOB)
            m[n++] = (member){f->off2, sizeof(size_t)};
        if (f->kind == PK_ARRAY) {
            m[n++] = (member){f->off2, sizeof(uint32_t)};
            check_layout(f->elem);
        }
        assert_true(n < 62);
    }
    qsort(m, n, sizeof *m, cmp_member);
    for (size_t i = 0; i < n; i++) {
        size_t expect = (pos + m[i].size - 1) / m[i].size * m[i].size;
        if (m[i].off != expect)
            fail_msg("%s: bytes %zu..%zu are carried by no field", s->name, pos, m[i].off - 1);
        pos = m[i].off + m[i].size;
        max_align = m[i].size > max_align ? m[i].size : max_align;
    }
    pos = (pos + max_align - 1) / max_align * max_align;
    if (pos != s->size)
        fail_msg("%s: bytes %zu..%zu are carried by no field", s->name, pos, s->size - 1);
}

static void test_schemas_cover_structs(void **state)
{
    (void)state;
    for (unsigned t = 1; t < PERCH_MSG_TYPE_LIMIT; t++)
        for (int reply = 0; reply < 2; reply++) {
            bool empty;
            const perch__pschema *s = perch__proto_schema(t, reply, &empty);
            if (s != NULL && !empty)
                check_layout(s);
        }
}

static void test_pinned_bytes(void **state)
{
    (void)state;
    perch_proto_hello_req h = {1, 1, 300, "perch"};
    perch_proto_error e = {PERCH_EVERSION, PERCH_MSG_STATUS, 2, "no"};
    uint8_t want[64], *p;
    size_t n;
    assert_int_equal(perch_proto_encode(PERCH_MSG_HELLO, false, &h, &p, &n), 0);
    long w = perch_test_hex("01"
                            "01"
                            "ac02"
                            "05"
                            "7065726368",
                            want, sizeof want);
    assert_int_equal(n, w);
    assert_memory_equal(p, want, n);
    perch_free(p);
    assert_int_equal(perch_proto_encode(PERCH_MSG_ERROR, true, &e, &p, &n), 0);
    w = perch_test_hex("0f"
                       "04"
                       "02"
                       "02"
                       "6e6f",
                       want, sizeof want); /* zigzag(-8) = 15 */
    assert_int_equal(n, w);
    assert_memory_equal(p, want, n);
    perch_free(p);
    assert_int_equal(perch_proto_encode(PERCH_MSG_PING, false, NULL, &p, &n), 0);
    assert_int_equal(n, 0);
    perch_free(p);
}

struct refusal {
    unsigned type;
    bool reply;
    const char *hex;
    const char *says;
};

static void test_refusals(void **state)
{
    (void)state;
    static const struct refusal cases[] = {
        {PERCH_MSG_HELLO, false,
         "01010105"
         "70657263",
         "field client: cut short"},
        {PERCH_MSG_HELLO, false, "ffff0701010170", "field min_version: out of range"},
        {PERCH_MSG_HELLO, false,
         "0101010270"
         "00",
         "field client: not UTF-8 without NUL"},
        {PERCH_MSG_HELLO, false, "01010102c328", "field client: not UTF-8"},
        {PERCH_MSG_HELLO, false,
         "0101010170"
         "99",
         "bytes after the last field"},
        {PERCH_MSG_TOP, false, "0300", "field what: out of range"},
        {PERCH_MSG_TOP, false, "0001e907", "field limit: out of range"},
        {PERCH_MSG_TOP, false, "00010a02", "field has_pid: out of range"},
        {PERCH_MSG_SNAPSHOT, false, "ffffffffffffffffffff01", "a varint over 64 bits"},
        {PERCH_MSG_CAPTURES, true,
         "00"
         "ffffff7f",
         "field captures: count over"},
        {PERCH_MSG_PING, false, "00", "bytes after the last field"},
        {PERCH_MSG_STATUS, false, "00", "bytes after the last field"},
    };
    uint8_t buf[64], out[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[200] = "";
        void *mem = NULL;
        long n = perch_test_hex(cases[i].hex, buf, sizeof buf);
        bool empty;
        const perch__pschema *s = perch__proto_schema(cases[i].type, cases[i].reply, &empty);
        assert_true(n >= 0);
        int err = perch_proto_decode(cases[i].type, cases[i].reply, buf, (size_t)n, out,
                                     empty ? 0 : s->size, &mem, why, sizeof why);
        if (err != PERCH_EFORMAT || strstr(why, cases[i].says) == NULL)
            fail_msg("case %zu: err %d, reason '%s'", i, err, why);
        assert_null(mem);
    }
    /* The encoder refuses what the decoder would. */
    perch_proto_top_req t = {3, 0, 1, false, 0, {0, 0, 0}};
    uint8_t *p;
    size_t n;
    assert_int_equal(perch_proto_encode(PERCH_MSG_TOP, false, &t, &p, &n), PERCH_EINVAL);
    perch_proto_hello_req h = {1, 1, 1, "a\xff"};
    assert_int_equal(perch_proto_encode(PERCH_MSG_HELLO, false, &h, &p, &n), PERCH_EINVAL);
    assert_int_equal(perch_proto_encode(PERCH_MSG_DATA, true, &h, &p, &n), PERCH_EINVAL);
    assert_int_equal(perch_proto_encode(99, false, &h, &p, &n), PERCH_EINVAL);
    void *mem = NULL;
    assert_int_equal(perch_proto_decode(PERCH_MSG_HELLO, false, buf, 0, out, 3, &mem, NULL, 0),
                     PERCH_EINVAL); /* wrong struct size */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_message),
        cmocka_unit_test(test_schemas_cover_structs),
        cmocka_unit_test(test_pinned_bytes),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
