/*
 * errno -> PERCH_E* for the POSIX backends (errno_map.h).
 */
#include <errno.h>

#include "errno_map.h"
#include "perch/error.h"

int perch__posix_error(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return PERCH_ENOENT;
    case EACCES:
    case EPERM:
    case EROFS:
        return PERCH_EACCES;
    case ENOMEM:
        return PERCH_ENOMEM;
    case EEXIST:
        return PERCH_EEXIST;
    case EISDIR:
        return PERCH_EISDIR;
    case ENOSPC:
    case EDQUOT:
        return PERCH_ENOSPC;
    default:
        return PERCH_EIO;
    }
}
