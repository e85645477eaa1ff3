/*
 * A fake daemon for the protocol and pipe tests: a perch_proto_backend with a canned status
 * and capture list, RECORD and STOP that count their calls, FETCH and SNAPSHOT serving a
 * real capture of a synthetic trace from memory (optionally failing at a given offset), the
 * log collected in a buffer, and a live query state filled from the same trace. Header-only
 * (static); one instance per test program (F).
 */
#ifndef PERCH_TEST_PROTO_FAKE_H
#define PERCH_TEST_PROTO_FAKE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "live/query.h"
#include "live_fixture.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/synth.h"
#include "perch/thread.h"
#include "proto/session.h"

typedef struct fake {
    uint8_t *capture; /* a real capture of a synthetic trace */
    size_t capture_len;
    perch_live_query *query;
    char log[65536];
    int records, stops;
    uint64_t fail_read_at; /* FETCH input fails at this offset (0: never) */
} fake;

static fake F;

static int f_status(void *ctx, perch_proto_answer *a)
{
    (void)ctx;
    static const perch_proto_feature feats[] = {{"cswitch", true, ""},
                                                {"lbr", false, "the OS refused it: not supported"}};
    static const perch_proto_count losses[] = {{"live.queue_full", 12}, {"etl.events_lost", 3}};
    static const perch_proto_capture rec[] = {{"rec-1.perch", 4096, 133, 2000, 10000, 1}};
    perch_proto_status st = {"perchd test",
                             5000,
                             PERCH_SESSION_DEGRADED,
                             PERCH_SESSION_PRIVATE_LOGGER,
                             "Perch",
                             "LBR is off: not supported",
                             2,
                             feats,
                             123456,
                             2500,
                             5000,
                             2,
                             losses,
                             1,
                             rec,
                             60000,
                             1 << 20,
                             256u << 20,
                             7,
                             60000,
                             4096,
                             0,
                             3,
                             1,
                             ""};
    return perch_proto_answer_set(a, &st);
}

static int f_captures(void *ctx, perch_proto_answer *a)
{
    (void)ctx;
    static const perch_proto_capture caps[] = {{"a.perch", 100, 1, 0, 0, 0},
                                               {"rec-1.perch", 4096, 133, 2000, 10000, 1}};
    perch_proto_captures_rep rep = {"C:\\ProgramData\\Perch\\captures", 2, caps};
    return perch_proto_answer_set(a, &rep);
}

static int f_record(void *ctx, const perch_proto_peer *peer, const perch_proto_record_req *req,
                    perch_proto_answer *a)
{
    (void)ctx, (void)peer;
    perch_proto_record_rep rep = {"rec-2.perch", "C:\\x\\rec-2.perch"};
    F.records++;
    if (req->duration_ms == 666) {
        perch_proto_answer_fail(a, "a recording is already running (rec-1.perch)");
        return PERCH_ESTATE;
    }
    return perch_proto_answer_set(a, &rep);
}

static int f_stop(void *ctx, const perch_proto_peer *peer, const perch_proto_stop_req *req,
                  perch_proto_answer *a)
{
    (void)ctx, (void)peer, (void)req;
    perch_proto_stop_rep rep = {"rec-2.perch", 999, 1234};
    F.stops++;
    return perch_proto_answer_set(a, &rep);
}

static int failing_read(void *ctx, uint64_t off, void *buf, size_t len, size_t *got)
{
    (void)ctx;
    if (off + len > F.fail_read_at)
        return PERCH_EIO;
    memcpy(buf, F.capture + off, len);
    *got = len;
    return 0;
}

static void open_memory(perch_proto_source *src, const char *name)
{
    perch_input_memory(&src->in, F.capture, F.capture_len);
    if (F.fail_read_at)
        src->in.read_at = failing_read;
    snprintf(src->name, sizeof src->name, "%s", name);
}

static int f_snapshot(void *ctx, const perch_proto_peer *peer, const perch_proto_snapshot_req *req,
                      perch_proto_source *src, perch_proto_answer *a)
{
    (void)ctx, (void)peer, (void)req, (void)a;
    open_memory(src, "snapshot-1.perch");
    return 0;
}

static int f_open(void *ctx, const char *name, perch_proto_source *src, perch_proto_answer *a)
{
    (void)ctx;
    if (strchr(name, '\\') || strchr(name, '/')) {
        perch_proto_answer_fail(a, "'%s' is not a capture name (no directories)", name);
        return PERCH_EINVAL;
    }
    if (strcmp(name, "a.perch") != 0 && strcmp(name, "rec-2.perch") != 0)
        return PERCH_ENOENT;
    open_memory(src, name);
    return 0;
}

static int f_counters(void *ctx, perch_proto_update *u)
{
    (void)ctx;
    u->events_total = 1000;
    u->events_per_sec = 200;
    u->lost_total = 15;
    return 0;
}

static perch_mutex *fake_log_lock; /* the pipe server logs from several threads */

static void f_log(void *ctx, int level, const char *line)
{
    (void)ctx;
    if (fake_log_lock)
        perch_mutex_lock(fake_log_lock);
    size_t n = strlen(F.log);
    snprintf(F.log + n, sizeof F.log - n, "%d %s\n", level, line);
    if (fake_log_lock)
        perch_mutex_unlock(fake_log_lock);
}

static perch_proto_backend backend = {NULL,       "perchd test", 4242,   f_status,
                                      f_captures, f_record,      f_stop, f_snapshot,
                                      f_open,     f_counters,    f_log,  NULL};

/* Builds the capture and the live state from a synthetic trace of about etl_bytes. */
static void fake_init(uint64_t etl_bytes)
{
    perch_synth_options opt;
    perch_output out, cout;
    perch_memory_out mem, cmem;
    perch_capture_writer *w;
    perch_sink ws, qs, ts;
    tee t;
    size_t etl_len;
    memset(&F, 0, sizeof F);
    perch_synth_options_init(&opt);
    opt.seed = 5;
    opt.target_bytes = etl_bytes;
    perch_output_memory(&out, &mem, 256u << 20);
    if (perch_synth_write(&opt, &out, NULL) != 0)
        abort();
    uint8_t *etl = perch_output_memory_take(&mem, &etl_len);
    perch_output_memory(&cout, &cmem, 256u << 20);
    if (perch_capture_writer_create(&cout, NULL, &w) != 0 ||
        perch_live_query_create(NULL, &F.query) != 0)
        abort();
    perch_capture_writer_sink(w, &ws);
    perch_live_query_sink(F.query, &qs);
    tee_sink(&t, &ws, &qs, &ts);
    perch_input in;
    perch_input_memory(&in, etl, etl_len);
    if (perch_pipeline_etl(&in, "etl:synth", &ts, NULL, NULL) != 0)
        abort();
    perch_capture_writer_destroy(w);
    F.capture = perch_output_memory_take(&cmem, &F.capture_len);
    perch_free(etl);
    backend.query = F.query;
    if (fake_log_lock == NULL && perch_mutex_create(&fake_log_lock) != 0)
        abort();
}

static void fake_free(void)
{
    perch_free(F.capture);
    perch_live_query_destroy(F.query);
    F.capture = NULL;
    F.query = NULL;
}

#endif
