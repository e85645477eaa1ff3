/*
 * perch info: describes a capture file without analysing it. It prints the file header
 * (format version, feature masks), the trace info record, the PMC counter names, records,
 * chunks and bytes per record type, and where and why reading stopped when the capture is
 * incomplete (a crash while recording) or damaged. --json gives the same as one JSON object;
 * --chunks adds one line per chunk.
 *
 * Exit status: 0 for a complete capture, 1 when the file is not a capture, cannot be read, or
 * reading stopped before the end chunk (everything readable is still printed), 2 for usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "input_kind.h"
#include "out_guard.h"
#include "partial.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/json.h"

#define MAX_LISTED_CHUNKS (1u << 20)
#define MAX_COUNTER_NAMES 32

struct info {
    const char *path;
    uint64_t size;
    bool have_trace;
    perch_trace_info trace;
    char *source, *session_config;
    uint32_t counter_count;
    char *counters[MAX_COUNTER_NAMES];
    perch_capture_chunk_info *chunks;
    size_t chunk_count, chunk_cap;
    uint64_t chunks_not_listed;
    perch_capture_status status;
};

static char *dup_str(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int on_trace_info(void *ctx, const perch_trace_info *t)
{
    struct info *in = ctx;
    if (in->have_trace)
        return 0; /* the first one describes the capture */
    in->have_trace = true;
    in->trace = *t;
    in->source = dup_str(t->source);
    in->session_config = dup_str(t->session_config);
    return 0;
}

static int on_counters(void *ctx, const perch_counters_rec *c)
{
    struct info *in = ctx;
    if (in->counter_count)
        return 0; /* the first non-empty one names the counters */
    in->counter_count = c->count < MAX_COUNTER_NAMES ? c->count : MAX_COUNTER_NAMES;
    for (uint32_t i = 0; i < in->counter_count; i++)
        in->counters[i] = dup_str(c->names[i] ? c->names[i] : "");
    return 0;
}

static int on_chunk(void *ctx, const perch_capture_chunk_info *ci)
{
    struct info *in = ctx;
    if (in->chunk_count == in->chunk_cap) {
        size_t cap = in->chunk_cap ? in->chunk_cap * 2 : 256;
        perch_capture_chunk_info *p;
        if (cap > MAX_LISTED_CHUNKS || !(p = realloc(in->chunks, cap * sizeof *p))) {
            in->chunks_not_listed++;
            return 0;
        }
        in->chunks = p;
        in->chunk_cap = cap;
    }
    in->chunks[in->chunk_count++] = *ci;
    return 0;
}

static void info_free(struct info *in)
{
    free(in->source);
    free(in->session_config);
    for (uint32_t i = 0; i < in->counter_count; i++)
        free(in->counters[i]);
    free(in->chunks);
}

/* "2026-11-30T02:36:49Z" from a FILETIME, or "" when out of range. */
static void format_filetime(uint64_t ft, char out[32])
{
    const uint64_t epoch_diff = 11644473600ull;
    out[0] = '\0';
    if (ft == 0 || ft / 10000000u < epoch_diff || ft / 10000000u - epoch_diff > 253402300799ull)
        return;
    time_t secs = (time_t)(ft / 10000000u - epoch_diff);
    struct tm *tm = gmtime(&secs);
    if (tm)
        strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", tm);
}

static const char *clock_name(uint32_t clock_type)
{
    static const char *const names[] = {"unknown", "QPC", "system time", "CPU cycles"};
    return clock_type < 4 ? names[clock_type] : "unknown";
}

static const char *read_state(const perch_capture_status *st)
{
    return st->stop == PERCH_CAPTURE_STOP_END ? "complete" : "incomplete";
}

/* ---- text ------------------------------------------------------------------------------ */

/* The kernel session's configuration (one "feature: state" per line), each line under the
 * trace block's indent. */
static void print_session(const char *config)
{
    printf("          session:\n");
    for (const char *p = config; *p != '\0';) {
        size_t n = strcspn(p, "\r\n");
        if (n > 0)
            printf("            %.*s\n", (int)n, p);
        p += n;
        p += strspn(p, "\r\n");
    }
}

