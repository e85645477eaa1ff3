/*
 * What the family decoders share with the dispatcher (decode.c).
 *
 * A family decoder gets the record and the layout version to apply (the record's version, or
 * the newest known one when the record is newer) and fills exactly one member of out's union.
 * It must check everything before writing: on error it returns a negative PERCH_E* with *diag
 * filled (when diag is not NULL) and leaves *out untouched. On success it returns 0 or
 * PERCH_DECODED_TRAILING (the payload is longer than the layout). The dispatcher then fills the
 * common fields (type, kind, opcode, version, pointer size, flags, PMC values).
 */
#ifndef PERCH_DECODE_INTERNAL_H
#define PERCH_DECODE_INTERNAL_H

#include <stdint.h>

#include "decode/cursor.h"
#include "perch/decode.h"
#include "perch/error.h"

typedef int (*perch__decode_fn)(const perch_event *ev, unsigned version, perch_decoded *out,
                                perch_decode_diag *diag);

/* Fills *diag (if not NULL) and returns code. */
int perch__decode_fail(perch_decode_diag *diag, int code, uint32_t offset, uint32_t need,
                       const char *what);

/* The error for a cursor that went bad: PERCH_ESHORT at the failing offset. */
int perch__decode_short(perch_decode_diag *diag, const cursor *c, const char *what);

/* 0, or PERCH_DECODED_TRAILING when the cursor has bytes left. */
static inline int perch__decode_rest(const cursor *c)
{
    return cur_left(c) ? (int)PERCH_DECODED_TRAILING : 0;
}

/* Family decoders, one file per family. */
int perch__decode_cswitch(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_ready_thread(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_thread(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_thread_set_name(const perch_event *, unsigned, perch_decoded *,
                                  perch_decode_diag *);
int perch__decode_sampled_profile(const perch_event *, unsigned, perch_decoded *,
                                  perch_decode_diag *);
int perch__decode_pmc_sample(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_pmc_config(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_profile_interval(const perch_event *, unsigned, perch_decoded *,
                                   perch_decode_diag *);
int perch__decode_lbr(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_stack_walk(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_stack_key_ref(const perch_event *, unsigned, perch_decoded *,
                                perch_decode_diag *);
int perch__decode_stack_key_def(const perch_event *, unsigned, perch_decoded *,
                                perch_decode_diag *);
int perch__decode_image(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_kernel_base(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_process(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_header_extension(const perch_event *, unsigned, perch_decoded *,
                                   perch_decode_diag *);
int perch__decode_image_id(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);
int perch__decode_dbg_id_rsds(const perch_event *, unsigned, perch_decoded *, perch_decode_diag *);

#endif
