/*
 * The model's entry points: create (copies the trace info, hands it to the sink), feed (counts
 * the record, decodes it, advances the pending-sample window, dispatches by decoded type
 * through one table), finish (flushes everything in a fixed order) and destroy.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "model/feed_counted.h"
#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"
#include "util/ticks.h"

typedef int (*handler_fn)(perch_model *m, const perch_event *ev, const perch_decoded *d);

static const handler_fn handlers[PERCH_DECODED_TYPE_COUNT] = {
    [PERCH_DECODED_CSWITCH] = perch__cswitch,
    [PERCH_DECODED_READY_THREAD] = perch__ready_thread,
    [PERCH_DECODED_THREAD] = perch__thread_event,
    [PERCH_DECODED_THREAD_SET_NAME] = perch__thread_set_name,
    [PERCH_DECODED_SAMPLED_PROFILE] = perch__sample,
    [PERCH_DECODED_PMC_SAMPLE] = perch__sample,
    [PERCH_DECODED_LBR] = perch__lbr,
    [PERCH_DECODED_PMC_CONFIG] = perch__pmc_config,
    [PERCH_DECODED_STACK_WALK] = perch__stack_walk,
    [PERCH_DECODED_STACK_KEY_REF] = perch__stack_key_ref,
    [PERCH_DECODED_STACK_KEY_DEF] = perch__stack_key_def,
    [PERCH_DECODED_IMAGE] = perch__image_event,
    [PERCH_DECODED_PROCESS] = perch__process_event,
    [PERCH_DECODED_DBG_ID_RSDS] = perch__dbg_id,
    [PERCH_DECODED_PROFILE_INTERVAL] = perch__profile_interval,
};

int perch_model_create(const perch_sink *sink, const perch_trace_info *info,
                       const perch_model_options *opts, perch_model **out)
{
    if (sink == NULL || info == NULL || out == NULL)
        return PERCH_EINVAL;
    perch_model *m = perch__alloc(sizeof *m);
    if (m == NULL)
        return PERCH_ENOMEM;
    memset(m, 0, sizeof *m);
    m->sink = *sink;
    m->info = *info;
    m->source =
        perch__strdup_n(info->source ? info->source : "", info->source ? strlen(info->source) : 0);
    m->session_config = info->session_config
                            ? perch__strdup_n(info->session_config, strlen(info->session_config))
                            : NULL;
    m->info.source = m->source;
    m->info.session_config = m->session_config;
    if (opts != NULL && opts->sz >= sizeof *opts)
        m->opts = *opts;
    if (m->opts.stack_wait_seconds <= 0)
        m->opts.stack_wait_seconds = 4.0;
    if (m->opts.kernel_wait_seconds <= 0)
        m->opts.kernel_wait_seconds = 0.1;
    if (m->opts.max_pending_samples == 0)
        m->opts.max_pending_samples = 1u << 20;
    if (m->opts.max_pending_samples > MAX_GROUPS / 2) /* the bound must hold below the caps */
        m->opts.max_pending_samples = MAX_GROUPS / 2;
    if (m->opts.max_entities == 0 || m->opts.max_entities > MAX_ENTITIES)
        m->opts.max_entities = m->opts.max_entities ? MAX_ENTITIES : DEFAULT_MAX_ENTITIES;
    if (m->opts.max_modules_per_map == 0 || m->opts.max_modules_per_map > MAX_MODULES_PER_MAP)
        m->opts.max_modules_per_map =
            m->opts.max_modules_per_map ? MAX_MODULES_PER_MAP : DEFAULT_MAX_MODULES_PER_MAP;
    uint64_t freq = perch__clock_hz(info->perf_freq);
    m->wait_ticks = (uint64_t)(m->opts.stack_wait_seconds * (double)freq);
    m->kernel_wait_ticks = (uint64_t)(m->opts.kernel_wait_seconds * (double)freq);
    m->queues[STACK_WAIT].wait = m->wait_ticks;
    m->queues[KERNEL_WAIT].wait = m->kernel_wait_ticks;
    m->pointer_size = info->pointer_size == 4 ? 4 : 8;
    memset(m->tid_cache_tid, 0xff, sizeof m->tid_cache_tid);
    memset(m->tid_cache_idx, 0xff, sizeof m->tid_cache_idx);
    m->tg_gen = 1; /* no cache entry is valid */
    m->thread_free = m->proc_free = m->sample_free = m->part_free = NONE32;
    int err = m->source == NULL ? PERCH_ENOMEM : 0;
    if (err == 0 && m->sink.trace_info != NULL)
        err = m->sink.trace_info(m->sink.ctx, &m->info);
    if (err < 0) {
        perch_model_destroy(m);
        return err;
    }
    *out = m;
    return 0;
}