static void print_trace(const struct info *in)
{
    const perch_trace_info *t = &in->trace;
    char start[32], end[32];
    if (!in->have_trace) {
        printf("trace:    (no trace info record)\n");
        return;
    }
    format_filetime(t->start_filetime, start);
    format_filetime(t->end_filetime, end);
    printf("trace:    source %s\n", in->source ? in->source : "(none)");
    printf("          os build %" PRIu32 ", %" PRIu32 " cpus, pointer size %" PRIu32 "\n",
           t->os_build, t->cpu_count, t->pointer_size);
    printf("          clock %s (%" PRIu32 "), %" PRIu64 " ticks/s, start raw %" PRIu64 "\n",
           clock_name(t->clock_type), t->clock_type, t->perf_freq, t->start_raw);
    printf("          start %s (%" PRIu64 "), end %s (%" PRIu64 ")\n", start[0] ? start : "-",
           t->start_filetime, end[0] ? end : "-", t->end_filetime);
    printf("          events lost %" PRIu64 ", buffers lost %" PRIu64 "\n", t->events_lost,
           t->buffers_lost);
    if (in->session_config)
        print_session(in->session_config);
    if (in->counter_count) {
        printf("counters:");
        for (uint32_t i = 0; i < in->counter_count; i++)
            printf(" %s", in->counters[i]);
        printf("\n");
    }
}

static void print_types(const perch_capture_status *st)
{
    uint64_t records = 0, chunks = 0, bytes = 0;
    printf("%-12s %12s %8s %14s %10s\n", "type", "records", "chunks", "bytes", "B/record");
    for (unsigned t = 1; t < PERCH_CHUNK_TYPE_LIMIT; t++) {
        const perch_capture_type_stats *s = &st->types[t];
        if (!s->chunks && !s->records)
            continue;
        printf("%-12s %12" PRIu64 " %8" PRIu64 " %14" PRIu64, perch_capture_chunk_name(t),
               s->records, s->chunks, s->bytes);
        if (s->records)
            printf(" %10.2f", (double)s->bytes / (double)s->records);
        printf("\n");
        records += s->records;
        chunks += s->chunks;
        bytes += s->bytes;
    }
    printf("%-12s %12" PRIu64 " %8" PRIu64 " %14" PRIu64 "\n", "total", records, chunks, bytes);
    if (st->unknown_chunks)
        printf("unknown chunk types skipped: %" PRIu64 " chunks\n", st->unknown_chunks);
}

static void print_chunks(const struct info *in)
{
    printf("%-14s %-12s %10s %10s\n", "offset", "type", "payload", "records");
    for (size_t i = 0; i < in->chunk_count; i++) {
        const perch_capture_chunk_info *c = &in->chunks[i];
        const char *name = perch_capture_chunk_name(c->type);
        char unknown[16];
        if (!name) {
            snprintf(unknown, sizeof unknown, "type-%" PRIu32, c->type);
            name = unknown;
        }
        printf("%-14" PRIu64 " %-12s %10" PRIu32 " %10" PRIu64 "\n", c->offset, name,
               c->payload_len, c->records);
    }
    if (in->chunks_not_listed)
        printf("(%" PRIu64 " more chunks not listed)\n", in->chunks_not_listed);
}

static void print_text(const struct info *in, bool list_chunks)
{
    const perch_capture_status *st = &in->status;
    printf("file:     %s (%" PRIu64 " bytes)\n", in->path, in->size);
    printf("format:   version %" PRIu32 ", header %" PRIu32 " bytes, required features 0x%" PRIx64
           ", optional features 0x%" PRIx64 "\n",
           st->version, st->header_size, st->required_features, st->optional_features);
    print_trace(in);
    print_types(st);
    if (list_chunks)
        print_chunks(in);
    if (st->stop == PERCH_CAPTURE_STOP_END) {
        printf("read:     complete, end chunk ends at offset %" PRIu64, st->offset);
        if (st->trailing_bytes)
            printf(" (%" PRIu64 " trailing bytes ignored)", st->trailing_bytes);
        printf("\n");
    } else {
        printf("read:     stopped (%s) at offset %" PRIu64 ": %s\n"
               "          %" PRIu64 " complete chunks, good through byte %" PRIu64 "\n",
               perch_capture_stop_name(st->stop), st->offset, st->reason, st->chunks,
               st->good_bytes);
    }
}

/* ---- json ------------------------------------------------------------------------------ */

