/*
 * The capture reader's internals, shared by reader.c (header, chunk loop, status) and
 * decode.c (one decoder per chunk type, each replaying a chunk's records into the sink).
 */
#ifndef PERCH_CAPTURE_READER_H
#define PERCH_CAPTURE_READER_H

#include "capture/codec.h"
#include "capture/entity.h"
#include "capture/format.h"
#include "capture/rules.h"
#include "capture/strtab.h"
#include "perch/capture.h"

typedef struct perch__cap_reader {
    const perch_input *in;
    const perch_sink *sink;
    perch_capture_status *status;
    perch__strtab strings;
    perch__strtab named[2]; /* the ledger [0] and stat [1] names so far, each once */
    perch__cap_ents ents;   /* current state of every entity (version 2) */
    perch__cap_state state;
    uint64_t *frames;    /* frame_cap entries, grown up to PERCH_CAPTURE_MAX_FRAMES */
    uint64_t *from, *to; /* branch_cap entries each, up to PERCH_CAPTURE_MAX_BRANCHES */
    uint32_t frame_cap;
    uint32_t branch_cap;
    uint64_t records;   /* records of the current chunk delivered so far */
    uint64_t chunk_off; /* offset of the chunk being decoded */
    uint64_t info_off;  /* offset of the chunk with the trace_info record, 0 before it */
    uint64_t stacks;    /* stacks defined so far: ids 1..stacks (dense from 1) */
    int sink_error;     /* set when a sink callback failed */
    int limit_error;    /* set when the string table hit its cap */
    bool checked_only;  /* every record through decode.c's checked decoders (tests, fuzzing) */
    bool stacks_elsewhere; /* stack ids not checked (the read option; the split decoders) */
    char rule[CAP_RULE_REASON]; /* the rule across records a record broke, for the stop's reason */
    /* Large members last: perch_capture_replay_ex zeroes only what comes before `ring`. */
    perch__cap_stack_ring ring;
    const char *names[PERCH_CAPTURE_MAX_COUNTERS];
} perch__cap_reader;

/* Makes r->frames hold n frames (n <= PERCH_CAPTURE_MAX_FRAMES). PERCH_ENOMEM. */
int perch__cap_reader_frames(perch__cap_reader *r, uint32_t n);

/* Makes r->from and r->to hold n branches (n <= PERCH_CAPTURE_MAX_BRANCHES). PERCH_ENOMEM. */
int perch__cap_reader_branches(perch__cap_reader *r, uint32_t n);

/* The highest stack id a sample may name now: the last stack defined (ids are dense from 1,
 * each defined before a sample names it), or any 32-bit id when the stacks are elsewhere. */
static inline uint64_t perch__cap_stack_limit(const perch__cap_reader *r)
{
    return r->stacks_elsewhere ? UINT32_MAX : r->stacks;
}

/* Makes the chunk malformed (PERCH_EFORMAT) at payload byte `at`, the start of a record that
 * broke a rule across records (one trace_info, dense stack ids, ...), with what it broke in
 * r->rule; nothing when c already failed (its first error stands). Returns c->error. */
int perch__cap_broke(perch__cap_reader *r, perch__cap_cursor *c, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Decodes one version 2 entity record of type CAP_ENT_* into the sink (dec_entity.c). */
int perch__cap_dec_entity(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st,
                          unsigned type);

/* Decodes the payload of a known chunk type (prefix and records) from c into the sink,
 * counting delivered records in r->records. Returns 0, a cursor error (the chunk is
 * malformed; c->pos says where, and r->rule why when a record broke a rule across records),
 * the sink's error (r->sink_error set), or PERCH_ELIMIT / PERCH_ENOMEM from the string table
 * (r->limit_error set). */
int perch__cap_decode_chunk(perch__cap_reader *r, unsigned type, perch__cap_cursor *c);

/* The checked decoders of the four bulk record types (decode.c): one record from c into the
 * sink, as perch__cap_decode_chunk's loop calls them. */
int perch__cap_dec_sample(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st);
int perch__cap_dec_slice(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st);
int perch__cap_dec_stack(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st);
int perch__cap_dec_lbr(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st);

/* The fast loops (read_fast.c): decode `count` records of one chunk of that type from c into
 * the sink, counting them in r->records, with exactly the records, errors and error offsets of
 * the checked decoder above called `count` times (which they fall back to record by record). */
int perch__cap_fast_samples(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count);
int perch__cap_fast_slices(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count);
int perch__cap_fast_stacks(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count);
int perch__cap_fast_lbrs(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count);

/* perch_capture_replay_ex with every record through the checked decoders: the reference the
 * fast loops are tested and fuzzed against. */
int perch__cap_replay_checked(const perch_input *in, const perch_sink *sink,
                              const perch_capture_read_opts *opts, perch_capture_status *status);

#endif
