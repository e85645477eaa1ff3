/*
 * TRACE_LOGFILE_HEADER: the payload of the first record of an .etl file (HookId 0x0000).
 * Its pointer-sized members follow the recording system's pointer size, and four bytes of
 * padding sit after the time-zone block so that the 64-bit fields are 8-aligned.
 */
#ifndef PERCH_ETL_LOGFILE_H
#define PERCH_ETL_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/etl.h"

/* Parses the payload p[0, len) of the logfile header record whose raw timestamp is ref_raw.
 * The pointer size is read from the payload itself (it must be 4 or 8). Returns 0,
 * PERCH_ETRUNC when len is below the fixed part, PERCH_EFORMAT for an impossible pointer
 * size. On failure *h is untouched. */
int perch__etl_logfile_parse(const uint8_t *p, size_t len, uint64_t ref_raw,
                             perch_etl_header *h);

#endif
