/*
 * Reference vectors: every event line of ../shared/data/reference/ (the *.ref.jsonl files, an
 * independent decoding of the real traces) is split into header and payload from its
 * raw_record_hex, decoded with perch_decode, rendered with perch_decoded_write_json, and compared
 * field by field with the reference's "fields". Reference names are the Microsoft CamelCase names;
 * they map to ours by lower_snake_case, with a short table for the few the reference tool merged or
 * renamed. Every reference field must be matched: an unmapped one fails the test.
 *
 * The JSON reader below is test-only and reads just what these lines contain.
 */
#include <ctype.h>
#include <stdlib.h>

#include "decode_fixture.h"
#include "perch/json.h"
#include "testdata.h"

/* ---- a tiny JSON reader over text spans ------------------------------------------------- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Returns the end of the JSON value starting at p (after skipping whitespace). */
static const char *skip_value(const char *p)
{
    p = skip_ws(p);
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            if (*p == '\\' && p[1])
                p++;
        assert_int_equal(*p, '"');
        return p + 1;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = skip_ws(p + 1);
        while (*p != close) {
            p = skip_value(p); /* key or element */
            p = skip_ws(p);
            if (*p == ':')
                p = skip_ws(skip_value(p + 1));
            if (*p == ',')
                p = skip_ws(p + 1);
            assert_true(*p != 0);
        }
        return p + 1;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && !isspace((unsigned char)*p))
        p++;
    return p;
}

/* Iterates the members of the object at *p: sets key (unescaped) and value; false at end. */
static bool object_next(const char **p, char *key, size_t cap, const char **value);

/* Unescapes the JSON string at p into out (cap bytes, NUL-terminated); returns its length. */
static size_t read_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    p = skip_ws(p);
    assert_int_equal(*p, '"');
    for (p++; *p != '"'; p++) {
        uint32_t c = (unsigned char)*p;
        if (c == '\\') {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : (unsigned char)*p;
            if (*p == 'u') {
                c = (uint32_t)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
                p += 4;
                assert_true(c < 0x80); /* the lines hold only ASCII escapes */
            }
        }
        assert_true(n + 1 < cap);
        out[n++] = (char)c;
    }
    out[n] = 0;
    return n;
}

static bool object_next(const char **p, char *key, size_t cap, const char **value)
{
    const char *q = skip_ws(*p);
    if (*q == '{' || *q == ',')
        q = skip_ws(q + 1);
    if (*q == '}')
        return false;
    read_string(q, key, cap);
    q = skip_ws(skip_value(q));
    assert_int_equal(*q, ':');
    *value = skip_ws(q + 1);
    *p = skip_value(*value);
    return true;
}

/* The value of key in the object at obj, or NULL. */
static const char *find_key(const char *obj, const char *key)
{
    char k[128];
    const char *v, *p = obj;
    while (object_next(&p, k, sizeof k, &v))
        if (strcmp(k, key) == 0)
            return v;
    return NULL;
}

static bool is_null(const char *v)
{
    return strncmp(skip_ws(v), "null", 4) == 0;
}

/* A number, or a "0x..." string, as 64 bits (negative numbers two's complement). */
static bool read_number(const char *v, uint64_t *out)
{
    char buf[64];
    v = skip_ws(v);
    if (*v == '"') {
        read_string(v, buf, sizeof buf);
        if (strncmp(buf, "0x", 2) != 0)
            return false;
        *out = strtoull(buf + 2, NULL, 16);
        return true;
    }
    if (*v == '-') {
        *out = (uint64_t)strtoll(v, NULL, 10);
        return true;
    }
    if (!isdigit((unsigned char)*v))
        return false;
    *out = strtoull(v, NULL, 10);
    return true;
}

/* ---- comparing a reference value with ours ------------------------------------------------ */

static void compare_values(const char *name, const char *ref, const char *ours)
{
    static char a[8192], b[8192];
    uint64_t x, y;
    ref = skip_ws(ref);
    ours = skip_ws(ours);
    if (*ref == '[') {
        const char *pr = skip_ws(ref + 1), *po = skip_ws(ours);
        assert_int_equal(*po, '[');
        po = skip_ws(po + 1);
        while (*pr != ']') {
            assert_true(*po != ']');
            compare_values(name, pr, po);
            pr = skip_ws(skip_value(pr));
            po = skip_ws(skip_value(po));
            pr = skip_ws(*pr == ',' ? pr + 1 : pr);
            po = skip_ws(*po == ',' ? po + 1 : po);
        }
        assert_int_equal(*po, ']');
        return;
    }
    if (read_number(ref, &x)) {
        if (!read_number(ours, &y))
            fail_msg("%s: reference %.40s, ours %.40s", name, ref, ours);
        if (x != y)
            fail_msg("%s: reference %llu, ours %llu", name, (unsigned long long)x,
                     (unsigned long long)y);
        return;
    }
    read_string(ref, a, sizeof a);
    if (*ours != '"')
        fail_msg("%s: reference \"%s\", ours %.40s", name, a, ours);
    read_string(ours, b, sizeof b);
    if (strcmp(a, b) != 0)
        fail_msg("%s: reference \"%s\", ours \"%s\"", name, a, b);
}

