/*
 * perch dump: prints the records of an .etl file in time order as JSON Lines, or with
 * --summary one JSON object with the logfile header, record counts by kind and the reader's
 * error counts. Damage found while reading (a truncated file, a corrupt buffer) is reported
 * on stderr with its byte offset after everything readable was printed, and makes the exit
 * status 1. One function (write_record) writes a record; events Perch decodes carry their
 * decoded fields in a "fields" object, and events that fail to decode a "decode_error" object
 * (the summary counts both). The reading runs on a thread of its own ahead of the printing
 * (PERCH_THREADS=1: one thread); the output is the same. A summary without --limit counts
 * the records with the reader's unordered pass instead (no time-order merge, no copy through
 * a queue): two readers, each over half of the CPUs on a thread of its own (one with
 * PERCH_THREADS=1); it reads the file again in time order in the rare case where that pass
 * cannot give the same figures (errors of one reason on several CPUs; any read error).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "input_kind.h"
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/json.h"
#include "perch/kind.h"
#include "perch/pipeline.h"
#include "perch/thread.h"

struct dump_args {
    const char *path;
    bool summary;
    uint64_t limit; /* 0: no limit */
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch dump [--summary] [--limit N] FILE.etl\n\n"
                 "Prints every record of FILE.etl in time order as one JSON object per line:\n"
                 "ts (raw clock), cpu, pid, tid (null when the header has none), provider,\n"
                 "opcode, version, kind, len (payload bytes), hook (kernel records), pmc, and\n"
                 "the decoded fields of every event Perch decodes (\"fields\"), or why\n"
                 "decoding failed (\"decode_error\").\n\n"
                 "  --summary   print one JSON object: header, records, by_kind, errors, decode\n"
                 "  --limit N   stop after N records\n"
                 "  --help      show this help\n");
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct dump_args *a)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--summary") == 0) {
            a->summary = true;
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            a->limit = strtoull(argv[++i], &end, 10);
            if (errno != 0 || *end != '\0' || argv[i][0] == '-' || a->limit == 0) {
                fprintf(stderr, "perch dump: --limit needs a positive number\n");
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "perch dump: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (a->path == NULL) {
            a->path = argv[i];
        } else {
            fprintf(stderr, "perch dump: only one file may be given\n");
            return 2;
        }
    }
    if (a->path == NULL) {
        usage(stderr);
        return 2;
    }
    return -1;
}

static void write_guid(perch_json *w, const perch_guid *g)
{
    char text[37];
    perch_guid_format(g, text);
    perch_json_string(w, text);
}

static void write_id(perch_json *w, const perch_event *ev, uint32_t v)
{
    if (ev->flags & PERCH_EVENT_HAS_TID)
        perch_json_uint(w, v);
    else
        perch_json_null(w);
}

/* One record as one JSON object (no newline). */
/* Writes the "fields" of a decoded event, or a "decode_error" saying why it failed. */
static void write_decoded(perch_json *w, const perch_event *ev, int rc, const perch_decoded *d,
                          const perch_decode_diag *diag)
{
    if (rc == 0) {
        perch_decoded_write_json(w, d);
        return;
    }
    if (rc == PERCH_EUNKNOWN)
        return;
    perch_json_key(w, "decode_error");
    perch_json_begin_object(w);
    perch_json_key(w, "code");
    perch_json_string(w, perch_err_name(rc));
    perch_json_key(w, "what");
    perch_json_string(w, diag->what ? diag->what : "");
    perch_json_key(w, "offset");
    perch_json_uint(w, diag->offset);
    perch_json_end_object(w);
}

