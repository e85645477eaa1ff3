/*
 * Messages and names for Perch's error space, generated from PERCH_ERRNO_MAP so the three
 * views of an error (enum value, message, name) are always the same list.
 */
#include "perch/error.h"

const char *perch_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define PERCH_ERRNO_MSG(name, value, msg)                                                      \
    case (value):                                                                              \
        return msg;
        PERCH_ERRNO_MAP(PERCH_ERRNO_MSG)
#undef PERCH_ERRNO_MSG
    default:
        return "unknown error";
    }
}

const char *perch_err_name(int err)
{
    switch (err) {
    case 0:
        return "OK";
#define PERCH_ERRNO_NAME(name, value, msg)                                                     \
    case (value):                                                                              \
        return #name;
        PERCH_ERRNO_MAP(PERCH_ERRNO_NAME)
#undef PERCH_ERRNO_NAME
    default:
        return "UNKNOWN";
    }
}
