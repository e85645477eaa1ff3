/*
 * Internals of the gecko writer (gecko.c, gecko_build.c, gecko_markers.c): the bounded log of
 * slices its markers come from, the marks of one thread as a stream, the markers table and its
 * schema, times written as gecko writes them, and the slots the builder fills for the writer.
 * Built on export_internal.h's budget, logs and runs.
 */
#ifndef PERCH_EXPORT_GECKO_INTERNAL_H
#define PERCH_EXPORT_GECKO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export/export_internal.h"

/* ---- gecko markers: a bounded log of slices ------------------------------------------- */
typedef struct perch__mark {
    uint64_t start, end;
    uint64_t ready; /* ticks from ready to switch-in; UINT64_MAX = unknown */
    uint16_t cpu;
    int8_t priority, wait_reason;
    uint8_t pmc_count;
    uint32_t order; /* position in the thread's log */
    uint64_t pmc[PERCH_MAX_PMC];
} perch__mark;

#define PERCH_SLICE_CACHE 256
typedef struct perch__slice_log {
    perch__vlogs threads;              /* per thread key: its slices, varint-encoded */
    struct perch__slice_slot {         /* a direct-mapped cache: thread key -> its log */
        uint64_t key;
        uint32_t log; /* index in threads + 1, 0 = empty */
    } cache[PERCH_SLICE_CACHE];
    uint64_t count;                    /* marks kept */
    uint64_t limit;                    /* most marks kept */
    uint64_t dropped;                  /* slices past the limit or the budget */
    uint32_t pmc_names[PERCH_MAX_PMC]; /* offsets in the entities' strings */
    uint32_t pmc_name_count;
    perch__mark *marks; /* the thread being written, by start */
    size_t mark_count, mark_cap;
} perch__slice_log;

/* Keeps r (or counts it as dropped past the limit or the budget). */
int perch__slice_log_add(perch__slice_log *l, perch__budget *b, const perch_slice_rec *r);
/* Decodes the marks of thread_key into l->marks (l->mark_count of them), sorted by start
 * (ties in arrival order). */
int perch__slice_log_thread(perch__slice_log *l, perch__budget *b, uint64_t thread_key);
void perch__slice_log_free(perch__slice_log *l, perch__budget *b);
/* The meta.markerSchema array (the "CSwitch" schema). */
void perch__gecko_marker_schema(perch_json *w, const perch__slice_log *l, const perch__entities *e);
/* Times as gecko writes them: milliseconds, perch__fmt_time's text (6 decimals) without the
 * fraction's trailing zeros (and its point when none is left), with a fast path for the
 * 10 MHz QPC clock: perch__gecko_ms into out (PERCH_TIME_TEXT_MAX bytes); perch__gecko_time
 * appends to a run, keeping the last integer part's text in c (zeroed at first), which the
 * next time reuses or counts up by one. */
typedef struct perch__ms_text {
    uint64_t ms;
    uint8_t len; /* 0: none yet */
    char text[23];
} perch__ms_text;
size_t perch__gecko_ms(char *out, int64_t ticks, uint64_t freq);
/* perch__gecko_ms of t - from as a signed difference of any size (perch__fmt_time_since). */
size_t perch__gecko_ms_since(char *out, uint64_t t, uint64_t from, uint64_t freq);

/* Whether ticks take the 10 MHz path (where perch__fmt_time's ticks * 100 does not wrap). */
static inline bool perch__gecko_ms_fast(int64_t ticks, uint64_t freq)
{
    return freq == 10000000u && ticks >= 0 && (uint64_t)ticks <= UINT64_MAX / 100u;
}

/* The trimmed text of t 100 ns ticks (the QPC clock of 10 MHz: ns = t * 100, so of the six
 * decimals the last two are 0) after the integer part's text ip (len bytes). The four
 * decimals are stored whole and the length cut back by their trailing zeros, read off the
 * two digit pairs, so no branch depends on the digits. */
