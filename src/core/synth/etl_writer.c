/*
 * The .etl container side of the generator: the header buffer with the TRACE_LOGFILE_HEADER
 * record, then per-CPU 64 KiB buffers (WMI_BUFFER_HEADER, 8-aligned records, 0xFF tail) that
 * are written out when full, so buffers of different CPUs interleave in the file out of time
 * order as in a real trace. Layouts: docs/synth.md, from the layouts reference sections 2.1 to
 * 2.4. In the planning pass (out == NULL) buffers are built and counted but not written.
 */
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "synth_internal.h"
#include "util/mem.h"

#define BUF               PERCH_SYNTH_BUFFER_SIZE
#define FLAG_FLUSH_MARKER 0x0001u
#define FLAG_PROC_INDEX   0x0020u
#define TYPE_GENERIC      0u
#define TYPE_HEADER       4u
#define STATE_FLUSH       3u
#define LOGGER_ID         0xFFFFu /* arbitrary: nothing reads it */

uint8_t *perch__synth_utf16(uint8_t *p, const char *ascii)
{
    do {
        p = synth_u16(p, (uint8_t)*ascii);
    } while (*ascii++);
    return p;
}

uint8_t *perch__synth_ansi(uint8_t *p, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(p, s, n);
    return p + n;
}

uint8_t *perch__synth_guid(uint8_t *p, const perch_guid *g)
{
    p = synth_u32(p, g->data1);
    p = synth_u16(p, g->data2);
    p = synth_u16(p, g->data3);
    memcpy(p, g->data4, 8);
    return p + 8;
}

int perch__synth_writer_init(struct synth_writer *w, perch_output *out, uint32_t cpus)
{
    memset(w, 0, sizeof *w);
    w->cpu = perch__calloc(cpus, sizeof *w->cpu);
    if (!w->cpu)
        return PERCH_ENOMEM;
    w->cpus = cpus;
    for (uint32_t c = 0; c < cpus; c++) {
        w->cpu[c].data = perch__alloc(BUF);
        if (!w->cpu[c].data) {
            perch__synth_writer_free(w);
            return PERCH_ENOMEM;
        }
        w->cpu[c].used = SYNTH_BUFHDR;
    }
    w->out = out;
    w->full_budget = UINT64_MAX;
    return 0;
}

void perch__synth_writer_free(struct synth_writer *w)
{
    if (w->cpu)
        for (uint32_t c = 0; c < w->cpus; c++)
            perch__free(w->cpu[c].data);
    perch__free(w->cpu);
    w->cpu = NULL;
}

static void put_buffer_header(uint8_t *b, uint32_t used, uint64_t ts, uint64_t seq, uint16_t cpu,
                              uint16_t flags, uint16_t type)
{
    memset(b, 0, SYNTH_BUFHDR);
    synth_u32(b + 0x00, BUF);  /* BufferSize */
    synth_u32(b + 0x04, used); /* SavedOffset */
    synth_u32(b + 0x08, used); /* CurrentOffset */
    synth_u64(b + 0x10, ts);   /* flush time */
    synth_u64(b + 0x18, seq);
    synth_u16(b + 0x28, cpu); /* ClientContext.ProcessorIndex */
    synth_u16(b + 0x2A, LOGGER_ID);
    synth_u32(b + 0x2C, STATE_FLUSH);
    synth_u32(b + 0x30, used); /* Offset */
    synth_u16(b + 0x34, flags);
    synth_u16(b + 0x36, type);
}

static int emit_buffer(struct synth_writer *w, uint8_t *b, uint32_t used)
{
    memset(b + used, 0xFF, BUF - used);
    if (w->out && !w->err)
        w->err = w->out->write(w->out->ctx, b, BUF);
    w->buffers++;
    w->bytes += BUF;
    if (w->progress)
        w->progress(w->progress_ctx, w->pass, w->bytes, w->bytes_goal);
    return w->err;
}

