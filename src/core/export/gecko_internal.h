/*
 * Internals of the gecko writer (gecko.c, gecko_markers.c): the bounded log of slices its
 * markers come from, the marks of one thread as a stream, the markers table and its schema,
 * and times written as gecko writes them. Built on export_internal.h's budget, logs and runs.
 */
#ifndef PERCH_EXPORT_GECKO_INTERNAL_H
#define PERCH_EXPORT_GECKO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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
void perch__gecko_time(perch__run *r, perch__ms_text *c, int64_t ticks, uint64_t freq);
/* perch__gecko_time of t - from as a signed difference of any size (perch__fmt_time_since). */
void perch__gecko_time_since(perch__run *r, perch__ms_text *c, uint64_t t, uint64_t from,
                             uint64_t freq);
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

#endif
