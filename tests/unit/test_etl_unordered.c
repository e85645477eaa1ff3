/*
 * The reader's unordered pass (perch_etl_next_unordered, perch_etl_unordered_part,
 * perch_etl_stats_of_parts) against time-order reading of the same bytes: the same records
 * (a multiset digest of every field and payload byte) and, whenever the parts say they can
 * tell, the same stats to the last byte, on every real trace, a synthetic trace, damaged
 * copies of both (flipped bytes, cut files, swapped buffers, scrambled sequence numbers),
 * errors on one CPU and on two, and a memory cap that makes the pass read in time order.
 * Also the modes: each reading refuses the other once begun.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etl_image.h"
#include "perch/error.h"
#include "perch/etl.h"
#include "testdata.h"

/* What one reading of a file saw. */
struct seen {
    uint64_t count, sum, xor; /* records; sum and xor of their hashes (order-free) */
    perch_etl_stats stats;
    bool exact; /* perch_etl_stats_of_parts returned true */
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t hash_event(const perch_event *ev)
{
    uint64_t h = 0xCBF29CE484222325ull;
    h = mix(h, &ev->provider, sizeof ev->provider);
    h = mix(h, &ev->timestamp, sizeof ev->timestamp);
    h = mix(h, &ev->pid, sizeof ev->pid);
    h = mix(h, &ev->tid, sizeof ev->tid);
    h = mix(h, &ev->cpu, sizeof ev->cpu);
    h = mix(h, &ev->group, sizeof ev->group);
    h = mix(h, &ev->hook, sizeof ev->hook);
    h = mix(h, &ev->event_id, sizeof ev->event_id);
    h = mix(h, &ev->flags, sizeof ev->flags);
    h = mix(h, &ev->opcode,
            6); /* opcode, version, pointer_size, header_kind, pmc_count, reserved */
    h = mix(h, &ev->pebs_index, sizeof ev->pebs_index);
    h = mix(h, ev->pmc, sizeof ev->pmc);
    h = mix(h, &ev->payload_len, sizeof ev->payload_len);
    h = mix(h, ev->payload, ev->payload_len);
    h = mix(h, &ev->ext_len, sizeof ev->ext_len);
    return mix(h, ev->ext, ev->ext_len);
}

static void see(struct seen *s, const perch_event *ev)
{
    uint64_t h = hash_event(ev);
    s->count++;
    s->sum += h;
    s->xor ^= h;
}

static const perch_etl_options small_caps = {sizeof small_caps, 1u << 20, 64u << 20};

/* Time order; false when the bytes do not open. */
static bool read_in_time(const uint8_t *p, size_t len, const perch_etl_options *o, struct seen *s)
{
    perch_etl_reader *r = NULL;
    perch_event ev;
    memset(s, 0, sizeof *s);
    if (perch_etl_open_memory(p, len, o, &r, NULL) != 0)
        return false;
    while (perch_etl_next(r, &ev) == 0)
        see(s, &ev);
    s->exact = perch_etl_stats_of_parts(&r, 1, &s->stats);
    assert_true(s->exact);
    assert_memory_equal(&s->stats, perch_etl_stats_of(r), sizeof s->stats);
    perch_etl_destroy(r);
    return true;
}

/* n readers, reader i reading part i with perch_etl_next_unordered (one after another). */
static void read_in_parts(const uint8_t *p, size_t len, const perch_etl_options *o, unsigned n,
                          struct seen *s)
{
    perch_etl_reader *r[4] = {NULL, NULL, NULL, NULL};
    perch_event ev;
    memset(s, 0, sizeof *s);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(perch_etl_open_memory(p, len, o, &r[i], NULL), 0);
        assert_int_equal(perch_etl_unordered_part(r[i], i, n), 0);
        while (perch_etl_next_unordered(r[i], &ev) == 0)
            see(s, &ev);
        assert_int_equal(perch_etl_next_unordered(r[i], &ev), PERCH_EOF);
    }
    s->exact = perch_etl_stats_of_parts(r, n, &s->stats);
    for (unsigned i = 0; i < n; i++)
        perch_etl_destroy(r[i]);
}

/* The parts read the records time order reads; their stats are its stats whenever they say
 * so, and their counts always are. Returns whether every part count was exact. */
