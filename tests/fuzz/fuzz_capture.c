/*
 * Fuzz target for the capture reader (versions 1 and 2, entity updates included: the seeds hold
 * both): replays arbitrary bytes from memory into a sink that
 * reads every field of every record (every string byte, every frame and branch), checks the
 * ranges the format promises (kernel_frames <= frame_count, pmc_count <= 8, caps) and the
 * rules across records the reader enforces (one trace_info, stack ids 1, 2, ... each defined
 * before a sample names it: docs/capture-format.md 2), and hashes
 * each record type's stream. When the input replays to a clean end, the stream is written
 * again with the capture writer and replayed once more: the per-type hashes must match, so a
 * record the reader accepts is a record the writer reproduces exactly.
 *
 * Random mutations almost never keep a CRC-32C valid, so each input is replayed twice: as
 * given (the CRC and framing paths) and with every CRC recomputed (the decoders behind them).
 * Each replay is done again through the checked decoders alone (perch__cap_replay_checked):
 * the reader's fast record loops must give the same records, stop and reason. And each is
 * replayed into the hashing sink with decode_ahead (sample and slice chunks decoded ahead into
 * arrays of records): the same records and the same stop; and with skip_events (the way
 * chrome's first pass reads a capture): no event record, and the other records and the stop
 * the same unless the plain replay met a malformed record or an event chunk's bad CRC.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/crc32c.h"
#include "capture/reader.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/io.h"

struct fz {
    uint64_t h[PERCH_CHUNK_TYPE_LIMIT];
    const perch_sink *next; /* records are forwarded here too (the writer), may be NULL */
    unsigned infos;         /* trace_info records so far: the reader lets one through */
    uint64_t stacks;        /* stacks so far: ids 1, 2, ... and no sample names one past */
};

static void mix(struct fz *f, int type, uint64_t v)
{
    f->h[type] = (f->h[type] ^ v) * 0x100000001b3ull;
}

static void mix_str(struct fz *f, int type, const char *s)
{
    if (!s) {
        mix(f, type, 0xdeadull);
        return;
    }
    for (size_t i = 0; s[i]; i++)
        mix(f, type, (uint8_t)s[i]);
    mix(f, type, 0x100);
}

static void mix_u64s(struct fz *f, int type, const uint64_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        mix(f, type, p[i]);
}

#define NEXT(f, cb, rec) ((f)->next && (f)->next->cb ? (f)->next->cb((f)->next->ctx, rec) : 0)

static int fz_info(void *ctx, const perch_trace_info *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_TRACE_INFO;
    if (f->infos++)
        abort();
    mix_str(f, t, r->source);
    mix_str(f, t, r->session_config);
    mix(f, t, r->os_build ^ (uint64_t)r->cpu_count << 32);
    mix(f, t, r->pointer_size ^ (uint64_t)r->clock_type << 32);
    mix(f, t, r->perf_freq ^ r->start_filetime ^ r->end_filetime);
    mix(f, t, r->start_raw ^ r->events_lost ^ r->buffers_lost);
    return NEXT(f, trace_info, r);
}

static int fz_process(void *ctx, const perch_process_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_PROCESS;
    mix(f, t, r->key ^ r->pid ^ (uint64_t)r->parent_pid << 32);
    mix(f, t, r->session_id ^ (uint64_t)(uint32_t)r->exit_status << 32 ^ r->flags);
    mix(f, t, r->start_ts ^ r->end_ts);
    mix_str(f, t, r->image_name);
    mix_str(f, t, r->command_line);
    return NEXT(f, process, r);
}

static int fz_thread(void *ctx, const perch_thread_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_THREAD;
    mix(f, t, r->key ^ r->process_key ^ r->tid ^ (uint64_t)r->pid << 32 ^ r->flags);
    mix(f, t, r->start_ts ^ r->end_ts);
    mix_str(f, t, r->name);
    return NEXT(f, thread, r);
}