static int count_decode_error(perch_model *m, const perch_event *ev, int rc)
{
    char reason[96], err_name[32];
    snprintf(err_name, sizeof err_name, "%s", perch_err_name(rc));
    for (char *p = err_name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    snprintf(reason, sizeof reason, "decode.%s.%s", err_name,
             perch_kind_name(perch_event_kind(ev)));
    return perch__model_extra_add(m, reason, 1);
}

/* perch_kind_of through a small per-model table (it is a table scan). */
static perch_kind kind_of(perch_model *m, uint16_t group, uint8_t opcode)
{
    if (group >= KIND_CACHE_GROUPS)
        return perch_kind_of(group, opcode);
    uint8_t *c = &m->kind_cache[group][opcode];
    if (*c == 0)
        *c = (uint8_t)(perch_kind_of(group, opcode) + 1);
    return (perch_kind)(*c - 1);
}

static void note_time(perch_model *m, uint64_t ts)
{
    if (!m->any_event) {
        m->any_event = true;
        m->first_ts = ts;
        m->last_ts = ts;
        return;
    }
    if (ts < m->last_ts)
        model_count(m, MC_TIME_ORDER, 1);
    else
        m->last_ts = ts;
}

/* What every record does first: counted, its time noted, the pending-sample window moved up
 * to it. 0 or the window's error. */
static int take_record(perch_model *m, uint64_t ts, uint16_t group, uint8_t opcode)
{
    model_count(m, MC_RECORDS, 1);
    m->by_kind[kind_of(m, group, opcode)]++;
    note_time(m, ts);
    return perch__samples_due(m, ts) ? perch__samples_advance(m, ts) : 0;
}

/* The end of a record: the first error is kept and returned from then on. */
static int end_record(perch_model *m, int err)
{
    if (err == 0 && m->error < 0)
        err = m->error;
    if (err < 0)
        m->error = err;
    return err;
}

int perch_model_feed(perch_model *m, const perch_event *ev)
{
    perch_decoded d;
    if (m == NULL || ev == NULL)
        return PERCH_EINVAL;
    if (m->error < 0)
        return m->error;
    if (m->finished)
        return PERCH_ESTATE;
    int err = take_record(m, ev->timestamp, ev->group, ev->opcode);
    int rc = err < 0 ? 0 : perch_decode(ev, &d, NULL);
    if (err == 0 && rc == 0) {
        model_count(m, MC_DECODED, 1);
        if (d.flags & PERCH_DECODED_NEWER_VERSION)
            model_count(m, MC_DECODE_NEWER, 1);
        if (handlers[d.type] != NULL)
            err = handlers[d.type](m, ev, &d);
    } else if (err == 0 && rc == PERCH_EUNKNOWN) {
        model_count(m, MC_DECODE_UNKNOWN, 1);
    } else if (err == 0) {
        model_count(m, MC_DECODE_ERRORS, 1);
        err = count_decode_error(m, ev, rc);
    }
    return end_record(m, err);
}

/* perch_decode of such a record returns PERCH_EUNKNOWN without reading it (its pointer size
 * and payload are sound, and no decoder knows its event): perch_model_feed's path for that. */
int perch__model_feed_counted(perch_model *m, const perch__counted *c)
{
    if (m->error < 0)
        return m->error;
    if (m->finished)
        return PERCH_ESTATE;
    int err = take_record(m, c->timestamp, c->group, c->opcode);
    if (err == 0)
        model_count(m, MC_DECODE_UNKNOWN, 1);
    return end_record(m, err);
}

bool perch_model_reads_payload(const perch_event *ev)
{
    /* perch_decode's checks before its PERCH_EUNKNOWN, which looks at no payload byte */
    if ((ev->pointer_size != 4 && ev->pointer_size != 8) || (!ev->payload && ev->payload_len))
        return true;
    return perch_decode_known(ev);
}

int perch_model_ledger_add(perch_model *m, const char *reason, uint64_t count)
{
    if (m == NULL || reason == NULL)
        return PERCH_EINVAL;
    return perch__model_extra_add(m, reason, count);
}

int perch_model_finish(perch_model *m)
{
    if (m == NULL)
        return PERCH_EINVAL;
    if (m->error < 0)
        return m->error;
    if (m->finished)
        return PERCH_ESTATE;
    m->finished = true;
    int err = perch__samples_finish(m);
    err = err ? err : perch__slices_finish(m);
    err = err ? err : perch__model_entities_finish(m);
    perch__pdb_finish(m);
    err = err ? err : perch_model_emit_counters(m, &m->sink);
    if (err == 0 && m->sink.finish != NULL)
        err = m->sink.finish(m->sink.ctx);
    if (err < 0)
        m->error = err;
    return err;
}

void perch_model_destroy(perch_model *m)
{
    if (m == NULL)
        return;
    perch__samples_free(m);
    perch__intern_free(m);
    perch__model_entities_free(m);
    perch__pdb_finish(m);
    for (uint32_t i = 0; i < m->extra_count; i++)
        perch__free(m->extra[i].name);
    perch__free(m->extra);
    perch__free(m->source);
    perch__free(m->session_config);
    perch__free(m);
}

int perch_model_cpu_totals(const perch_model *m, uint16_t cpu, uint64_t *busy, uint64_t *idle)
{
    if (m == NULL || busy == NULL || idle == NULL)
        return PERCH_EINVAL;
    if (cpu >= m->cpu_cap || !m->cpus[cpu].seen)
        return PERCH_ERANGE;
    *busy = m->cpus[cpu].busy_ticks;
    *idle = m->cpus[cpu].idle_ticks;
    return 0;
}
