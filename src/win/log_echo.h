/*
 * The console echo of perchd's log (src/win/log.c): in console mode every log line is also
 * shown on stderr, and a write there can wait for as long as nobody takes the output (a
 * selection in the console window, a paused console, a pipe nobody reads). So the lines go
 * into a bounded queue that a thread of its own writes out; a line that finds the queue full
 * is dropped and counted, and the thread says how many were dropped, in order, once the
 * console takes output again. No perchd thread ever waits for the console, whatever lock it
 * holds. The log file and the event log are written as before and keep every line.
 */
#ifndef PERCH_WIN_LOG_ECHO_H
#define PERCH_WIN_LOG_ECHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes of lines the queue holds before it drops. */
#define PERCH_LOG_ECHO_QUEUE_BYTES (64u << 10)

/* Starts echoing to stream's handle (written with WriteFile, lines ending in CR LF; a stream
 * with no handle shows nothing). When the thread cannot be had, lines are written by
 * perch__log_echo_put itself, as before (then they can wait). A thread left behind by an
 * earlier stop (still waiting in a write) is taken on again, writing to the new handle from
 * its next take. */
void perch__log_echo_start(FILE *stream);

/* Queues one line of len bytes (its newline included) without waiting, or drops and counts
 * it when the queue has no room. Lines are written in the order they were put. */
void perch__log_echo_put(const char *line, size_t len);

/* Writes what is queued and ends the thread, waiting for it at most wait_ms. A thread that
 * is still waiting for the console then is left behind (the process can exit with it: it
 * holds no C library lock); lines put after this are dropped until the next start. True when
 * no thread is left. */
bool perch__log_echo_stop(uint32_t wait_ms);

/* Lines dropped since the process started (tests, and the notice's count). */
uint64_t perch__log_echo_dropped(void);

#endif
