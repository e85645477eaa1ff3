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

#include "export/gecko_internal.h"
#include "perch/error.h"

/* One mark as varints: start delta, duration, ready + 1 (0 unknown), cpu, priority, wait
 * reason, the PMC count and deltas (at most PERCH_MAX_PMC). */
static size_t encode_mark(const perch__mark *m, uint64_t prev, uint64_t e[8 + PERCH_MAX_PMC])
{
    size_t n = 0;
    e[n++] = perch__zigzag((int64_t)(m->start - prev));
    e[n++] = m->end - m->start;
    e[n++] = m->ready == UINT64_MAX ? 0 : m->ready + 1;
    e[n++] = m->cpu;
    e[n++] = perch__zigzag(m->priority);
    e[n++] = perch__zigzag(m->wait_reason);
    e[n++] = m->pmc_count;
    for (uint32_t i = 0; i < m->pmc_count && i < PERCH_MAX_PMC; i++)
        e[n++] = m->pmc[i];
    return n;
}

/* One slice as varints: the fields of encode_mark, from the record. */
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

/* The log of thread key, from the cache or looked up (created when new). */
static int thread_log(perch__slice_log *l, perch__budget *b, uint64_t key, perch__vlog **t)
{
    struct perch__slice_slot *s = &l->cache[perch__hash64(key) & (PERCH_SLICE_CACHE - 1)];
    int err;
    if (s->log && s->key == key) {
        *t = &l->threads.v[s->log - 1];
        return 0;
    }
    err = perch__vlogs_get(&l->threads, b, key, 0, true, t);
    if (!err)
        *s = (struct perch__slice_slot){key, (uint32_t)(*t - l->threads.v) + 1};
    return err;
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
    err = thread_log(l, b, r->thread_key, &t);
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
    for (uint32_t i = 0; i < m->pmc_count && i < PERCH_MAX_PMC; i++) /* the rest: unread */
        m->pmc[i] = perch__vnext(p, len, off);
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

/* The marks of l->marks (sorted) encoded again into *buf; *len receives the bytes. */
static int encode_marks(const perch__slice_log *l, perch__budget *b, uint8_t **buf, size_t *cap,
                        size_t *len)
{
    uint64_t e[8 + PERCH_MAX_PMC], prev = 0;
    int err = 0;
    *len = 0;
    for (size_t i = 0; i < l->mark_count && !err; i++) {
        err = perch__grow(b, (void **)buf, cap, *len + sizeof e / sizeof e[0] * 10, 1);
        if (!err)
            *len += perch__put_varints(*buf + *len, e, encode_mark(&l->marks[i], prev, e));
        prev = l->marks[i].start;
    }
    return err;
}

int perch__slice_log_stream(perch__slice_log *l, perch__budget *b, uint64_t thread_key,
                            perch__mark_stream *ms, uint8_t **buf, size_t *cap)
{
    perch__vlog *t = NULL;
    const uint8_t *data;
    size_t len;
    int err = perch__vlogs_get(&l->threads, b, thread_key, 0, false, &t);
    *ms = (perch__mark_stream){NULL, 0, 0};
    if (err || t == NULL)
        return err;
    if (t->unsorted) { /* decoded, sorted and encoded again */
        err = perch__slice_log_thread(l, b, thread_key);
        if (!err)
            err = encode_marks(l, b, buf, cap, &len);
        if (!err)
            *ms = (perch__mark_stream){*buf, len, l->mark_count};
        return err;
    }
    err = perch__vlogs_read(&l->threads, b, t, &data, &len);
    if (!err && t->spilled) { /* read into the store's buffer: copied, the next read reuses it */
        err = perch__grow(b, (void **)buf, cap, len, 1);
        if (!err && len)
            data = memcpy(*buf, data, len);
    }
    if (!err)
        *ms = (perch__mark_stream){data, len, t->count};
    return err;
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
    char key[16]; /* "pmc" and a u32: room for any, so no build warns of truncation */
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

size_t perch__gecko_ms(char *out, int64_t ticks, uint64_t freq)
{
    char ip[24];
    if (!perch__gecko_ms_fast(ticks, freq))
        return perch__trim_fraction(out, perch__fmt_time(out, ticks, freq, true));
    return perch__gecko_ms_frac(out, ip, perch__put_uint(ip, (uint64_t)ticks / 10000u),
                                (uint64_t)ticks);
}

size_t perch__gecko_ms_since(char *out, uint64_t t, uint64_t from, uint64_t freq)
{
    if (t >= from && t - from <= (uint64_t)INT64_MAX)
        return perch__gecko_ms(out, (int64_t)(t - from), freq);
    return perch__trim_fraction(out, perch__fmt_time_since(out, t, from, freq, true));
}

static void put_text(char *buf, size_t *len, const char *s, size_t n)
{
    memcpy(buf + *len, s, n);
    *len += n;
}
#define PUT_LIT(buf, len, lit) put_text(buf, len, lit, sizeof lit - 1)

/* v in decimal; a digit without a call (CPUs, priorities, wait reasons and PMC indices
 * mostly are one). */
static void put_dec(char *buf, size_t *len, int64_t v)
{
    if (v >= 0 && v < 10) {
        buf[(*len)++] = (char)('0' + v);
        return;
    }
    if (v < 0)
        buf[(*len)++] = '-';
    *len += perch__put_uint(buf + *len, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* The longest marker data object mark_data writes. */
#define MARK_TEXT_MAX (160 + PERCH_MAX_PMC * 40)
_Static_assert(MARK_TEXT_MAX < sizeof(((perch__run *)0)->buf), "a marker's text fits a run");

/* A marker's data object, the text the JSON writer would give it key by key (the keys
 * need no escapes), written in place in the run. */
static void mark_data(perch__run *r, const perch__slice_log *l, const perch__mark *m, uint64_t freq)
{
    char *buf = perch__run_reserve(r, MARK_TEXT_MAX);
    size_t len = 0;
    PUT_LIT(buf, &len, "{\"type\":\"CSwitch\",\"cpu\":");
    put_dec(buf, &len, m->cpu);
    PUT_LIT(buf, &len, ",\"priority\":");
    put_dec(buf, &len, m->priority);
    if (m->wait_reason >= 0) {
        PUT_LIT(buf, &len, ",\"waitReason\":");
        put_dec(buf, &len, m->wait_reason);
    }
    if (m->ready != UINT64_MAX) {
        PUT_LIT(buf, &len, ",\"readyLatency\":");
        len += perch__gecko_ms_since(buf + len, m->ready, 0, freq);
    }
    for (uint32_t i = 0; i < m->pmc_count && i < l->pmc_name_count; i++) {
        PUT_LIT(buf, &len, ",\"pmc");
        put_dec(buf, &len, i);
        PUT_LIT(buf, &len, "\":");
        len += perch__put_uint(buf + len, m->pmc[i]);
    }
    buf[len++] = '}';
    r->len += len;
}

/* The column of times (ms from the trace start) of n marks: t[0], t[2], ... */
static void times(perch__run *r, const uint64_t *t, size_t n, const perch_trace_info *info)
{
    perch__ms_text c = {0};
    perch_json_begin_array(r->w);
    for (size_t i = 0; i < n; i++)
        perch__gecko_time_since(r, &c, t[2 * i], info->start_raw, info->perf_freq);
    perch__run_flush(r);
    perch_json_end_array(r->w);
}

/* An array of n copies of v. */
static void repeat_uint(perch__run *r, uint64_t v, size_t n)
{
    perch_json_begin_array(r->w);
    for (size_t i = 0; i < n; i++)
        perch__run_uint(r, v);
    perch__run_flush(r);
    perch_json_end_array(r->w);
}

int perch__gecko_markers_json(perch_json *w, const perch__slice_log *l,
                              const perch_trace_info *info, const perch__mark_stream *ms,
                              uint32_t name, uint32_t category, perch__budget *b,
                              uint64_t **t, size_t *t_cap)
{
    size_t n = ms->count, off = 0;
    uint64_t start = 0;
    perch__run r = {w, 0, {0}};
    int err = perch__grow(b, (void **)t, t_cap, n * 2 + 2, sizeof **t);
    if (err)
        return err;
    perch_json_begin_object(w);
    perch_json_key(w, "data");
    perch_json_begin_array(w);
    for (size_t i = 0; i < n; i++) { /* decoded once: the data here, the times kept */
        perch__mark m;
        decode(ms->data, ms->len, &off, &start, &m);
        (*t)[2 * i] = m.start;
        (*t)[2 * i + 1] = m.end;
        mark_data(&r, l, &m, info->perf_freq);
    }
    perch__run_flush(&r);
    perch_json_end_array(w);
    perch_json_key(w, "name");
    repeat_uint(&r, name, n);
    perch_json_key(w, "startTime");
    times(&r, *t, n, info);
    perch_json_key(w, "endTime");
    times(&r, *t + 1, n, info);
    perch_json_key(w, "phase"); /* 1 = interval */
    repeat_uint(&r, 1, n);
    perch_json_key(w, "category");
    repeat_uint(&r, category, n);
    perch_json_key(w, "length");
    perch_json_uint(w, n);
    perch_json_end_object(w);
    return 0;
}

void perch__slice_log_free(perch__slice_log *l, perch__budget *b)
{
    perch__vlogs_free(&l->threads, b);
    memset(l->cache, 0, sizeof l->cache);
    perch__release(b, (void **)&l->marks, &l->mark_cap, sizeof *l->marks);
    l->count = 0;
    l->mark_count = 0;
}
