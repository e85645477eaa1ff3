/*
 * The Perch event source in the Windows Application event log: registration (at install:
 * EventMessageFile names perchd.exe, whose message table src/win/messages.mc defines) and
 * reporting one sentence per event with ReportEventW.
 */
#ifndef PERCH_WIN_EVENTLOG_H
#define PERCH_WIN_EVENTLOG_H

#include "log.h"

/* The event source name (also the service name). */
#define PERCH_EVENT_SOURCE_UTF8 "Perch"

/* Registers the source for the program at exe_path (UTF-8). Returns 0 or the translated
 * registry error (PERCH_EACCES when not elevated). */
int perch__eventlog_register(const char *exe_path);

/* Removes the source's registration; 0 also when it was not registered. */
int perch__eventlog_unregister(void);

/* True when the source is registered. */
int perch__eventlog_is_registered(void);

/* Opens the source for reporting (RegisterEventSourceW). 0 or the translated error. */
int perch__eventlog_open(void);

/* Reports one UTF-8 sentence at the given level. Returns 0 or the translated error. */
int perch__eventlog_report(perch_log_level level, const char *sentence);

/* Closes the source. Safe when it was not opened. */
void perch__eventlog_close(void);

#endif
