/*
 * The pipe client on systems other than Windows: perchd and its pipe exist only on Windows,
 * so connecting is refused with PERCH_ENOTSUP and a sentence the CLI shows as it is.
 */
#include <stdio.h>

#include "perch/error.h"
#include "proto/client.h"

int perch_pipe_connect(const char *name, uint32_t timeout_ms, perch_proto_transport *t, char *why,
                       size_t why_len)
{
    (void)name, (void)timeout_ms, (void)t;
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, "perchd and its pipe exist only on Windows");
    return PERCH_ENOTSUP;
}

int perch_pipe_service_state(bool *installed, bool *running)
{
    *installed = *running = false;
    return PERCH_ENOTSUP;
}
