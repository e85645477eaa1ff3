/*
 * A rotating text log file: perchd.log in a directory, moved to perchd.1.log (and .1 to .2,
 * ...) when it would grow past its size cap, keeping a fixed number of files. Each write is
 * one whole line, appended and flushed, so a crash loses nothing already written. Not
 * thread-safe on its own: src/win/log.c serializes writers.
 */
#ifndef PERCH_WIN_LOGFILE_H
#define PERCH_WIN_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct perch_logfile perch_logfile;

/* Opens (appending) dir\base.log, creating dir and its parents. max_bytes >= 1024, keep >= 1
 * (files including the current one). Returns 0, PERCH_EINVAL, PERCH_ENOMEM or the Win32
 * error translated; *out untouched on error. */
int perch__logfile_open(const char *dir, const char *base, uint64_t max_bytes, uint32_t keep,
                        perch_logfile **out);

/* Appends len bytes (one or more whole lines), rotating first when they would not fit. */
int perch__logfile_write(perch_logfile *f, const char *line, size_t len);

/* Closes the file. Accepts NULL. */
void perch__logfile_close(perch_logfile *f);

/* Creates dir and every missing parent (UTF-8 path). 0 when it exists afterwards. */
int perch__make_dirs(const char *dir);

#endif
