/*
 * bench_pipe (Windows, runs under Wine): requests per second and p50/p99 latency over the
 * real named pipe of
 *   - PING, the empty round trip: the floor of every request on this pipe and machine;
 *   - STATUS, a reply of a few hundred bytes from the daemon's backend;
 *   - TOP threads by CPU over a window holding 1,000,000 events (samples and slices of 200
 *     threads on 8 CPUs, 20 s of trace time), the whole window ("last 60 s": bucket totals),
 *     and an explicit window whose ends cut two buckets (their records are scanned);
 * measured one after the other on one connection, with the ratio of each p99 to PING's. The
 * target (issue 14) is a top query's p99 within 20x the empty round trip.
 *
 * Usage: bench_pipe [requests] [events]   (default 2000 requests of each kind, 1000000 events;
 * `bench_pipe 50 20000` is the smoke run ctest does). Figures on a loaded machine mean
 * little: run it on a quiet one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "live/query.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "pipe_server.h"
#include "proto/client.h"

#define FREQ    10000000ull
#define THREADS 200
#define CPUS    8

static perch_live_query *query;

static int b_status(void *ctx, perch_proto_answer *a)
{
    static const perch_proto_feature f[] = {{"process", true, ""},
                                            {"thread", true, ""},
                                            {"cswitch", true, ""},
                                            {"profile", true, "1000 us"},
                                            {"lbr", false, "not supported by this CPU"}};
    static const perch_proto_count l[] = {{"live.queue_full", 0}, {"session.events_lost", 0}};
    perch_proto_status st;
    perch_live_query_stats qs;
    (void)ctx;
    perch_live_query_get_stats(query, &qs);
    memset(&st, 0, sizeof st);
    st.server = "perchd bench";
    st.session_state = PERCH_SESSION_RUNNING;
    st.session_kind = PERCH_SESSION_PRIVATE_LOGGER;
    st.session_name = "Perch";
    st.degraded = "";
    st.feature_count = 5;
    st.features = f;
    st.loss_count = 2;
    st.losses = l;
    st.window_bytes = qs.bytes;
    st.events_total = qs.published;
    st.pipe_state = "";
    return perch_proto_answer_set(a, &st);
}

/* `events` samples and slices over 20 s of trace time. */
static void fill(uint64_t events)
{
    perch_live_query_opts o;
    perch_sink s;
    perch_live_query_opts_default(&o);
    if (perch_live_query_create(&o, &query) != 0)
        exit(1);
    perch_live_query_sink(query, &s);
    perch_trace_info info = {"bench", 19041, CPUS, 8, 1, FREQ, 0, 0, 0, 0, 0, NULL};
    s.trace_info(s.ctx, &info);
    for (uint32_t t = 0; t < THREADS; t++) {
        perch_process_rec p = {1000 + t / 10, 100 + t / 10, 4, 1, 0, 0, 0, 0, "app.exe", ""};
        perch_thread_rec th = {1 + t, 1000 + t / 10, 2000 + t, 100 + t / 10, 0, 0, 0, "worker"};
        if (t % 10 == 0)
            s.process(s.ctx, &p);
        s.thread(s.ctx, &th);
    }
    uint64_t span = 20 * FREQ, step = span / events, slice_start[CPUS] = {0};
    for (uint64_t i = 0; i < events; i++) {
        uint64_t ts = FREQ + i * step;
        uint32_t t = (uint32_t)(i * 2654435761u % THREADS);
        uint16_t cpu = (uint16_t)(i % CPUS);
        if (i % 10 == 0) { /* one event in ten is a slice ending now on its CPU */
            perch_slice_rec sl = {
                1 + t, 2000 + t, cpu, 0, slice_start[cpu] ? slice_start[cpu] : ts - step,
                ts,    0,        8,   5, 1,
                2,     0,        {0}};
            s.slice(s.ctx, &sl);
            slice_start[cpu] = ts;
        } else {
            perch_sample_rec sm = {1 + t, 2000 + t, cpu, 0, 0, 0, ts, 0x7ff600001000ull, 0, 0, 1};
            s.sample(s.ctx, &sm);
        }
    }
    perch_live_query_flush(query);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct figures {
    const char *name;
    double per_sec, p50_us, p99_us;
} figures;

static figures run(perch_proto_client *c, const char *name, unsigned type, const void *req,
                   void *rep, size_t rep_size, int n)
{
    uint64_t *lat = calloc((size_t)n, sizeof *lat), t0 = perch_monotonic_ns();
    char why[300];
    for (int i = 0; i < n; i++) {
        void *mem = NULL;
        uint64_t a = perch_monotonic_ns();
        if (perch_proto_client_call(c, type, req, rep, rep_size, &mem, 30000, why, sizeof why) !=
            0) {
            fprintf(stderr, "bench_pipe: %s failed: %s\n", name, why);
            exit(1);
        }
        lat[i] = perch_monotonic_ns() - a;
        perch_free(mem);
    }
    double total = (double)(perch_monotonic_ns() - t0) / 1e9;
    qsort(lat, (size_t)n, sizeof *lat, cmp_u64);
    figures f = {name, n / total, lat[n / 2] / 1e3, lat[(size_t)n * 99 / 100] / 1e3};
    free(lat);
    return f;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    perch_proto_backend backend = {NULL,     "perchd bench", GetCurrentProcessId(),
                                   b_status, NULL,           NULL,
                                   NULL,     NULL,           NULL,
                                   NULL,     NULL,           NULL};
    perch_pipe_server_opts o;
    perch_pipe_server *srv;
    perch_proto_transport t;
    perch_proto_client *c;
    char name[96], why[300];
    if (n < 10 || events < 1000) {
        fprintf(stderr, "usage: bench_pipe [requests >= 10] [events >= 1000]\n");
        return 2;
    }
    uint64_t f0 = perch_monotonic_ns();
    fill(events);
    backend.query = query;
    perch_live_query_stats qs;
    perch_live_query_get_stats(query, &qs);
    printf("window: %" PRIu64 " samples + %" PRIu64 " slices held (%.1f MiB), filled in %.2f s\n",
           qs.samples, qs.slices, qs.bytes / 1048576.0, (perch_monotonic_ns() - f0) / 1e9);
    perch_pipe_server_opts_default(&o);
    snprintf(name, sizeof name, "\\\\.\\pipe\\perch-bench-%lu",
             (unsigned long)GetCurrentProcessId());
    o.name = name;
    o.backend = &backend;
    if (perch_pipe_server_start(&o, &srv, why, sizeof why) != 0 ||
        perch_pipe_connect(name, 5000, &t, why, sizeof why) != 0 ||
        perch_proto_client_open(&t, "bench", 1, 5000, &c, why, sizeof why) != 0) {
        fprintf(stderr, "bench_pipe: %s\n", why);
        return 1;
    }
    perch_proto_status st;
    perch_proto_top_rep top;
    perch_proto_top_req all = {PERCH_TOP_THREADS, PERCH_ORDER_CPU, 20, false, 0, {60000, 0, 0}};
    perch_proto_top_req cut = {PERCH_TOP_THREADS,
                               PERCH_ORDER_CPU,
                               20,
                               false,
                               0,
                               {0, FREQ + FREQ / 20 + 123, FREQ + 20 * FREQ - FREQ / 20 - 77}};
    run(c, "warm-up", PERCH_MSG_PING, NULL, NULL, 0, 10);
    figures f[4] = {run(c, "PING (empty)", PERCH_MSG_PING, NULL, NULL, 0, n),
                    run(c, "STATUS", PERCH_MSG_STATUS, NULL, &st, sizeof st, n),
                    run(c, "TOP threads, whole window", PERCH_MSG_TOP, &all, &top, sizeof top, n),
                    run(c, "TOP threads, cut window", PERCH_MSG_TOP, &cut, &top, sizeof top, n)};
    printf("%-28s %12s %10s %10s %12s\n", "request", "requests/s", "p50 us", "p99 us",
           "p99 / PING");
    for (int i = 0; i < 4; i++)
        printf("%-28s %12.0f %10.1f %10.1f %11.1fx\n", f[i].name, f[i].per_sec, f[i].p50_us,
               f[i].p99_us, f[i].p99_us / f[0].p99_us);
    printf("target: p99 of a top query <= 20x the empty round trip: %s\n",
           f[2].p99_us <= 20 * f[0].p99_us ? "met" : "NOT met");
    perch_proto_client_close(c);
    perch_pipe_server_stop(srv);
    perch_live_query_destroy(query);
    return 0;
}
