/*
 * The scheduler simulation and the event loop. Each CPU runs one thread at a time (its idle
 * thread, tid 0, when nothing is ready); threads run for a while, then block (wait reason of
 * their role) or are preempted; a woken thread is readied (ReadyThread, logged before it is
 * switched in) and placed on an idle CPU, on a CPU running a lower-priority thread, or in the
 * ready queue. Every switch is a CSwitch v4 carrying two PMC counter values (cycles and
 * instructions retired, increasing per CPU). Timer ticks every 1 ms per CPU give samples;
 * a second per-CPU timer gives PMC overflow samples. Events are processed in time order, so
 * each CPU buffer is time-ordered; per-CPU timestamps are never lowered (etl_writer.c).
 */
#include "synth_internal.h"

#define HOOK_CSWITCH     0x0524
#define HOOK_READY       0x0532
#define CSWITCH_VERSION  (4u | (2u << 8)) /* v4, 2 PMC counters ride in the header */
#define TICK             10000u           /* 1 ms at 10 MHz */
#define STATE_READY      1
#define STATE_TERMINATED 4
#define STATE_WAITING    5
#define WR_TERMINATED    22
#define WR_QUANTUM_END   30
#define WR_PREEMPTED     32

enum what {
    EV_NONE,
    EV_TICK,
    EV_PMC,
    EV_SWITCH,
    EV_SLICE,
    EV_RETURN,
    EV_WAKE,
    EV_BURST,
    EV_PROC_END
};

/* ---- wake heap ------------------------------------------------------------------------ */

static bool wake_less(const struct synth_wake *a, const struct synth_wake *b)
{
    return a->at < b->at || (a->at == b->at && a->thread < b->thread);
}

static void heap_up(struct synth_sim *s, uint32_t i)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!wake_less(&s->heap[i], &s->heap[parent]))
            break;
        struct synth_wake tmp = s->heap[i];
        s->heap[i] = s->heap[parent];
        s->heap[parent] = tmp;
        i = parent;
    }
}

static void heap_down(struct synth_sim *s, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && wake_less(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->nheap && wake_less(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            return;
        struct synth_wake tmp = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = tmp;
        i = m;
    }
}

static bool wake_valid(const struct synth_sim *s, const struct synth_wake *e)
{
    const struct synth_thread *t = &s->th[e->thread];
    return t->gen == e->gen && t->state == TS_WAITING;
}

/* Drops stale entries (threads woken early or gone) and rebuilds the heap. */
static void heap_compact(struct synth_sim *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nheap; i++)
        if (wake_valid(s, &s->heap[i]))
            s->heap[n++] = s->heap[i];
    s->nheap = n;
    for (uint32_t i = n / 2 + 1; i-- > 0;)
        heap_down(s, i);
}

void perch__synth_wake_at(struct synth_sim *s, uint16_t ti, uint64_t at)
{
    struct synth_thread *t = &s->th[ti];
    if (s->nheap == sizeof s->heap / sizeof s->heap[0])
        heap_compact(s);
    t->gen++;
    t->state = TS_WAITING;
    s->heap[s->nheap] = (struct synth_wake){at, ti, t->gen};
    heap_up(s, s->nheap++);
}

static void heap_pop(struct synth_sim *s)
{
    s->heap[0] = s->heap[--s->nheap];
    heap_down(s, 0);
}

/* ---- switching ------------------------------------------------------------------------ */

static bool is_idle(const struct synth_sim *s, uint16_t ti)
{
    return ti < s->cpus;
}

static void advance_counters(struct synth_sim *s, struct synth_cpu *cpu,
                             const struct synth_thread *o)
{
    uint64_t delta = s->now > cpu->pmc_last ? s->now - cpu->pmc_last : 0;
    uint64_t cycles, instr;
    cpu->pmc_last = s->now;
    if (o->role == ROLE_IDLE) {
        cycles = delta / 4 + 1;
        instr = cycles / 2 + 1;
    } else {
        cycles = delta * 300 + synth_below(&s->rng, 1000) + 1; /* 3 GHz vs the 10 MHz clock */
        instr = cycles * perch__synth_roles[o->role].ipc_x100 / 100 + 1;
    }
    cpu->pmc_cycles += cycles;
    cpu->pmc_instr += instr;
}

