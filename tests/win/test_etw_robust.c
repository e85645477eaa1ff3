/*
 * Robustness of the two readers of data the OS hands Perch, under Wine: the EVENT_RECORD
 * conversion (etw_convert.c) and the PROFILE_SOURCE_INFO walk (etw_features.c). libFuzzer
 * runs natively, where this Windows code does not build, so these take its place: many
 * records and chains from a fixed-seed generator, each placed so that its last byte is the
 * last one before a no-access page. A read past the data faults and fails the test; the
 * results are checked against the invariants the readers promise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "etw_convert.h"
#include "etw_internal.h"
#include "perch/error.h"

#define PAGE       4096u
#define ITERATIONS 200000u

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A region whose byte [len] is the first of a no-access page. */
typedef struct guarded {
    uint8_t *base;
    size_t pages;
} guarded;

static uint8_t *guard_alloc(guarded *g, size_t len)
{
    g->pages = (len + PAGE - 1) / PAGE + 1;
    g->base = VirtualAlloc(NULL, g->pages * PAGE, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    assert_non_null(g->base);
    DWORD old;
    assert_true(VirtualProtect(g->base + (g->pages - 1) * PAGE, PAGE, PAGE_NOACCESS, &old));
    return g->base + (g->pages - 1) * PAGE - len;
}

static void guard_free(guarded *g)
{
    VirtualFree(g->base, 0, MEM_RELEASE);
}

static void random_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)next();
}

static void check_converted(int rc, const perch_event *ev, const uint8_t *ext, size_t cap)
{
    assert_true(rc == PERCH_EFORMAT || (rc >= 0 && rc <= 7));
    if (rc < 0)
        return;
    assert_true(ev->pointer_size == 4 || ev->pointer_size == 8);
    assert_true(ev->pmc_count <= PERCH_EVENT_MAX_PMC);
    assert_true(ev->ext_len <= cap && ev->ext_len % 8 == 0);
    assert_true(ev->ext_len == 0 || ev->ext == ext);
}

static void test_random_records(void **state)
{
    static const uint16_t types[] = {EVENT_HEADER_EXT_TYPE_PMC_COUNTERS,
                                     EVENT_HEADER_EXT_TYPE_PEBS_INDEX,
                                     EVENT_HEADER_EXT_TYPE_SID,
                                     EVENT_HEADER_EXT_TYPE_STACK_TRACE64,
                                     0,
                                     0xFFFF};
    uint8_t ext[256];
    for (unsigned it = 0; it < ITERATIONS / 10; it++) {
        EVENT_HEADER_EXTENDED_DATA_ITEM items[6];
        guarded gu, gi[6];
        EVENT_RECORD r;
        perch_event ev;
        size_t user_len = next() % 300;
        unsigned n = (unsigned)(next() % 7);
        random_bytes((uint8_t *)&r, sizeof r);
        r.UserDataLength = (USHORT)user_len;
        r.UserData = guard_alloc(&gu, user_len);
        random_bytes(r.UserData, user_len);
        for (unsigned i = 0; i < n; i++) {
            size_t len = next() % 96;
            memset(&items[i], 0, sizeof items[i]);
            items[i].ExtType = types[next() % 6];
            items[i].DataSize = (USHORT)len;
            items[i].DataPtr = (ULONGLONG)(uintptr_t)guard_alloc(&gi[i], len);
            random_bytes((uint8_t *)(uintptr_t)items[i].DataPtr, len);
            if (next() % 16 == 0)
                items[i].DataPtr = 0; /* a NULL item */
        }
        r.ExtendedDataCount = (USHORT)n;
        r.ExtendedData = n ? items : NULL;
        size_t cap = next() % sizeof ext;
        int rc = perch_etw_convert(&r, (next() & 1) ? 4 : 8, ext, cap, &ev);
        check_converted(rc, &ev, ext, cap);
        if (rc >= 0 && ev.payload_len != 0)
            assert_ptr_equal(ev.payload, r.UserData);
        for (unsigned i = 0; i < n; i++)
            guard_free(&gi[i]);
        guard_free(&gu);
    }
}

struct walk_check {
    unsigned visits;
};

static bool visit(void *ctx, const char *name, const PROFILE_SOURCE_INFO *info)
{
    struct walk_check *w = ctx;
    assert_true(strlen(name) < PERCH_ETW_NAME_MAX);
    (void)info;
    return ++w->visits < 1000;
}

/* Chains with random offsets and names, valid ones among them. */
static void fill_chain(uint8_t *p, size_t len)
{
    random_bytes(p, len);
    size_t head = offsetof(PROFILE_SOURCE_INFO, Description);
    for (size_t at = 0; at + head <= len && next() % 4 != 0;) {
        ULONG step = (ULONG)(head + (next() % 40) * 2);
        if (next() % 8 == 0)
            step = (ULONG)next(); /* wild */
        memcpy(p + at, &step, sizeof step);
        if (step == 0 || step > len - at)
            break;
        at += step;
    }
}

static void test_random_source_chains(void **state)
{
    for (unsigned it = 0; it < ITERATIONS / 20; it++) {
        guarded g;
        struct walk_check w = {0};
        size_t len = next() % 700;
        uint8_t *p = guard_alloc(&g, len);
        fill_chain(p, len);
        perch__etw_walk_sources(p, (ULONG)len, visit, &w);
        assert_true(w.visits <= len / offsetof(PROFILE_SOURCE_INFO, Description) + 1);
        guard_free(&g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),
        cmocka_unit_test(test_random_source_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
