/*
 * The sink relay (src/core/pipeline/relay.c): a logging sink writes every call it gets (type,
 * fields, frames, branches, strings) into a log; a generated stream of samples, slices, stacks
 * (one longer than a batch), LBR records and the rare records between them (entities, ledger,
 * statistics, symbols, finish) is given to it directly and through relays of several batch
 * sizes, and the logs must be equal byte for byte (the entities' fields and strings too,
 * a NULL string kept NULL). Also: an inner sink that fails at its N-th
 * sample (nothing after it is played, every later call and stop return the error), a relay
 * stopped without finish, a relay without a player whose filling thread plays every batch
 * itself, and an allocation-failure sweep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "perch/error.h"
#include "perch/pipeline.h"
#include "pipeline/relay_play.h"

struct log {
    unsigned char *data;
    size_t len, cap;
    uint64_t samples;
    uint64_t fail_at; /* the sample that fails with PERCH_EIO (0: none) */
};

static void put(struct log *l, const void *p, size_t n)
{
    if (l->len + n > l->cap) {
        l->cap = (l->len + n) * 2;
        l->data = realloc(l->data, l->cap);
        assert_non_null(l->data);
    }
    memcpy(l->data + l->len, p, n);
    l->len += n;
}

static void put_str(struct log *l, char type, const char *s)
{
    put(l, &type, 1);
    put(l, s, strlen(s) + 1);
}

static int log_info(void *c, const perch_trace_info *r)
{
    put_str(c, 'i', r->source);
    return 0;
}

static int log_process(void *c, const perch_process_rec *r)
{
    put(c, r, offsetof(perch_process_rec, image_name)); /* the generator zeroes the padding */
    put_str(c, 'p', r->image_name);
    put_str(c, 'c', r->command_line);
    return 0;
}

static int log_thread(void *c, const perch_thread_rec *r)
{
    put(c, r, offsetof(perch_thread_rec, name));
    put_str(c, 't', r->name);
    return 0;
}

static int log_module(void *c, const perch_module_rec *r)
{
    put(c, r, offsetof(perch_module_rec, path));
    put_str(c, 'm', r->path);
    put(c, &r->pdb_guid, sizeof r->pdb_guid);
    put(c, &r->pdb_age, sizeof r->pdb_age);
    put_str(c, r->pdb_name != NULL ? 'P' : 'N', r->pdb_name != NULL ? r->pdb_name : "");
    return 0;
}

static int log_stack(void *c, const perch_stack_rec *r)
{
    put(c, "k", 1);
    put(c, &r->id, 4);
    put(c, &r->frame_count, 4);
    put(c, &r->kernel_frames, 4);
    put(c, r->frames, sizeof *r->frames * r->frame_count);
    return 0;
}

static int log_slice(void *c, const perch_slice_rec *r)
{
    put(c, "s", 1);
    put(c, r, sizeof *r); /* the generator zeroes the padding */
    return 0;
}

static int log_sample(void *c, const perch_sample_rec *r)
{
    struct log *l = c;
    if (++l->samples == l->fail_at)
        return PERCH_EIO;
    put(c, "S", 1);
    put(c, r, sizeof *r);
    return 0;
}

static int log_lbr(void *c, const perch_lbr_rec *r)
{
    put(c, "l", 1);
    put(c, &r->ts, 8);
    put(c, &r->branch_count, 4);
    put(c, r->from, 8 * r->branch_count);
    put(c, r->to, 8 * r->branch_count);
    return 0;
}

static int log_ledger(void *c, const perch_ledger_rec *r)
{
    put(c, &r->count, 8);
    put_str(c, 'L', r->reason);
    return 0;
}

static int log_stat(void *c, const perch_stat_rec *r)
{
    put(c, &r->value, 8);
    put_str(c, 'T', r->name);
    return 0;
}

static int log_symbol(void *c, const perch_symbol_rec *r)
{
    put(c, &r->module_key, 8);
    put(c, &r->func_rva, 4);
    put_str(c, 'y', r->name);
    return 0;
}

static int log_finish(void *c)
{
    put(c, "F", 1);
    return 0;
}

