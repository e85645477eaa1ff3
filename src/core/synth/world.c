/*
 * Processes and threads of the scenario and the events that describe them: the rundown at
 * the start (Process/Thread/Image DCStart with a DbgID_RSDS per image, the PMC counter names
 * and the profile interval events), compiler.exe bursts that start (Process/Thread Start,
 * Image Load 0x030A) and exit (Image Unload, Process/Thread End) during the trace.
 */
#include <string.h>

#include "synth_internal.h"

#define HOOK_PROCESS_START      0x0301
#define HOOK_PROCESS_END        0x0302
#define HOOK_PROCESS_DCSTART    0x0303
#define HOOK_THREAD_START       0x0501
#define HOOK_THREAD_END         0x0502
#define HOOK_THREAD_DCSTART     0x0503
#define HOOK_IMAGE_LOAD         0x030A
#define HOOK_IMAGE_UNLOAD       0x1402
#define HOOK_IMAGE_DCSTART      0x1403
#define HOOK_PMC_CONFIG         0x0F30
#define HOOK_SET_INTERVAL       0x0F48
#define HOOK_COLLECTION_START   0x0F49
#define RSDS_OPCODE             36
#define PMC_SOURCE_TOTAL_CYCLES 19
#define PMC_INTERVAL            3000000 /* cycles: about 1 ms at 3 GHz */

static const uint8_t rundown_tpls[] = {TPL_IDLE, TPL_SYSTEM, TPL_SVCHOST, TPL_EXPLORER, TPL_GAME};
static const uint32_t rundown_ppid[] = {0, 0, 712, 4876, 5012};

void perch__synth_count(struct synth_sim *s, perch_kind kind)
{
    s->st.by_kind[kind]++;
}

/* Who logs an event: a thread of process pi (its first live thread). */
static const struct synth_thread *actor(const struct synth_sim *s, uint16_t pi)
{
    for (uint32_t i = s->cpus; i < SYNTH_MAX_THREADS; i++)
        if (s->th[i].state != TS_FREE && s->th[i].proc == pi)
            return &s->th[i];
    return &s->th[0];
}

static int alloc_thread(struct synth_sim *s, uint16_t pi, uint8_t role, uint16_t number)
{
    for (uint32_t i = s->cpus; i < SYNTH_MAX_THREADS; i++) {
        struct synth_thread *t = &s->th[i];
        if (t->state != TS_FREE)
            continue;
        uint32_t gen = t->gen;
        memset(t, 0, sizeof *t);
        t->gen = gen + 1;
        t->tid = s->next_tid;
        s->next_tid += 4 + 4 * synth_below(&s->rng, 3);
        t->proc = pi;
        t->role = role;
        t->prio = perch__synth_roles[role].priority;
        t->number = number;
        t->state = TS_WAITING;
        t->since = s->now;
        t->cpu = (uint8_t)synth_below(&s->rng, s->cpus);
        t->chain = (uint8_t)synth_below(&s->rng, 8);
        s->procs[pi].live_threads++;
        return (int)i;
    }
    return -1;
}

static void add_threads(struct synth_sim *s, uint16_t pi)
{
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[s->procs[pi].tpl];
    for (unsigned r = 0; r < tpl->nroles; r++)
        for (unsigned k = 0; k < tpl->roles[r].count; k++)
            alloc_thread(s, pi, tpl->roles[r].role, (uint16_t)k);
}

static void init_proc(struct synth_sim *s, uint16_t pi, uint8_t tpl, uint32_t pid, uint32_t ppid)
{
    struct synth_proc *p = &s->procs[pi];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->ppid = ppid;
    p->tpl = tpl;
    p->alive = 1;
    p->key = 0xFFFFC00D00000080ull + ((uint64_t)pid << 12);
    p->exe_base = 0x00007FF600000000ull + ((synth_hash(s->seed, pid) & 0xFFFF) << 16);
    p->end_at = SYNTH_NEVER;
    p->row = perch__synth_new_row(s, pid, tpl);
}

