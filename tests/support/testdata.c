/*
 * Locating and loading the real ETW traces for tests, and synthetic ones; see testdata.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perch/io.h"
#include "perch/json.h"
#include "perch/report.h"
#include "perch/synth.h"
#include "testdata.h"

#ifndef PERCH_DEFAULT_DATA_DIR
#define PERCH_DEFAULT_DATA_DIR "../shared/data"
#endif

const char *const perch_test_etl_traces[] = {
    "perfview_net.4.5.2.x64.etl",
    "airbus_ShutdownPerfDiagLogger.etl",
    "airbus_AMSITrace.etl",
    "airbus_lxcore_kernel.etl",
    "perfview_SelfDescribingSingleEvent.etl",
    "perfview_primitive-types.etl",
    "perfview_smallEtlFile.etl",
};
const size_t perch_test_etl_trace_count =
    sizeof perch_test_etl_traces / sizeof perch_test_etl_traces[0];

const char *perch_test_data_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("PERCH_DATA_DIR");
    FILE *f;

    if (!dir || !*dir)
        dir = PERCH_DEFAULT_DATA_DIR;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    f = fopen(path, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return path;
}

const char *perch_test_require_data(const char *rel)
{
    const char *path = perch_test_data_path(rel);
    if (path)
        return path;
    if (getenv("CI")) {
        fail_msg("test data %s is missing (PERCH_DATA_DIR=%s) and CI is set", rel,
                 getenv("PERCH_DATA_DIR") ? getenv("PERCH_DATA_DIR") : "(unset)");
    }
    skip();
    return NULL;
}

uint8_t *perch_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long size = 0;

    if (!f)
        fail_msg("cannot open %s", path);
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        fail_msg("cannot size %s", path);
    buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    if (fread(buf, 1, (size_t)size, f) != (size_t)size)
        fail_msg("short read of %s", path);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

int perch_test_text_sink(void *ctx, const char *data, size_t n)
{
    perch_test_text *t = ctx;
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->data = realloc(t->data, t->cap);
        assert_non_null(t->data);
    }
    memcpy(t->data + t->len, data, n);
    t->len += n;
    t->data[t->len] = '\0';
    return 0;
}

char *perch_test_report_json(perch_report *r)
{
    perch_test_text out = {NULL, 0, 0};
    perch_json w;
    perch_json_init(&w, perch_test_text_sink, &out);
    assert_int_equal(perch_report_write_json(r, &w), 0);
    return out.data;
}

uint8_t *perch_test_synth_etl(uint64_t seed, uint64_t target_bytes, size_t *len)
{
    perch_synth_options opt;
    perch_output out;
    perch_memory_out mem;
    perch_synth_options_init(&opt);
    opt.seed = seed;
    opt.target_bytes = target_bytes;
    perch_output_memory(&out, &mem, (size_t)target_bytes * 2 + (1u << 20));
    assert_int_equal(perch_synth_write(&opt, &out, NULL), 0);
    return perch_output_memory_take(&mem, len);
}
