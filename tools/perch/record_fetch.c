/*
 * The files of a finished recording, fetched by `perch record -o FILE`: a recording that
 * rotated (RotateSizeMb, RotateAgeMinutes) is several captures, its first file and the later
 * ones the rotating writer named after it (src/core/capture/rotate_names.h): "<name>.perch",
 * then "<name>-YYYYMMDD-HHMMSS-000002.perch" and on for a named recording; perchd's own names
 * "perch-YYYYMMDD-HHMMSS-<seq>.perch" with the sequence counting on for an unnamed one. The
 * later files are found in the capture list once the recording has ended and copied next to
 * FILE as FILE's stem with "-2", "-3" ... before its extension, each a capture of its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rotate_names.h"
#include "perch/error.h"
#include "record_fetch.h"
#include "util/mem.h"

#define RECORD_PATH_MAX 1024

typedef struct later_file {
    const char *name;
    uint32_t seq;
} later_file;

static int by_seq(const void *a, const void *b)
{
    const later_file *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The later files of the recording whose first file is `first`, in rotation order; returns
 * how many (out has room for every listed capture). */
static size_t later_files(const perch_proto_captures_rep *rep, const char *first, later_file *out)
{
    char prefix[64];
    uint32_t first_seq = 0, seq;
    size_t n = 0;
    if (perch__rotate_parse("perch", first, &first_seq)) {
        snprintf(prefix, sizeof prefix, "perch");
    } else if (ends_with(first, ".perch") && strlen(first) - 6 < sizeof prefix) {
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(first) - 6), first);
        first_seq = 1; /* the named file is the first; the numbered ones start at 2 */
    } else {
        return 0;
    }
    for (uint32_t i = 0; i < rep->count; i++) {
        const char *name = rep->captures[i].name;
        if (perch__rotate_parse(prefix, name, &seq) && seq > first_seq)
            out[n++] = (later_file){name, seq};
    }
    qsort(out, n, sizeof *out, by_seq);
    return n;
}

/* FILE with "-k" before its extension ("x.perch" -> "x-2.perch", "x" -> "x-2"). */
static void numbered_path(const char *path, size_t k, char *out, size_t len)
{
    const char *slash = strrchr(path, '/'), *bslash = strrchr(path, '\\');
    const char *base = slash > bslash ? slash : bslash;
    const char *dot = strrchr(path, '.');
    if (dot == NULL || (base != NULL && dot < base) || dot == path)
        snprintf(out, len, "%s-%zu", path, k);
    else
        snprintf(out, len, "%.*s-%zu%s", (int)(dot - path), path, k, dot);
}

static void print_result(const char *first, const char *path, const perch_cli_streamed *got,
                         char (*paths)[RECORD_PATH_MAX], size_t n, bool json)
{
    if (!json) {
        for (size_t i = 0; i < n; i++)
            printf("wrote %s: %" PRIu64 " bytes of %s\n", paths[i], got[i].bytes, got[i].name);
        if (n > 1)
            fprintf(stderr, "perch record: %s rotated into %zu files; each file is a capture of "
                            "its own\n", first, n);
        return;
    }
    perch_json w;
    perch_cli_json(&w);
    perch_json_begin_object(&w);
    perch_cli_json_s(&w, "name", got[0].name);
    perch_cli_json_u(&w, "bytes", got[0].bytes);
    perch_cli_json_s(&w, "file", path);
    perch_json_key(&w, "files");
    perch_json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", got[i].name);
        perch_cli_json_u(&w, "bytes", got[i].bytes);
        perch_cli_json_s(&w, "file", paths[i]);
        perch_json_end_object(&w);
    }
    perch_json_end_array(&w);
    perch_cli_json_done(&w);
}

int perch_cli_fetch_recording(perch_proto_client *c, const char *first, const char *path,
                              bool json)
{
    perch_proto_captures_rep rep;
    void *mem = NULL;
    char why[400] = "";
    int err = perch_proto_client_call(c, PERCH_MSG_CAPTURES, NULL, &rep, sizeof rep, &mem,
                                      PERCH_CLI_TIMEOUT_MS, why, sizeof why);
    if (err < 0) {
        perch_free(mem);
        return perch_cli_request_failed("record", err, why);
    }
    later_file *later = perch__calloc(rep.count ? rep.count : 1, sizeof *later);
    size_t n_later = later ? later_files(&rep, first, later) : 0;
    size_t n = 1 + n_later;
    perch_cli_streamed *got = perch__calloc(n, sizeof *got);
    char(*paths)[RECORD_PATH_MAX] = perch__calloc(n, sizeof *paths);
    int rc = 0;
    if (later == NULL || got == NULL || paths == NULL) {
        fprintf(stderr, "perch record: %s\n", perch_strerror(PERCH_ENOMEM));
        rc = 1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        perch_proto_fetch_req req = {i == 0 ? first : later[i - 1].name, 0};
        if (i == 0)
            snprintf(paths[i], sizeof paths[i], "%s", path);
        else
            numbered_path(path, i + 1, paths[i], sizeof paths[i]);
        rc = perch_cli_stream_quiet("record", c, PERCH_MSG_FETCH, &req, paths[i], &got[i]);
        if (rc != 0 && i > 0)
            fprintf(stderr, "perch record: the recording's first %zu file(s) were written\n", i);
    }
    if (rc == 0)
        print_result(first, path, got, paths, n, json);
    perch__free(paths);
    perch__free(got);
    perch__free(later);
    perch_free(mem);
    return rc;
}
