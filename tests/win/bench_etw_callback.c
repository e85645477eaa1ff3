/*
 * bench_etw_callback: what the consumer's EventRecordCallback costs per event, under Wine (the
 * mingw build). The EVENT_RECORDs are the ones the fake ETW hands a consumer for a trace (a
 * `perch synth` trace by default: CSwitch with PMC counters, samples with stacks, LBR; or any
 * .etl given), built once in memory, then timed four ways, side by side:
 *
 *   copy      the floor: memcpy of each record's payload into a buffer
 *   convert   perch_etw_convert alone (EVENT_RECORD -> perch_event)
 *   push      the real callback (convert + try_push) into a queue large enough for a pass,
 *             nobody popping during the pass (the ring is warmed first): the producer's cost
 *   callback  the same with a thread popping the queue as the model thread does (blocking
 *             pop, so pushes also pay for waking it)
 *   drop      the callback when the queue is always full (every record dropped and counted)
 *
 * Usage: bench_etw_callback [--trace FILE.etl] [--seed N] [--size BYTES] [--passes N]
 *                           [--records N]
 * Prints ns per event and each figure as a ratio to the copy floor. Timings on a loaded or
 * emulated machine are only indicative; docs/etw-session.md says where the figures come from.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_convert.h"
#include "etw_internal.h"
#include "fake_internal.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "perch/io.h"
#include "perch/platform.h"
#include "perch/synth.h"

#define MAX_ITEMS 4u

typedef struct bench_records {
    EVENT_RECORD *rec;
    perch_event *ev;
    EVENT_HEADER_EXTENDED_DATA_ITEM *items;
    uint8_t *bytes;
    size_t count, cap, bytes_used, bytes_cap;
} bench_records;

typedef struct bench_args {
    const char *trace;
    uint64_t seed, size;
    unsigned passes;
    size_t max_records;
} bench_args;

static int parse_args(int argc, char **argv, bench_args *a)
{
    a->trace = NULL;
    a->seed = 1;
    a->size = 8u << 20;
    a->passes = 5;
    a->max_records = 1u << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--trace") == 0)
            a->trace = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            a->seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--size") == 0)
            a->size = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--passes") == 0)
            a->passes = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--records") == 0)
            a->max_records = (size_t)strtoull(argv[i + 1], NULL, 10);
        else
            return -1;
    }
    return (argc % 2 == 1 && a->passes > 0 && a->max_records > 0) ? 0 : -1;
}

/* Copies ev (payload and ext into the byte arena) and builds its EVENT_RECORD. */
static int add_record(bench_records *b, const perch_event *src)
{
    size_t need = src->payload_len + src->ext_len;
    if (b->count == b->cap || b->bytes_used + need > b->bytes_cap)
        return PERCH_ELIMIT;
    perch_event *ev = &b->ev[b->count];
    *ev = *src;
    memcpy(b->bytes + b->bytes_used, src->payload, src->payload_len);
    ev->payload = b->bytes + b->bytes_used;
    if (src->ext_len != 0) {
        memcpy(b->bytes + b->bytes_used + src->payload_len, src->ext, src->ext_len);
        ev->ext = b->bytes + b->bytes_used + src->payload_len;
    }
    b->bytes_used += need;
    fake_build_record(ev, 3, NULL, NULL, &b->items[b->count * MAX_ITEMS], MAX_ITEMS,
                      &b->rec[b->count]);
    b->count++;
    return 0;
}

static int load(perch_etl_reader *r, bench_records *b, size_t max)
{
    perch_event ev;
    b->cap = max;
    b->bytes_cap = (size_t)256 << 20;
    b->rec = calloc(max, sizeof *b->rec);
    b->ev = calloc(max, sizeof *b->ev);
    b->items = calloc(max * MAX_ITEMS, sizeof *b->items);
    b->bytes = malloc(b->bytes_cap);
    if (!b->rec || !b->ev || !b->items || !b->bytes)
        return PERCH_ENOMEM;
    while (b->count < max && perch_etl_next(r, &ev) == 0)
        if (add_record(b, &ev) < 0)
            break;
    return b->count > 0 ? 0 : PERCH_EOF;
}

static int open_trace(const bench_args *a, perch_etl_reader **r, perch_memory_out *mem,
                      uint8_t **data)
{
    perch_synth_options opt;
    perch_output out;
    size_t len = 0;
    if (a->trace != NULL)
        return perch_etl_open_file(a->trace, NULL, r, NULL);
    perch_synth_options_init(&opt);
    opt.seed = a->seed;
    opt.target_bytes = a->size;
    perch_output_memory(&out, mem, (size_t)1 << 30);
    int err = perch_synth_write(&opt, &out, NULL);
    if (err < 0)
        return err;
    *data = perch_output_memory_take(mem, &len);
    return perch_etl_open_memory(*data, len, NULL, r, NULL);
}

static volatile uint64_t sink_value;

static double time_copy(const bench_records *b, unsigned passes)
{
    static uint8_t buf[65536];
    uint64_t t0 = perch_monotonic_ns(), sum = 0;
    for (unsigned p = 0; p < passes; p++)
        for (size_t i = 0; i < b->count; i++) {
            size_t n = b->rec[i].UserDataLength;
            memcpy(buf, b->rec[i].UserData, n);
            sum += buf[n ? n - 1 : 0];
        }
    sink_value = sum;
    return (double)(perch_monotonic_ns() - t0) / ((double)b->count * passes);
}

static double time_convert(const bench_records *b, unsigned passes)
{
    static uint8_t ext[4096];
    perch_event ev;
    uint64_t t0 = perch_monotonic_ns(), sum = 0;
    for (unsigned p = 0; p < passes; p++)
        for (size_t i = 0; i < b->count; i++)
            if (perch_etw_convert(&b->rec[i], 8, ext, sizeof ext, &ev) >= 0)
                sum += ev.payload_len + ev.group;
    sink_value = sum;
    return (double)(perch_monotonic_ns() - t0) / ((double)b->count * passes);
}

