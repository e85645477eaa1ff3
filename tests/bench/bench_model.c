/*
 * bench_model: throughput and memory of decode + model on one core, with a counting sink.
 *
 * The workload is a synthesized kernel trace shaped like a busy machine (8 CPUs, ~1 M events
 * per second of trace: 60% CSwitch, 30% ReadyThread, 1 kHz SampledProfile per CPU mostly with
 * kernel StackWalks, other events, thread churn, image loads), built once in
 * memory per round and fed ROUNDS times with timestamps shifted past the previous round, so a
 * longer trace differs only in length. Reported side by side in one run:
 *   - events/s through perch_model_feed, and the floor: a loop that only touches every payload;
 *   - peak RSS after round 1 and after the last round (the model keeps only live state, so the
 *     ratio should stay below 1.2).
 * Usage: bench_model [rounds] [trace.etl] (default 10 rounds of the synthesized workload; with
 * a trace, its records are fed rounds times, each copy shifted past the previous one).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perch/decode.h"
#include "perch/etl.h"
#include "perch/model.h"
#include "perch/platform.h"

#define CPUS 8
#define EVENTS_PER_ROUND 2000000u
#define ROUND_TICKS 20000000ull /* 2 s at 10 MHz: a round spans about 1.8 s */
#define THREADS 400
#define STACKS 512
#define PAYLOAD_MAX 128

typedef struct bench_event {
    perch_event ev;
    uint8_t payload[PAYLOAD_MAX];
    uint32_t ts_offset; /* payload offset of an embedded timestamp, or 0 */
} bench_event;

/* A round is stored packed, like records in an ETW buffer, and each record is materialized
 * into one perch_event right before it is fed (as the .etl reader does): the feed loop reads
 * memory sequentially instead of streaming a large array of fat structs. */
typedef struct packed_hdr {
    uint64_t ts;
    uint16_t cpu, group;
    uint8_t opcode, version, ts_in_payload, pad; /* pad: 1 for KernelTraceControl */
    uint16_t len;
    uint16_t pad2;
} packed_hdr;

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static void set(bench_event *b, uint16_t group, uint8_t op, uint8_t ver, uint64_t ts,
                uint16_t cpu, const uint8_t *end)
{
    memset(&b->ev, 0, sizeof b->ev);
    const perch_guid *g = perch_kernel_group_guid(group);
    if (g != NULL)
        b->ev.provider = *g;
    b->ev.group = group;
    b->ev.opcode = op;
    b->ev.version = ver;
    b->ev.timestamp = ts;
    b->ev.cpu = cpu;
    b->ev.pointer_size = 8;
    b->ev.header_kind = PERCH_HEADER_PERFINFO;
    b->ev.payload = b->payload;
    b->ev.payload_len = (uint32_t)(end - b->payload);
}

static void make_thread(bench_event *b, uint8_t op, uint64_t ts, uint32_t tid)
{
    uint8_t *p = put32(b->payload, 100 + tid % 20);
    p = put32(p, tid);
    for (int i = 0; i < 7; i++)
        p = put64(p, 0);
    p = put32(p, 0);
    p = put32(p, 0);
    set(b, PERCH_GROUP_THREAD, op, 3, ts, 0, p);
}

static void make_image(bench_event *b, uint64_t ts, uint32_t pid, uint64_t base)
{
    uint8_t *p = put64(b->payload, base);
    p = put64(p, 0x10000);
    p = put32(p, pid);
    for (int i = 0; i < 3; i++)
        p = put32(p, 0);
    p = put64(p, base);
    for (int i = 0; i < 4; i++)
        p = put32(p, 0);
    const char *name = "m.dll";
    for (const char *c = name; *c; c++) {
        *p++ = (uint8_t)*c;
        *p++ = 0;
    }
    *p++ = 0;
    *p++ = 0;
    set(b, PERCH_GROUP_IMAGE, 10, 2, ts, 0, p);
}

/* The packed round being built (grows by doubling). */
typedef struct packed_round {
    uint8_t *data;
    size_t len, cap;
} packed_round;