static perch_sink log_sink(struct log *l)
{
    perch_sink s = {.ctx = l,
                    .trace_info = log_info,
                    .process = log_process,
                    .thread = log_thread,
                    .module = log_module,
                    .stack = log_stack,
                    .slice = log_slice,
                    .sample = log_sample,
                    .lbr = log_lbr,
                    .ledger = log_ledger,
                    .stat = log_stat,
                    .finish = log_finish,
                    .symbol = log_symbol};
    return s;
}

#define RECORDS    6000u
#define LONG_STACK 70000u /* frames: 560 KB, more than a batch */

static uint64_t frames[LONG_STACK * 2];

/* Gives record i of the generated stream to sink; returns its result. */
static int give(const perch_sink *k, uint32_t i)
{
    char name[32];
    snprintf(name, sizeof name, "name-%u", i);
    if (i % 97 == 5) {
        perch_thread_rec t;
        memset(&t, 0, sizeof t);
        t.key = i;
        t.process_key = 1;
        t.tid = i * 3u;
        t.end_ts = i + 9u;
        t.name = i % 2 ? name : "";
        return k->thread(k->ctx, &t);
    }
    if (i % 149 == 7) {
        perch_module_rec m;
        perch_process_rec p;
        memset(&m, 0, sizeof m);
        memset(&p, 0, sizeof p);
        m.key = p.key = i;
        m.base = i * 0x10000ull;
        m.pdb_age = i;
        m.pdb_guid.data1 = i * 7u;
        m.path = name;
        m.pdb_name = i % 3 == 0 ? NULL : i % 3 == 1 ? "" : "x.pdb"; /* NULL stays NULL */
        p.pid = i;
        p.exit_status = -(int32_t)i;
        p.image_name = name;
        p.command_line = i % 2 ? "" : "cmd /c a long command line";
        int err = k->module(k->ctx, &m);
        return err ? err : k->process(k->ctx, &p);
    }
    if (i % 4 == 0) {
        perch_sample_rec s;
        memset(&s, 0, sizeof s);
        s.ts = i;
        s.ip = 0xfffff80000000000ull + i * 17u;
        s.tid = i % 13;
        s.stack_id = i / 4;
        return k->sample(k->ctx, &s);
    }
    if (i % 4 == 1) {
        perch_slice_rec s;
        memset(&s, 0, sizeof s);
        s.start_ts = i;
        s.end_ts = i + 3;
        s.pmc_count = 2;
        s.pmc_delta[1] = i * 3u;
        return k->slice(k->ctx, &s);
    }
    if (i % 4 == 2) {
        perch_stack_rec s = {i, i == 2002 ? LONG_STACK : i % 300, i % 5, frames + i % 1000};
        return k->stack(k->ctx, &s);
    }
    perch_lbr_rec l = {.ts = i, .branch_count = i % 33, .from = frames + i, .to = frames + 2 * i};
    return k->lbr(k->ctx, &l);
}

/* The whole stream into k: trace info, records, ledger, stat, symbol, finish. */
static int give_all(const perch_sink *k)
{
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "synth";
    int err = k->trace_info(k->ctx, &info);
    for (uint32_t i = 0; i < RECORDS && err == 0; i++)
        err = give(k, i);
    perch_ledger_rec led = {"test.reason", 3};
    perch_stat_rec st = {"test.stat", 4};
    perch_symbol_rec sym = {.module_key = 1, .name = "func"};
    err = err ? err : k->ledger(k->ctx, &led);
    err = err ? err : k->stat(k->ctx, &st);
    err = err ? err : k->symbol(k->ctx, &sym);
    return err ? err : k->finish(k->ctx);
}

static int setup(void **state)
{
    for (size_t i = 0; i < sizeof frames / sizeof *frames; i++)
        frames[i] = 0x7ff600000000ull + i * 0x9e37u;
    (void)state;
    return 0;
}

typedef int (*relay_make)(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out);

/* Every batch size: the inner sink of a relay made by make gets the calls the direct sink got,
 * byte for byte. filler: nobody else plays it (finish must have played every batch). */
