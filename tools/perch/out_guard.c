/*
 * Guarded outputs (out_guard.h): forwards every call to the guarded output and keeps its
 * first error, in the guard and in one process-wide flag that input_kind.c reads. The flag is
 * atomic: a guarded output may be written by an output thread (out_async.c) while the main
 * thread asks whether any output failed.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "out_guard.h"
#include "perch/error.h"

static atomic_bool any_failed;

static int keep(perch_cli_out *g, int err)
{
    /* the stdio output reports every failure as PERCH_EIO; errno still says which */
    if (err == PERCH_EIO && g->inner.ctx == (void *)stdout)
        err = perch_cli_stdio_error();
    if (err < 0 && g->error == 0) {
        g->error = err;
        atomic_store(&any_failed, true);
    }
    return err;
}

static int guard_write(void *ctx, const void *buf, size_t len)
{
    perch_cli_out *g = ctx;
    return keep(g, g->inner.write(g->inner.ctx, buf, len));
}

static int guard_sync(void *ctx)
{
    perch_cli_out *g = ctx;
    return keep(g, g->inner.sync(g->inner.ctx));
}

static int guard_close(void *ctx)
{
    perch_cli_out *g = ctx;
    return g->inner.close ? keep(g, g->inner.close(g->inner.ctx)) : 0;
}

void perch_cli_out_guard(perch_cli_out *g, perch_output *out)
{
    g->inner = *out;
    g->error = 0;
    out->write = guard_write;
    out->sync = out->sync ? guard_sync : NULL;
    out->close = guard_close;
    out->ctx = g;
}

bool perch_cli_output_failed(void)
{
    return atomic_load(&any_failed);
}

int perch_cli_stdio_error(void)
{
    return errno == ENOSPC ? PERCH_ENOSPC : PERCH_EIO;
}

const char *perch_cli_out_name(const char *path)
{
    return !path || strcmp(path, "-") == 0 ? "standard output" : path;
}