static int fz_module(void *ctx, const perch_module_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_MODULE;
    mix(f, t, r->key ^ r->process_key ^ r->pid ^ r->base ^ r->size);
    mix(f, t, r->load_ts ^ r->unload_ts ^ r->checksum ^ (uint64_t)r->time_date_stamp << 32);
    mix(f, t, r->has_pdb ^ r->pdb_guid.data1 ^ (uint64_t)r->pdb_guid.data2 << 32 ^ r->pdb_age);
    mix(f, t, r->pdb_guid.data3 ^ (uint64_t)r->pdb_guid.data4[0] << 16 ^ r->pdb_guid.data4[7]);
    mix_str(f, t, r->path);
    mix_str(f, t, r->pdb_name);
    return NEXT(f, module, r);
}

static int fz_counters(void *ctx, const perch_counters_rec *r)
{
    struct fz *f = ctx;
    if (r->count > PERCH_CAPTURE_MAX_COUNTERS)
        abort();
    for (uint32_t i = 0; i < r->count; i++)
        mix_str(f, PERCH_CHUNK_COUNTERS, r->names[i]);
    mix(f, PERCH_CHUNK_COUNTERS, r->count);
    return NEXT(f, counters, r);
}

static int fz_stack(void *ctx, const perch_stack_rec *r)
{
    struct fz *f = ctx;
    if (r->kernel_frames > r->frame_count || r->frame_count > PERCH_CAPTURE_MAX_FRAMES ||
        r->id != f->stacks + 1)
        abort();
    f->stacks = r->id;
    mix(f, PERCH_CHUNK_STACK, r->id ^ (uint64_t)r->frame_count << 32 ^ r->kernel_frames);
    mix_u64s(f, PERCH_CHUNK_STACK, r->frames, r->frame_count);
    return NEXT(f, stack, r);
}

static int fz_slice(void *ctx, const perch_slice_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_SLICE;
    if (r->pmc_count > PERCH_MAX_PMC)
        abort();
    mix(f, t, r->thread_key ^ r->tid ^ (uint64_t)r->cpu << 32 ^ (uint64_t)r->flags << 48);
    mix(f, t, r->start_ts ^ r->end_ts ^ r->ready_ts);
    mix(f, t,
        (uint8_t)r->priority ^ (uint8_t)r->wait_reason << 8 ^ (uint8_t)r->wait_mode << 16 ^
            (uint32_t)(uint8_t)r->state << 24);
    mix(f, t, r->pmc_count);
    mix_u64s(f, t, r->pmc_delta, r->pmc_count);
    return NEXT(f, slice, r);
}

static int fz_sample(void *ctx, const perch_sample_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_SAMPLE;
    if (r->stack_id > f->stacks)
        abort();
    mix(f, t, r->thread_key ^ r->tid ^ (uint64_t)r->cpu << 32 ^ (uint64_t)r->kind << 48);
    mix(f, t, r->flags ^ (uint64_t)r->profile_source << 8 ^ r->ts);
    mix(f, t, r->ip ^ r->module_key ^ r->stack_id ^ (uint64_t)r->count << 32);
    return NEXT(f, sample, r);
}

static int fz_lbr(void *ctx, const perch_lbr_rec *r)
{
    struct fz *f = ctx;
    if (r->branch_count > PERCH_CAPTURE_MAX_BRANCHES)
        abort();
    mix(f, PERCH_CHUNK_LBR, r->thread_key ^ r->tid ^ (uint64_t)r->pid << 32 ^ r->ts ^ r->filters);
    mix_u64s(f, PERCH_CHUNK_LBR, r->from, r->branch_count);
    mix_u64s(f, PERCH_CHUNK_LBR, r->to, r->branch_count);
    return NEXT(f, lbr, r);
}

static int fz_ledger(void *ctx, const perch_ledger_rec *r)
{
    struct fz *f = ctx;
    mix_str(f, PERCH_CHUNK_LEDGER, r->reason);
    mix(f, PERCH_CHUNK_LEDGER, r->count);
    return NEXT(f, ledger, r);
}