static void append_event(packed_round *a, const perch_event *ev, uint8_t ts_in_payload)
{
    size_t need = sizeof(packed_hdr) + ((ev->payload_len + 7u) & ~7u);
    if (a->len + need > a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 1 << 20;
        uint8_t *p = realloc(a->data, ncap);
        if (p == NULL) {
            fprintf(stderr, "bench_model: out of memory\n");
            exit(1);
        }
        a->data = p;
        a->cap = ncap;
    }
    uint8_t ktc = perch_guid_equal(&ev->provider, &perch_kernel_trace_control_guid);
    packed_hdr h = {ev->timestamp, ev->cpu,      ev->group, ev->opcode, ev->version,
                    ts_in_payload, ktc,          (uint16_t)ev->payload_len, 0};
    memcpy(a->data + a->len, &h, sizeof h);
    if (ev->payload_len > 0)
        memcpy(a->data + a->len + sizeof h, ev->payload, ev->payload_len);
    a->len += need;
}

static void append(packed_round *a, const bench_event *e)
{
    append_event(a, &e->ev, (uint8_t)e->ts_offset);
}

/* Packs every record of a real trace; StackWalk and StackKey references carry the timestamp
 * of their event in payload[0..8), which a shift must move too. 0 or -1. */
static int load_trace(const char *path, packed_round *a, uint64_t *span, uint64_t *records)
{
    perch_etl_reader *r = NULL;
    perch_event ev;
    uint64_t first = 0, last = 0;
    if (perch_etl_open_file(path, NULL, &r, NULL) != 0)
        return -1;
    *records = 0;
    while (perch_etl_next(r, &ev) == 0) {
        bool walk = ev.group == PERCH_GROUP_STACKWALK &&
                    (ev.opcode == 32 || ev.opcode == 37 || ev.opcode == 38) && ev.payload_len >= 8;
        if (ev.payload_len > 0xffff)
            continue;
        if (*records == 0)
            first = ev.timestamp;
        last = ev.timestamp > last ? ev.timestamp : last;
        append_event(a, &ev, walk);
        (*records)++;
    }
    *span = last - first + 1;
    perch_etl_destroy(r);
    return 0;
}

static void make_cswitch(bench_event *b, uint64_t ts, uint16_t cpu, uint32_t next, uint32_t prev)
{
    uint8_t *p = put32(b->payload, next);
    p = put32(p, prev);
    p = put32(p, 0x0509);
    p = put32(p, 0x05010005);
    p = put64(p, 0);
    set(b, PERCH_GROUP_THREAD, 36, 2, ts, cpu, p);
}

static void make_sample(packed_round *a, bench_event *b, uint64_t ts, uint16_t cpu, uint32_t tid,
                        bool with_stack)
{
    uint64_t ip = 0xfffff80000100000ull + 16 * rnd(STACKS);
    uint8_t *p = put64(b->payload, ip);
    p = put32(p, tid);
    p = put32(p, 0x00580001);
    set(b, PERCH_GROUP_PERFINFO, 46, 2, ts, cpu, p);
    append(a, b);
    if (!with_stack)
        return;
    p = put64(b->payload, ts); /* the kernel stack, right after */
    p = put32(p, 100);
    p = put32(p, tid);
    for (int f = 0; f < 6; f++)
        p = put64(p, ip + 0x1000u * f);
    set(b, PERCH_GROUP_STACKWALK, 32, 2, ts + 1, cpu, p);
    b->ts_offset = 1; /* payload[0..8) is the sample's timestamp */
    append(a, b);
}