static void json_kv_uint(perch_json *j, const char *key, uint64_t v)
{
    perch_json_key(j, key);
    perch_json_uint(j, v);
}

static void json_kv_str(perch_json *j, const char *key, const char *s)
{
    perch_json_key(j, key);
    if (s)
        perch_json_string(j, s);
    else
        perch_json_null(j);
}

static void json_trace(perch_json *j, const struct info *in)
{
    const perch_trace_info *t = &in->trace;
    char start[32], end[32];
    perch_json_key(j, "trace");
    if (!in->have_trace) {
        perch_json_null(j);
        return;
    }
    format_filetime(t->start_filetime, start);
    format_filetime(t->end_filetime, end);
    perch_json_begin_object(j);
    json_kv_str(j, "source", in->source);
    json_kv_uint(j, "os_build", t->os_build);
    json_kv_uint(j, "cpu_count", t->cpu_count);
    json_kv_uint(j, "pointer_size", t->pointer_size);
    json_kv_uint(j, "clock_type", t->clock_type);
    json_kv_uint(j, "perf_freq", t->perf_freq);
    json_kv_uint(j, "start_filetime", t->start_filetime);
    json_kv_str(j, "start", start[0] ? start : NULL);
    json_kv_uint(j, "end_filetime", t->end_filetime);
    json_kv_str(j, "end", end[0] ? end : NULL);
    json_kv_uint(j, "start_raw", t->start_raw);
    json_kv_uint(j, "events_lost", t->events_lost);
    json_kv_uint(j, "buffers_lost", t->buffers_lost);
    json_kv_str(j, "session_config", in->session_config);
    perch_json_end_object(j);
    perch_json_key(j, "counters");
    perch_json_begin_array(j);
    for (uint32_t i = 0; i < in->counter_count; i++)
        perch_json_string(j, in->counters[i] ? in->counters[i] : "");
    perch_json_end_array(j);
}

static void json_types(perch_json *j, const perch_capture_status *st)
{
    perch_json_key(j, "records");
    perch_json_begin_object(j);
    for (unsigned t = 1; t < PERCH_CHUNK_TYPE_LIMIT; t++) {
        const perch_capture_type_stats *s = &st->types[t];
        perch_json_key(j, perch_capture_chunk_name(t));
        perch_json_begin_object(j);
        json_kv_uint(j, "records", s->records);
        json_kv_uint(j, "chunks", s->chunks);
        json_kv_uint(j, "bytes", s->bytes);
        perch_json_end_object(j);
    }
    perch_json_end_object(j);
    json_kv_uint(j, "chunks", st->chunks);
    json_kv_uint(j, "unknown_chunks", st->unknown_chunks);
}

static void json_chunks(perch_json *j, const struct info *in)
{
    perch_json_key(j, "chunk_list");
    perch_json_begin_array(j);
    for (size_t i = 0; i < in->chunk_count; i++) {
        const perch_capture_chunk_info *c = &in->chunks[i];
        perch_json_begin_object(j);
        json_kv_uint(j, "offset", c->offset);
        json_kv_uint(j, "type", c->type);
        json_kv_str(j, "name", perch_capture_chunk_name(c->type));
        json_kv_uint(j, "payload", c->payload_len);
        json_kv_uint(j, "records", c->records);
        perch_json_end_object(j);
    }
    perch_json_end_array(j);
}

static void json_read(perch_json *j, const perch_capture_status *st)
{
    perch_json_key(j, "read");
    perch_json_begin_object(j);
    perch_json_key(j, "complete");
    perch_json_bool(j, st->stop == PERCH_CAPTURE_STOP_END);
    json_kv_str(j, "stop", perch_capture_stop_name(st->stop));
    json_kv_str(j, "error", st->error ? perch_err_name(st->error) : NULL);
    json_kv_uint(j, "offset", st->offset);
    json_kv_uint(j, "good_bytes", st->good_bytes);
    json_kv_uint(j, "trailing_bytes", st->trailing_bytes);
    json_kv_str(j, "reason", st->reason[0] ? st->reason : NULL);
    perch_json_end_object(j);
}