int perch__synth_world_init(struct synth_sim *s)
{
    perch__synth_functions_init(s);
    s->next_tid = 108;
    s->next_pid = 9100;
    for (uint32_t c = 0; c < s->cpus; c++) {
        struct synth_thread *t = &s->th[c];
        t->role = ROLE_IDLE;
        t->cpu = (uint8_t)c;
        t->state = TS_RUNNING;
        t->proc = 0;
    }
    for (uint16_t i = 0; i < sizeof rundown_tpls; i++) {
        const struct synth_proc_tpl *tpl = &perch__synth_tpls[rundown_tpls[i]];
        init_proc(s, i, rundown_tpls[i], tpl->pid, rundown_ppid[i]);
        add_threads(s, i);
    }
    s->procs[0].live_threads = (uint16_t)s->cpus;
    return 0;
}

/* ---- records -------------------------------------------------------------------------- */

static bool put_process(struct synth_sim *s, uint32_t c, uint16_t hook, uint16_t pi,
                        const struct synth_thread *by)
{
    const struct synth_proc *p = &s->procs[pi];
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_SYSTEM, hook, 4, s->now, by->tid,
                                     s->procs[by->proc].pid, perch__synth_process_len(s, p));
    if (!d)
        return false;
    perch__synth_process_put(d, s, p, 0);
    return true;
}

static bool put_thread(struct synth_sim *s, uint32_t c, uint16_t hook, const struct synth_thread *t,
                       const struct synth_thread *by)
{
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_SYSTEM, hook, 3, s->now, by->tid,
                                     s->procs[by->proc].pid, perch__synth_thread_len(s, t));
    if (!d)
        return false;
    perch__synth_thread_put(d, s, t);
    return true;
}

/* Counts the distinct PDB ids: a module's id is the same in every process. */
static void note_pdb(struct synth_sim *s, const struct synth_module *m)
{
    for (uint64_t i = 0; i < s->st.pdb_ids; i++)
        if (s->pdb_seen[i] == m)
            return;
    if (s->st.pdb_ids < sizeof s->pdb_seen / sizeof s->pdb_seen[0])
        s->pdb_seen[s->st.pdb_ids++] = m;
}

/* An Image event (hook), then for loads and rundown the DbgID_RSDS record of its PDB. */
static void put_image(struct synth_sim *s, uint32_t c, uint16_t hook, int kind,
                      const struct synth_module *m, uint64_t base, uint32_t pid,
                      const struct synth_thread *by)
{
    uint32_t by_pid = s->procs[by->proc].pid;
    uint8_t *d = perch__synth_record(&s->w, c, kind, hook, 3, s->now, by->tid, by_pid,
                                     perch__synth_image_len(m));
    if (!d)
        return;
    perch__synth_image_put(d, m, base, pid);
    if (kind == SYNTH_HDR_PERFINFO)
        synth_u32(d + 24, 0); /* rundown DCStarts carry no TimeDateStamp in real traces */
    perch__synth_count(s, hook == HOOK_IMAGE_UNLOAD ? PERCH_KIND_ImageUnload
                          : hook == HOOK_IMAGE_LOAD ? PERCH_KIND_ImageLoad
                                                    : PERCH_KIND_ImageDCStart);
    if (hook == HOOK_IMAGE_UNLOAD)
        return;
    s->st.images++;
    d = perch__synth_classic(&s->w, c, &perch__synth_rsds_guid, RSDS_OPCODE, 2, s->now, by->tid,
                             by_pid, perch__synth_rsds_len(m));
    if (!d)
        return;
    perch__synth_rsds_put(d, m, m == &s->game_exe ? s->image : NULL, base, pid);
    perch__synth_count(s, PERCH_KIND_NON_KERNEL);
    s->st.rsds_records++;
    note_pdb(s, m);
}