static int fz_stat(void *ctx, const perch_stat_rec *r)
{
    struct fz *f = ctx;
    mix_str(f, PERCH_CHUNK_STAT, r->name);
    mix(f, PERCH_CHUNK_STAT, r->value);
    return NEXT(f, stat, r);
}

static int fz_symbol(void *ctx, const perch_symbol_rec *r)
{
    struct fz *f = ctx;
    int t = PERCH_CHUNK_SYMBOL;
    mix(f, t, r->module_key ^ r->span_rva ^ (uint64_t)r->span_size << 32);
    mix(f, t, r->func_rva ^ (uint64_t)r->func_size << 32 ^ (uint64_t)r->source << 24);
    mix_str(f, t, r->name);
    return NEXT(f, symbol, r);
}

static int fz_finish(void *ctx)
{
    struct fz *f = ctx;
    mix(f, PERCH_CHUNK_END, 1);
    return f->next && f->next->finish ? f->next->finish(f->next->ctx) : 0;
}

static void fz_sink(struct fz *f, perch_sink *s)
{
    const perch_sink table = {f,         fz_info,   fz_process, fz_thread, fz_module, fz_counters,
                              fz_stack,  fz_slice,  fz_sample,  fz_lbr,    fz_ledger, fz_stat,
                              fz_finish, fz_symbol, false,      false};
    *s = table;
}

static void check_status(const perch_capture_status *st, size_t size, int err)
{
    if (st->stop < PERCH_CAPTURE_STOP_END || st->stop > PERCH_CAPTURE_STOP_IO)
        abort();
    if (st->offset > size || st->good_bytes > size || st->good_bytes > st->offset)
        abort();
    if ((err == 0) != (st->stop == PERCH_CAPTURE_STOP_END) || err != st->error)
        abort();
    if (memchr(st->reason, '\0', sizeof st->reason) == NULL)
        abort();
}