static void put_cswitch(struct synth_sim *s, uint32_t c, const struct synth_thread *n,
                        const struct synth_thread *o, uint8_t state, uint8_t reason)
{
    struct synth_cpu *cpu = &s->cpu[c];
    uint64_t ts = s->now;
    if (n->role != ROLE_IDLE && n->ready_ts >= ts)
        ts = n->ready_ts + 1; /* readied strictly before it is switched in */
    advance_counters(s, cpu, o);
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_PERFINFO, HOOK_CSWITCH, CSWITCH_VERSION,
                                     ts, UINT32_MAX, UINT32_MAX, 24);
    if (!d)
        return;
    d = synth_u64(d, cpu->pmc_cycles);
    d = synth_u64(d, cpu->pmc_instr);
    d = synth_u32(d, n->tid);
    d = synth_u32(d, o->tid);
    d = synth_u8(d, n->prio);
    d = synth_u8(d, o->prio);
    d = synth_u8(d, o->role == ROLE_IDLE ? 1 : 0); /* PreviousCState */
    d = synth_u8(d, 0);                            /* SpareByte */
    d = synth_u8(d, reason);                       /* OldThreadWaitReason */
    d = synth_u8(d, 0);                            /* ThreadFlags (v4) */
    d = synth_u8(d, state);                        /* OldThreadState */
    d = synth_u8(d, o->cpu);                       /* OldThreadWaitIdealProcessor */
    uint64_t waited = n->role == ROLE_IDLE || s->now < n->since ? 0 : s->now - n->since;
    d = synth_u32(d, (uint32_t)(waited / TICK)); /* NewThreadWaitTime (ms) */
    synth_u32(d, 0);                             /* Reserved */
    perch__synth_count(s, PERCH_KIND_CSwitch);
    s->st.cswitches++;
    if (cpu->switched) {
        s->st.slices++;
        s->st.idle_slices += o->role == ROLE_IDLE;
    }
    cpu->switched = true;
}

static void switch_to(struct synth_sim *s, uint32_t c, uint16_t ni, uint8_t state, uint8_t reason)
{
    struct synth_cpu *cpu = &s->cpu[c];
    struct synth_thread *n = &s->th[ni];
    const struct synth_role *r = &perch__synth_roles[n->role];
    put_cswitch(s, c, n, &s->th[cpu->cur], state, reason);
    cpu->cur = ni;
    n->state = TS_RUNNING;
    n->cpu = (uint8_t)c;
    cpu->slice_end = is_idle(s, ni) ? SYNTH_NEVER : s->now + perch__synth_exp(&s->rng, r->run_mean);
    if (n->exiting)
        cpu->slice_end = s->now + 50 + synth_below(&s->rng, 500);
    n->kernel_until = n->npend ? s->now + 100 + synth_below(&s->rng, 2000) : 0;
    if (r->kernel_only)
        n->kchain = (uint8_t)synth_below(&s->rng, 6);
}

/* Priority in the ready queue: +1 per 2 ms of waiting, so nothing starves for long (a
 * stand-in for the balance-set manager's boosts). */
static uint32_t queued_priority(const struct synth_sim *s, uint16_t ti)
{
    const struct synth_thread *t = &s->th[ti];
    return t->prio + (uint32_t)((s->now - t->queued_at) / 20000u);
}

static uint16_t pick_ready(struct synth_sim *s, uint32_t c)
{
    uint32_t best = 0, best_prio;
    if (s->nready == 0)
        return (uint16_t)c; /* the CPU's idle thread */
    best_prio = queued_priority(s, s->readyq[0]);
    for (uint32_t i = 1; i < s->nready; i++) {
        uint32_t prio = queued_priority(s, s->readyq[i]);
        if (prio > best_prio) {
            best = i;
            best_prio = prio;
        }
    }
    uint16_t ti = s->readyq[best];
    for (uint32_t i = best + 1; i < s->nready; i++)
        s->readyq[i - 1] = s->readyq[i];
    s->nready--;
    return ti;
}

static void enqueue(struct synth_sim *s, uint16_t ti)
{
    s->th[ti].state = TS_READY;
    s->th[ti].queued_at = s->now;
    s->readyq[s->nready++] = ti;
}

/* Who runs next on c: the thread already on its way in, else the ready queue, else idle. */
static uint16_t next_on(struct synth_sim *s, uint32_t c)
{
    uint16_t ti = s->cpu[c].incoming;
    if (ti != SYNTH_NONE) {
        s->cpu[c].incoming = SYNTH_NONE;
        return ti;
    }
    return pick_ready(s, c);
}