static void write_record(perch_json *w, const perch_event *ev, perch_decode_stats *ds)
{
    perch_decoded d;
    perch_decode_diag diag = {0, 0, 0, NULL};
    int rc = perch_decode(ev, &d, &diag);
    perch_decode_stats_add(ds, rc, &d);
    perch_kind kind = perch_event_kind(ev);
    perch_json_begin_object(w);
    perch_json_key(w, "ts");
    perch_json_uint(w, ev->timestamp);
    perch_json_key(w, "cpu");
    perch_json_uint(w, ev->cpu);
    perch_json_key(w, "pid");
    write_id(w, ev, ev->pid);
    perch_json_key(w, "tid");
    write_id(w, ev, ev->tid);
    perch_json_key(w, "provider");
    write_guid(w, &ev->provider);
    if (ev->group != PERCH_GROUP_NONE) {
        perch_json_key(w, "hook");
        perch_json_hex(w, ev->hook);
    } else if (ev->header_kind == PERCH_HEADER_EVENT) {
        perch_json_key(w, "id");
        perch_json_uint(w, ev->event_id);
    }
    perch_json_key(w, "opcode");
    perch_json_uint(w, ev->opcode);
    perch_json_key(w, "version");
    perch_json_uint(w, ev->version);
    perch_json_key(w, "kind");
    if (kind < PERCH_KIND_OTHER_KERNEL)
        perch_json_string(w, perch_kind_name(kind));
    else
        perch_json_null(w);
    perch_json_key(w, "len");
    perch_json_uint(w, ev->payload_len);
    if (ev->pmc_count > 0) {
        perch_json_key(w, "pmc");
        perch_json_begin_array(w);
        for (unsigned i = 0; i < ev->pmc_count; i++)
            perch_json_uint(w, ev->pmc[i]);
        perch_json_end_array(w);
    }
    if (ev->flags & PERCH_EVENT_HAS_PEBS) {
        perch_json_key(w, "pebs");
        perch_json_uint(w, ev->pebs_index);
    }
    write_decoded(w, ev, rc, &d, &diag);
    perch_json_end_object(w);
}

static void write_decode_counts(perch_json *w, const perch_decode_stats *ds)
{
    perch_json_key(w, "decode");
    perch_json_begin_object(w);
    perch_json_key(w, "decoded");
    perch_json_uint(w, ds->decoded);
    perch_json_key(w, "newer_version");
    perch_json_uint(w, ds->newer_version);
    perch_json_key(w, "not_decoded");
    perch_json_uint(w, ds->unknown);
    perch_json_key(w, "errors");
    perch_json_uint(w, ds->errors);
    perch_json_end_object(w);
}

static void write_header(perch_json *w, const perch_etl_header *h)
{
    perch_json_key(w, "header");
    perch_json_begin_object(w);
    perch_json_key(w, "pointer_size");
    perch_json_uint(w, h->pointer_size);
    perch_json_key(w, "perf_freq");
    perch_json_uint(w, h->perf_freq);
    perch_json_key(w, "start_time");
    perch_json_uint(w, h->start_time);
    perch_json_key(w, "end_time");
    perch_json_uint(w, h->end_time);
    perch_json_key(w, "cpus");
    perch_json_uint(w, h->cpus);
    perch_json_key(w, "events_lost");
    perch_json_uint(w, h->events_lost);
    perch_json_key(w, "buffers_lost");
    perch_json_uint(w, h->buffers_lost);
    perch_json_key(w, "build");
    perch_json_uint(w, h->build);
    perch_json_key(w, "clock_type");
    perch_json_uint(w, h->clock_type);
    perch_json_key(w, "buffer_size");
    perch_json_uint(w, h->buffer_size);
    perch_json_key(w, "log_file_mode");
    perch_json_hex(w, h->log_file_mode);
    perch_json_key(w, "logger_name");
    perch_json_string(w, h->logger_name);
    perch_json_end_object(w);
}

static void write_counts(perch_json *w, const perch_etl_stats *st)
{
    perch_json_key(w, "records");
    perch_json_uint(w, st->records);
    perch_json_key(w, "by_kind");
    perch_json_begin_object(w);
    for (int k = 0; k < PERCH_KIND_COUNT; k++) {
        perch_json_key(w, perch_kind_name((perch_kind)k));
        perch_json_uint(w, st->by_kind[k]);
    }
    perch_json_end_object(w);
    perch_json_key(w, "buffers");
    perch_json_uint(w, st->buffers);
    perch_json_key(w, "compressed_buffers");
    perch_json_uint(w, st->compressed_buffers);
    perch_json_key(w, "skipped_records");
    perch_json_uint(w, st->skipped_records);
    perch_json_key(w, "errors");
    perch_json_begin_object(w);
    for (int i = 0; i < PERCH_ETL_REASON_COUNT; i++) {
        if (st->errors[i] == 0)
            continue;
        perch_json_key(w, perch_etl_reason_name((perch_etl_reason)i));
        perch_json_uint(w, st->errors[i]);
    }
    perch_json_end_object(w);
}

