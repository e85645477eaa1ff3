/*
 * Builds small .etl images in memory for container tests: a header buffer with a
 * TRACE_LOGFILE_HEADER record (either pointer size), then data buffers of records of any
 * header kind, optionally XPRESS-compressed with the test encoder. Layouts follow
 * docs/etl-format.md. Header-only (static inline); every function writes little-endian
 * bytes, never structs.
 */
#ifndef PERCH_TEST_ETL_IMAGE_H
#define PERCH_TEST_ETL_IMAGE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "xpress_encode.h"

struct img {
    uint8_t *p;
    size_t len, cap;
    size_t buf; /* start of the open buffer */
};

static inline void img_init(struct img *m, size_t cap)
{
    m->p = calloc(1, cap);
    m->len = 0;
    m->cap = cap;
    m->buf = 0;
}

static inline void img_bytes(struct img *m, const void *b, size_t n)
{
    if (m->len + n > m->cap)
        abort();
    memcpy(m->p + m->len, b, n);
    m->len += n;
}

/* Opens a buffer: CPU (with the PROC_INDEX flag), sequence number, extra flags, type. */
static inline void img_begin(struct img *m, uint16_t cpu, uint64_t seq, uint16_t flags,
                             uint16_t type)
{
    uint8_t h[0x48];
    memset(h, 0, sizeof h);
    perch_test_put_u64(h + 0x18, seq);
    perch_test_put_u16(h + 0x28, cpu);
    perch_test_put_u32(h + 0x2C, 3);
    perch_test_put_u16(h + 0x34, (uint16_t)(flags | 0x20));
    perch_test_put_u16(h + 0x36, type);
    m->buf = m->len;
    img_bytes(m, h, sizeof h);
}

/* Appends a record and pads it to 8 bytes. */
static inline void img_record(struct img *m, const uint8_t *rec, size_t n)
{
    static const uint8_t zero[8];
    img_bytes(m, rec, n);
    img_bytes(m, zero, (8 - n % 8) % 8);
}

/* Closes the buffer; size is the on-disk BufferSize (the tail is 0xFF-filled), or 0 for
 * exactly the used bytes. */
static inline void img_end(struct img *m, uint32_t size)
{
    uint32_t used = (uint32_t)(m->len - m->buf);
    if (size < used)
        size = used;
    while (m->len - m->buf < size) {
        uint8_t ff = 0xff;
        img_bytes(m, &ff, 1);
    }
    perch_test_put_u32(m->p + m->buf, size);
    perch_test_put_u32(m->p + m->buf + 4, used);
    perch_test_put_u32(m->p + m->buf + 0x30, used);
}

/* Closes the buffer as an XPRESS-compressed one (literals only). */
static inline void img_end_compressed(struct img *m)
{
    uint32_t used = (uint32_t)(m->len - m->buf);
    size_t raw = used - 0x48, cap = raw + raw / 8 + 64, n;
    uint8_t *tmp = malloc(cap);
    n = xenc_literals(m->p + m->buf + 0x48, raw, tmp, cap);
    if (n == 0 || m->buf + 0x48 + n > m->cap)
        abort();
    memcpy(m->p + m->buf + 0x48, tmp, n);
    free(tmp);
    m->len = m->buf + 0x48 + n;
    perch_test_put_u32(m->p + m->buf, (uint32_t)(0x48 + n));
    perch_test_put_u32(m->p + m->buf + 4, used);
    perch_test_put_u32(m->p + m->buf + 0x30, used);
    m->p[m->buf + 0x34] |= 0x40;
}

/* A kernel record: type 0x01/0x02 (system), 0x03/0x04 (compact), 0x10/0x11 (perfinfo).
 * ext holds next_ext u64 values (PEBS first if version has 0x8000). Returns its size. */
