/*
 * Recordings, snapshots and the capture directory (src/win/daemon.h). Recordings and
 * snapshots need the rotating capture writer and the flight recorder (capture branch); until
 * they are wired in, they are refused as not supported.
 */
#include "daemon_internal.h"
#include "perch/error.h"

int perch_daemon_record_start(perch_daemon *d, char *file, size_t len)
{
    (void)d;
    (void)file;
    (void)len;
    return PERCH_ENOTSUP;
}

int perch_daemon_record_stop(perch_daemon *d)
{
    (void)d;
    return PERCH_ENOTSUP;
}

int perch_daemon_snapshot(perch_daemon *d, uint32_t last_seconds, char *path, size_t len)
{
    (void)d;
    (void)last_seconds;
    (void)path;
    (void)len;
    return PERCH_ENOTSUP;
}

int perch_daemon_list_captures(perch_daemon *d, perch_daemon_capture **out, size_t *count)
{
    (void)d;
    (void)out;
    (void)count;
    return PERCH_ENOTSUP;
}

int perch_daemon_open_capture(perch_daemon *d, const char *name, perch_input *in)
{
    (void)d;
    (void)name;
    (void)in;
    return PERCH_ENOTSUP;
}
