/*
 * The input seam of perch export (see record_source.h): a capture is replayed from the file
 * each pass, an .etl is run through the reader -> model pipeline each pass (input_kind.c
 * decides which). The source only keeps the path, so nothing stays open between passes.
 */
#include <stdlib.h>
#include <string.h>

#include "input_kind.h"
#include "perch/error.h"
#include "record_source.h"

static int replay_path(void *ctx, const perch_sink *sink)
{
    return perch_cli_play_file("export", (const char *)ctx, sink, false);
}

static void close_path(void *ctx)
{
    free(ctx);
}

int perch_open_record_source(const char *path, perch_record_source *src)
{
    perch_input in;
    int err = perch_input_open_file(&in, path); /* a missing file fails here, once */
    if (err < 0)
        return err;
    perch_input_close(&in);
    size_t n = strlen(path) + 1;
    char *copy = malloc(n);
    if (!copy)
        return PERCH_ENOMEM;
    memcpy(copy, path, n);
    src->ctx = copy;
    src->replay = replay_path;
    src->close = close_path;
    return 0;
}