/* Writes the stream of `data` again and checks it replays to the same per-type hashes. */
static void rewrite(const uint8_t *data, size_t size, const struct fz *first)
{
    perch_output out;
    perch_memory_out mem;
    perch_capture_writer *w;
    perch_sink writer, tee, again;
    perch_capture_status st;
    struct fz f1 = {{0}, &writer, 0, 0}, f2 = {{0}, NULL, 0, 0};
    size_t len;
    perch_output_memory(&out, &mem, (size_t)64 << 20);
    if (perch_capture_writer_create(&out, NULL, &w) != 0)
        abort();
    perch_capture_writer_sink(w, &writer);
    fz_sink(&f1, &tee);
    if (perch_capture_replay_memory(data, size, &tee, &st) != 0)
        abort(); /* the same bytes replayed cleanly a moment ago */
    perch_capture_writer_destroy(w);
    uint8_t *copy = perch_output_memory_take(&mem, &len);
    fz_sink(&f2, &again);
    if (perch_capture_replay_memory(copy, len, &again, &st) != 0)
        abort();
    for (int t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (t != PERCH_CHUNK_STRINGS && (f2.h[t] != first->h[t] || f1.h[t] != first->h[t]))
            abort();
    free(copy);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the header CRC and every chunk CRC the framing reaches (docs/capture-format.md). */
static void fix_crcs(uint8_t *p, size_t size)
{
    if (size < 64)
        return;
    uint32_t hsize = le32(p + 12);
    if (hsize < 64 || hsize > 4096 || hsize > size)
        return;
    put_le32(p + 36, 0);
    put_le32(p + 36, perch__crc32c(0, p, hsize));
    for (size_t off = hsize; size - off >= 12;) {
        uint32_t len = le32(p + off + 4);
        if (len > size - off - 12)
            return;
        put_le32(p + off + 8, perch__crc32c(perch__crc32c(0, p + off, 8), p + off + 12, len));
        off += 12 + (size_t)len;
    }
}

/* Whether two replays stopped alike: where, why and how many records of each type. */
static bool same_stop(const perch_capture_status *a, const perch_capture_status *b)
{
    if (a->stop != b->stop || a->offset != b->offset || a->good_bytes != b->good_bytes ||
        strcmp(a->reason, b->reason) != 0)
        return false;
    for (int t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (a->types[t].records != b->types[t].records)
            return false;
    return true;
}

/* The same bytes through the checked decoders only: the fast record loops must have delivered
 * the same records and stopped at the same byte for the same reason. */
static void against_checked(const uint8_t *data, size_t size, const struct fz *fast,
                            const perch_capture_status *st, int err)
{
    struct fz f = {{0}, NULL, 0, 0};
    perch_sink sink;
    perch_input in;
    perch_capture_status cs;
    fz_sink(&f, &sink);
    perch_input_memory(&in, data, size);
    int cerr = perch__cap_replay_checked(&in, &sink, NULL, &cs);
    perch_input_close(&in);
    if (cerr != err || !same_stop(&cs, st) || memcmp(f.h, fast->h, sizeof f.h) != 0)
        abort();
}

/* The same bytes into the same sink with decode_ahead (the split walk playing arrays of
 * records: gecko's replay): the same records, hashed field by field, and the same stop. */
static void against_ahead(const uint8_t *data, size_t size, const struct fz *plain,
                          const perch_capture_status *st, int err)
{
    struct fz f = {{0}, NULL, 0, 0};
    perch_sink sink;
    perch_capture_status as;
    fz_sink(&f, &sink);
    sink.decode_ahead = true;
    int aerr = perch_capture_replay_memory(data, size, &sink, &as);
    if (aerr != err || !same_stop(&as, st) || memcmp(f.h, plain->h, sizeof f.h) != 0)
        abort();
}

/* The same bytes into the same sink with skip_events (chrome's first pass): no stack, slice,
 * sample or LBR record at all, and unless the plain replay stopped at a malformed record or at
 * a bad CRC of such a chunk (which the skipping one reads past, unread: records.h), the same
 * stop and every other record. */
static bool skipped(int type)
{
    return type == PERCH_CHUNK_STACK || type == PERCH_CHUNK_SLICE || type == PERCH_CHUNK_SAMPLE ||
           type == PERCH_CHUNK_LBR;
}

static void against_skip(const uint8_t *data, size_t size, const struct fz *plain,
                         const perch_capture_status *st)
{
    struct fz f = {{0}, NULL, 0, 0};
    perch_sink sink;
    perch_capture_status ss;
    fz_sink(&f, &sink);
    sink.skip_events = true;
    perch_capture_replay_memory(data, size, &sink, &ss);
    for (int t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (skipped(t) && (f.h[t] != 0 || ss.types[t].records != 0))
            abort();
    if (st->stop == PERCH_CAPTURE_STOP_BAD_CHUNK)
        return;
    if (st->stop == PERCH_CAPTURE_STOP_CRC && st->offset + 2 <= size &&
        skipped(data[st->offset] | data[st->offset + 1] << 8))
        return; /* a skipped chunk's payload is not read, so not checked */
    if (ss.stop != st->stop || ss.offset != st->offset || ss.good_bytes != st->good_bytes ||
        strcmp(ss.reason, st->reason) != 0)
        abort();
    for (int t = 0; t < PERCH_CHUNK_TYPE_LIMIT; t++)
        if (!skipped(t) && f.h[t] != plain->h[t])
            abort();
}

static void run(const uint8_t *data, size_t size)
{
    struct fz f = {{0}, NULL, 0, 0};
    perch_sink sink;
    perch_capture_status st;
    fz_sink(&f, &sink);
    int err = perch_capture_replay_memory(data, size, &sink, &st);
    check_status(&st, size, err);
    against_checked(data, size, &f, &st, err);
    against_ahead(data, size, &f, &st, err);
    against_skip(data, size, &f, &st);
    if (err == 0)
        rewrite(data, size, &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed)
        return 0;
    run(data, size);
    if (size)
        memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    run(fixed, size);
    free(fixed);
    return 0;
}