static bool check_against_time(const uint8_t *p, size_t len, const perch_etl_options *o)
{
    struct seen t, u;
    bool exact = true;
    if (!read_in_time(p, len, o, &t))
        return true;
    for (unsigned n = 1; n <= 3; n++) {
        read_in_parts(p, len, o, n, &u);
        assert_int_equal(u.count, t.count);
        assert_int_equal(u.sum, t.sum);
        assert_int_equal(u.xor, t.xor);
        if (u.exact)
            assert_memory_equal(&u.stats, &t.stats, sizeof t.stats);
        exact = exact && u.exact;
    }
    return exact;
}

static bool has_errors(const uint8_t *p, size_t len, const perch_etl_options *o)
{
    struct seen t;
    if (!read_in_time(p, len, o, &t))
        return false;
    for (int e = 0; e < PERCH_ETL_REASON_COUNT; e++)
        if (t.stats.errors[e] != 0)
            return true;
    return false;
}

static void test_real_traces(void **state)
{
    for (size_t i = 0; i < perch_test_etl_trace_count; i++) {
        char rel[256];
        size_t len;
        uint8_t *p;
        snprintf(rel, sizeof rel, "etl/%s", perch_test_etl_traces[i]);
        p = perch_test_read_file(perch_test_require_data(rel), &len);
        assert_true(check_against_time(p, len, NULL));
        free(p);
    }
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* Damage number k of p (a copy in d, *dlen its length): byte flips, a cut, buffer swaps,
 * scrambled sequence numbers, flipped bits in the records. */
static void damage(const uint8_t *p, size_t len, unsigned k, uint64_t *x, uint8_t *d, size_t *dlen)
{
    const size_t bs = 0x10000;
    size_t nb = len / bs;
    memcpy(d, p, len);
    *dlen = len;
    switch (k % 5) {
    case 0:
        for (unsigned i = 0; i < 1 + k % 17; i++)
            d[lcg(x) % len] = (uint8_t)lcg(x);
        break;
    case 1:
        *dlen = 1 + lcg(x) % (len - 1);
        break;
    case 2:
        if (nb >= 3) {
            size_t a = 1 + lcg(x) % (nb - 1), b = 1 + lcg(x) % (nb - 1);
            memcpy(d + a * bs, p + b * bs, bs);
            memcpy(d + b * bs, p + a * bs, bs);
        }
        break;
    case 3:
        for (size_t b = 1; b < nb; b++)
            if (lcg(x) % 4 == 0)
                d[b * bs + 0x18 + lcg(x) % 8] = (uint8_t)lcg(x);
        break;
    default:
        for (unsigned i = 0; i < 3; i++)
            d[0x48 + lcg(x) % (len - 0x48)] ^= (uint8_t)(1u << (lcg(x) % 8));
        break;
    }
}

static void damaged_copies(const uint8_t *p, size_t len, unsigned copies, unsigned *exact_damaged,
                           unsigned *inexact)
{
    uint8_t *d = malloc(len);
    uint64_t x = len;
    assert_non_null(d);
    for (unsigned k = 0; k < copies; k++) {
        size_t dlen;
        bool exact;
        damage(p, len, k, &x, d, &dlen);
        exact = check_against_time(d, dlen, &small_caps);
        *inexact += !exact;
        *exact_damaged += exact && has_errors(d, dlen, &small_caps);
    }
    free(d);
}

static void test_damaged_copies(void **state)
{
    unsigned exact_damaged = 0, inexact = 0;
    size_t len;
    uint8_t *p = perch_test_synth_etl(3, 1u << 20, &len);
    damaged_copies(p, len, 30, &exact_damaged, &inexact);
    perch_free(p);
    p = perch_test_read_file(perch_test_require_data("etl/perfview_net.4.5.2.x64.etl"), &len);
    damaged_copies(p, len, 15, &exact_damaged, &inexact);
    free(p);
    /* Both outcomes happen: damage the parts can count exactly, and damage they cannot. */
    assert_true(exact_damaged > 0);
    assert_true(inexact > 0);
}

/* Two CPUs, two buffers each (0x100 bytes, file offsets 0x400 + 0x100 * i: CPU 0 and CPU 1
 * of the second sequence, then of the first), three samples per buffer. */
static void two_cpu_image(struct img *m)
{
    static const uint8_t payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t rec[128];
    img_init(m, 1 << 16);
    img_header_buffer(m, 8, 2);
    for (int b = 1; b >= 0; b--)
        for (uint16_t cpu = 0; cpu < 2; cpu++) {
            img_begin(m, cpu, (uint64_t)(b + 1) * 10 + cpu, 0, 0);
            for (int i = 0; i < 3; i++) {
                size_t n = img_kernel(rec, 0x11, 2, 0x0F2E, 0, 0, 10u * (b * 3 + i) + cpu, NULL, 0,
                                      payload, 16);
                img_record(m, rec, n);
            }
            img_end(m, 0x100);
        }
}

/* The second record of the buffer at file offset buf claims a size past its buffer. */
static void break_record(struct img *m, size_t buf)
{
    perch_test_put_u16(m->p + buf + 0x48 + 0x20 + 4, 0x400);
}

static void test_errors_on_one_and_two_cpus(void **state)
{
    struct img m;
    struct seen t, u;
    two_cpu_image(&m);
    break_record(&m, 0x400); /* CPU 0 */
    break_record(&m, 0x600); /* CPU 0 again, its other buffer */
    assert_true(read_in_time(m.p, m.len, NULL, &t));
    assert_int_equal(t.stats.errors[PERCH_ETL_R_RECORD_SIZE], 2);
    for (unsigned n = 1; n <= 2; n++) {
        read_in_parts(m.p, m.len, NULL, n, &u);
        assert_true(u.exact);
        assert_memory_equal(&u.stats, &t.stats, sizeof t.stats);
    }
    break_record(&m, 0x500); /* and CPU 1: which one is last depends on the order */
    assert_true(read_in_time(m.p, m.len, NULL, &t));
    assert_int_equal(t.stats.errors[PERCH_ETL_R_RECORD_SIZE], 3);
    for (unsigned n = 1; n <= 2; n++) {
        read_in_parts(m.p, m.len, NULL, n, &u);
        assert_false(u.exact);
        assert_int_equal(u.count, t.count);
    }
    free(m.p);
}

/* A cap the largest buffers of both CPUs do not fit under together: the pass reads in time
 * order (part 0 everything, part 1 nothing), and its stats are time order's. */
static void test_memory_cap_reads_in_time_order(void **state)
{
    struct img m;
    perch_etl_options o = {sizeof o, 0, 0x180}; /* room for CPU 0's stream, not for both */
    perch_etl_reader *a = NULL, *b[2] = {NULL, NULL};
    perch_event ea, eb;
    perch_etl_stats st;
    two_cpu_image(&m);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, &o, &a, NULL), 0);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(perch_etl_open_memory(m.p, m.len, &o, &b[i], NULL), 0);
        assert_int_equal(perch_etl_unordered_part(b[i], i, 2), 0);
    }
    for (;;) {
        int ra = perch_etl_next(a, &ea), rb = perch_etl_next_unordered(b[0], &eb);
        assert_int_equal(ra, rb);
        if (ra != 0)
            break;
        assert_int_equal(ea.timestamp, eb.timestamp);
        assert_int_equal(ea.cpu, eb.cpu);
    }
    assert_int_equal(perch_etl_next_unordered(b[1], &eb), PERCH_EOF);
    assert_true(perch_etl_stats_of_parts(b, 2, &st));
    assert_memory_equal(&st, perch_etl_stats_of(a), sizeof st);
    assert_true(st.records > 0);
    perch_etl_destroy(a);
    perch_etl_destroy(b[0]);
    perch_etl_destroy(b[1]);
    free(m.p);
}

