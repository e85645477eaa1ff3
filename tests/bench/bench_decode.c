/*
 * Decode throughput on one core, data in cache: SampledProfile and StackWalk records built
 * from the real payloads in the reference vectors (raw_record_hex of
 * perfview_net.4.5.2.x64.ref.jsonl, replicated in memory), and CSwitch records synthesized
 * from the documented 24-byte layout. Each is measured side by side with a floor that reads
 * the same payload bytes without decoding, and the ratio is printed.
 *
 * Usage: bench_decode [data dir]   (default: $PERCH_DATA_DIR, else ../shared/data)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perch/decode.h"

#define RING        1024 /* records cycled over: small enough to stay in cache */
#define MAX_SOURCES 64   /* distinct real payloads kept per kind */
#define MAX_PAYLOAD 2048

struct source {
    uint8_t bytes[MAX_PAYLOAD];
    uint32_t len;
};

static struct source sources[MAX_SOURCES];
static perch_event ring[RING];
static volatile uint64_t sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The payload of one reference line: raw record minus its 0x10/0x20 header. */
static int line_payload(const char *line, struct source *s)
{
    const char *hex = strstr(line, "\"raw_record_hex\": \"");
    const char *ht = strstr(line, "\"header_type\": ");
    const char *sz = strstr(line, "\"size\": ");
    if (!hex || !ht || !sz)
        return -1;
    int header_type = atoi(ht + 15), size = atoi(sz + 8);
    int hs = header_type == 1 || header_type == 2 ? 0x20 : 0x10;
    uint8_t raw[MAX_PAYLOAD + 0x20];
    int n = 0;
    for (hex += 19; nibble(hex[0]) >= 0 && nibble(hex[1]) >= 0 && n < (int)sizeof raw; hex += 2)
        raw[n++] = (uint8_t)(nibble(hex[0]) << 4 | nibble(hex[1]));
    if (size > n || size < hs || size - hs > MAX_PAYLOAD)
        return -1;
    memcpy(s->bytes, raw + hs, (size_t)(size - hs));
    s->len = (uint32_t)(size - hs);
    return 0;
}

/* Loads every reference line of the given event name; returns how many. */
static int load_real(const char *dir, const char *event)
{
    char path[1024], key[64];
    static char line[1 << 16];
    snprintf(path, sizeof path, "%s/reference/perfview_net.4.5.2.x64.ref.jsonl", dir);
    snprintf(key, sizeof key, "\"event\": \"%s\"", event);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_decode: cannot open %s\n", path);
        return 0;
    }
    int count = 0;
    while (count < MAX_SOURCES && fgets(line, sizeof line, f))
        if (strstr(line, key) && line_payload(line, &sources[count]) == 0)
            count++;
    fclose(f);
    return count;
}

/* 24-byte CSwitch payloads with varying thread ids, priorities and wait reasons. */
static int make_cswitch(void)
{
    for (int i = 0; i < MAX_SOURCES; i++) {
        uint8_t *p = sources[i].bytes;
        uint32_t new_tid = 1000u + (uint32_t)i * 4, old_tid = 2000u + (uint32_t)i * 4;
        memset(p, 0, 24);
        for (int b = 0; b < 4; b++) {
            p[b] = (uint8_t)(new_tid >> (8 * b));
            p[4 + b] = (uint8_t)(old_tid >> (8 * b));
            p[16 + b] = (uint8_t)((uint32_t)i * 37u >> (8 * b));
        }
        p[8] = (uint8_t)(8 + i % 8);
        p[9] = (uint8_t)(9 + i % 4);
        p[12] = (uint8_t)(i % 38);
        p[13] = (uint8_t)(i & 1);
        p[14] = (uint8_t)(i % 8);
        sources[i].len = 24;
    }
    return MAX_SOURCES;
}

static void fill_ring(int nsources, uint16_t group, uint8_t opcode, uint8_t version)
{
    for (int i = 0; i < RING; i++) {
        perch_event *ev = &ring[i];
        memset(ev, 0, sizeof *ev);
        ev->group = group;
        ev->opcode = opcode;
        ev->version = version;
        ev->pointer_size = 8;
        ev->payload = sources[i % nsources].bytes;
        ev->payload_len = sources[i % nsources].len;
    }
}

/* One pass of the floor: read every payload byte, decode nothing. */
static uint64_t floor_pass(void)
{
    uint64_t acc = 0;
    for (int i = 0; i < RING; i++) {
        const uint8_t *p = ring[i].payload;
        for (uint32_t k = 0; k < ring[i].payload_len; k++)
            acc += p[k];
    }
    return acc;
}

/* One pass of decoding; folds a field of each result into the checksum. */
static uint64_t decode_pass(void)
{
    perch_decoded d;
    uint64_t acc = 0;
    for (int i = 0; i < RING; i++) {
        if (perch_decode(&ring[i], &d, NULL) != 0)
            abort();
        switch (d.type) {
        case PERCH_DECODED_SAMPLED_PROFILE:
            acc += d.sampled_profile.instruction_pointer ^ d.sampled_profile.thread_id;
            break;
        case PERCH_DECODED_STACK_WALK:
            acc += d.stack_walk.frames.count + perch_ptr_at(&d.stack_walk.frames, 0);
            break;
        default:
            acc += d.cswitch.new_thread_id ^ d.cswitch.old_thread_wait_reason;
        }
    }
    return acc;
}

/* Events per second of pass over at least min_seconds. */
static double rate(uint64_t (*pass)(void), double min_seconds)
{
    uint64_t passes = 0, acc = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 64; k++)
            acc += pass();
        passes += 64;
        t = now();
    } while (t - t0 < min_seconds);
    sink += acc;
    return (double)(passes * RING) / (t - t0);
}

static void measure(const char *name, int nsources, uint16_t group, uint8_t opcode, uint8_t version)
{
    uint64_t bytes = 0;
    fill_ring(nsources, group, opcode, version);
    for (int i = 0; i < RING; i++)
        bytes += ring[i].payload_len;
    (void)rate(decode_pass, 0.1); /* warm up */
    double dec = rate(decode_pass, 1.0);
    double flr = rate(floor_pass, 1.0);
    printf("%-15s %3d distinct payloads, %5.1f bytes avg: decode %7.1f M events/s "
           "(%5.2f ns/event), floor (read bytes) %7.1f M events/s, decode/floor %.2f\n",
           name, nsources, (double)bytes / RING, dec / 1e6, 1e9 / dec, flr / 1e6, dec / flr);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("PERCH_DATA_DIR");
    if (!dir)
        dir = "../shared/data";
    int n = load_real(dir, "SampledProfile");
    if (n == 0)
        return 2;
    measure("SampledProfile", n, PERCH_GROUP_PERFINFO, 46, 2);
    n = load_real(dir, "StackWalk");
    if (n == 0)
        return 2;
    measure("StackWalk", n, PERCH_GROUP_STACKWALK, 32, 2);
    measure("CSwitch", make_cswitch(), PERCH_GROUP_THREAD, 36, 4);
    return 0;
}
