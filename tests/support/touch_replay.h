/*
 * A capture replayed into the exporters' entity store the way chrome's first pass takes its
 * samples and slices (perch__entities_touch_thread, and a map of the threads that had a
 * slice), through the ordinary walk (sample and slice callbacks) or the split walk
 * (src/core/capture/read_split.c, chosen by a touch callback). test_capture_split and the
 * capture fuzz target run both walks over one input and compare them with touch_replay_diff:
 * the split walk must create the same threads in the same order, with the same tid and cpu,
 * mark the same threads sliced and stop alike. Needs src/core on the include path.
 */
#ifndef PERCH_TEST_TOUCH_REPLAY_H
#define PERCH_TEST_TOUCH_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/export_internal.h"
#include "perch/capture.h"

typedef struct touch_replay {
    perch__budget budget;
    perch__entities ents;
    perch__map sliced; /* thread key -> 1: the thread had a slice */
    uint64_t touches;  /* calls of sample, slice or touch */
    size_t refuse;     /* the new thread refused with PERCH_ELIMIT (1-based; 0: none) */
    perch_capture_status st;
    int err; /* what perch_capture_replay_ex returned */
} touch_replay;

/* Replays data[0, len) into *t (overwritten), through the split walk when split is true;
 * refuse as in the struct. */
void touch_replay_run(const uint8_t *data, size_t len, bool split, size_t refuse, touch_replay *t);

/* The first difference between two replays' results and entity stores ("error", "thread
 * count", "thread key", "tid", "cpu", "sliced"), or NULL. The stops' fields are the caller's to
 * compare. */
const char *touch_replay_diff(const touch_replay *a, const touch_replay *b);

void touch_replay_free(touch_replay *t);

#endif