static inline size_t img_kernel(uint8_t *out, unsigned type, uint16_t version, uint16_t hook,
                                uint32_t tid, uint32_t pid, uint64_t ts, const uint64_t *ext,
                                unsigned next, const uint8_t *payload, size_t plen)
{
    size_t fixed = type <= 2 ? 0x20 : type <= 4 ? 0x18 : 0x10, size = fixed + 8 * next + plen;
    uint8_t *p = out;
    memset(out, 0, fixed);
    perch_test_put_u16(p, version);
    p[2] = (uint8_t)type;
    p[3] = 0xC0;
    perch_test_put_u16(p + 4, (uint16_t)size);
    perch_test_put_u16(p + 6, hook);
    if (fixed == 0x10) {
        perch_test_put_u64(p + 8, ts);
    } else {
        perch_test_put_u32(p + 8, tid);
        perch_test_put_u32(p + 12, pid);
        perch_test_put_u64(p + 16, ts);
    }
    for (unsigned i = 0; i < next; i++)
        perch_test_put_u64(out + fixed + 8 * i, ext[i]);
    memcpy(out + fixed + 8 * next, payload, plen);
    return size;
}

/* An EVENT_HEADER record (type 0x13) with optional raw extended items. */
static inline size_t img_event(uint8_t *out, uint32_t tid, uint32_t pid, uint64_t ts,
                               uint32_t guid1, uint16_t id, uint8_t version, uint8_t opcode,
                               const uint8_t *ext, size_t ext_len, const uint8_t *payload,
                               size_t plen)
{
    size_t size = 0x50 + ext_len + plen;
    memset(out, 0, 0x50);
    perch_test_put_u16(out, (uint16_t)size);
    out[2] = 0x13;
    out[3] = 0xC0;
    perch_test_put_u16(out + 4, ext_len ? 1 : 0);
    perch_test_put_u32(out + 8, tid);
    perch_test_put_u32(out + 12, pid);
    perch_test_put_u64(out + 16, ts);
    perch_test_put_u32(out + 0x18, guid1);
    perch_test_put_u16(out + 0x1C, 0x1234);
    perch_test_put_u16(out + 0x1E, 0x5678);
    memcpy(out + 0x20, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    perch_test_put_u16(out + 0x28, id);
    out[0x2A] = version;
    out[0x2D] = opcode;
    memcpy(out + 0x50, ext, ext_len);
    memcpy(out + 0x50 + ext_len, payload, plen);
    return size;
}

/* The logfile header record (system header of the pointer size, hook 0) with the given
 * fields; the rest are fixed test values. Returns its size. */
static inline size_t img_logfile(uint8_t *out, unsigned ptr, uint32_t cpus, uint64_t perf_freq,
                                 uint64_t start_time, uint64_t ref_raw)
{
    uint8_t pl[512], *q;
    size_t tz = 56 + 2 * ptr, tail = tz + 172 + 4;
    memset(pl, 0, sizeof pl);
    perch_test_put_u32(pl + 0, 65536);
    perch_test_put_u32(pl + 4, 0x0501000a);
    perch_test_put_u32(pl + 8, 19041);
    perch_test_put_u32(pl + 12, cpus);
    perch_test_put_u64(pl + 16, start_time + 50000000);
    perch_test_put_u32(pl + 24, 156250);
    perch_test_put_u32(pl + 32, 0x00000001);
    perch_test_put_u32(pl + 36, 4);
    perch_test_put_u32(pl + 44, ptr);
    perch_test_put_u32(pl + 48, 7); /* EventsLost */
    perch_test_put_u32(pl + 52, 2400);
    perch_test_put_u32(pl + tz, (uint32_t)-60);
    perch_test_put_u64(pl + tail, start_time - 1000);
    perch_test_put_u64(pl + tail + 8, perf_freq);
    perch_test_put_u64(pl + tail + 16, start_time);
    perch_test_put_u32(pl + tail + 24, 1);
    perch_test_put_u32(pl + tail + 28, 2); /* BuffersLost */
    q = perch_test_put_utf16(pl + tail + 32, "Test Logger");
    q = perch_test_put_utf16(q, "C:\\t.etl");
    return img_kernel(out, ptr == 4 ? 1 : 2, 2, 0x0000, 1, 2, ref_raw, NULL, 0, pl,
                      (size_t)(q - pl));
}

/* A header buffer holding only the logfile header record. */
static inline void img_header_buffer(struct img *m, unsigned ptr, uint32_t cpus)
{
    uint8_t rec[600];
    size_t n = img_logfile(rec, ptr, cpus, 10000000, 132000000000000000ull, 5);
    img_begin(m, 0, 0, 0, 4);
    img_record(m, rec, n);
    img_end(m, 0x400);
}

#endif
