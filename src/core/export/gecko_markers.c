/*
 * Slices as Firefox Profiler markers: the gecko writer keeps a bounded log of slices (a hard
 * cap, perch_export_options.gecko_max_markers, with a count of what it dropped), one varint
 * log per thread (vlog.c: deltas and small numbers, a few bytes a slice), and writes
 * each thread's slices as interval markers of the "CSwitch" schema (CPU, priority, wait
 * reason, ready latency, PMC deltas under the counter names) in that thread's markers table.
 * Marker tables and schema fields follow the processed profile format of version 48
 * (markerSchema entries with "name", "display", "data" [{key, label, format}]).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"

/* One slice as varints: start delta, duration, ready + 1 (0 unknown), cpu, priority, wait
 * reason, the PMC count and deltas. */
static size_t encode(const perch_slice_rec *r, uint64_t prev, uint64_t e[8 + PERCH_MAX_PMC])
{
    uint64_t end = r->end_ts >= r->start_ts ? r->end_ts : r->start_ts;
    uint32_t pmc = r->pmc_count < PERCH_MAX_PMC ? r->pmc_count : PERCH_MAX_PMC;
    size_t n = 0;
    e[n++] = perch__zigzag((int64_t)(r->start_ts - prev));
    e[n++] = end - r->start_ts;
    e[n++] = (r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts
                 ? r->start_ts - r->ready_ts + 1
                 : 0;
    e[n++] = r->cpu;
    e[n++] = perch__zigzag((int8_t)r->priority);
    e[n++] = perch__zigzag((int8_t)r->wait_reason);
    e[n++] = pmc;
    for (uint32_t i = 0; i < pmc; i++)
        e[n++] = r->pmc_delta[i];
    return n;
}

int perch__slice_log_add(perch__slice_log *l, perch__budget *b, const perch_slice_rec *r)
{
    perch__vlog *t;
    uint64_t e[8 + PERCH_MAX_PMC];
    int err;
    if (l->count >= l->limit) {
        l->dropped++;
        return 0;
    }
    err = perch__vlogs_get(&l->threads, b, r->thread_key, 0, true, &t);
    if (!err)
        err = perch__vlogs_put(&l->threads, b, t, e, encode(r, t->prev, e));
    if (err == PERCH_ELIMIT) { /* the budget is full: drop and count, keep exporting */
        l->dropped++;
        return 0;
    }
    if (err)
        return err;
    t->unsorted |= r->start_ts < t->prev;
    t->prev = r->start_ts;
    l->count++;
    return 0;
}

static int cmp_mark(const void *x, const void *y)
{
    const perch__mark *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

static void decode(const uint8_t *p, size_t len, size_t *off, uint64_t *start, perch__mark *m)
{
    uint64_t ready;
    *start += (uint64_t)perch__unzigzag(perch__vnext(p, len, off));
    m->start = *start;
    m->end = m->start + perch__vnext(p, len, off);
    ready = perch__vnext(p, len, off);
    m->ready = ready ? ready - 1 : UINT64_MAX;
    m->cpu = (uint16_t)perch__vnext(p, len, off);
    m->priority = (int8_t)perch__unzigzag(perch__vnext(p, len, off));
    m->wait_reason = (int8_t)perch__unzigzag(perch__vnext(p, len, off));
    m->pmc_count = (uint8_t)perch__vnext(p, len, off);
    for (uint32_t i = 0; i < PERCH_MAX_PMC; i++)
        m->pmc[i] = i < m->pmc_count ? perch__vnext(p, len, off) : 0;
}

int perch__slice_log_thread(perch__slice_log *l, perch__budget *b, uint64_t thread_key)
{
    perch__vlog *t = NULL;
    const uint8_t *data;
    uint64_t start = 0;
    size_t off = 0, len;
    int err = perch__vlogs_get(&l->threads, b, thread_key, 0, false, &t);
    l->mark_count = 0;
    if (err || t == NULL)
        return err;
    err = perch__grow(b, (void **)&l->marks, &l->mark_cap, t->count, sizeof *l->marks);
    if (!err)
        err = perch__vlogs_read(&l->threads, b, t, &data, &len);
    if (err)
        return err;
    for (size_t i = 0; i < t->count; i++) {
        decode(data, len, &off, &start, &l->marks[i]);
        l->marks[i].order = (uint32_t)i;
    }
    l->mark_count = t->count;
    if (t->unsorted)
        qsort(l->marks, l->mark_count, sizeof *l->marks, cmp_mark);
    return 0;
}

static void field(perch_json *w, const char *key, const char *label, const char *format)
{
    perch_json_begin_object(w);
    perch_json_key(w, "key");
    perch_json_string(w, key);
    perch_json_key(w, "label");
    perch_json_string(w, label);
    perch_json_key(w, "format");
    perch_json_string(w, format);
    perch_json_end_object(w);
}

void perch__gecko_marker_schema(perch_json *w, const perch__slice_log *l, const perch__entities *e)
{
    char key[8];
    perch_json_begin_array(w);
    perch_json_begin_object(w);
    perch_json_key(w, "name");
    perch_json_string(w, "CSwitch");
    perch_json_key(w, "tooltipLabel");
    perch_json_string(w, "Running on CPU {marker.data.cpu}");
    perch_json_key(w, "tableLabel");
    perch_json_string(w, "CPU {marker.data.cpu}, priority {marker.data.priority}, wait reason "
                         "{marker.data.waitReason}");
    perch_json_key(w, "chartLabel");
    perch_json_string(w, "CPU {marker.data.cpu}");
    perch_json_key(w, "display");
    perch_json_raw(w, "[\"marker-chart\",\"marker-table\",\"timeline-overview\"]");
    perch_json_key(w, "data");
    perch_json_begin_array(w);
    field(w, "cpu", "CPU", "integer");
    field(w, "priority", "Priority", "integer");
    field(w, "waitReason", "Wait reason at switch-out", "integer");
    field(w, "readyLatency", "Ready latency", "duration");
    for (uint32_t i = 0; i < l->pmc_name_count; i++) {
        snprintf(key, sizeof key, "pmc%" PRIu32, i);
        field(w, key, perch__str(&e->strings, l->pmc_names[i]), "integer");
    }
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_json_end_array(w);
}

static void mark_data(perch_json *w, const perch__slice_log *l, const perch__mark *m, uint64_t freq)
{
    char key[8];
    perch_json_begin_object(w);
    perch_json_key(w, "type");
    perch_json_string(w, "CSwitch");
    perch_json_key(w, "cpu");
    perch_json_uint(w, m->cpu);
    perch_json_key(w, "priority");
    perch_json_int(w, m->priority);
    if (m->wait_reason >= 0) {
        perch_json_key(w, "waitReason");
        perch_json_int(w, m->wait_reason);
    }
    if (m->ready != UINT64_MAX) {
        perch_json_key(w, "readyLatency");
        perch__json_time(w, (int64_t)m->ready, freq, true);
    }
    for (uint32_t i = 0; i < m->pmc_count && i < l->pmc_name_count; i++) {
        snprintf(key, sizeof key, "pmc%" PRIu32, i);
        perch_json_key(w, key);
        perch_json_uint(w, m->pmc[i]);
    }
    perch_json_end_object(w);
}

/* The column of times (ms from the trace start) of marks [begin, end). */
static void times(perch_json *w, const perch__slice_log *l, size_t begin, size_t end,
                  const perch_trace_info *info, bool ends)
{
    perch_json_begin_array(w);
    for (size_t i = begin; i < end; i++) {
        uint64_t ts = ends ? l->marks[i].end : l->marks[i].start;
        perch__json_time(w, (int64_t)(ts - info->start_raw), info->perf_freq, true);
    }
    perch_json_end_array(w);
}

void perch__gecko_markers_json(perch_json *w, const perch__slice_log *l,
                               const perch_trace_info *info, uint32_t name, uint32_t category)
{
    size_t begin = 0, end = l->mark_count, n = end - begin;
    perch_json_begin_object(w);
    perch_json_key(w, "data");
    perch_json_begin_array(w);
    for (size_t i = begin; i < end; i++)
        mark_data(w, l, &l->marks[i], info->perf_freq);
    perch_json_end_array(w);
    perch_json_key(w, "name");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch_json_uint(w, name);
    perch_json_end_array(w);
    perch_json_key(w, "startTime");
    times(w, l, begin, end, info, false);
    perch_json_key(w, "endTime");
    times(w, l, begin, end, info, true);
    perch_json_key(w, "phase"); /* 1 = interval */
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch_json_uint(w, 1);
    perch_json_end_array(w);
    perch_json_key(w, "category");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++)
        perch_json_uint(w, category);
    perch_json_end_array(w);
    perch_json_key(w, "length");
    perch_json_uint(w, n);
    perch_json_end_object(w);
}

void perch__slice_log_free(perch__slice_log *l, perch__budget *b)
{
    perch__vlogs_free(&l->threads, b);
    perch__release(b, (void **)&l->marks, &l->mark_cap, sizeof *l->marks);
    l->count = 0;
    l->mark_count = 0;
}
