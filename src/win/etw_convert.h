/*
 * EVENT_RECORD -> perch_event: the one conversion of what the real-time consumer is handed
 * into the normalized record every Perch source yields (include/perch/event.h). A pure
 * function: no state, no allocation, no system call, so the EventRecordCallback can afford it
 * per event and tests can feed it byte-built records.
 *
 * Rules (docs/etw-session.md, "The conversion"):
 *   - header_kind PERCH_HEADER_LIVE; provider = EventHeader.ProviderId; group from that GUID
 *     (perch_kernel_group_of), PERCH_GROUP_NONE for other providers; hook rebuilt for kernel
 *     groups ((group << 8) | opcode, Image Load as the 0x030A it is logged with);
 *   - opcode, version and (for non-MOF events) id from EventHeader.EventDescriptor;
 *   - pointer size: EVENT_HEADER_FLAG_32_BIT_HEADER 4, _64_BIT_HEADER 8, neither: the trace's
 *     pointer size, both: an error; PERCH_EVENT_CLASSIC from EVENT_HEADER_FLAG_CLASSIC_HEADER;
 *   - cpu: BufferContext.ProcessorIndex with EVENT_HEADER_FLAG_PROCESSOR_INDEX, else
 *     ProcessorNumber;
 *   - tid/pid as delivered; both all-ones (kernel events with a PERFINFO header) means none;
 *   - extended items: PMC_COUNTERS fills pmc[] (a size not a multiple of 8, more than
 *     PERCH_EVENT_MAX_PMC counters or no data pointer: no counters and the PMC_MALFORMED
 *     flag), PEBS_INDEX fills pebs_index; every other item is copied into ext_buf in the .etl
 *     layout ({u16 reserved, u16 type, u16 linkage, u16 size, data}, 8-aligned), which is what
 *     perch_event.ext holds for the .etl reader.
 */
#ifndef PERCH_WIN_ETW_CONVERT_H
#define PERCH_WIN_ETW_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "etw_sdk.h"
#include "perch/event.h"

/* Flags returned (>= 0) next to a successful conversion. */
#define PERCH_ETW_CONVERT_PMC_MALFORMED  0x1 /* a PMC_COUNTERS item was ignored */
#define PERCH_ETW_CONVERT_PEBS_MALFORMED 0x2 /* a PEBS_INDEX item was ignored */
#define PERCH_ETW_CONVERT_EXT_TRUNCATED  0x4 /* ext_buf was too small for every other item */

/* Converts *r into *ev. default_pointer_size (4 or 8) applies when the header says neither.
 * ev->payload borrows r->UserData and ev->ext borrows ext_buf (ext_cap bytes; may be NULL
 * with 0), both valid as long as those are. Returns a combination of the flags above, or
 * PERCH_EINVAL (NULL r/ev, data length without data) / PERCH_EFORMAT (both pointer-size
 * flags), leaving *ev untouched. */
int perch_etw_convert(const EVENT_RECORD *r, unsigned default_pointer_size, uint8_t *ext_buf,
                      size_t ext_cap, perch_event *ev);

#endif
