/*
 * A capture replayed into a sink that folds every sample, slice and stack record, field by
 * field, into a digest, with or without perch_sink.decode_ahead (the reader's split walk in
 * record mode, src/core/capture/read_split.c). test_capture_split runs both over one input
 * and compares: the same records in the same order, each delivered on the caller's thread,
 * and the same stop, also when the sink refuses its n-th sample or slice.
 */
#ifndef PERCH_TEST_AHEAD_REPLAY_H
#define PERCH_TEST_AHEAD_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/capture.h"

typedef struct ahead_replay {
    uint64_t digest;  /* FNV-1a over the fields of every record, in delivery order */
    uint64_t records; /* sample, slice and stack records delivered */
    uint64_t strays;  /* records delivered on a thread other than the caller's */
    size_t refuse;    /* the n-th sample or slice refused with PERCH_ELIMIT (1-based; 0: none) */
    uint64_t data;    /* samples and slices offered so far */
    uint64_t reads;   /* calls of the input's read_at, from any thread (the split walk reads
                       * the chunks it decodes ahead once more: their headers when it scans) */
    perch_capture_status st;
    int err; /* what perch_capture_replay_ex returned */
} ahead_replay;

/* The callbacks the sink has (a sink without some is read differently: the split walk keeps
 * no records for them). */
enum { AHEAD_SAMPLES = 1, AHEAD_SLICES = 2, AHEAD_STACKS = 4, AHEAD_ALL = 7 };

/* Replays data[0, len) into *a (overwritten), with decode_ahead as ahead, through a sink with
 * the callbacks `takes` names; refuse as in the struct. */
void ahead_replay_run(const uint8_t *data, size_t len, bool ahead, size_t refuse, unsigned takes,
                      ahead_replay *a);

/* Test hook: when set, called on the bytes of every read (from any thread) before they are
 * returned, to model an input whose bytes differ from one read to the next. */
extern void (*ahead_replay_tamper)(uint64_t off, void *buf, size_t len);

#endif