static void slice_end(struct synth_sim *s, uint32_t c)
{
    struct synth_cpu *cpu = &s->cpu[c];
    uint16_t ti = cpu->cur;
    struct synth_thread *t = &s->th[ti];
    const struct synth_role *r = &perch__synth_roles[t->role];
    if (t->exiting) {
        perch__synth_thread_exit(s, c, ti);
        switch_to(s, c, next_on(s, c), STATE_TERMINATED, WR_TERMINATED);
        t->state = TS_FREE;
        return;
    }
    if (!synth_chance(&s->rng, 70)) { /* quantum end */
        if (s->nready == 0 && cpu->incoming == SYNTH_NONE) {
            cpu->slice_end = s->now + perch__synth_exp(&s->rng, r->run_mean);
            return;
        }
        uint16_t ni = next_on(s, c);
        t->since = s->now;
        enqueue(s, ti);
        switch_to(s, c, ni, STATE_READY, WR_QUANTUM_END);
        return;
    }
    uint64_t wake = s->now + perch__synth_exp(&s->rng, r->wait_mean);
    t->since = s->now;
    switch_to(s, c, next_on(s, c), STATE_WAITING, r->wait_reason);
    if (wake < s->w.cpu[c].last_ts + 10)
        wake = s->w.cpu[c].last_ts + 10; /* readied after its switch-out, whatever the clamps */
    perch__synth_wake_at(s, ti, wake);
}

static void incoming_switch(struct synth_sim *s, uint32_t c)
{
    struct synth_cpu *cpu = &s->cpu[c];
    uint16_t oi = cpu->cur, ni = cpu->incoming;
    cpu->incoming = SYNTH_NONE;
    if (is_idle(s, oi)) {
        switch_to(s, c, ni, STATE_READY, 0);
        return;
    }
    s->th[oi].since = s->now;
    enqueue(s, oi);
    switch_to(s, c, ni, STATE_READY, WR_PREEMPTED);
}

/* ---- readying ------------------------------------------------------------------------- */

static int find_cpu(const struct synth_sim *s, const struct synth_thread *t)
{
    int best = -1;
    if (is_idle(s, s->cpu[t->cpu].cur) && s->cpu[t->cpu].incoming == SYNTH_NONE)
        return t->cpu;
    for (uint32_t c = 0; c < s->cpus; c++)
        if (is_idle(s, s->cpu[c].cur) && s->cpu[c].incoming == SYNTH_NONE)
            return (int)c;
    for (uint32_t c = 0; c < s->cpus; c++) {
        const struct synth_cpu *cpu = &s->cpu[c];
        if (cpu->incoming != SYNTH_NONE || s->th[cpu->cur].prio >= t->prio)
            continue;
        if (best < 0 || s->th[cpu->cur].prio < s->th[s->cpu[best].cur].prio)
            best = (int)c;
    }
    return best;
}

static void ready_thread(struct synth_sim *s, uint16_t ti)
{
    struct synth_thread *t = &s->th[ti];
    uint32_t rc = synth_chance(&s->rng, 50) ? t->cpu : synth_below(&s->rng, s->cpus);
    uint8_t *d = perch__synth_record(&s->w, rc, SYNTH_HDR_PERFINFO, HOOK_READY, 2, s->now,
                                     UINT32_MAX, UINT32_MAX, 8);
    if (!d)
        return;
    d = synth_u32(d, t->tid);
    d = synth_u8(d, 1);                                   /* AdjustReason: Unwait */
    d = synth_u8(d, (uint8_t)synth_below(&s->rng, 3));    /* AdjustIncrement */
    d = synth_u8(d, synth_chance(&s->rng, 30) ? 0x1 : 0); /* Flag: readied from a DPC */
    synth_u8(d, 0);
    perch__synth_count(s, PERCH_KIND_ReadyThread);
    t->ready_ts = s->w.cpu[rc].last_ts;
    int c = find_cpu(s, t);
    if (c < 0) {
        enqueue(s, ti);
        return;
    }
    bool idle = is_idle(s, s->cpu[c].cur);
    t->state = TS_STANDBY;
    s->cpu[c].incoming = ti;
    s->dirty |= 1ull << c;
    s->cpu[c].switch_at =
        s->now + (idle ? 50 + synth_below(&s->rng, 350) : 10 + synth_below(&s->rng, 40));
}

/* ---- the loop ------------------------------------------------------------------------- */

static void consider(uint64_t t, enum what w, uint32_t c, uint64_t *best, enum what *bw,
                     uint32_t *bc)
{
    if (t < *best) {
        *best = t;
        *bw = w;
        *bc = c;
    }
}

static void cpu_next(struct synth_sim *s, uint32_t c)
{
    const struct synth_cpu *k = &s->cpu[c];
    const struct synth_thread *t = &s->th[k->cur];
    uint64_t best = SYNTH_NEVER;
    enum what w = EV_NONE;
    uint32_t unused;
    consider(k->next_tick, EV_TICK, c, &best, &w, &unused);
    consider(k->next_pmc, EV_PMC, c, &best, &w, &unused);
    consider(k->slice_end, EV_SLICE, c, &best, &w, &unused);
    if (k->incoming != SYNTH_NONE)
        consider(k->switch_at, EV_SWITCH, c, &best, &w, &unused);
    if (t->npend && t->kernel_until)
        consider(t->kernel_until, EV_RETURN, c, &best, &w, &unused);
    s->cpu_next[c] = best;
    s->cpu_what[c] = (uint8_t)w;
}

