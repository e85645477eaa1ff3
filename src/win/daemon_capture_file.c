/*
 * How perchd creates each capture file it writes (a recording's files: daemon_captures.c hands
 * it to the rotation as its open option, include/perch/capture_rotate.h; a flight-recorder
 * snapshot's file): perch_output_create_file, which refuses a file already there, nothing
 * more. It is a file of its own that defines nothing else on purpose: the Windows tests'
 * perchd_fake.exe links tests/win/perchd_fake_disk.c, which defines the same function (a disk
 * that fills or hangs on demand), and a static library's member is only linked for a symbol
 * still missing, so this one never is there. perchd.exe links this one.
 */
#include "daemon_internal.h"
#include "perch/io.h"

int perch__daemon_create_capture_file(perch_output *out, const char *path)
{
    return perch_output_create_file(out, path);
}
