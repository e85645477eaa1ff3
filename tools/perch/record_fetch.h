/*
 * perch record -o FILE: copies every file of a finished recording out of perchd (the first
 * into FILE, later rotated files next to it as FILE-2, FILE-3 ...; record_fetch.c).
 */
#ifndef PERCH_CLI_RECORD_FETCH_H
#define PERCH_CLI_RECORD_FETCH_H

#include <stdbool.h>

#include "service_client.h"

/* Fetches the recording whose first file is `first` into path (and its numbered siblings),
 * prints what was written (text, or one JSON object with a "files" array) and returns the
 * exit status. */
int perch_cli_fetch_recording(perch_proto_client *c, const char *first, const char *path,
                              bool json);

#endif
