/*
 * Slices as Firefox Profiler markers: the gecko writer keeps a bounded log of slices (a hard
 * cap, perch_export_options.gecko_max_markers, with a count of what it dropped) and writes
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

int perch__slice_log_add(perch__slice_log *l, perch__budget *b, const perch_slice_rec *r)
{
    perch__mark *m;
    int err;
    if (l->count >= l->limit) {
        l->dropped++;
        return 0;
    }
    err = perch__grow(b, (void **)&l->marks, &l->cap, l->count + 1, sizeof *l->marks);
    if (err == PERCH_ELIMIT) { /* the budget is full: drop and count, keep exporting */
        l->dropped++;
        return 0;
    }
    if (err)
        return err;
    m = &l->marks[l->count++];
    m->thread_key = r->thread_key;
    m->start = r->start_ts;
    m->end = r->end_ts >= r->start_ts ? r->end_ts : r->start_ts;
    m->ready = (r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts
                   ? r->start_ts - r->ready_ts
                   : UINT64_MAX;
    m->cpu = r->cpu;
    m->priority = r->priority;
    m->wait_reason = r->wait_reason;
    m->pmc_count = r->pmc_count < PERCH_MAX_PMC ? r->pmc_count : PERCH_MAX_PMC;
    memcpy(m->pmc, r->pmc_delta, sizeof m->pmc);
    return 0;
}

static int cmp_mark(const void *x, const void *y)
{
    const perch__mark *a = x, *b = y;
    if (a->thread_key != b->thread_key)
        return a->thread_key < b->thread_key ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

void perch__slice_log_sort(perch__slice_log *l)
{
    if (l->marks)
        qsort(l->marks, l->count, sizeof *l->marks, cmp_mark);
}

void perch__slice_log_range(const perch__slice_log *l, uint64_t thread_key, size_t *begin,
                            size_t *end)
{
    size_t lo = 0, hi = l->count;
    while (lo < hi) { /* first mark of thread_key */
        size_t mid = lo + (hi - lo) / 2;
        if (l->marks[mid].thread_key < thread_key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *begin = lo;
    while (lo < l->count && l->marks[lo].thread_key == thread_key)
        lo++;
    *end = lo;
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

void perch__gecko_markers_json(perch_json *w, const perch__slice_log *l, size_t begin, size_t end,
                               const perch_trace_info *info, uint32_t name, uint32_t category)
{
    size_t n = end - begin;
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
    perch__release(b, (void **)&l->marks, &l->cap, sizeof *l->marks);
    l->count = 0;
}