static int flush_cpu(struct synth_writer *w, uint32_t c, uint16_t flags)
{
    struct synth_cpu_buf *cb = &w->cpu[c];
    put_buffer_header(cb->data, cb->used, cb->last_ts, ++w->sequence, (uint16_t)c,
                      (uint16_t)(FLAG_PROC_INDEX | flags), TYPE_GENERIC);
    int err = emit_buffer(w, cb->data, cb->used);
    cb->used = SYNTH_BUFHDR;
    cb->records = 0;
    return err;
}

bool perch__synth_room(struct synth_writer *w, uint32_t cpu, uint32_t len)
{
    struct synth_cpu_buf *cb = &w->cpu[cpu];
    if (w->stopped || w->err)
        return false;
    if (cb->used + len <= BUF)
        return true;
    if (cb->records == 0 || len > BUF - SYNTH_BUFHDR || w->full_flushed >= w->full_budget) {
        w->stopped = true;
        return false;
    }
    w->full_flushed++;
    if (flush_cpu(w, cpu, 0) != 0) {
        w->stopped = true;
        return false;
    }
    return true;
}

static uint8_t *begin(struct synth_writer *w, uint32_t cpu, uint32_t size, uint64_t *ts)
{
    struct synth_cpu_buf *cb = &w->cpu[cpu];
    uint32_t aligned = SYNTH_ALIGN(size);
    if (size > 0xFFFFu || !perch__synth_room(w, cpu, aligned))
        return NULL;
    uint8_t *p = cb->data + cb->used;
    memset(p + size, 0, aligned - size);
    cb->used += aligned;
    cb->records++;
    w->records++;
    if (*ts < cb->last_ts)
        *ts = cb->last_ts;
    cb->last_ts = *ts;
    if (*ts > w->last_ts)
        w->last_ts = *ts;
    return p;
}

uint8_t *perch__synth_record(struct synth_writer *w, uint32_t cpu, int kind, uint16_t hook,
                             uint16_t version, uint64_t ts, uint32_t tid, uint32_t pid,
                             uint32_t payload_len)
{
    uint32_t hdr = kind == SYNTH_HDR_SYSTEM ? SYNTH_SYSTEM_HDR : SYNTH_PERFINFO_HDR;
    uint32_t ext = 8u * ((version >> 8) & 7u);
    uint32_t size = hdr + ext + payload_len;
    uint8_t *p = begin(w, cpu, size, &ts);
    if (!p)
        return NULL;
    synth_u16(p, version);
    p[2] = (uint8_t)kind;
    p[3] = 0xC0;
    synth_u16(p + 4, (uint16_t)size);
    synth_u16(p + 6, hook);
    if (kind == SYNTH_HDR_SYSTEM) {
        synth_u32(p + 8, tid);
        synth_u32(p + 12, pid);
        synth_u64(p + 16, ts);
        synth_u32(p + 24, 0); /* KernelTime */
        synth_u32(p + 28, 0); /* UserTime */
    } else {
        synth_u64(p + 8, ts);
    }
    return p + hdr;
}

uint8_t *perch__synth_classic(struct synth_writer *w, uint32_t cpu, const perch_guid *g,
                              uint8_t opcode, uint16_t version, uint64_t ts, uint32_t tid,
                              uint32_t pid, uint32_t payload_len)
{
    uint32_t size = SYNTH_FULL_HDR + payload_len;
    uint8_t *p = begin(w, cpu, size, &ts);
    if (!p)
        return NULL;
    synth_u16(p, (uint16_t)size);
    p[2] = SYNTH_HDR_FULL;
    p[3] = 0xC0;
    p[4] = opcode; /* Class.Type */
    p[5] = 0;      /* Class.Level */
    synth_u16(p + 6, version);
    synth_u32(p + 8, tid);
    synth_u32(p + 12, pid);
    synth_u64(p + 16, ts);
    perch__synth_guid(p + 24, g);
    synth_u64(p + 40, 0); /* KernelTime, UserTime */
    return p + SYNTH_FULL_HDR;
}

int perch__synth_writer_finish(struct synth_writer *w)
{
    for (uint32_t c = 0; c < w->cpus && !w->err; c++)
        if (w->cpu[c].records)
            flush_cpu(w, c, FLAG_FLUSH_MARKER);
    return w->err;
}