/* One round of about n records: per record pick a CPU and a kind (per mille). */
static void build_round(packed_round *a, uint32_t n)
{
    uint32_t running[CPUS] = {0};
    uint64_t ts = 1000;
    bench_event b;
    uint32_t count = 0;
    memset(&b, 0, sizeof b);
    for (uint32_t t = 0; t < THREADS; t++, count++) {
        make_thread(&b, 3, ts++, 1000 + 4 * t);
        append(a, &b);
    }
    for (uint32_t k = 0; k < 20; k++, count++) {
        make_image(&b, ts++, 100 + k, 0x10000000ull);
        append(a, &b);
    }
    while (count < n) {
        uint16_t cpu = (uint16_t)rnd(CPUS);
        uint32_t r = rnd(1000);
        ts += rnd(19); /* ~1 M records per second of trace time */
        b.ts_offset = 0;
        count++;
        if (r < 600) {
            uint32_t next = rnd(8) == 0 ? 0 : 1000 + 4 * rnd(THREADS);
            make_cswitch(&b, ts, cpu, next, running[cpu]);
            running[cpu] = next;
        } else if (r < 900) {
            uint8_t *p = put32(b.payload, 1000 + 4 * rnd(THREADS));
            p = put32(p, 0);
            set(&b, PERCH_GROUP_THREAD, 50, 2, ts, cpu, p);
        } else if (r < 912) { /* ~8 k samples/s: 1 kHz on 8 CPUs; most with a stack */
            make_sample(a, &b, ts, cpu, running[cpu], r < 910);
            continue;
        } else if (r < 998) { /* an event the model does not use (DiskIo read) */
            uint8_t *p = put64(b.payload, 0);
            set(&b, 0x01, 10, 3, ts, cpu, p);
        } else { /* thread churn: one ends, the same id starts again */
            uint32_t tid = 1000 + 4 * rnd(THREADS);
            make_thread(&b, 2, ts, tid);
            append(a, &b);
            make_thread(&b, 1, ts + 1, tid);
        }
        append(a, &b);
    }
}

static void shift(uint8_t *arena, size_t size, uint64_t delta)
{
    for (size_t off = 0; off < size;) {
        packed_hdr *h = (packed_hdr *)(arena + off);
        uint8_t *pl = arena + off + sizeof *h;
        h->ts += delta;
        if (h->ts_in_payload) {
            uint64_t v = 0;
            for (int k = 0; k < 8; k++)
                v |= (uint64_t)pl[k] << (8 * k);
            put64(pl, v + delta);
        }
        off += sizeof *h + ((h->len + 7u) & ~7u);
    }
}

/* Feeds every packed record (model != NULL) or only touches the payloads (the floor). */
static int run(uint8_t *arena, size_t size, perch_model *m, uint64_t *sum)
{
    perch_event ev;
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = 8;
    ev.header_kind = PERCH_HEADER_PERFINFO;
    ev.pid = ev.tid = UINT32_MAX;
    for (size_t off = 0; off < size;) {
        const packed_hdr *h = (const packed_hdr *)(arena + off);
        ev.timestamp = h->ts;
        ev.cpu = h->cpu;
        if (ev.group != h->group || h->pad) {
            const perch_guid *g = perch_kernel_group_guid(h->group);
            ev.group = h->group;
            memset(&ev.provider, 0, sizeof ev.provider);
            if (g != NULL)
                ev.provider = *g;
            if (h->pad)
                ev.provider = perch_kernel_trace_control_guid;
        }
        ev.opcode = h->opcode;
        ev.version = h->version;
        ev.payload = arena + off + sizeof *h;
        ev.payload_len = h->len;
        off += sizeof *h + ((h->len + 7u) & ~7u);
        if (m == NULL) {
            for (uint32_t k = 0; k < ev.payload_len; k++)
                *sum += ev.payload[k];
        } else if (perch_model_feed(m, &ev) != 0) {
            return -1;
        }
    }
    return 0;
}

static uint64_t counted;
static int count_slice(void *c, const perch_slice_rec *r)
{
    (void)c;
    counted += r->end_ts != 0;
    return 0;
}
static int count_sample(void *c, const perch_sample_rec *r)
{
    (void)c;
    counted += r->stack_id != 0;
    return 0;
}
static int count_any(void *c, const perch_thread_rec *r)
{
    (void)c;
    (void)r;
    counted++;
    return 0;
}

