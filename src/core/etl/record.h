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

/* The same contract as perch_etl_parse_record, except that on failure *ev may be partly
 * written (the reader parses into its own slot; the public wrapper keeps the caller's
 * event untouched). groups, when not NULL, holds perch_kernel_group_guid(g) for every g
 * below 256 (the reader's cache of that linear lookup). */
int perch__etl_record(const uint8_t *p, size_t len, unsigned pointer_size, uint16_t cpu,
                      const perch_guid *const *groups, perch_event *ev, size_t *step);

#endif