/* Reference names the tool merged across events or spelt differently. */
struct rename {
    const char *ref;
    const char *ours; /* NULL: handled in check_meta */
};

static const struct rename renames[] = {
    {"CountOrProfileSource", "count"},
    {"Frames", "stack"},
    {"UserSID", "user_sid"},
    {"StartAddrOrAffinity", NULL},
    {"FlagsOrReserved", NULL},
    {"_len", NULL},
    {"_end", NULL},
    {"_rem", NULL},
    {"_expected_min", NULL},
};

/* "TThreadId" -> "t_thread_id", "Win32StartAddr" -> "win32_start_addr". */
static void snake_case(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; in[i]; i++) {
        unsigned char c = (unsigned char)in[i];
        bool upper = isupper(c);
        bool prev_lower =
            i > 0 && (islower((unsigned char)in[i - 1]) || isdigit((unsigned char)in[i - 1]));
        bool next_lower = in[i + 1] && islower((unsigned char)in[i + 1]);
        bool prev_upper = i > 0 && isupper((unsigned char)in[i - 1]);
        if (upper && i > 0 && (prev_lower || (prev_upper && next_lower)))
            out[n++] = '_';
        out[n++] = (char)tolower(c);
        assert_true(n + 2 < cap);
    }
    out[n] = 0;
}

struct record {
    fixture f;
    text_sink ours;
};

/* Image v2 has a u32 Reserved0 where v3 has SignatureLevel, SignatureType and a u16 Reserved0;
 * the reference tool reads v2 with the v3 names. Compares those with the bytes of our u32. */
static bool check_image_v2(struct record *r, const char *name, const char *ref)
{
    static const char *const names[] = {"SignatureLevel", "SignatureType", "Reserved0"};
    static const unsigned shift[] = {0, 8, 16};
    static const uint32_t mask[] = {0xff, 0xff, 0xffff};
    const perch_decoded *d = &r->f.out;
    uint64_t v;
    if (d->type != PERCH_DECODED_IMAGE || d->version != 2)
        return false;
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, names[i]) != 0)
            continue;
        assert_true(read_number(ref, &v));
        assert_int_equal(v, (d->image.reserved0 >> shift[i]) & mask[i]);
        return true;
    }
    return false;
}

/* The fields the reference tool named after its own reading rather than the documentation. */
static void check_meta(struct record *r, const char *name, const char *ref, const char *fields)
{
    const perch_decoded *d = &r->f.out;
    uint64_t v;
    assert_true(read_number(ref, &v));
    if (strcmp(name, "StartAddrOrAffinity") == 0) {
        compare_values(name, ref, find_key(fields, d->version == 2 ? "start_addr" : "affinity"));
    } else if (strcmp(name, "FlagsOrReserved") == 0) {
        assert_int_equal(v, d->sampled_profile.flags | d->sampled_profile.rank << 8);
    } else if (strcmp(name, "_len") == 0 || strcmp(name, "_end") == 0) {
        /* The payload length, and where the last field ended: all of it, nothing trailing. */
        assert_int_equal(v, r->f.ev.payload_len);
        assert_int_equal(d->flags & PERCH_DECODED_TRAILING, 0);
    } else if (strcmp(name, "_rem") == 0) {
        assert_int_equal(v, 0);
        assert_int_equal(d->flags & PERCH_DECODED_TRAILING, 0);
    }
}

static void compare_field(struct record *r, const char *name, const char *ref, const char *fields)
{
    char snake[128];
    if (check_image_v2(r, name, ref))
        return;
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++) {
        if (strcmp(renames[i].ref, name) != 0)
            continue;
        if (!renames[i].ours) {
            check_meta(r, name, ref, fields);
            return;
        }
        snprintf(snake, sizeof snake, "%s", renames[i].ours);
        goto found;
    }
    snake_case(name, snake, sizeof snake);
found:;
    const char *ours = find_key(fields, snake);
    if (!ours || is_null(ours))
        fail_msg("reference field %s (ours: %s) missing from our output: %s", name, snake,
                 r->ours.text);
    compare_values(name, ref, ours);
}

/* ---- splitting a raw record --------------------------------------------------------------- */

static unsigned header_size(unsigned header_type)
{
    switch (header_type) {
    case 0x01:
    case 0x02:
        return 0x20;
    case 0x03:
    case 0x04:
        return 0x18;
    case 0x10:
    case 0x11:
        return 0x10;
    default:
        fail_msg("unexpected header type %u", header_type);
        return 0;
    }
}

