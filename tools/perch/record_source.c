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

/* The source's context: the path, and whether a pass found the input partial. */
struct path_source {
    bool partial;
    char path[];
};

static int replay_path(void *ctx, const perch_sink *sink)
{
    struct path_source *p = ctx;
    int err = perch_cli_play_file_ex("export", p->path, sink, false, !p->partial);
    if (err == PERCH_CLI_PARTIAL) {
        p->partial = true;
        return 0; /* every readable record was played */
    }
    return err;
}

static void close_path(void *ctx)
{
    free(ctx);
}

bool perch_record_source_partial(const perch_record_source *src)
{
    return src->replay == replay_path && ((const struct path_source *)src->ctx)->partial;
}

int perch_open_record_source(const char *path, perch_record_source *src)
{
    perch_input in;
    int err = perch_input_open_file(&in, path); /* a missing file fails here, once */
    if (err < 0)
        return err;
    perch_input_close(&in);
    size_t n = strlen(path) + 1;
    struct path_source *copy = malloc(sizeof *copy + n);
    if (!copy)
        return PERCH_ENOMEM;
    copy->partial = false;
    memcpy(copy->path, path, n);
    src->ctx = copy;
    src->replay = replay_path;
    src->close = close_path;
    return 0;
}