/* Prints one line per error reason; returns the number of errors. */
static uint64_t report_errors(const char *path, const perch_etl_stats *st)
{
    uint64_t total = 0;
    for (int i = 0; i < PERCH_ETL_REASON_COUNT; i++) {
        perch_etl_reason reason = (perch_etl_reason)i;
        if (st->errors[i] == 0)
            continue;
        total += st->errors[i];
        fprintf(stderr, "perch dump: %s: %s (%s: %llu time(s), last at byte offset %llu", path,
                perch_etl_reason_text(reason), perch_etl_reason_name(reason),
                (unsigned long long)st->errors[i], (unsigned long long)st->error_offset[i]);
        if (st->error_record[i] != 0)
            fprintf(stderr, ", record at +0x%x in its decoded buffer",
                    (unsigned)st->error_record[i]);
        fprintf(stderr, ")\n");
    }
    return total;
}

/* Where the records come from: the reader itself, or its thread (feeder) through a queue. */
struct records {
    perch_etl_reader *r;
    perch_etl_feeder *f; /* NULL: one thread */
};

/* Starts the reader thread unless PERCH_THREADS=1; one thread when none can be had. */
static int open_records(perch_etl_reader *r, uint64_t limit, struct records *rs)
{
    unsigned threads;
    rs->r = r;
    rs->f = NULL;
    if (perch_cli_threads(&threads) < 0)
        return PERCH_EINVAL;
    if (threads != 1 && perch_etl_feeder_start(r, 0, limit, &rs->f) < 0)
        rs->f = NULL;
    return 0;
}

static int next_record(struct records *rs, perch_event *ev)
{
    if (rs->f == NULL)
        return perch_etl_next(rs->r, ev);
    return perch_event_queue_pop(perch_etl_feeder_queue(rs->f), ev, UINT32_MAX);
}

/* Joins the reader thread: the reader's stats are final after this. Returns err, or the
 * reader's own error when it stopped the records. */
static int close_records(struct records *rs, int err)
{
    int read_err = perch_etl_feeder_finish(rs->f);
    rs->f = NULL;
    return err == PERCH_EOF && read_err < 0 ? read_err : err;
}

static void write_summary(perch_json *w, const perch_etl_header *h, const perch_etl_stats *st,
                          const perch_decode_stats *ds)
{
    perch_json_begin_object(w);
    write_header(w, h);
    write_counts(w, st);
    write_decode_counts(w, ds);
    perch_json_end_object(w);
    perch_json_newline(w);
}

/* One part of the unordered pass: its reader (opened by its thread for parts after the
 * first) and what it counted. */
struct part {
    const char *path;
    perch_etl_reader *r;
    unsigned index, count;
    perch_decode_stats ds;
    int err;
};

static void count_part(struct part *p)
{
    perch_event ev;
    int err = perch_etl_unordered_part(p->r, p->index, p->count);
    memset(&p->ds, 0, sizeof p->ds);
    while (err == 0 && (err = perch_etl_next_unordered(p->r, &ev)) == 0) {
        perch_decoded d;
        perch_decode_stats_add(&p->ds, perch_decode(&ev, &d, NULL), &d);
    }
    p->err = err == PERCH_EOF ? 0 : err;
}

static int part_thread(void *arg)
{
    struct part *p = arg;
    p->err = perch_etl_open_file(p->path, NULL, &p->r, NULL);
    if (p->err == 0)
        count_part(p);
    return 0;
}

static void add_decode_counts(perch_decode_stats *to, const perch_decode_stats *from)
{
    to->decoded += from->decoded;
    to->newer_version += from->newer_version;
    to->unknown += from->unknown;
    to->errors += from->errors;
    for (int t = 0; t < PERCH_DECODED_TYPE_COUNT; t++)
        to->by_type[t] += from->by_type[t];
}

/* The summary from the unordered pass: two parts of the file on two threads (one with
 * PERCH_THREADS=1). Returns true when it was written, with the reader's stats in *st; false
 * when the file must be read again in time order for the same figures (nothing written). */
