/*
 * The capture file header: encoding for the writer, checking for the reader (magic, size,
 * CRC, version window, required features), and the names of chunk types and stop reasons.
 */
#include <stdio.h>
#include <string.h>

#include "capture/codec.h"
#include "capture/crc32c.h"
#include "capture/format.h"

#define FIELD(name) offsetof(struct perch__cap_file_header, name)

void perch__cap_header_encode(const perch__cap_header_fields *h,
                              uint8_t out[PERCH_CAPTURE_HEADER_SIZE])
{
    memset(out, 0, PERCH_CAPTURE_HEADER_SIZE);
    memcpy(out, CAP_MAGIC, CAP_MAGIC_LEN);
    cap_store_le(out + FIELD(version), h->version, 4);
    cap_store_le(out + FIELD(header_size), PERCH_CAPTURE_HEADER_SIZE, 4);
    cap_store_le(out + FIELD(required_features), h->required_features, 8);
    cap_store_le(out + FIELD(optional_features), h->optional_features, 8);
    cap_store_le(out + FIELD(chunk_bytes), h->chunk_bytes, 4);
    cap_store_le(out + FIELD(header_crc), perch__crc32c(0, out, PERCH_CAPTURE_HEADER_SIZE), 4);
}

uint32_t perch__cap_header_size(const uint8_t fixed[PERCH_CAPTURE_HEADER_SIZE])
{
    uint32_t size = (uint32_t)cap_load_le(fixed + FIELD(header_size), 4);
    if (memcmp(fixed, CAP_MAGIC, CAP_MAGIC_LEN) != 0)
        return 0;
    if (size < PERCH_CAPTURE_HEADER_SIZE || size > PERCH_CAPTURE_MAX_HEADER)
        return 0;
    return size;
}

static uint32_t header_crc(const uint8_t *fixed, const uint8_t *extra, uint32_t size)
{
    uint8_t copy[PERCH_CAPTURE_HEADER_SIZE];
    memcpy(copy, fixed, sizeof copy);
    memset(copy + FIELD(header_crc), 0, 4);
    uint32_t crc = perch__crc32c(0, copy, sizeof copy);
    if (extra && size > PERCH_CAPTURE_HEADER_SIZE)
        crc = perch__crc32c(crc, extra, size - PERCH_CAPTURE_HEADER_SIZE);
    return crc;
}

int perch__cap_header_check(const uint8_t fixed[PERCH_CAPTURE_HEADER_SIZE], const uint8_t *extra,
                            perch__cap_header_fields *h, char *why, size_t why_len)
{
    perch__cap_header_fields f;
    if (memcmp(fixed, CAP_MAGIC, CAP_MAGIC_LEN) != 0) {
        snprintf(why, why_len, "not a Perch capture (bad magic)");
        return PERCH_EFORMAT;
    }
    f.header_size = perch__cap_header_size(fixed);
    if (!f.header_size) {
        snprintf(why, why_len, "header size %u outside [%u, %u]",
                 (unsigned)cap_load_le(fixed + FIELD(header_size), 4), PERCH_CAPTURE_HEADER_SIZE,
                 PERCH_CAPTURE_MAX_HEADER);
        return PERCH_EFORMAT;
    }
    if (header_crc(fixed, extra, f.header_size) != cap_load_le(fixed + FIELD(header_crc), 4)) {
        snprintf(why, why_len, "file header checksum mismatch");
        return PERCH_ECRC;
    }
    f.version = (uint32_t)cap_load_le(fixed + FIELD(version), 4);
    f.required_features = cap_load_le(fixed + FIELD(required_features), 8);
    f.optional_features = cap_load_le(fixed + FIELD(optional_features), 8);
    f.chunk_bytes = (uint32_t)cap_load_le(fixed + FIELD(chunk_bytes), 4);
    if (f.version < PERCH_CAPTURE_VERSION_MIN || f.version > PERCH_CAPTURE_VERSION_MAX) {
        snprintf(why, why_len, "format version %u; this build reads versions %u to %u",
                 (unsigned)f.version, PERCH_CAPTURE_VERSION_MIN, PERCH_CAPTURE_VERSION_MAX);
        return PERCH_EVERSION;
    }
    if (f.required_features & ~PERCH_CAPTURE_REQUIRED_KNOWN) {
        snprintf(why, why_len, "unknown required features 0x%llx",
                 (unsigned long long)(f.required_features & ~PERCH_CAPTURE_REQUIRED_KNOWN));
        return PERCH_EFEATURE;
    }
    *h = f;
    return 0;
}

static const char *const chunk_names[PERCH_CHUNK_TYPE_LIMIT] = {
    [PERCH_CHUNK_TRACE_INFO] = "trace_info",
    [PERCH_CHUNK_STRINGS] = "strings",
    [PERCH_CHUNK_PROCESS] = "process",
    [PERCH_CHUNK_THREAD] = "thread",
    [PERCH_CHUNK_MODULE] = "module",
    [PERCH_CHUNK_COUNTERS] = "counters",
    [PERCH_CHUNK_STACK] = "stack",
    [PERCH_CHUNK_SLICE] = "slice",
    [PERCH_CHUNK_SAMPLE] = "sample",
    [PERCH_CHUNK_LBR] = "lbr",
    [PERCH_CHUNK_LEDGER] = "ledger",
    [PERCH_CHUNK_STAT] = "stat",
    [PERCH_CHUNK_END] = "end",
    [PERCH_CHUNK_SYMBOL] = "symbol",
};

const char *perch_capture_chunk_name(unsigned type)
{
    return type < PERCH_CHUNK_TYPE_LIMIT ? chunk_names[type] : NULL;
}

static const char *const stop_names[] = {
    [PERCH_CAPTURE_STOP_END] = "end",
    [PERCH_CAPTURE_STOP_NO_END] = "no_end",
    [PERCH_CAPTURE_STOP_TRUNCATED] = "truncated",
    [PERCH_CAPTURE_STOP_CRC] = "crc",
    [PERCH_CAPTURE_STOP_BAD_HEADER] = "bad_header",
    [PERCH_CAPTURE_STOP_BAD_CHUNK] = "bad_chunk",
    [PERCH_CAPTURE_STOP_LIMIT] = "limit",
    [PERCH_CAPTURE_STOP_SINK] = "sink",
    [PERCH_CAPTURE_STOP_IO] = "io",
};

const char *perch_capture_stop_name(int stop)
{
    if (stop < 0 || (size_t)stop >= sizeof stop_names / sizeof stop_names[0])
        return "unknown";
    return stop_names[stop];
}