/* Feeds the packed round `rounds` times (shifted by shift_ticks each time) into one model and
 * prints throughput against the floor and peak RSS after the first and the last round. */
static int measure(const char *what, uint8_t *arena, size_t size, uint64_t per_round,
                   uint64_t shift_ticks, int rounds)
{
    perch_sink sink = {0};
    perch_trace_info info = {0};
    perch_model *m = NULL;
    double model_cpu = 0, floor_cpu = 0;
    uint64_t model_ns = 0, floor_ns = 0, fed = 0, floor_sum = 0, rss0, rss1 = 0;
    sink.slice = count_slice;
    sink.sample = count_sample;
    sink.thread = count_any;
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    info.cpu_count = CPUS;
    rss0 = perch_peak_rss_bytes();
    if (perch_model_create(&sink, &info, NULL, &m) != 0)
        return 1;
    for (int r = 0; r < rounds; r++) {
        if (r > 0)
            shift(arena, size, shift_ticks);
        uint64_t t0 = perch_monotonic_ns();
        clock_t c0 = clock();
        run(arena, size, NULL, &floor_sum);
        uint64_t t1 = perch_monotonic_ns();
        clock_t c1 = clock();
        if (run(arena, size, m, NULL) != 0)
            return 1;
        uint64_t t2 = perch_monotonic_ns();
        clock_t c2 = clock();
        floor_ns += t1 - t0;
        model_ns += t2 - t1;
        floor_cpu += (double)(c1 - c0) / CLOCKS_PER_SEC;
        model_cpu += (double)(c2 - c1) / CLOCKS_PER_SEC;
        fed += per_round;
        if (r == 0)
            rss1 = perch_peak_rss_bytes();
    }
    if (perch_model_finish(m) != 0)
        return 1;
    uint64_t rss_n = perch_peak_rss_bytes();
    perch_model_destroy(m);
    double mev = (double)fed / ((double)model_ns / 1e9) / 1e6;
    double fev = (double)fed / ((double)floor_ns / 1e9) / 1e6;
    printf("%s: %d rounds x %" PRIu64 " records (counting sink; records %" PRIu64
           ", floor checksum %" PRIu64 ")\n",
           what, rounds, per_round, counted, floor_sum & 0xff);
    printf("  decode+model: %.1f M records/s (wall), %.1f M records/s (CPU time)\n", mev,
           (double)fed / model_cpu / 1e6);
    printf("  floor (materialize + touch payloads): %.1f M records/s (wall), %.1f M records/s "
           "(CPU time); floor/model %.2f (wall)\n",
           fev, (double)fed / floor_cpu / 1e6, fev / mev);
    printf("  peak RSS: before the model %.1f MiB, after round 1 %.1f MiB, after round %d "
           "%.1f MiB: ratio %.3f (model's own growth %.1f -> %.1f MiB)\n",
           (double)rss0 / 1048576.0, (double)rss1 / 1048576.0, rounds,
           (double)rss_n / 1048576.0, rss1 ? (double)rss_n / (double)rss1 : 0.0,
           (double)(rss1 - rss0) / 1048576.0, (double)(rss_n - rss0) / 1048576.0);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    packed_round round = {NULL, 0, 0};
    if (rounds < 1) {
        fprintf(stderr, "usage: bench_model [rounds] [trace.etl]\n");
        return 2;
    }
    if (argc > 2) { /* a real trace, fed `rounds` times with shifted timestamps */
        uint64_t span = 0, records = 0;
        if (load_trace(argv[2], &round, &span, &records) != 0) {
            fprintf(stderr, "bench_model: cannot read %s\n", argv[2]);
            return 1;
        }
        int rc = measure(argv[2], round.data, round.len, records, span + 10000000u, rounds);
        free(round.data);
        return rc;
    }
    build_round(&round, EVENTS_PER_ROUND);
    int rc = measure("bench_model (synthesized, 8 CPUs)", round.data, round.len,
                     EVENTS_PER_ROUND, ROUND_TICKS, rounds);
    free(round.data);
    return rc;
}
