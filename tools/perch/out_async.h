/*
 * An output whose writes run on a thread of their own (perch export): the exporter fills a
 * buffer while the thread hands the previous ones to the real output (a file or standard
 * output), so the system calls and the kernel's page-cache copies run beside the formatting
 * instead of after each buffer of it. Bounded: a ring of a few buffers.
 */
#ifndef PERCH_TOOLS_OUT_ASYNC_H
#define PERCH_TOOLS_OUT_ASYNC_H

#include "perch/io.h"


/* Routes *out through a writer thread: afterwards *out's write copies into a buffer of
 * buffer_bytes (0: 256 KiB), and a full buffer goes to the original output on the thread (a
 * ring of four; the writer waits only when all four are full). The same bytes reach the
 * original output in the same order, in calls of at most buffer_bytes, after one empty write
 * the thread makes when it starts (perch_output_open_file_deferred). The first error of
 * the original output is returned by every later write, sync and close of *out. *out's close
 * writes what is left, joins the thread, closes the original output and frees the state;
 * *out must be closed exactly once. On error (PERCH_ENOMEM, the thread's) *out is left as it
 * was. */
int perch_cli_out_async(perch_output *out, size_t buffer_bytes);

#endif
