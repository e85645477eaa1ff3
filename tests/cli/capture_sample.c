/*
 * Writes small capture files for the CLI tests of `perch info` and the fuzz seeds, from the
 * synthetic record streams of tests/unit/capture_synth.h:
 *
 *   perch_capture_sample DIR
 *
 * DIR/sample.perch    every record type at its extremes (complete)
 * DIR/cut.perch       the same, cut 20 bytes short (as after a crash)
 * DIR/random.perch    a trace-shaped stream of 300 samples in 4 KiB chunks
 * DIR/empty.perch     a header and an end chunk
 * DIR/not-a-capture.bin  a text file
 *
 *   perch_capture_sample --cut IN OUT N
 *
 * copies the first N bytes of IN to OUT (the partial-input CLI tests cut files with it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_synth.h"

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "capture_sample: cannot write %s\n", path);
        return 1;
    }
    printf("wrote %s (%zu bytes)\n", path, len);
    return 0;
}

static int write_stream(const char *dir, const char *name, synth_rec *r, uint32_t chunk_bytes,
                        size_t cut)
{
    size_t len = 0;
    uint8_t *data = synth_capture(r, chunk_bytes, &len, NULL);
    int status = data && len > cut ? write_file(dir, name, data, len - cut) : 1;
    free(data);
    return status;
}

/* Copies the first n bytes of in to out. */
static int cut_file(const char *in, const char *out, const char *n_text)
{
    char *end;
    unsigned long long n = strtoull(n_text, &end, 10);
    FILE *f = fopen(in, "rb"), *g = f ? fopen(out, "wb") : NULL;
    int c, status = *end || !f || !g;
    for (unsigned long long i = 0; !status && i < n && (c = fgetc(f)) != EOF; i++)
        status = fputc(c, g) == EOF;
    if (f)
        fclose(f);
    if (g && fclose(g) != 0)
        status = 1;
    return status;
}

int main(int argc, char **argv)
{
    static const char text[] = "This is not a capture.\n";
    if (argc == 5 && strcmp(argv[1], "--cut") == 0)
        return cut_file(argv[2], argv[3], argv[4]);
    synth_rec extremes = {0}, random = {0}, empty = {0};
    perch_sink s;
    int status = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: capture_sample DIR\n");
        return 2;
    }
    synth_extremes(&extremes);
    synth_random(&random, 21, 300);
    synth_recorder(&empty, &s);
    s.finish(&empty);
    status |= write_stream(argv[1], "sample.perch", &extremes, 0, 0);
    status |= write_stream(argv[1], "cut.perch", &extremes, 0, 20);
    status |= write_stream(argv[1], "random.perch", &random, 4096, 0);
    status |= write_stream(argv[1], "empty.perch", &empty, 0, 0);
    status |= write_file(argv[1], "not-a-capture.bin", text, sizeof text - 1);
    synth_free(&extremes);
    synth_free(&random);
    synth_free(&empty);
    return status;
}
