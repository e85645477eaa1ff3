/*
 * Fuzz target for the rotated-capture names (src/core/capture/rotate_names.c): the parser the
 * rotation runs on names found in a directory, and the check of the name a pipe client gives
 * a recording. The input's first byte picks a prefix length (and the sizes of the check's
 * buffers), the rest is the name.
 *   - A parsed name must print back to itself when its time fields are a real date (the
 *     format is the parser's inverse).
 *   - A name FETCH accepts is a plain file name ending in .perch; every file of an accepted
 *     recording name is one FETCH accepts.
 *   - A name the check accepts gives a stem that is a valid prefix, equal to the name less an
 *     optional ".perch", whose rotated file names parse back; a refusal leaves stem empty and
 *     a sentence in why. The buffers are allocated at their exact size, so a write past
 *     either is an error under AddressSanitizer. No file of an accepted name (the first, or
 *     a rotated one) is a snapshot's name (src/core/capture/snapshot_files.h), which
 *     SnapshotCapMb counts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "capture/rotate_names.h"
#include "capture/snapshot_files.h"
#include "perch/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The client name check, with stem and why buffers of the sizes the first byte picks. */
static void check_client_name(const char *name, uint8_t sizes)
{
    size_t stem_len = 1 + sizes % 40, why_len = sizes / 40 * 16; /* 1..40, 0..96 */
    char *stem = malloc(stem_len), *why = malloc(why_len ? why_len : 1);
    if (stem == NULL || why == NULL)
        abort();
    int err = perch__rotate_check_name(name, stem, stem_len, why_len ? why : NULL, why_len);
    if (err == 0) {
        size_t n = strlen(stem);
        char file[96];
        uint32_t seq;
        if (!perch__rotate_prefix_ok(stem) || strncmp(stem, name, n) != 0 ||
            (name[n] != '\0' && strlen(name + n) != 6))
            abort();
        perch__rotate_name(stem, 0, 42, file, sizeof file);
        if (!perch__rotate_parse(stem, file, &seq) || seq != 42)
            abort();
        if (!perch__capture_fetch_name_ok(file)) /* a recording's files can be fetched */
            abort();
        if (perch__snapshot_file(file)) /* SnapshotCapMb would count a recording's file */
            abort();
        snprintf(file, sizeof file, "%s.perch", stem);
        if (perch__snapshot_file(file) || !perch__capture_fetch_name_ok(file))
            abort();
    } else if (err != PERCH_EINVAL || stem[0] != '\0' || (why_len > 0 && why[0] == '\0')) {
        abort();
    }
    free(stem);
    free(why);
}

/* A name FETCH accepts is a plain file name ending in .perch in any case. */
static void check_fetch_name(const char *name)
{
    size_t n = strlen(name);
    if (perch__capture_fetch_name_ok(name) &&
        (n <= 6 || strpbrk(name, "\\/:") != NULL || strcasecmp(name + n - 6, ".perch") != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char prefix[40], name[512], back[600];
    uint32_t seq;
    if (size < 1 || size - 1 >= sizeof name)
        return 0;
    size_t pl = data[0] % 33;
    if (pl > size - 1)
        pl = size - 1;
    memcpy(prefix, data + 1, pl);
    prefix[pl] = '\0';
    memcpy(name, data + 1, size - 1);
    name[size - 1] = '\0';
    check_client_name(name, data[0]);
    check_fetch_name(name);
    if (strlen(prefix) != pl || !perch__rotate_prefix_ok(prefix))
        return 0;
    if (perch__rotate_parse(prefix, name, &seq)) {
        perch__rotate_name(prefix, 0, seq, back, sizeof back);
        if (strncmp(back, name, pl) != 0)
            abort();
    }
    return 0;
}