/* The earliest pending event. Only CPUs marked dirty since the last call are re-examined. */
static uint64_t next_event(struct synth_sim *s, enum what *w, uint32_t *cpu)
{
    uint64_t best = SYNTH_NEVER;
    *w = EV_NONE;
    *cpu = 0;
    for (uint32_t c = 0; s->dirty; c++, s->dirty >>= 1)
        if (s->dirty & 1)
            cpu_next(s, c);
    for (uint32_t c = 0; c < s->cpus; c++) { /* branch-free: the winner is unpredictable */
        uint64_t t = s->cpu_next[c];
        bool lt = t < best;
        best = lt ? t : best;
        *cpu = lt ? c : *cpu;
    }
    if (best != SYNTH_NEVER)
        *w = (enum what)s->cpu_what[*cpu];
    if (s->nheap)
        consider(s->heap[0].at, EV_WAKE, 0, &best, w, cpu);
    consider(s->next_burst, EV_BURST, 0, &best, w, cpu);
    if (s->burst_proc >= 0)
        consider(s->procs[s->burst_proc].end_at, EV_PROC_END, 0, &best, w, cpu);
    return best;
}

static void wake_next(struct synth_sim *s)
{
    struct synth_wake e = s->heap[0];
    heap_pop(s);
    if (wake_valid(s, &e))
        ready_thread(s, e.thread);
}

static void step(struct synth_sim *s, enum what w, uint32_t c)
{
    struct synth_cpu *k = &s->cpu[c];
    if (w <= EV_RETURN)
        s->dirty |= 1ull << c;
    switch (w) {
    case EV_TICK:
        perch__synth_timer_sample(s, c);
        k->next_tick += TICK - 10 + synth_below(&s->rng, 21);
        break;
    case EV_PMC:
        perch__synth_pmc_sample(s, c);
        k->next_pmc += TICK - TICK / 5 + synth_below(&s->rng, 2 * TICK / 5);
        break;
    case EV_SLICE:
        slice_end(s, c);
        break;
    case EV_SWITCH:
        incoming_switch(s, c);
        break;
    case EV_RETURN:
        perch__synth_return_to_user(s, c);
        break;
    case EV_WAKE:
        wake_next(s);
        break;
    case EV_BURST:
        perch__synth_start_burst(s);
        break;
    case EV_PROC_END:
        perch__synth_end_process(s, (uint16_t)s->burst_proc);
        break;
    case EV_NONE:
        break;
    }
}

void perch__synth_run(struct synth_sim *s)
{
    while (!s->w.stopped && !s->w.err) {
        enum what w;
        uint32_t c;
        uint64_t t = next_event(s, &w, &c);
        if (w == EV_NONE || t >= s->stop_at)
            break;
        if (t > s->now)
            s->now = t;
        step(s, w, c);
    }
}

void perch__synth_sched_start(struct synth_sim *s)
{
    uint32_t busy = 0;
    for (uint32_t c = 0; c < s->cpus; c++) {
        struct synth_cpu *k = &s->cpu[c];
        k->cur = (uint16_t)c;
        k->incoming = SYNTH_NONE;
        k->slice_end = SYNTH_NEVER;
        k->next_tick = s->now + c * (TICK / s->cpus) + synth_below(&s->rng, 50);
        k->next_pmc = s->now + synth_below(&s->rng, TICK);
        k->pmc_cycles = 1000000000000ull + synth_next(&s->rng) % 1000000000000ull;
        k->pmc_instr = k->pmc_cycles / 2;
        k->pmc_last = s->now;
    }
    for (uint32_t i = s->cpus; i < SYNTH_MAX_THREADS; i++) {
        struct synth_thread *t = &s->th[i];
        const struct synth_role *r = &perch__synth_roles[t->role];
        if (t->state == TS_FREE)
            continue;
        if (s->procs[t->proc].tpl == TPL_GAME && busy < (s->cpus + 1) / 2) {
            struct synth_cpu *k = &s->cpu[busy++];
            k->cur = (uint16_t)i;
            k->slice_end = s->now + perch__synth_exp(&s->rng, r->run_mean);
            t->state = TS_RUNNING;
            t->cpu = (uint8_t)(busy - 1);
            continue;
        }
        perch__synth_wake_at(s, (uint16_t)i, s->now + 1 + synth_below(&s->rng, r->wait_mean));
    }
    s->dirty = s->cpus >= 64 ? UINT64_MAX : (1ull << s->cpus) - 1;
    s->burst_proc = -1;
    s->next_burst = s->now + 500000 + synth_below(&s->rng, 2500000);
}