static bool summary_unordered(perch_etl_reader *r, const char *path, perch_json *w,
                              perch_etl_stats *st)
{
    struct part parts[2] = {{path, r, 0, 2, {0}, 0}, {path, NULL, 1, 2, {0}, 0}};
    perch_etl_reader *readers[2] = {r, NULL};
    perch_thread *t = NULL;
    unsigned threads, n = 2;
    int joined = 0;
    bool ok;
    if (perch_cli_threads(&threads) < 0 || threads == 1 ||
        perch_thread_start(part_thread, &parts[1], "perch-dump", &t) < 0)
        n = parts[0].count = 1;
    count_part(&parts[0]);
    if (n == 2 && perch_thread_join(t, &joined) < 0)
        parts[1].err = PERCH_ESTATE;
    readers[1] = parts[1].r;
    ok = parts[0].err == 0 && parts[1].err == 0 && perch_etl_stats_of_parts(readers, n, st);
    if (ok) {
        add_decode_counts(&parts[0].ds, &parts[1].ds);
        write_summary(w, perch_etl_header_of(r), st, &parts[0].ds);
    }
    perch_etl_destroy(parts[1].r);
    return ok;
}

static int run(perch_etl_reader *r, const struct dump_args *a, perch_json *w)
{
    perch_event ev;
    perch_decode_stats ds;
    struct records rs;
    uint64_t n = 0;
    int err = open_records(r, a->limit, &rs);
    if (err < 0)
        return err;
    memset(&ds, 0, sizeof ds);
    while ((a->limit == 0 || n < a->limit) && (err = next_record(&rs, &ev)) == 0) {
        n++;
        if (a->summary) {
            perch_decoded d;
            perch_decode_stats_add(&ds, perch_decode(&ev, &d, NULL), &d);
        } else {
            write_record(w, &ev, &ds);
            perch_json_newline(w);
        }
    }
    if (a->limit != 0 && n == a->limit)
        err = PERCH_EOF;
    err = close_records(&rs, err);
    if (a->summary)
        write_summary(w, perch_etl_header_of(r), perch_etl_stats_of(r), &ds);
    return err == PERCH_EOF ? 0 : err;
}

static int open_reader(const char *path, perch_etl_reader **r)
{
    perch_etl_open_error diag = {0, 0, NULL};
    int err = perch_etl_open_file(path, NULL, r, &diag);
    if (err < 0)
        fprintf(stderr, "perch dump: %s: %s (%s, at byte offset %llu)\n", path, perch_strerror(err),
                diag.what ? diag.what : "cannot open", (unsigned long long)diag.offset);
    return err;
}

/* A summary without --limit comes from the unordered pass when it can (true, with the
 * reader's stats in *st); otherwise *r is a fresh reader for the time-order pass, or NULL
 * when the file cannot be opened again. */
static bool summarized(const struct dump_args *a, perch_etl_reader **r, perch_json *w,
                       perch_etl_stats *st)
{
    if (!a->summary || a->limit != 0)
        return false;
    if (summary_unordered(*r, a->path, w, st))
        return true;
    perch_etl_destroy(*r);
    *r = NULL;
    if (open_reader(a->path, r) < 0)
        *r = NULL;
    return false;
}

int perch_cmd_dump(int argc, char **argv)
{
    struct dump_args a = {NULL, false, 0};
    perch_etl_reader *r = NULL;
    perch_etl_stats st;
    perch_json *w;
    uint64_t damaged;
    int status = parse_args(argc, argv, &a), err = 0;
    if (status >= 0)
        return status;
    if (open_reader(a.path, &r) < 0)
        return 1;
    w = malloc(sizeof *w);
    if (w == NULL) {
        perch_etl_destroy(r);
        return perch_cli_error("dump", PERCH_ENOMEM);
    }
    perch_json_init(w, perch_json_file_sink, stdout);
    if (!summarized(&a, &r, w, &st)) {
        if (r == NULL) {
            free(w);
            return 1;
        }
        err = run(r, &a, w);
        st = *perch_etl_stats_of(r);
    }
    if (perch_json_flush(w) < 0 && err == 0)
        err = PERCH_EIO;
    damaged = report_errors(a.path, &st);
    perch_etl_destroy(r);
    free(w);
    if (err < 0)
        return perch_cli_error("dump", err);
    return damaged > 0 ? 1 : 0;
}