static inline size_t perch__gecko_ms_frac(char *out, const char *ip, size_t len, uint64_t t)
{
    uint32_t f = (uint32_t)(t % 10000u);
    const char *hi = perch__digit_pairs + 2 * (f / 100), *lo = perch__digit_pairs + 2 * (f % 100);
    bool z3 = lo[1] == '0', z2 = z3 & (lo[0] == '0'), z1 = z2 & (hi[1] == '0');
    memcpy(out, ip, len);
    out[len] = '.';
    memcpy(out + len + 1, hi, 2);
    memcpy(out + len + 3, lo, 2);
    return f ? len + 5 - z3 - z2 - z1 : len;
}

/* Inline: the columns of times call it for each value (5.7 M times at 512 MB). */
static inline void perch__gecko_time(perch__run *r, perch__ms_text *c, int64_t ticks, uint64_t freq)
{
    uint64_t ms;
    char *out = perch__run_reserve(r, PERCH_TIME_TEXT_MAX);
    if (!perch__gecko_ms_fast(ticks, freq)) {
        r->len += perch__gecko_ms(out, ticks, freq);
        return;
    }
    ms = (uint64_t)ticks / 10000u;
    /* a new integer part: the one after the last counts up its last digit */
    if (c->len == 0 || ms != c->ms) {
        if (c->len && ms == c->ms + 1 && c->text[c->len - 1] != '9')
            c->text[c->len - 1]++;
        else
            c->len = (uint8_t)perch__put_uint(c->text, ms);
        c->ms = ms;
    }
    r->len += perch__gecko_ms_frac(out, c->text, c->len, (uint64_t)ticks);
}
/* perch__gecko_time of t - from as a signed difference of any size (perch__fmt_time_since).
 * Inline too: a thread's sample deltas and its marks' times are columns of these. */
static inline void perch__gecko_time_since(perch__run *r, perch__ms_text *c, uint64_t t,
                                           uint64_t from, uint64_t freq)
{
    if (t >= from && t - from <= (uint64_t)INT64_MAX)
        perch__gecko_time(r, c, (int64_t)(t - from), freq);
    else if (t < from && from - t <= (uint64_t)INT64_MAX)
        perch__gecko_time(r, c, -(int64_t)(from - t), freq);
    else /* apart by 2^63 ticks or more */
        r->len += perch__gecko_ms_since(perch__run_reserve(r, PERCH_TIME_TEXT_MAX), t, from, freq);
}
/* A thread's marks as varints of the log's encoding, by start (ties in arrival order). */
typedef struct perch__mark_stream {
    const uint8_t *data;
    size_t len;
    size_t count; /* marks */
} perch__mark_stream;

/* The marks of thread_key as a stream: the log's own bytes when they are in memory and in
 * order (valid until the log changes), else read back, or decoded, sorted and encoded again,
 * into *buf (capacity *cap, grown). An empty stream when the thread has no log. */
int perch__slice_log_stream(perch__slice_log *l, perch__budget *b, uint64_t thread_key,
                            perch__mark_stream *ms, uint8_t **buf, size_t *cap);
/* A thread's markers table for the marks of ms: interval markers named by string index name,
 * in category. *t (capacity *t_cap, grown) holds the marks' times while it writes; only
 * l->pmc_name_count is read. */
int perch__gecko_markers_json(perch_json *w, const perch__slice_log *l,
                              const perch_trace_info *info, const perch__mark_stream *ms,
                              uint32_t name, uint32_t category, perch__budget *b, uint64_t **t,
                              size_t *t_cap);

/* ---- the writer's slots and the builder's state (gecko.c, gecko_build.c) -------------- */
/* Slots the builder fills ahead of the writer (group i in slot i % PERCH_GECKO_SLOTS); the
 * frames kept of a stack; the entries of the builder's direct-mapped frame cache. */
#define PERCH_GECKO_SLOTS       8
#define PERCH_GECKO_MAX_FRAMES  4096
#define PERCH_GECKO_FRAME_CACHE (1u << 14)

