/*
 * The rules across records of a capture (docs/capture-format.md 2, "Rules across records"),
 * in one place for both sides: the reader (decode.c) stops at a record that breaks one, the
 * writer (encode.c) refuses such a record before writing a byte of it. Each check says whether
 * a record fits what came before it and, when not, writes the reason both sides give, so a
 * capture the writer accepts is one the reader reads, with the same caps and wording.
 */
#ifndef PERCH_CAPTURE_RULES_H
#define PERCH_CAPTURE_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "capture/strtab.h"

/* What a check found. */
typedef enum perch__cap_rule {
    CAP_RULE_OK = 0,
    CAP_RULE_BROKEN, /* the record breaks a rule: the reader's bad_chunk, the writer's EINVAL */
    CAP_RULE_LIMIT,  /* past PERCH_CAPTURE_MAX_NAMES or _MAX_NAME_BYTES: both sides' ELIMIT */
} perch__cap_rule;

/* Room for a reason (the reader appends it to "malformed <type> chunk at offset N: "). */
#define CAP_RULE_REASON 96

/* A stack record with `id` after ids 1..stacks: it must be stacks + 1. */
perch__cap_rule perch__cap_rule_stack(uint64_t stacks, uint64_t id, char why[CAP_RULE_REASON]);

/* A sample naming stack `id` after ids 1..stacks were defined: 0 (none) or at most stacks. */
perch__cap_rule perch__cap_rule_sample(uint64_t stacks, uint64_t id, char why[CAP_RULE_REASON]);

/* A ledger (which 0) or stat (1) name, the C string s of len bytes (NULL counts as ""), given
 * after the names in `seen`: valid UTF-8, not in seen, and room for one more under the caps.
 * The caller adds it to seen (perch__strtab_add with the hash) when it takes the record. */
perch__cap_rule perch__cap_rule_name(const perch__strtab *seen, unsigned which, const char *s,
                                     size_t len, char why[CAP_RULE_REASON]);

#endif
