/*
 * bench_live: the end-to-end live rate under Wine, beside the offline import of the same
 * trace in the same process, one after the other:
 *   offline  .etl -> reader -> model -> capture writer  (perch_pipeline_etl, as `perch import`)
 *   live     fake ETW replay -> EVENT_RECORD callback -> conversion -> queue (try_push) ->
 *            model thread -> capture writer               (the path perchd runs)
 * Both write the capture into a counting output (bytes kept only as a count), so neither
 * measures the disk. The fake replays at full speed (Pace 0) from its own registry root. The
 * live figure runs from the session start to the engine's drain, so it includes the session
 * start and the replay's own .etl reading, which a real kernel would not spend.
 *
 *   bench_live TRACE.etl [N]   N runs of each (default 3); prints events/s of both and their
 *                              ratio, and the drops (a drop makes the live rate meaningless).
 *
 * Build: the mingw preset (target bench_live); run under Wine on a quiet machine:
 *   . tools/wine.sh; perch_wine_start $PWD
 *   wine build/mingw/tests/bench_live.exe ../shared/data/etl/perfview_net.4.5.2.x64.etl 5
 * (tests/win/CMakeLists: a smoke run on the small real trace keeps it working in ctest.)
 */
#include <windows.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw.h"
#include "etw_fake.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/event_queue.h"
#include "perch/live.h"
#include "perch/pipeline.h"
#include "perch/platform.h"

struct counting {
    uint64_t bytes;
};

static int count_write(void *ctx, const void *buf, size_t len)
{
    (void)buf;
    ((struct counting *)ctx)->bytes += len;
    return 0;
}

static void counting_output(perch_output *out, struct counting *c)
{
    memset(out, 0, sizeof *out);
    out->write = count_write;
    out->ctx = c;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "bench_live: %s: %s\n", what, perch_strerror(err));
    exit(1);
}

/* Records the .etl reader yields (the live path must feed the model as many). */
static uint64_t count_records(const char *path)
{
    perch_etl_reader *r = NULL;
    perch_event ev;
    uint64_t n = 0;
    int err = perch_etl_open_file(path, NULL, &r, NULL);
    if (err < 0)
        die(path, err);
    while (perch_etl_next(r, &ev) == 0)
        n++;
    perch_etl_destroy(r);
    return n;
}

/* Offline: returns seconds. */
static double offline(const char *path, uint64_t *bytes)
{
    struct counting c = {0};
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_sink sink;
    perch_input in;
    counting_output(&out, &c);
    int err = perch_input_open_file(&in, path);
    if (err < 0)
        die(path, err);
    if ((err = perch_capture_writer_create(&out, NULL, &w)) < 0)
        die("writer", err);
    perch_capture_writer_sink(w, &sink);
    uint64_t t0 = perch_monotonic_ns();
    if ((err = perch_pipeline_etl(&in, "etl:bench", &sink, NULL, NULL)) < 0)
        die("import", err);
    double s = (double)(perch_monotonic_ns() - t0) / 1e9;
    perch_capture_writer_destroy(w);
    *bytes = c.bytes;
    return s;
}

struct live_ctx {
    perch_etw_live *etw;
};

static void info_of(void *ctx, perch_trace_info *info)
{
    struct live_ctx *x = ctx;
    perch_etw_consumer_trace_info(perch_etw_live_consumer(x->etw), info);
}

/* Live: returns seconds; fills the engine's figures. */
static double live(const char *path, perch_live_stats *st, uint64_t *bytes)
{
    struct counting c = {0};
    struct live_ctx x = {NULL};
    perch_output out;
    perch_capture_writer *w = NULL;
    perch_event_queue *q = NULL;
    perch_live *engine = NULL;
    perch_live_options o;
    perch_sink sink;
    perch_etw_start_report rep;
    if (perch_fake_etw_reset() != 0 || perch_fake_etw_set_string("Replay", path) != 0 ||
        perch_fake_etw_set_dword("Pace", 0) != 0)
        die("fake scenario", PERCH_EIO);
    counting_output(&out, &c);
    int err = perch_event_queue_create(64u << 20, &q);
    err = err ? err : perch_capture_writer_create(&out, NULL, &w);
    if (err < 0)
        die("setup", err);
    perch_capture_writer_sink(w, &sink);
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    o.queue = q;
    o.trace_info = info_of;
    o.info_ctx = &x;
    if ((err = perch_live_create(&o, &engine)) < 0 ||
        (err = perch_live_add_sink(engine, "capture", &sink, NULL)) < 0)
        die("engine", err);
    uint64_t t0 = perch_monotonic_ns();
    if ((err = perch_etw_live_start(NULL, q, &x.etw, &rep)) < 0)
        die(rep.why[0] ? rep.why : "session", err);
    if ((err = perch_live_start(engine, NULL)) < 0)
        die("engine start", err);
    if (!perch_fake_etw_wait_replay(PERCH_ETW_SESSION_NAME, 600000))
        die("the replay did not finish", PERCH_ETIMEDOUT);
    perch_etw_live_destroy(x.etw); /* the consumer has delivered everything: stop it */
    x.etw = NULL;
    perch_event_queue_close(q, 0);
    while ((err = perch_live_stop(engine, 1000)) == PERCH_ETIMEDOUT)
        ;
    double s = (double)(perch_monotonic_ns() - t0) / 1e9;
    perch_live_get_stats(engine, st);
    perch_live_destroy(engine);
    perch_capture_writer_destroy(w);
    perch_event_queue_destroy(q);
    *bytes = c.bytes;
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_live TRACE.etl [N]\n");
        return 2;
    }
    int runs = argc == 3 ? atoi(argv[2]) : 3;
    if (runs < 1)
        runs = 1;
    _putenv("PERCH_FAKE_ETW_ROOT=Software\\Perch\\EtwFakeBench"); /* not a service's root */
    double best_off = 1e30, best_live = 1e30;
    uint64_t events = count_records(argv[1]), off_bytes = 0, live_bytes = 0, dropped = 0, fed = 0;
    for (int i = 0; i < runs; i++) {
        perch_live_stats st;
        double a = offline(argv[1], &off_bytes);
        double b = live(argv[1], &st, &live_bytes);
        best_off = a < best_off ? a : best_off;
        best_live = b < best_live ? b : best_live;
        dropped += st.queue_dropped;
        fed = st.events;
        if (st.error < 0)
            die("model", st.error);
    }
    perch_fake_etw_reset();
    printf("trace: %s, %" PRIu64 " records, best of %d runs of each\n", argv[1], events, runs);
    printf("offline import:  %.3f s  %12.0f events/s  capture %" PRIu64 " bytes\n", best_off,
           (double)events / best_off, off_bytes);
    printf("live (fake ETW): %.3f s  %12.0f events/s  capture %" PRIu64 " bytes, %" PRIu64
           " fed, %" PRIu64 " dropped\n",
           best_live, (double)fed / best_live, live_bytes, fed, dropped);
    printf("live / offline rate: %.2f\n", ((double)fed / best_live) / ((double)events / best_off));
    return dropped != 0 || fed != events ? 1 : 0;
}