static void test_modes(void **state)
{
    struct img m;
    perch_etl_reader *r = NULL;
    perch_etl_stats st;
    perch_event ev;
    two_cpu_image(&m);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_unordered_part(r, 2, 2), PERCH_EINVAL);
    assert_int_equal(perch_etl_unordered_part(r, 0, 0), PERCH_EINVAL);
    assert_false(perch_etl_stats_of_parts(&r, 1, &st)); /* nothing read yet */
    assert_int_equal(perch_etl_next(r, &ev), 0);
    assert_int_equal(perch_etl_next_unordered(r, &ev), PERCH_ESTATE);
    assert_int_equal(perch_etl_unordered_part(r, 0, 1), PERCH_ESTATE);
    perch_etl_destroy(r);
    assert_int_equal(perch_etl_open_memory(m.p, m.len, NULL, &r, NULL), 0);
    assert_int_equal(perch_etl_next_unordered(r, &ev), 0);
    assert_int_equal(perch_etl_next(r, &ev), PERCH_ESTATE);
    assert_int_equal(perch_etl_unordered_part(r, 0, 1), PERCH_ESTATE);
    perch_etl_destroy(r);
    free(m.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_damaged_copies),
        cmocka_unit_test(test_errors_on_one_and_two_cpus),
        cmocka_unit_test(test_memory_cap_reads_in_time_order),
        cmocka_unit_test(test_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
