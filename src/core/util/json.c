/*
 * Streaming JSON writer; see include/perch/json.h. Output is batched in a fixed buffer so that
 * writing millions of small values (perch dump) costs few sink calls.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/json.h"
#include "perch/utf16.h"

void perch_json_init(perch_json *w, perch_json_sink sink, void *ctx)
{
    memset(w, 0, sizeof *w - sizeof w->buf);
    w->sink = sink;
    w->ctx = ctx;
}

int perch_json_file_sink(void *ctx, const char *data, size_t n)
{
    return fwrite(data, 1, n, (FILE *)ctx) == n ? 0 : PERCH_EIO;
}

int perch_json_flush(perch_json *w)
{
    if (w->used && !w->error)
        w->error = w->sink(w->ctx, w->buf, w->used);
    w->used = 0;
    return w->error;
}

static void put(perch_json *w, const char *s, size_t n)
{
    if (w->used + n > sizeof w->buf) {
        perch_json_flush(w);
        if (n > sizeof w->buf) {
            if (!w->error)
                w->error = w->sink(w->ctx, s, n);
            return;
        }
    }
    memcpy(w->buf + w->used, s, n);
    w->used += n;
}

static void put_char(perch_json *w, char c)
{
    if (w->used == sizeof w->buf)
        perch_json_flush(w);
    w->buf[w->used++] = c;
}

/* Emits the separator a new value needs at the current position. */
static void before_value(perch_json *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            put_char(w, ',');
        w->need_comma[w->depth] = true;
    }
}

static void open_scope(perch_json *w, char c)
{
    before_value(w);
    put_char(w, c);
    if (w->depth + 1 >= PERCH_JSON_MAX_DEPTH) {
        w->error = w->error ? w->error : PERCH_ELIMIT;
        return;
    }
    w->depth++;
    w->need_comma[w->depth] = false;
}

static void close_scope(perch_json *w, char c)
{
    put_char(w, c);
    if (w->depth > 0)
        w->depth--;
}

void perch_json_begin_object(perch_json *w)
{
    open_scope(w, '{');
}

void perch_json_end_object(perch_json *w)
{
    close_scope(w, '}');
}

void perch_json_begin_array(perch_json *w)
{
    open_scope(w, '[');
}

void perch_json_end_array(perch_json *w)
{
    close_scope(w, ']');
}

/* What each byte needs inside a string: 0 nothing, 1 a two-byte escape (\" \\ \n \r \t),
 * 2 a \u00XX escape (other controls and DEL), 3 a UTF-8 check (bytes >= 0x80). */
static const uint8_t esc_class[256] = {
    2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 2, 2, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
};

/* The escape of byte c (class 1 or 2) into esc; returns its length. */
static size_t escape_of(unsigned char c, char esc[6])
{
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\';
    if (esc_class[c] == 1) {
        esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : (char)c;
        return 2;
    }
    memcpy(esc + 1, "u00", 3);
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 15];
    return 6;
}

/* Whether any of the eight bytes in x is outside 0x20-0x7e or is '"' or '\\' (class 0 is
 * exactly the rest), by whole-word arithmetic: a byte below 0x20 borrows in x - 0x20 per byte
 * while its top bit was clear; a byte of 0x7f or more sets the top bit of x or of x + 1 per
 * byte (no carry crosses a byte until one does); a byte equal to c leaves a zero byte in
 * x ^ c, found the same way as a byte below 1. Each test may also fire on a byte above one
 * that fired, never when no byte is outside. */
static inline bool needs_look(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t low = (x - ones * 0x20) & ~x;
    uint64_t top = x | (x + ones);
    uint64_t eq = ((q - ones) & ~q) | ((b - ones) & ~b);
    return ((low | top | eq) & high) != 0;
}

/* The length of the plain prefix of u (n bytes), copied to o on the way when o is not NULL
 * (inlined with o NULL, the copies are gone). */
