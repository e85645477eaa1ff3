/*
 * errno -> PERCH_E* for the POSIX backends (file_io.c, fs.c): the one table of that
 * translation on POSIX, as src/win/error.c is on Windows.
 */
#ifndef PERCH_POSIX_ERRNO_MAP_H
#define PERCH_POSIX_ERRNO_MAP_H

int perch__posix_error(int e);

#endif