/* What the writer needs of one group (a profile thread), prepared by the builder
 * (perch__samplelog_each_prepared: slot i % PERCH_GECKO_SLOTS for group i): its samples
 * compactly, its tables and its marks. */
typedef struct perch__gslot {
    const perch__thread *thread; /* NULL when the thread has no entry */
    uint16_t kind, source;
    bool idle;       /* an idle thread */
    size_t n;        /* samples (or rows, one per distinct stack, past max_samples) */
    uint32_t *stack; /* per sample: its stack index */
    size_t stack_cap;
    uint64_t *count; /* per sample: its count (a row's sum past max_samples); unused when ones */
    size_t count_cap;
    bool ones;      /* every count is 1 */
    int64_t lead;   /* ticks from the trace start of the empty sample before the first */
    uint8_t *times; /* the samples' times as varints of their (non-negative) deltas */
    size_t times_len, times_cap;
    perch__interner strings;
    perch__loctab frames;                 /* extra = resource index + 1 */
    uint32_t *stack_frame, *stack_prefix; /* prefix UINT32_MAX = none */
    size_t stack_count, stack_frame_cap, stack_prefix_cap;
    uint32_t *func_name; /* per frame: its name's string index */
    size_t func_name_cap;
    uint32_t *res_module, *res_lib, *res_name; /* per resource: module, lib, name string */
    size_t res_count, res_cap, res_lib_cap, res_name_cap;
    perch__mark_stream marks;
    uint8_t *mark_buf; /* the marks when not the log's own bytes */
    size_t mark_buf_cap;
    uint32_t mark_name; /* string index of "Running" */
} perch__gslot;

/* The writer's state (gecko.c), with the builder's (gecko_build.c) on its thread. */
typedef struct perch__gecko {
    perch__collect *c;
    perch__slice_log *log;
    bool overflow; /* more samples than max_samples: one per distinct stack */
    perch_json *w;
    perch__gslot slot[PERCH_GECKO_SLOTS];
    uint64_t *mark_times; /* the writer's: the marks' times of the thread being written */
    size_t mark_times_cap;
    /* the builder's */
    uint32_t *lib_of; /* per module index: lib index + 1, 0 = none yet */
    size_t lib_of_cap;
    uint32_t *lib_modules; /* per lib: module index */
    size_t lib_count, lib_cap;
    perch__map stack_map;   /* (prefix + 1) << 32 | frame, + 1 -> stack index */
    perch__map res_map;     /* module index + 1 -> resource index */
    uint32_t *sample_stack; /* per row of the group */
    size_t sample_cap;
    perch__resolve_cache rc;
    /* A direct-mapped cache of the thread's stack frames: address -> frame index, valid when
     * its tag is the thread's (frame_tag). Exact: within one thread (one process) a stack
     * frame's module, so its frame, is a function of the address. */
    struct perch__gecko_frame_slot {
        uint64_t addr;
        uint32_t tag, frame;
    } fc[PERCH_GECKO_FRAME_CACHE];
    uint32_t frame_tag; /* the tag of the thread being written; slots of others are stale */
    /* the previous row's stack from the root: addresses and their stack indices */
    uint64_t path_addr[PERCH_GECKO_MAX_FRAMES];
    uint32_t path_stack[PERCH_GECKO_MAX_FRAMES];
    uint32_t path_len;
} perch__gecko;

/* perch__samplelog_each_prepared's prepare (the builder's thread, gecko_build.c): the group's
 * stacks, samples, marks and libs into slot (the names are the writer's). */
int perch__gecko_prepare_group(void *ctx, const perch__group *grp, size_t slot);
/* Ticks of one sampling interval of ns nanoseconds, exactly: floor(ns x freq / 1e9), without
 * the product wrapping; UINT64_MAX when the ticks themselves pass 64 bits. */
uint64_t perch__gecko_interval_ticks(uint64_t ns, uint64_t freq);

#endif