static void put_user_images(struct synth_sim *s, uint32_t c, uint16_t pi, uint16_t hook, int kind,
                            const struct synth_thread *by)
{
    const struct synth_proc *p = &s->procs[pi];
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    for (unsigned i = 0; i < tpl->nmods; i++) {
        const struct synth_module *m = perch__synth_umod(s, tpl->mods[i]);
        put_image(s, c, hook, kind, m, m->base ? m->base : p->exe_base, p->pid, by);
        s->now += 3;
    }
}

static void rundown_process(struct synth_sim *s, uint16_t pi, const struct synth_thread *by)
{
    if (put_process(s, 0, HOOK_PROCESS_DCSTART, pi, by)) {
        perch__synth_count(s, PERCH_KIND_ProcessDCStart);
        s->st.processes++;
    }
    s->now += 2;
    for (uint32_t i = 0; i < SYNTH_MAX_THREADS; i++) {
        const struct synth_thread *t = &s->th[i];
        if ((t->state == TS_FREE && i >= s->cpus) || t->proc != pi)
            continue;
        if (put_thread(s, 0, HOOK_THREAD_DCSTART, t, by)) {
            perch__synth_count(s, PERCH_KIND_ThreadDCStart);
            s->st.threads++;
        }
        s->now += 2;
    }
    put_user_images(s, 0, pi, HOOK_IMAGE_DCSTART, SYNTH_HDR_PERFINFO, by);
}

static void put_interval(struct synth_sim *s, uint16_t hook, uint32_t source, uint32_t interval,
                         const char *name, const struct synth_thread *by)
{
    uint32_t len = 12u + (name ? (uint32_t)synth_utf16_len(name) : 0u);
    uint8_t *d = perch__synth_record(&s->w, 0, SYNTH_HDR_SYSTEM, hook, name ? 3 : 2, s->now,
                                     by->tid, s->procs[by->proc].pid, len);
    if (!d)
        return;
    d = synth_u32(d, source);
    d = synth_u32(d, interval);
    d = synth_u32(d, interval);
    if (name)
        perch__synth_utf16(d, name);
    perch__synth_count(s, PERCH_KIND_OTHER_KERNEL);
    s->now += 2;
}

static void put_pmc_config(struct synth_sim *s)
{
    static const char *const names[] = {"TotalCycles", "InstructionRetired"};
    uint32_t len = 4u + (uint32_t)(synth_utf16_len(names[0]) + synth_utf16_len(names[1]));
    uint8_t *d = perch__synth_record(&s->w, 0, SYNTH_HDR_PERFINFO, HOOK_PMC_CONFIG, 2, s->now,
                                     UINT32_MAX, UINT32_MAX, len);
    if (!d)
        return;
    d = synth_u32(d, 2);
    d = perch__synth_utf16(d, names[0]);
    perch__synth_utf16(d, names[1]);
    perch__synth_count(s, PERCH_KIND_PmcCounterConfig);
    s->now += 2;
}

void perch__synth_rundown(struct synth_sim *s)
{
    const struct synth_thread *logger = actor(s, 1); /* a System thread */
    for (uint16_t i = 0; i < sizeof rundown_tpls; i++)
        rundown_process(s, i, logger);
    for (unsigned k = 0; k < perch__synth_kmod_count; k++) {
        const struct synth_module *m = &perch__synth_kmods[k];
        put_image(s, 0, HOOK_IMAGE_DCSTART, SYNTH_HDR_SYSTEM, m, m->base, 0, logger);
        s->now += 3;
    }
    put_pmc_config(s);
    put_interval(s, HOOK_SET_INTERVAL, 0, 10000, NULL, logger);
    put_interval(s, HOOK_COLLECTION_START, 0, 10000, "Timer", logger);
    put_interval(s, HOOK_COLLECTION_START, PMC_SOURCE_TOTAL_CYCLES, PMC_INTERVAL, "TotalCycles",
                 logger);
}

/* ---- compiler.exe bursts -------------------------------------------------------------- */

