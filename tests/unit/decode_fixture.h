/*
 * Shared helpers for the decoder tests: build a normalized record around payload bytes, run
 * perch_decode into an output pre-filled with 0xff (so a field the decoder forgot shows up as
 * 0xff..), and compare borrowed strings. Header-only so each test_decode_*.c stays one file.
 */
#ifndef PERCH_TEST_DECODE_FIXTURE_H
#define PERCH_TEST_DECODE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/utf16.h"

#define FIXTURE_MAX_PAYLOAD 4096

typedef struct fixture {
    uint8_t payload[FIXTURE_MAX_PAYLOAD];
    perch_event ev;
    perch_decoded out;
    perch_decode_diag diag;
} fixture;

/* A kernel record of (group, opcode, version, pointer size) over the first len bytes already
 * in f->payload. */
static inline void fixture_kernel_raw(fixture *f, uint16_t group, uint8_t opcode, uint8_t version,
                                      uint8_t psize, size_t len)
{
    memset(&f->ev, 0, sizeof f->ev);
    f->ev.group = group;
    f->ev.opcode = opcode;
    f->ev.version = version;
    f->ev.pointer_size = psize;
    f->ev.payload = f->payload;
    f->ev.payload_len = (uint32_t)len;
    f->ev.pid = UINT32_MAX;
    f->ev.tid = UINT32_MAX;
}

/* Same, over the hex payload. */
static inline void fixture_kernel(fixture *f, uint16_t group, uint8_t opcode, uint8_t version,
                                  uint8_t psize, const char *hex)
{
    long n = perch_test_hex(hex, f->payload, sizeof f->payload);
    assert_true(n >= 0);
    fixture_kernel_raw(f, group, opcode, version, psize, (size_t)n);
}

/* Collects JSON output into text (NUL-terminated). */
typedef struct text_sink {
    char text[1 << 16];
    size_t len;
} text_sink;

static inline int text_sink_write(void *ctx, const char *data, size_t n)
{
    text_sink *t = ctx;
    assert_true(t->len + n < sizeof t->text);
    memcpy(t->text + t->len, data, n);
    t->len += n;
    t->text[t->len] = 0;
    return 0;
}

/* perch_decode into an output and a diag both pre-filled with 0xff. */
static inline int fixture_decode(fixture *f)
{
    memset(&f->out, 0xff, sizeof f->out);
    memset(&f->diag, 0xff, sizeof f->diag);
    return perch_decode(&f->ev, &f->out, &f->diag);
}

/* Decoding must fail with code; out must stay all 0xff and diag must be filled. */
static inline void fixture_expect_error(fixture *f, int code)
{
    perch_decoded untouched;
    memset(&untouched, 0xff, sizeof untouched);
    assert_int_equal(fixture_decode(f), code);
    assert_memory_equal(&f->out, &untouched, sizeof untouched);
    assert_int_equal(f->diag.code, code);
    assert_non_null(f->diag.what);
}

/* Every strictly shorter prefix of the current payload must fail with PERCH_ESHORT (or
 * PERCH_EVERSION for a newer version), leaving out untouched. */
static inline void fixture_expect_prefixes_short(fixture *f, int code)
{
    uint32_t full = f->ev.payload_len;
    for (uint32_t len = 0; len < full; len++) {
        f->ev.payload_len = len;
        fixture_expect_error(f, code);
        assert_true(f->diag.offset <= len);
    }
    f->ev.payload_len = full;
}

/* True when the UTF-16 view holds exactly the ASCII text s. */
static inline void assert_wstr(perch_wstr w, const char *s)
{
    char buf[1024];
    assert_non_null(w.data);
    size_t n = perch_utf16le_to_utf8(w.data, w.len, buf, sizeof buf);
    assert_int_equal(n, strlen(s));
    assert_memory_equal(buf, s, n);
}

static inline void assert_astr(perch_astr a, const char *s)
{
    assert_non_null(a.data);
    assert_int_equal(a.len, strlen(s));
    assert_memory_equal(a.data, s, a.len);
}

#endif
