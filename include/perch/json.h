/*
 * A small streaming JSON writer for Perch's outputs (perch dump, report --json, exports).
 *
 * The writer tracks nesting and commas, escapes strings, and buffers output in a fixed-size
 * internal buffer that it hands to a sink callback. It never allocates. Keys and values are
 * written in order; a key must be written before each value inside an object.
 */
#ifndef PERCH_JSON_H
#define PERCH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receives n bytes of output; returns 0 or a negative PERCH_E* that the writer remembers. */
typedef int (*perch_json_sink)(void *ctx, const char *data, size_t n);

#define PERCH_JSON_MAX_DEPTH 32
#define PERCH_JSON_BUFFER    8192

typedef struct perch_json {
    perch_json_sink sink;
    void *ctx;
    int error; /* first error from the sink or from misuse; sticky */
    int depth;
    bool need_comma[PERCH_JSON_MAX_DEPTH];
    bool after_key;
    size_t used;
    char buf[PERCH_JSON_BUFFER];
} perch_json;

/* Initializes w to write to sink(ctx). The caller owns w. */
void perch_json_init(perch_json *w, perch_json_sink sink, void *ctx);

/* A sink that writes to the FILE * passed as ctx. */
int perch_json_file_sink(void *ctx, const char *data, size_t n);

void perch_json_begin_object(perch_json *w);
void perch_json_end_object(perch_json *w);
void perch_json_begin_array(perch_json *w);
void perch_json_end_array(perch_json *w);
void perch_json_key(perch_json *w, const char *key);
void perch_json_string(perch_json *w, const char *s);
/* How many of s's first n bytes a string writes as they are, up to the first that needs an
 * escape or a UTF-8 check: printable ASCII other than '"' and '\\'. */
size_t perch_json_plain_prefix(const char *s, size_t n);
/* A string of n bytes (UTF-8 expected; invalid bytes are written as \u00XX escapes). */
void perch_json_string_n(perch_json *w, const char *s, size_t n);
void perch_json_uint(perch_json *w, uint64_t v);
void perch_json_int(perch_json *w, int64_t v);
void perch_json_double(perch_json *w, double v);
void perch_json_bool(perch_json *w, bool v);
void perch_json_null(perch_json *w);
/* A number written as a lower-case hexadecimal string, "0x1f". */
void perch_json_hex(perch_json *w, uint64_t v);
/* Raw text written as-is at a value position (caller guarantees it is valid JSON). */
void perch_json_raw(perch_json *w, const char *text);
/* The same for n bytes of text (several comma-separated array values may go in one call). */
void perch_json_raw_n(perch_json *w, const char *text, size_t n);
/* Room in w's buffer for raw value text of at most max bytes (max < PERCH_JSON_BUFFER), its
 * separator already written: where the caller formats the text in place, then hands its
 * length to perch_json_commit before any other call on w. The bytes perch_json_raw_n of the
 * same text writes, without formatting it elsewhere first. */
char *perch_json_reserve(perch_json *w, size_t max);
static inline void perch_json_commit(perch_json *w, size_t n)
{
    w->used += n;
}
/* Inside an object: n bytes of members text, `"key":value,"key2":value2`, written as the
 * key and value calls for them would write it (the caller guarantees it is valid JSON). */
void perch_json_raw_members(perch_json *w, const char *text, size_t n);
/* n bytes written as they are, with no separator and the nesting and comma state unchanged:
 * text another writer formatted at this position of the same document. */
void perch_json_verbatim(perch_json *w, const char *text, size_t n);
/* Ends a top-level value with '\n' (JSON Lines) and resets comma state for the next one. */
void perch_json_newline(perch_json *w);

/* Flushes buffered output to the sink; returns the writer's sticky error (0 if none). */
int perch_json_flush(perch_json *w);

#ifdef __cplusplus
}
#endif

#endif
