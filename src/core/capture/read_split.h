/*
 * The capture reader's split walk (read_split.c): sample and slice chunks of a sink with
 * decode_ahead decoded ahead of the walk, on a second thread and the walk's own, into arrays
 * of records played in file order. Used by reader.c's walk; nothing else calls it.
 */
#ifndef PERCH_CAPTURE_READ_SPLIT_H
#define PERCH_CAPTURE_READ_SPLIT_H

#include "capture/reader.h"

typedef struct perch__cap_split perch__cap_split;

/* The walk's ordinary path for the chunk at off (reader.c: read, check, decode into the
 * sink), with r->sink replaced by `sink` while it decodes when sink is not NULL. */
typedef int (*perch__cap_split_fallback)(perch__cap_reader *r, perch__cap_buf *buf, uint64_t off,
                                         perch_capture_chunk_info *ci, const perch_sink *sink);

/* Starts the second thread for r (r->sink->decode_ahead set, r->status->version
 * known), the first chunk at offset first. Returns 0, PERCH_ENOMEM or the thread error (*out
 * untouched). */
int perch__cap_split_start(perch__cap_reader *r, uint64_t first, perch__cap_split **out);

/* Plays the chunk at off (the walk's next) into r->sink as the ordinary path would, filling
 * *ci: as its records when it was decoded ahead, else through fallback. Returns 0 or the
 * error that stops the walk (r->status filled, as fallback fills it). */
int perch__cap_split_play(perch__cap_split *sp, uint64_t off, perch_capture_chunk_info *ci,
                          perch__cap_buf *buf, perch__cap_split_fallback fallback);

/* Stops and joins the thread and frees sp. Accepts NULL. */
void perch__cap_split_stop(perch__cap_split *sp);

#endif