static int print_json(const struct info *in, bool list_chunks)
{
    const perch_capture_status *st = &in->status;
    perch_json j;
    char mask[24];
    perch_json_init(&j, perch_json_file_sink, stdout);
    perch_json_begin_object(&j);
    json_kv_str(&j, "file", in->path);
    json_kv_uint(&j, "size", in->size);
    perch_json_key(&j, "format");
    perch_json_begin_object(&j);
    json_kv_uint(&j, "version", st->version);
    json_kv_uint(&j, "header_size", st->header_size);
    snprintf(mask, sizeof mask, "0x%" PRIx64, st->required_features);
    json_kv_str(&j, "required_features", mask);
    snprintf(mask, sizeof mask, "0x%" PRIx64, st->optional_features);
    json_kv_str(&j, "optional_features", mask);
    perch_json_end_object(&j);
    json_trace(&j, in);
    json_types(&j, st);
    if (list_chunks)
        json_chunks(&j, in);
    json_read(&j, st);
    perch_json_end_object(&j);
    perch_json_newline(&j);
    return perch_json_flush(&j);
}

/* ---- command --------------------------------------------------------------------------- */

static int usage(FILE *out)
{
    fprintf(out, "Usage: perch info [--json] [--chunks] FILE.perch\n\n"
                 "Describes a capture: format version and features, trace info, counter names,\n"
                 "records, chunks and bytes per record type, and where and why reading stopped\n"
                 "if the capture is incomplete or damaged.\n\n"
                 "  --json     one JSON object instead of text\n"
                 "  --chunks   also list every chunk (offset, type, payload bytes, records)\n");
    return out == stdout ? 0 : 2;
}

static int describe(struct info *in, bool json, bool list_chunks)
{
    perch_input input;
    perch_sink sink = {0};
    perch_capture_read_opts opts = {sizeof opts, on_chunk, in, false, false};
    char what[1100];
    int err = perch_input_open_file(&input, in->path);
    snprintf(what, sizeof what, "info: %s", in->path);
    if (err)
        return perch_cli_error(what, err);
    in->size = input.size;
    bool capture = perch_cli_is_capture(&input);
    sink.ctx = in;
    sink.trace_info = on_trace_info;
    sink.counters = on_counters;
    perch_capture_replay_ex(&input, &sink, &opts, &in->status);
    bool joined, trailing = perch_cli_capture_trailing(&input, &in->status, &joined);
    perch_input_close(&input);
    if (in->status.stop == PERCH_CAPTURE_STOP_BAD_HEADER ||
        in->status.stop == PERCH_CAPTURE_STOP_IO) {
        fprintf(stderr, "perch: %s: %s\n", what, in->status.reason);
        if (!capture && in->size >= 8 && in->status.stop == PERCH_CAPTURE_STOP_BAD_HEADER)
            fprintf(stderr,
                    "perch: info describes captures; for an .etl trace, 'perch report \"%s\"' "
                    "reads it and 'perch import \"%s\" -o OUT.perch' makes a capture\n",
                    in->path, in->path); /* not for a file too short to be either */
        return 1;
    }
    err = json ? print_json(in, list_chunks) : (print_text(in, list_chunks), fflush(stdout));
    if (err)
        return perch_cli_error("standard output", perch_cli_stdio_error());
    if (perch_cli_capture_partial(&in->status)) {
        perch_cli_warn_capture("info", in->path, &in->status, in->size);
        return PERCH_EXIT_PARTIAL;
    }
    if (trailing) { /* described above; as report and export say it */
        perch_cli_warn_trailing("info", in->path, &in->status, joined);
        return PERCH_EXIT_PARTIAL;
    }
    if (in->status.stop != PERCH_CAPTURE_STOP_END) {
        fprintf(stderr, "perch: %s: %s capture: %s\n", what, read_state(&in->status),
                in->status.reason);
        return 1;
    }
    return 0;
}

int perch_cmd_info(int argc, char **argv)
{
    struct info in;
    bool json = false, list_chunks = false;
    memset(&in, 0, sizeof in);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return usage(stdout);
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--chunks") == 0)
            list_chunks = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "perch: info: unknown option '%s'\n\n", argv[i]);
            return usage(stderr);
        } else if (in.path) {
            fprintf(stderr, "perch: info: one capture file at a time\n\n");
            return usage(stderr);
        } else
            in.path = argv[i];
    }
    if (!in.path)
        return usage(stderr);
    int status = describe(&in, json, list_chunks);
    info_free(&in);
    return status;
}
