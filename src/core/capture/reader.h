/*
 * The capture reader's internals, shared by reader.c (header, chunk loop, status) and
 * decode.c (one decoder per chunk type, each replaying a chunk's records into the sink).
 */
#ifndef PERCH_CAPTURE_READER_H
#define PERCH_CAPTURE_READER_H

#include "capture/codec.h"
#include "capture/format.h"
#include "capture/strtab.h"
#include "perch/capture.h"

typedef struct perch__cap_reader {
    const perch_input *in;
    const perch_sink *sink;
    perch_capture_status *status;
    perch__strtab strings;
    perch__cap_state state;
    perch__cap_stack_ring ring;
    uint64_t *frames;         /* PERCH_CAPTURE_MAX_FRAMES */
    uint64_t *from, *to;      /* PERCH_CAPTURE_MAX_BRANCHES each */
    const char *names[PERCH_CAPTURE_MAX_COUNTERS];
    uint64_t records;         /* records of the current chunk delivered so far */
    int sink_error;           /* set when a sink callback failed */
    int limit_error;          /* set when the string table hit its cap */
} perch__cap_reader;

/* Decodes the payload of a known chunk type (prefix and records) from c into the sink,
 * counting delivered records in r->records. Returns 0, a cursor error (the chunk is
 * malformed; c->pos says where), the sink's error (r->sink_error set), or PERCH_ELIMIT /
 * PERCH_ENOMEM from the string table (r->limit_error set). */
int perch__cap_decode_chunk(perch__cap_reader *r, unsigned type, perch__cap_cursor *c);

#endif
