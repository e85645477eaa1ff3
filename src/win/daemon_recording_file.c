/*
 * How perchd opens each file of a recording (daemon_captures.c hands it to the rotation as its
 * open option, include/perch/capture_rotate.h): perch_output_create_file, nothing more. It is a
 * file of its own that defines nothing else on purpose: the Windows tests' perchd_fake.exe
 * links tests/win/perchd_fake_disk.c, which defines the same function (a disk that fills or
 * hangs on demand), and a static library's member is only linked for a symbol still missing,
 * so this one never is there. perchd.exe links this one.
 */
#include "daemon_internal.h"
#include "perch/io.h"

int perch__daemon_open_recording_file(perch_output *out, const char *path)
{
    return perch_output_create_file(out, path);
}
