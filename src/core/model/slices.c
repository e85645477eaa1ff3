/*
 * Per-thread CPU slices from CSwitch and ReadyThread. One CSwitch on a CPU is a switch-out of
 * OldThreadId and a switch-in of NewThreadId; a slice is [switch-in, switch-out) of one thread
 * on one CPU. The first switch seen on a CPU closes an open-start slice of the outgoing thread
 * (it was switched in before the trace); a switch-out of a thread other than the one running
 * closes the running slice as stale (counted); slices still open at the end close at the last
 * timestamp (open-end). Busy and idle totals per CPU and CPU time per thread and process are
 * added exactly when a slice is emitted, so they always equal the sum of the slices.
 */
#include <string.h>

#include "model/model_internal.h"
#include "perch/error.h"

static void add_ticks(perch_model *m, cpu_state *c, uint64_t ticks)
{
    if (c->tid == 0) {
        c->idle_ticks += ticks;
        return;
    }
    c->busy_ticks += ticks;
    if (c->thread < m->thread_count && m->threads[c->thread].key == c->thread_key) {
        ent_thread *t = &m->threads[c->thread];
        t->cpu_ticks += ticks;
        if (t->process_key != 0 && t->proc < m->proc_count &&
            m->procs[t->proc].rec.key == t->process_key)
            m->procs[t->proc].cpu_ticks += ticks;
    }
}

/* Closes c's open slice at ts. cs is the switch that ends it, or NULL (stale, trace end). */
static int close_slice(perch_model *m, uint16_t cpu, cpu_state *c, uint64_t ts, uint16_t flags,
                       const perch_decoded *d)
{
    perch_slice_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.thread_key = c->thread_key;
    rec.tid = c->tid;
    rec.cpu = cpu;
    rec.flags = (uint16_t)(c->flags | flags);
    rec.start_ts = c->start_ts;
    rec.end_ts = ts < c->start_ts ? c->start_ts : ts;
    rec.ready_ts = c->ready_ts;
    rec.priority = c->priority;
    rec.wait_reason = d ? d->cswitch.old_thread_wait_reason : -1;
    rec.wait_mode = d ? d->cswitch.old_thread_wait_mode : -1;
    rec.state = d ? d->cswitch.old_thread_state : -1;
    if (d != NULL && d->pmc_count > 0 && d->pmc_count == c->pmc_count) {
        rec.pmc_count = d->pmc_count;
        for (unsigned i = 0; i < d->pmc_count && i < PERCH_MAX_PMC; i++)
            rec.pmc_delta[i] = d->pmc[i] - c->pmc[i];
    }
    c->running = false;
    add_ticks(m, c, rec.end_ts - rec.start_ts);
    model_count(m, MC_SLICES, 1);
    if (rec.flags & PERCH_SLICE_OPEN_START)
        model_count(m, MC_SLICE_OPEN_START, 1);
    if (rec.flags & PERCH_SLICE_OPEN_END)
        model_count(m, MC_SLICE_OPEN_END, 1);
    return m->sink.slice != NULL ? m->sink.slice(m->sink.ctx, &rec) : 0;
}

static int open_slice(perch_model *m, uint16_t cpu, uint32_t tid, uint64_t ts, int8_t prio,
                      uint16_t flags, const perch_decoded *d)
{
    uint32_t ti = perch__thread_for(m, tid, cpu);
    cpu_state *c = perch__cpu(m, cpu); /* thread_for may have grown the CPU array */
    if (ti == NONE32 || c == NULL)
        return m->error < 0 ? m->error : PERCH_ENOMEM;
    ent_thread *t = &m->threads[ti];
    c->running = true;
    c->tid = tid;
    c->thread = ti;
    c->thread_key = t->key;
    c->start_ts = ts;
    c->priority = prio;
    c->flags = flags;
    c->ready_ts = 0;
    /* A ReadyThread later than this switch-in (out-of-order input) waits for the next one. */
    if (t->has_ready && (flags & PERCH_SLICE_OPEN_START) == 0 && t->ready_ts <= ts) {
        c->ready_ts = t->ready_ts;
        c->flags |= PERCH_SLICE_HAS_READY;
        t->has_ready = false;
    }
    c->pmc_count = d != NULL ? d->pmc_count : 0;
    if (c->pmc_count > PERCH_MAX_PMC)
        c->pmc_count = PERCH_MAX_PMC;
    for (unsigned i = 0; i < c->pmc_count; i++)
        c->pmc[i] = d->pmc[i];
    return 0;
}

int perch__cswitch(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    const perch_cswitch *cs = &d->cswitch;
    cpu_state *c = perch__cpu(m, ev->cpu);
    int err = 0;
    if (c == NULL)
        return m->error;
    if (!c->seen) {
        c->seen = true;
        err = open_slice(m, ev->cpu, cs->old_thread_id, m->first_ts, cs->old_thread_priority,
                         PERCH_SLICE_OPEN_START, NULL);
        c = &m->cpus[ev->cpu];
    }
    if (err == 0 && c->running && c->tid == cs->old_thread_id) {
        err = close_slice(m, ev->cpu, c, ev->timestamp, 0, d);
    } else if (err == 0 && c->running) {
        model_count(m, MC_CSWITCH_STALE, 1);
        err = close_slice(m, ev->cpu, c, ev->timestamp, PERCH_SLICE_STALE, NULL);
    }
    if (err == 0)
        err = open_slice(m, ev->cpu, cs->new_thread_id, ev->timestamp, cs->new_thread_priority,
                         0, d);
    return err;
}

int perch__ready_thread(perch_model *m, const perch_event *ev, const perch_decoded *d)
{
    uint32_t ti = perch__thread_for(m, d->ready_thread.thread_id, ev->cpu);
    if (ti == NONE32)
        return m->error;
    m->threads[ti].ready_ts = ev->timestamp;
    m->threads[ti].has_ready = true;
    return 0;
}

int perch__slices_finish(perch_model *m)
{
    int err = 0;
    for (uint32_t i = 0; i < m->cpu_cap && err == 0; i++) {
        cpu_state *c = &m->cpus[i];
        if (c->running)
            err = close_slice(m, (uint16_t)i, c, m->last_ts, PERCH_SLICE_OPEN_END, NULL);
        model_count(m, MC_CPU_BUSY_TICKS, c->busy_ticks);
        model_count(m, MC_CPU_IDLE_TICKS, c->idle_ticks);
    }
    return err;
}