static void check_same_calls(relay_make make, const size_t *batches, size_t count, bool filler)
{
    struct log direct = {0}, relayed;
    perch_sink dsink = log_sink(&direct), rsink;
    assert_int_equal(give_all(&dsink), 0);
    for (size_t b = 0; b < count; b++) {
        perch_sink_relay *r = NULL;
        memset(&relayed, 0, sizeof relayed);
        perch_sink inner = log_sink(&relayed);
        assert_int_equal(make(&inner, batches[b], &r), 0);
        perch_sink_relay_sink(r, &rsink);
        assert_int_equal(give_all(&rsink), 0);
        if (filler)
            assert_false(perch__sink_relay_play_one(r)); /* finish played everything */
        assert_int_equal(perch_sink_relay_stop(r), 0);
        assert_int_equal(relayed.len, direct.len);
        assert_memory_equal(relayed.data, direct.data, direct.len);
        free(relayed.data);
    }
    free(direct.data);
}

static void test_same_calls(void **state)
{
    static const size_t batches[] = {0, 1, 4096, 100000};
    (void)state;
    check_same_calls(perch_sink_relay_start, batches, sizeof batches / sizeof *batches, false);
}

/* A relay nobody else plays (perch__sink_relay_create, no player thread): the filling
 * thread plays the batches itself whenever the ring is full or it must drain, so the stream
 * goes through (it would wait forever otherwise) and the inner sink gets the same calls. */
static void test_filler_plays(void **state)
{
    static const size_t batches[] = {1, 4096};
    (void)state;
    check_same_calls(perch__sink_relay_create, batches, sizeof batches / sizeof *batches, true);
}

static void test_inner_error(void **state)
{
    struct log direct = {0}, relayed = {0};
    perch_sink dsink = log_sink(&direct), inner = log_sink(&relayed), rsink;
    perch_sink_relay *r = NULL;
    (void)state;
    direct.fail_at = relayed.fail_at = 500;
    assert_int_equal(give_all(&dsink), PERCH_EIO);
    assert_int_equal(perch_sink_relay_start(&inner, 4096, &r), 0);
    perch_sink_relay_sink(r, &rsink);
    assert_int_equal(give_all(&rsink), PERCH_EIO); /* from a later call: the next drain */
    perch_sample_rec s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rsink.sample(rsink.ctx, &s), PERCH_EIO);
    assert_int_equal(rsink.finish(rsink.ctx), PERCH_EIO);
    assert_int_equal(perch_sink_relay_stop(r), PERCH_EIO);
    assert_int_equal(relayed.samples, 500); /* nothing played after the failing sample */
    assert_int_equal(relayed.len, direct.len);
    assert_memory_equal(relayed.data, direct.data, direct.len);
    free(direct.data);
    free(relayed.data);
}

static void test_stop_without_finish(void **state)
{
    struct log relayed = {0};
    perch_sink inner = log_sink(&relayed), rsink;
    perch_sink_relay *r = NULL;
    (void)state;
    assert_int_equal(perch_sink_relay_start(&inner, 4096, &r), 0);
    perch_sink_relay_sink(r, &rsink);
    for (uint32_t i = 0; i < 3000; i++)
        assert_int_equal(give(&rsink, i), 0);
    assert_int_equal(perch_sink_relay_stop(r), 0); /* what was not handed over is dropped */
    assert_int_equal(perch_sink_relay_stop(NULL), 0);
    free(relayed.data);
}

static int sweep_run(void *ctx)
{
    struct log *l = ctx;
    perch_sink inner = log_sink(l), rsink;
    perch_sink_relay *r = NULL;
    l->len = 0;
    int err = perch_sink_relay_start(&inner, 4096, &r);
    if (err < 0)
        return err;
    perch_sink_relay_sink(r, &rsink);
    err = give_all(&rsink);
    int serr = perch_sink_relay_stop(r);
    return err < 0 ? err : serr;
}

static void test_alloc_failures(void **state)
{
    struct log l = {0};
    perch_sweep s = {"sink relay", sweep_run, NULL, &l, true, 0};
    (void)state;
    perch_sweep_result res = perch_sweep_alloc(&s);
    assert_true(res.total >= 4); /* the relay, its mutex, condition, thread, batches */
    assert_int_equal(res.outcome[PERCH_SWEEP_ENOMEM], res.runs);
    free(l.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_calls),     cmocka_unit_test(test_filler_plays),
        cmocka_unit_test(test_inner_error),    cmocka_unit_test(test_stop_without_finish),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