static inline size_t scan_plain(const unsigned char *u, size_t n, char *o)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* eight bytes a step while none needs a look */
        uint64_t x;
        memcpy(&x, u + i, 8);
        if (needs_look(x))
            break;
        if (o)
            memcpy(o + i, &x, 8);
    }
    for (; i < n && esc_class[u[i]] == 0; i++)
        if (o)
            o[i] = (char)u[i];
    return i;
}

size_t perch_json_plain_prefix(const char *s, size_t n)
{
    return scan_plain((const unsigned char *)s, n, NULL);
}

/* Non-ASCII bytes pass through when they form valid UTF-8; each other byte is written as
 * \u00XX (read as Latin-1, close to the ANSI code page of a payload's 8-bit strings), so the
 * output is valid JSON text whatever bytes a trace carried. Runs of plain bytes are copied
 * at once. */
static void put_escaped(perch_json *w, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    if (w->used + n + 2 <= sizeof w->buf) { /* fast path: room, and no byte to escape */
        char *o = w->buf + w->used;
        if (scan_plain(u, n, o + 1) == n) {
            o[0] = '"';
            o[n + 1] = '"';
            w->used += n + 2;
            return;
        }
    }
    put_char(w, '"');
    while (i < n) {
        size_t run = i + perch_json_plain_prefix(s + i, n - i);
        if (run > i)
            put(w, s + i, run - i);
        if (run == n)
            break;
        char esc[6];
        size_t k = esc_class[u[run]] == 3 ? perch_utf8_seq_len(u + run, n - run) : 0;
        if (k > 0)
            put(w, s + run, k);
        else
            put(w, esc, escape_of(u[run], esc));
        i = run + (k ? k : 1);
    }
    put_char(w, '"');
}

void perch_json_key(perch_json *w, const char *key)
{
    before_value(w);
    put_escaped(w, key, strlen(key));
    put_char(w, ':');
    w->after_key = true;
}

void perch_json_string_n(perch_json *w, const char *s, size_t n)
{
    before_value(w);
    put_escaped(w, s, n);
}

void perch_json_string(perch_json *w, const char *s)
{
    perch_json_string_n(w, s, strlen(s));
}

static void put_number(perch_json *w, const char *text, int len)
{
    before_value(w);
    if (len > 0)
        put(w, text, (size_t)len);
}

void perch_json_uint(perch_json *w, uint64_t v)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_number(w, p, (int)(tmp + sizeof tmp - p));
}

void perch_json_int(perch_json *w, int64_t v)
{
    char tmp[24];
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        *--p = '-';
    put_number(w, p, (int)(tmp + sizeof tmp - p));
}

void perch_json_double(perch_json *w, double v)
{
    char tmp[40];
    if (v != v || v > 1e308 || v < -1e308) {
        perch_json_null(w);
        return;
    }
    put_number(w, tmp, snprintf(tmp, sizeof tmp, "%.17g", v));
}

void perch_json_bool(perch_json *w, bool v)
{
    put_number(w, v ? "true" : "false", v ? 4 : 5);
}

void perch_json_null(perch_json *w)
{
    put_number(w, "null", 4);
}

void perch_json_hex(perch_json *w, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "\"0x%" PRIx64 "\"", v);
    put_number(w, tmp, n);
}

void perch_json_raw(perch_json *w, const char *text)
{
    perch_json_raw_n(w, text, strlen(text));
}

void perch_json_raw_n(perch_json *w, const char *text, size_t n)
{
    before_value(w);
    put(w, text, n);
}

char *perch_json_reserve(perch_json *w, size_t max)
{
    if (w->used + max + 1 > sizeof w->buf) /* the text and its separator */
        perch_json_flush(w);
    before_value(w);
    return w->buf + w->used;
}

void perch_json_raw_members(perch_json *w, const char *text, size_t n)
{
    before_value(w);
    put(w, text, n);
}

void perch_json_verbatim(perch_json *w, const char *text, size_t n)
{
    put(w, text, n);
}

void perch_json_newline(perch_json *w)
{
    put_char(w, '\n');
    w->depth = 0;
    w->need_comma[0] = false;
    w->after_key = false;
}