static int free_proc_slot(const struct synth_sim *s)
{
    for (int i = (int)sizeof rundown_tpls; i < SYNTH_MAX_PROCS; i++)
        if (!s->procs[i].alive)
            return i;
    return -1;
}

static void start_threads(struct synth_sim *s, uint32_t c, uint16_t pi, uint16_t main_ti,
                          const struct synth_thread *parent)
{
    for (uint32_t i = s->cpus; i < SYNTH_MAX_THREADS; i++) {
        struct synth_thread *t = &s->th[i];
        if (t->state == TS_FREE || t->proc != pi)
            continue;
        if (put_thread(s, c, HOOK_THREAD_START, t, i == main_ti ? parent : &s->th[main_ti])) {
            perch__synth_count(s, PERCH_KIND_ThreadStart);
            s->st.threads++;
            s->st.threads_started++;
        }
        s->now += 5;
        if (i == main_ti)
            put_user_images(s, c, pi, HOOK_IMAGE_LOAD, SYNTH_HDR_SYSTEM, t);
        perch__synth_wake_at(s, (uint16_t)i,
                             s->now + (i == main_ti ? 200 : 20000 + synth_below(&s->rng, 180000)));
    }
}

void perch__synth_start_burst(struct synth_sim *s)
{
    int pi = free_proc_slot(s);
    uint32_t c = synth_below(&s->rng, s->cpus);
    const struct synth_thread *parent = actor(s, 3); /* explorer.exe */
    s->next_burst = s->now + 10000000;
    if (pi < 0)
        return;
    init_proc(s, (uint16_t)pi, TPL_COMPILER, s->next_pid, s->procs[3].pid);
    s->next_pid += 4 * (1 + synth_below(&s->rng, 10));
    add_threads(s, (uint16_t)pi);
    int main_ti = (int)(actor(s, (uint16_t)pi) - s->th);
    if (put_process(s, c, HOOK_PROCESS_START, (uint16_t)pi, parent)) {
        perch__synth_count(s, PERCH_KIND_ProcessStart);
        s->st.processes++;
        s->st.processes_started++;
    }
    s->now += 5;
    start_threads(s, c, (uint16_t)pi, (uint16_t)main_ti, parent);
    s->procs[pi].end_at = s->now + 2000000 + synth_below(&s->rng, 7000000);
    s->next_burst = s->procs[pi].end_at + 1000000 + synth_below(&s->rng, 5000000);
    s->burst_proc = pi;
    s->bursts++;
}

void perch__synth_end_process(struct synth_sim *s, uint16_t pi)
{
    s->procs[pi].end_at = SYNTH_NEVER;
    s->burst_proc = -1;
    for (uint32_t i = s->cpus; i < SYNTH_MAX_THREADS; i++) {
        struct synth_thread *t = &s->th[i];
        if (t->state == TS_FREE || t->proc != pi)
            continue;
        t->exiting = 1;
        if (t->state == TS_WAITING)
            perch__synth_wake_at(s, (uint16_t)i, s->now + 10 + synth_below(&s->rng, 500));
    }
}

void perch__synth_thread_exit(struct synth_sim *s, uint32_t c, uint16_t ti)
{
    struct synth_thread *t = &s->th[ti];
    struct synth_proc *p = &s->procs[t->proc];
    if (p->live_threads == 1) {
        put_user_images(s, c, t->proc, HOOK_IMAGE_UNLOAD, SYNTH_HDR_SYSTEM, t);
        if (put_process(s, c, HOOK_PROCESS_END, t->proc, t)) {
            perch__synth_count(s, PERCH_KIND_ProcessEnd);
            s->st.processes_ended++;
        }
        p->alive = 0;
        if (p->row != UINT32_MAX)
            s->rows[p->row].ended = 1;
    }
    p->live_threads--;
    if (put_thread(s, c, HOOK_THREAD_END, t, t)) {
        perch__synth_count(s, PERCH_KIND_ThreadEnd);
        s->st.threads_ended++;
    }
    t->npend = 0; /* user parts that never come: those samples stay kernel-only */
}