/* ---- the header buffer ---------------------------------------------------------------- */

static const char logger_name[] = "NT Kernel Logger";
static const char log_file_name[] = "C:\\Traces\\perch-synth.etl";
static const char tz_name[] = "Coordinated Universal Time";

#define LOGFILE_FIXED 280u /* TRACE_LOGFILE_HEADER with P = 8, before the two strings */

static void put_time_zone(uint8_t *tz)
{
    memset(tz, 0, 172);
    /* Bias 0; StandardName[32] at 4; StandardDate, StandardBias; DaylightName[32] at 88 */
    perch__synth_utf16(tz + 4, tz_name);
    perch__synth_utf16(tz + 88, tz_name);
}

static void put_logfile(uint8_t *d, const struct synth_logfile *lf)
{
    memset(d, 0, LOGFILE_FIXED);
    synth_u32(d + 0, BUF);
    synth_u32(d + 4, 0x0501000Au); /* 10.0, sub-version 1.5 */
    synth_u32(d + 8, lf->build);
    synth_u32(d + 12, lf->cpus);
    synth_u64(d + 16, lf->end_time);
    synth_u32(d + 24, 156250); /* TimerResolution, 100 ns units */
    synth_u32(d + 28, lf->max_file_mb);
    synth_u32(d + 32, 0x00000001u); /* LogFileMode: EVENT_TRACE_FILE_MODE_SEQUENTIAL */
    synth_u32(d + 36, lf->buffers_written);
    synth_u32(d + 40, 1); /* StartBuffers */
    synth_u32(d + 44, 8); /* PointerSize */
    synth_u32(d + 48, 0); /* EventsLost */
    synth_u32(d + 52, lf->cpu_mhz);
    synth_u64(d + 56, 0xFFFFC00112345000ull); /* LoggerName: a kernel pointer, junk */
    synth_u64(d + 64, 0xFFFFC00112345080ull); /* LogFileName: junk */
    put_time_zone(d + 72);
    /* 244: 4 bytes of padding before the 8-aligned LARGE_INTEGERs */
    synth_u64(d + 248, lf->boot_time);
    synth_u64(d + 256, lf->perf_freq);
    synth_u64(d + 264, lf->start_time);
    synth_u32(d + 272, 1); /* ReservedFlags: clock type 1 = QPC */
    synth_u32(d + 276, 0); /* BuffersLost */
    uint8_t *p = perch__synth_utf16(d + LOGFILE_FIXED, logger_name);
    perch__synth_utf16(p, log_file_name);
}

int perch__synth_write_header_buffer(struct synth_writer *w, const struct synth_logfile *lf)
{
    uint8_t *b = perch__calloc(1, BUF);
    uint32_t payload = LOGFILE_FIXED + (uint32_t)synth_utf16_len(logger_name) +
                       (uint32_t)synth_utf16_len(log_file_name);
    uint32_t size = SYNTH_SYSTEM_HDR + payload;
    uint8_t *r = b + SYNTH_BUFHDR;
    if (!b)
        return PERCH_ENOMEM;
    synth_u16(r, 2); /* version */
    r[2] = SYNTH_HDR_SYSTEM;
    r[3] = 0xC0;
    synth_u16(r + 4, (uint16_t)size);
    synth_u16(r + 6, 0x0000); /* HookId: EventTrace header */
    synth_u32(r + 8, lf->logger_tid);
    synth_u32(r + 12, lf->logger_pid);
    synth_u64(r + 16, lf->start_raw);
    put_logfile(r + SYNTH_SYSTEM_HDR, lf);
    uint32_t used = SYNTH_BUFHDR + SYNTH_ALIGN(size);
    put_buffer_header(b, used, 0, 0, 0, FLAG_PROC_INDEX | FLAG_FLUSH_MARKER, TYPE_HEADER);
    w->records++;
    int err = emit_buffer(w, b, used);
    perch__free(b);
    return err;
}
