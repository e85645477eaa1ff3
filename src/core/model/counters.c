/*
 * The model's ledger and statistics: fixed counters (MODEL_COUNTER_MAP), per-kind record
 * counts, and named extra ledger reasons (decode errors by reason, a producer's losses). At
 * finish they are emitted as perch_ledger_rec / perch_stat_rec, ledger first, non-zero
 * ledger entries only, every statistic; perch_model_emit_counters gives the same records to
 * another sink at any time (the live engine's late sinks).
 */
#include <stdio.h>
#include <string.h>

#include "model/mem.h"
#include "model/model_internal.h"
#include "perch/error.h"
#include "perch/kind.h"
#include "perch/utf16.h"

#define MAX_EXTRA 256u

static const struct {
    const char *name;
    bool ledger;
} counter_info[MC_COUNT] = {
#define MODEL_COUNTER_INFO(name, text, ledger) {text, ledger},
    MODEL_COUNTER_MAP(MODEL_COUNTER_INFO)
#undef MODEL_COUNTER_INFO
};

char *perch__strdup_n(const char *s, size_t n)
{
    if (n > MAX_NAME_BYTES)
        n = MAX_NAME_BYTES;
    char *p = perch__alloc(n + 1);
    if (p == NULL)
        return NULL;
    if (n > 0)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *perch__utf16_dup(const perch_wstr *w)
{
    size_t n = perch_utf16le_utf8_len(w->data, w->data ? w->len : 0);
    if (n > MAX_NAME_BYTES)
        n = MAX_NAME_BYTES;
    char *p = perch__alloc(n + 1);
    if (p == NULL)
        return NULL;
    n = perch_utf16le_to_utf8(w->data, w->data ? w->len : 0, p, n);
    p[n] = '\0';
    return p;
}

int perch__model_extra_add(perch_model *m, const char *reason, uint64_t count)
{
    for (uint32_t i = 0; i < m->extra_count; i++) {
        if (strcmp(m->extra[i].name, reason) == 0) {
            m->extra[i].count += count;
            return 0;
        }
    }
    int err = perch__grow_array((void **)&m->extra, sizeof *m->extra, &m->extra_cap,
                          m->extra_count + 1, MAX_EXTRA);
    if (err < 0)
        return err;
    char *name = perch__strdup_n(reason, strlen(reason));
    if (name == NULL)
        return PERCH_ENOMEM;
    m->extra[m->extra_count].name = name;
    m->extra[m->extra_count].count = count;
    m->extra_count++;
    return 0;
}

static int emit_ledger(const perch_sink *to, const char *reason, uint64_t count)
{
    perch_ledger_rec rec = {reason, count};
    if (count == 0 || to->ledger == NULL)
        return 0;
    return to->ledger(to->ctx, &rec);
}

static int emit_stat(const perch_sink *to, const char *name, uint64_t value)
{
    perch_stat_rec rec = {name, value};
    if (to->stat == NULL)
        return 0;
    return to->stat(to->ctx, &rec);
}

/* The profile source 0 is the timer (ProfileTime). SetInterval, CollectionStart and
 * CollectionEnd all carry the interval in effect afterwards; the last one wins. */
int perch__profile_interval(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    (void)ev;
    if (d->profile_interval.source == 0 && d->profile_interval.new_interval != 0)
        m->timer_interval = d->profile_interval.new_interval;
    return 0;
}

int perch_model_emit_counters(const perch_model *m, const perch_sink *to)
{
    int err = 0;
    if (m == NULL || to == NULL)
        return PERCH_EINVAL;
    err = err ? err : emit_ledger(to, "trace.events_lost", m->info.events_lost);
    err = err ? err : emit_ledger(to, "trace.buffers_lost", m->info.buffers_lost);
    for (uint32_t i = 0; i < MC_COUNT && err == 0; i++)
        if (counter_info[i].ledger)
            err = emit_ledger(to, counter_info[i].name, m->counters[i]);
    for (uint32_t i = 0; i < m->extra_count && err == 0; i++)
        err = emit_ledger(to, m->extra[i].name, m->extra[i].count);
    for (uint32_t i = 0; i < MC_COUNT && err == 0; i++)
        if (!counter_info[i].ledger)
            err = emit_stat(to, counter_info[i].name, m->counters[i]);
    for (uint32_t k = 0; k < PERCH_KIND_COUNT && err == 0; k++) {
        char name[64];
        snprintf(name, sizeof name, "kind.%s", perch_kind_name((perch_kind)k));
        err = emit_stat(to, name, m->by_kind[k]);
    }
    if (err == 0 && m->timer_interval != 0)
        err = emit_stat(to, "profile.timer_interval_100ns", m->timer_interval);
    return err;
}