typedef struct popper {
    perch_event_queue *q;
    uint64_t popped;
} popper;

static DWORD WINAPI pop_all(LPVOID arg)
{
    popper *p = arg;
    perch_event ev;
    int rc;
    while ((rc = perch_event_queue_pop(p->q, &ev, UINT32_MAX)) == 0)
        p->popped++;
    return 0;
}

typedef enum mode { MODE_PUSH, MODE_POP, MODE_DROP } mode;

static void drain_here(perch_event_queue *q)
{
    perch_event ev;
    while (perch_event_queue_pop(q, &ev, 0) == 0)
        ;
}

/* Pushes and pops (on this thread) until every page of the ring has been written once, so the
 * timed pushes do not pay for first-touch page faults. */
static void warm(bench_records *b, perch_event_queue *q, perch_etw_consumer *c)
{
    perch_event_queue_stats st;
    perch_event_queue_get_stats(q, &st);
    for (uint64_t written = 0; written < 2 * st.capacity;) {
        for (size_t i = 0; i < b->count; i++) {
            perch__etw_on_event(&b->rec[i]);
            written += 64 + b->rec[i].UserDataLength;
        }
        drain_here(q);
    }
    (void)c;
}

/* The callback over every record, in one of the three modes above. */
static double time_callback(bench_records *b, unsigned passes, mode m, perch_etw_consumer_stats *st)
{
    perch_event_queue *q = NULL;
    perch_etw_consumer *c = NULL;
    popper p = {NULL, 0};
    HANDLE t = NULL;
    bool with_popper = m == MODE_POP;
    size_t ring = m == MODE_DROP ? PERCH_EVENT_QUEUE_MIN_BYTES : (size_t)64 << 20;
    if (perch_event_queue_create(ring, &q) < 0 || perch__etw_consumer_detached(q, 8, &c) < 0)
        return -1;
    for (size_t i = 0; i < b->count; i++)
        b->rec[i].UserContext = c;
    if (m == MODE_DROP) { /* fill the queue first: every timed push is a drop */
        for (size_t i = 0; i < b->count; i++)
            perch__etw_on_event(&b->rec[i]);
    } else if (with_popper) {
        p.q = q;
        t = CreateThread(NULL, 0, pop_all, &p, 0, NULL);
    }
    if (m == MODE_PUSH)
        warm(b, q, c);
    uint64_t dt = 0;
    for (unsigned k = 0; k < passes; k++) {
        uint64_t t0 = perch_monotonic_ns();
        for (size_t i = 0; i < b->count; i++)
            perch__etw_on_event(&b->rec[i]);
        dt += perch_monotonic_ns() - t0;
        if (m == MODE_PUSH)
            drain_here(q); /* untimed: the next pass starts on an empty ring */
    }
    perch_event_queue_close(q, 0);
    if (t != NULL) {
        WaitForSingleObject(t, INFINITE);
        CloseHandle(t);
    }
    perch_etw_consumer_get_stats(c, st);
    perch_etw_consumer_destroy(c);
    perch_event_queue_destroy(q);
    return (double)dt / ((double)b->count * passes);
}

static void report(const char *what, double ns, double floor_ns, const char *note)
{
    printf("  %-9s %8.1f ns/event  %6.2fx the copy floor%s\n", what, ns,
           floor_ns > 0 ? ns / floor_ns : 0.0, note);
}

int main(int argc, char **argv)
{
    bench_args a;
    bench_records b;
    perch_memory_out mem;
    perch_etl_reader *r = NULL;
    perch_etw_consumer_stats pushed, live, drop;
    uint8_t *data = NULL;
    char note[96];
    memset(&b, 0, sizeof b);
    if (parse_args(argc, argv, &a) < 0) {
        fprintf(stderr, "usage: bench_etw_callback [--trace FILE.etl] [--seed N] [--size BYTES]"
                        " [--passes N] [--records N]\n");
        return 2;
    }
    int err = open_trace(&a, &r, &mem, &data);
    if (err == 0)
        err = load(r, &b, a.max_records);
    if (err < 0) {
        fprintf(stderr, "bench_etw_callback: cannot load the trace: %s\n", perch_strerror(err));
        return 1;
    }
    printf("bench_etw_callback: %zu records (%s), %u passes, %.1f MiB of payload\n", b.count,
           a.trace ? a.trace : "perch synth", a.passes, (double)b.bytes_used / (1 << 20));
    double copy = time_copy(&b, a.passes);
    double conv = time_convert(&b, a.passes);
    double pu = time_callback(&b, a.passes, MODE_PUSH, &pushed);
    double cb = time_callback(&b, a.passes, MODE_POP, &live);
    double dr = time_callback(&b, a.passes, MODE_DROP, &drop);
    report("copy", copy, copy, "");
    report("convert", conv, copy, "");
    snprintf(note, sizeof note, "  (%llu dropped, warm-up included)",
             (unsigned long long)pushed.queue_full);
    report("push", pu, copy, note);
    snprintf(note, sizeof note, "  (%llu pushed, %llu dropped)", (unsigned long long)live.pushed,
             (unsigned long long)live.queue_full);
    report("callback", cb, copy, note);
    snprintf(note, sizeof note, "  (%llu dropped)", (unsigned long long)drop.queue_full);
    report("drop", dr, copy, note);
    perch_etl_destroy(r);
    perch_free(data);
    free(b.rec);
    free(b.ev);
    free(b.items);
    free(b.bytes);
    return cb > 0 ? 0 : 1;
}
