/*
 * Access to the PE+PDB fixtures that tests/fixtures/sym builds with clang and lld (the path
 * is in PERCH_SYM_FIXTURES, set by ctest). Like the real traces: a missing fixture skips the
 * test locally and fails it under CI.
 */
#ifndef PERCH_TEST_SYM_FIXTURE_H
#define PERCH_TEST_SYM_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/records.h"
#include "perch/sym.h"
#include "testdata.h"

#define SYM_FIXTURE_BASE 0x7ff600000000ull

/* The path of rel (e.g. "x86_64/app.pdb") in the fixture folder, in a static buffer. */
static inline const char *sym_fixture_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("PERCH_SYM_FIXTURES");
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "", rel);
    if (dir != NULL && (f = fopen(path, "rb")) != NULL) {
        fclose(f);
        return path;
    }
    if (getenv("CI"))
        fail_msg("symbol fixture %s is missing (PERCH_SYM_FIXTURES=%s) and CI is set", rel,
                 dir ? dir : "(unset)");
    skip();
    return NULL;
}

/* Reads fixture rel into a malloc'd buffer. */
static inline uint8_t *sym_fixture(const char *rel, size_t *len)
{
    return perch_test_read_file(sym_fixture_path(rel), len);
}

/* The PE image at path (a fixture), read with Perch's reader; destroy with perch_pe_destroy. */
static inline perch_pe *sym_fixture_pe(const char *path)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why = NULL;
    assert_int_equal(perch_input_open_file(&in, path), 0);
    if (perch_pe_read(&in, &pe, &why) != 0)
        fail_msg("%s: %s", path, why ? why : "not read");
    perch_input_close(&in);
    return pe;
}

/* Feeds one process with the image, a thread and 3 samples with a 3-frame stack into both. */
static inline void sym_fixture_feed(const perch_sink *a, const perch_sink *b, const char *path,
                                    const perch_pe_info *pi, const uint32_t rva[3])
{
    const perch_sink *both[2] = {a, b};
    perch_trace_info info;
    memset(&info, 0, sizeof info);
    info.source = "t";
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    perch_thread_rec t = {10, 1, 100, 1000, 0, 0, 0, "main"};
    perch_module_rec m = {
        20,   1,    1000,         SYM_FIXTURE_BASE, pi->size_of_image, 0, 0, 0, pi->time_date_stamp,
        path, true, pi->pdb_guid, pi->pdb_age,      pi->pdb_path};
    uint64_t frames[3] = {SYM_FIXTURE_BASE + rva[0], SYM_FIXTURE_BASE + rva[1],
                          SYM_FIXTURE_BASE + rva[2]};
    perch_stack_rec st = {1, 3, 0, frames};
    for (int k = 0; k < 2; k++) {
        const perch_sink *s = both[k];
        assert_int_equal(s->trace_info(s->ctx, &info), 0);
        assert_int_equal(s->thread(s->ctx, &t), 0);
        assert_int_equal(s->module(s->ctx, &m), 0);
        assert_int_equal(s->stack(s->ctx, &st), 0);
        for (int i = 0; i < 3; i++) {
            perch_sample_rec sm;
            memset(&sm, 0, sizeof sm);
            sm.thread_key = 10, sm.ts = 100 + (uint64_t)i, sm.ip = frames[0];
            sm.module_key = 20, sm.stack_id = 1, sm.count = 1;
            assert_int_equal(s->sample(s->ctx, &sm), 0);
        }
    }
}

#endif
