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

/* Non-ASCII bytes pass through when they form valid UTF-8; each other byte is written as
 * \u00XX (read as Latin-1, close to the ANSI code page of a payload's 8-bit strings), so the
 * output is valid JSON text whatever bytes a trace carried. */
static void put_escaped(perch_json *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    put_char(w, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            size_t k = perch_utf8_seq_len((const uint8_t *)s + i, n - i);
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (k == 0)
                put(w, esc, 6);
            else
                put(w, s + i, k);
            i += k ? k - 1 : 0;
        } else if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(w, esc, 2);
        } else if (c == '\n' || c == '\r' || c == '\t') {
            char esc[2] = {'\\', c == '\n' ? 'n' : c == '\r' ? 'r' : 't'};
            put(w, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(w, esc, 6);
        } else {
            put_char(w, (char)c);
        }
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
    put_number(w, tmp, snprintf(tmp, sizeof tmp, "%" PRId64, v));
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
    put_number(w, text, (int)strlen(text));
}

void perch_json_newline(perch_json *w)
{
    put_char(w, '\n');
    w->depth = 0;
    w->need_comma[0] = false;
    w->after_key = false;
}
