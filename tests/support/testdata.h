/*
 * Access to the real ETW traces in ../shared/data for tests, and a growable text buffer that
 * collects what a test writes (JSON reports, and a report's JSON through it).
 *
 * The traces are never copied into the repository; tests find them through PERCH_DATA_DIR
 * (set by ctest) or the path compiled in. When the folder is missing, a test is skipped on a
 * developer's machine but fails loudly when CI is set, so CI can never pass by skipping.
 */
#ifndef PERCH_TEST_TESTDATA_H
#define PERCH_TEST_TESTDATA_H

#include <stddef.h>
#include <stdint.h>

/* The real traces in the data folder's etl/ (file names), for tests that run every one. */
extern const char *const perch_test_etl_traces[];
extern const size_t perch_test_etl_trace_count;

/* The full path of rel (e.g. "etl/perfview_net.4.5.2.x64.etl") in a static buffer, or NULL
 * when the file does not exist. */
const char *perch_test_data_path(const char *rel);

/* Like perch_test_data_path, but skips the current cmocka test when the file is missing, or
 * fails it when the CI environment variable is set. Never returns NULL. */
const char *perch_test_require_data(const char *rel);

/* Reads a whole file into a malloc'd buffer; fails the current test on error. */
uint8_t *perch_test_read_file(const char *path, size_t *len);

/* The trace `perch synth` writes for seed and about target_bytes, in memory (release it with
 * perch_free); fails the current test on error. */
uint8_t *perch_test_synth_etl(uint64_t seed, uint64_t target_bytes, size_t *len);

/* A growable NUL-terminated text buffer: start from {NULL, 0, 0}; the caller frees data. */
typedef struct perch_test_text {
    char *data;
    size_t len, cap;
} perch_test_text;

/* Appends n bytes to the perch_test_text at ctx (a perch_json sink); fails the test when out of
 * memory. Returns 0. */
int perch_test_text_sink(void *ctx, const char *data, size_t n);

struct perch_report;

/* r's `report --json` text (malloc'd; free it); fails the test when the write fails. */
char *perch_test_report_json(struct perch_report *r);

#endif
