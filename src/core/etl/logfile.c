/*
 * TRACE_LOGFILE_HEADER parsing (offsets from docs/etl-format.md, "Logfile header"): the
 * fixed fields, then the two UTF-16 names that follow it, converted to UTF-8 (truncated at
 * PERCH_ETL_NAME_MAX; unpaired surrogates become U+FFFD).
 */
#include <string.h>

#include "etl/le.h"
#include "etl/logfile.h"
#include "perch/error.h"
#include "perch/utf16.h"

#define OFF_POINTER_SIZE 44u
#define TZ_BLOCK 172u
#define TAIL_FIELDS 32u /* BootTime, PerfFreq, StartTime, ReservedFlags, BuffersLost */

/* Reads a NUL-terminated UTF-16LE string at p[*at, len) into out (always NUL-terminated) and
 * advances *at past its terminator (or to len when there is none). */
static void utf16_name(const uint8_t *p, size_t len, size_t *at, char *out, size_t cap)
{
    size_t start = *at < len ? *at : len, end = start;
    while (end + 2 <= len && perch__le16(p + end) != 0)
        end += 2;
    size_t n = perch_utf16le_to_utf8(p + start, end - start, out, cap - 1);
    out[n] = '\0';
    *at = end + 2 <= len ? end + 2 : len;
}

int perch__etl_logfile_parse(const uint8_t *p, size_t len, uint64_t ref_raw, perch_etl_header *h)
{
    perch_etl_header t;
    size_t ptr, tz, tail, at;
    if (len < OFF_POINTER_SIZE + 4)
        return PERCH_ETRUNC;
    ptr = perch__le32(p + OFF_POINTER_SIZE);
    if (ptr != 4 && ptr != 8)
        return PERCH_EFORMAT;
    tz = 56 + 2 * ptr;
    tail = tz + TZ_BLOCK + 4;
    if (len < tail + TAIL_FIELDS)
        return PERCH_ETRUNC;
    memset(&t, 0, sizeof t);
    t.buffer_size = perch__le32(p + 0);
    t.version = perch__le32(p + 4);
    t.build = perch__le32(p + 8);
    t.cpus = perch__le32(p + 12);
    t.end_time = perch__le64(p + 16);
    t.timer_resolution = perch__le32(p + 24);
    t.max_file_size = perch__le32(p + 28);
    t.log_file_mode = perch__le32(p + 32);
    t.buffers_written = perch__le32(p + 36);
    t.pointer_size = (uint32_t)ptr;
    t.events_lost = perch__le32(p + 48);
    t.cpu_speed_mhz = perch__le32(p + 52);
    t.tz_bias = (int32_t)perch__le32(p + tz);
    t.boot_time = perch__le64(p + tail);
    t.perf_freq = perch__le64(p + tail + 8);
    t.start_time = perch__le64(p + tail + 16);
    t.clock_type = perch__le32(p + tail + 24);
    t.buffers_lost = perch__le32(p + tail + 28);
    t.ref_raw = ref_raw;
    at = tail + TAIL_FIELDS;
    utf16_name(p, len, &at, t.logger_name, sizeof t.logger_name);
    utf16_name(p, len, &at, t.log_file_name, sizeof t.log_file_name);
    *h = t;
    return 0;
}

/* |delta| * num / den without overflow for den up to 2^40, truncated toward zero. */
static uint64_t scale_ticks(uint64_t a, uint64_t num, uint64_t den)
{
    if (den == 0)
        return 0;
    if (den > ((uint64_t)1 << 40))
        return (uint64_t)((double)a * (double)num / (double)den);
    return (a / den) * num + ((a % den) * num) / den;
}

uint64_t perch_etl_filetime(const perch_etl_header *h, uint64_t ts_raw)
{
    int64_t delta = (int64_t)(ts_raw - h->ref_raw);
    uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)delta : (uint64_t)delta, ticks;
    switch (h->clock_type) {
    case 1:
        ticks = scale_ticks(mag, 10000000u, h->perf_freq);
        break;
    case 3:
        ticks = scale_ticks(mag, 10u, h->cpu_speed_mhz);
        break;
    default:
        ticks = mag;
        break;
    }
    return delta < 0 ? h->start_time - ticks : h->start_time + ticks;
}