/* Builds the normalized record from the raw header + payload bytes of one reference line. */
static void build_record(struct record *r, const char *line)
{
    static char hex[1 << 16];
    char text[32];
    uint64_t header_type, size;
    assert_true(read_number(find_key(line, "header_type"), &header_type));
    assert_true(read_number(find_key(line, "size"), &size));
    read_string(find_key(line, "hook"), text, sizeof text);
    read_string(find_key(line, "raw_record_hex"), hex, sizeof hex);
    long n = perch_test_hex(hex, r->f.payload, sizeof r->f.payload);
    assert_true(n >= (long)size);
    unsigned hs = header_size((unsigned)header_type);
    uint16_t vword = (uint16_t)(r->f.payload[0] | r->f.payload[1] << 8);
    unsigned ext = ((vword & 0x8000u) ? 8u : 0u) + 8u * ((vword >> 8) & 7u);
    uint16_t hook = (uint16_t)(r->f.payload[6] | r->f.payload[7] << 8);
    assert_int_equal(hook, strtoul(text, NULL, 16));
    /* Move the payload to the front of the buffer. */
    size_t len = (size_t)size - hs - ext;
    memmove(r->f.payload, r->f.payload + hs + ext, len);
    uint16_t group = hook >> 8;
    uint8_t opcode = (uint8_t)hook;
    if (hook == 0x030A)
        group = PERCH_GROUP_IMAGE;             /* Image Load is logged in the Process group */
    uint8_t psize = (header_type & 1) ? 4 : 8; /* 0x01/0x03/0x10 are the 32-bit kinds */
    if (header_type == 0x11)
        psize = 8;
    fixture_kernel_raw(&r->f, group, opcode, (uint8_t)vword, psize, len);
    uint64_t version;
    assert_true(read_number(find_key(line, "version"), &version));
    assert_int_equal(version, r->f.ev.version);
}

static int check_line(struct record *r, const char *line)
{
    static perch_json w;
    char name[128];
    const char *value, *ref_fields = find_key(line, "fields");
    if (!ref_fields || !find_key(line, "raw_record_hex"))
        return 0;
    build_record(r, line);
    int rc = fixture_decode(&r->f);
    if (rc != 0)
        fail_msg("decode failed (%s) for %.160s", perch_err_name(rc), line);
    r->ours.len = 0;
    perch_json_init(&w, text_sink_write, &r->ours);
    perch_json_begin_object(&w);
    assert_int_equal(perch_decoded_write_json(&w, &r->f.out), 0);
    perch_json_end_object(&w);
    assert_int_equal(perch_json_flush(&w), 0);
    const char *ours = find_key(r->ours.text, "fields");
    assert_non_null(ours);
    const char *p = ref_fields;
    int compared = 0;
    while (object_next(&p, name, sizeof name, &value)) {
        compare_field(r, name, value, ours);
        compared++;
    }
    assert_true(compared > 0);
    return 1;
}

static int check_file(const char *rel)
{
    static struct record r;
    size_t len;
    uint8_t *data = perch_test_read_file(perch_test_require_data(rel), &len);
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, data, len);
    text[len] = 0;
    free(data);
    int events = 0;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (line[0] == '{')
            events += check_line(&r, line);
        line = next;
    }
    free(text);
    return events;
}

static void test_perfview_x64(void **state)
{
    /* Process, Thread, Image, SampledProfile, StackWalk, intervals, StackKey*, Key*. */
    assert_true(check_file("reference/perfview_net.4.5.2.x64.ref.jsonl") >= 20);
}

static void test_airbus(void **state)
{
    /* Image v3, Thread v3 with a trailing name, Process v4 and v5 Defunct, KernelBase. */
    assert_true(check_file("reference/airbus_ShutdownPerfDiagLogger.ref.jsonl") >= 10);
}

static void test_small(void **state)
{
    /* Only header lines and a non-kernel count: nothing to decode, nothing must fail. */
    assert_int_equal(check_file("reference/perfview_smallEtlFile.ref.jsonl"), 0);
}

static void test_snake_case(void **state)
{
    char out[64];
    snake_case("TThreadId", out, sizeof out);
    assert_string_equal(out, "t_thread_id");
    snake_case("Win32StartAddr", out, sizeof out);
    assert_string_equal(out, "win32_start_addr");
    snake_case("UserSID", out, sizeof out);
    assert_string_equal(out, "user_sid");
    snake_case("Reserved0", out, sizeof out);
    assert_string_equal(out, "reserved0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snake_case),
        cmocka_unit_test(test_perfview_x64),
        cmocka_unit_test(test_airbus),
        cmocka_unit_test(test_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
