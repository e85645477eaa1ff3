/*
 * A perch_output that fails like a full disk, for write-failure sweeps: it keeps what was
 * written in memory (so a test can replay it) and fails the K-th write call, or the K-th sync
 * call. The failing write stores the first half of its buffer first, as write(2) does when the
 * disk fills in the middle of a request; once it has failed every later write and sync fails
 * too (the disk stays full).
 */
#ifndef PERCH_TEST_FAILIO_H
#define PERCH_TEST_FAILIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/io.h"

typedef struct perch_failio {
    uint8_t *data; /* bytes that reached the "disk" (libc malloc: outside the sweeps' counts) */
    size_t len, cap;
    uint64_t writes;     /* write calls so far */
    uint64_t syncs;      /* sync calls so far */
    uint64_t fail_write; /* the 1-based write call that fails; 0 never */
    uint64_t fail_sync;  /* the 1-based sync call that fails; 0 never */
    size_t synced_len;   /* len at the last successful sync */
    bool failed;         /* a call failed: the disk is full */
    int error;           /* what the failing calls return (default PERCH_EIO) */
} perch_failio;

/* Starts an empty failing output; fail_write / fail_sync as in the struct (0: never). */
void perch_failio_init(perch_failio *f, perch_output *out, uint64_t fail_write, uint64_t fail_sync);

/* Frees the kept bytes. */
void perch_failio_free(perch_failio *f);

#endif
