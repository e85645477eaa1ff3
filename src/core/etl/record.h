/*
 * Trace record headers inside an .etl buffer (the first dword's header type picks the
 * layout): system, compact and perfinfo headers of kernel events, classic EVENT_TRACE_HEADER
 * and instance headers, EVENT_HEADER with extended items, and the WPP/ERROR records that are
 * stepped over. Layouts: docs/etl-format.md section "Record headers".
 */
#ifndef PERCH_ETL_RECORD_H
#define PERCH_ETL_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"

#define PERCH__ETL_ALIGN 8u

/* What the check of a record that parses found: enough to fill its event later. */
struct perch__etl_rec {
    uint64_t ts;   /* the header's timestamp */
    uint16_t size; /* Size: header, extension data and payload */
    uint8_t type;  /* header type (marker bits 16..23) */
};

/* Every test of perch__etl_record without filling an event: returns the same codes and sets
 * *step in the same cases; on 0 fills *rec. */
int perch__etl_record_check(const uint8_t *p, size_t len, struct perch__etl_rec *rec, size_t *step);

/* Fills *ev from the record at p that perch__etl_record_check accepted (filling *rec), as
 * perch__etl_record does. */
void perch__etl_record_fill(const uint8_t *p, const struct perch__etl_rec *rec, uint16_t cpu,
                            const perch_guid *const *groups, perch_event *ev);

/* perch__etl_record_check, then perch__etl_record_fill on success: the contract of
 * perch_etl_parse_record, with the pointer size ignored (every header type implies one) and
 * groups, when not NULL, holding perch_kernel_group_guid(g) for every g below 256 (the
 * reader's cache of that linear lookup). */
int perch__etl_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                      const perch_guid *const *groups, perch_event *ev, size_t *step);

#endif
