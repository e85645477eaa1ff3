/*
 * Perch's one error space.
 *
 * Every action in Perch returns an int: 0 on success or one of the negative PERCH_E* codes
 * below. The list is an X-macro so that the enum, perch_strerror() and perch_err_name() are
 * generated from one place and can never drift apart. Platform codes (Win32 errors, NTSTATUS,
 * errno) are translated into this space in exactly one file per platform.
 */
#ifndef PERCH_ERROR_H
#define PERCH_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message). Values are stable: they travel over the pipe and into captures. */
#define PERCH_ERRNO_MAP(X)                                                                     \
    X(EINVAL, -1, "invalid argument")                                                          \
    X(ENOMEM, -2, "out of memory")                                                             \
    X(ENOENT, -3, "no such file or object")                                                    \
    X(EACCES, -4, "access denied")                                                             \
    X(EIO, -5, "input/output error")                                                           \
    X(ETRUNC, -6, "input is truncated")                                                        \
    X(EFORMAT, -7, "input is malformed")                                                       \
    X(EVERSION, -8, "unsupported format version")                                              \
    X(EFEATURE, -9, "unsupported required feature")                                            \
    X(ECRC, -10, "checksum mismatch")                                                          \
    X(ERANGE, -11, "value out of range")                                                       \
    X(ELIMIT, -12, "a hard size limit was reached")                                            \
    X(EOF, -13, "end of input")                                                                \
    X(EEXIST, -14, "already exists")                                                           \
    X(EBUSY, -15, "resource busy")                                                             \
    X(ETIMEDOUT, -16, "timed out")                                                             \
    X(ENOTSUP, -17, "not supported")                                                           \
    X(EPIPE, -18, "pipe closed by the peer")                                                   \
    X(ECANCELED, -19, "operation canceled")                                                    \
    X(ESHORT, -20, "payload too short for its version")                                        \
    X(EUNKNOWN, -21, "unknown event")                                                          \
    X(ENOTOWNER, -22, "session is not owned by Perch")                                         \
    X(ESTATE, -23, "operation not valid in the current state")                                 \
    X(EOVERRUN, -24, "compressed data overruns its output")                                    \
    X(EISDIR, -25, "is a directory")                                                           \
    X(ENOSPC, -26, "no space left on device")                                                  \
    X(ENOTADMIN, -27, "not an administrator")                                                  \
    X(ESYSTEM, -99, "unmapped operating system error")

typedef enum perch_errno {
#define PERCH_ERRNO_ENUM(name, value, msg) PERCH_##name = (value),
    PERCH_ERRNO_MAP(PERCH_ERRNO_ENUM)
#undef PERCH_ERRNO_ENUM
} perch_errno;

/* A static English message for err; "unknown error" for anything not in the list. */
const char *perch_strerror(int err);

/* The symbolic name without prefix ("EINVAL"); "UNKNOWN" for anything not in the list. */
const char *perch_err_name(int err);

/* Releases memory that a Perch call handed to its caller (perch_output_memory_take, ...).
 * Accepts NULL. Everything Perch allocates goes through one replaceable allocator
 * (src/core/util/mem.h), so such memory is never passed to free() directly. */
void perch_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
