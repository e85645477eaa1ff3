/*
 * Samples and their stacks. Call chains are not stored: a chain is rebuilt on demand from a
 * hash of (seed, process template, role, chain number), so the same activity yields the same
 * frames every time (stacks aggregate as in a real profile) while memory stays flat.
 *
 * A timer sample (SampledProfile v2) of a thread in user mode gets one StackWalk with user
 * frames. In kernel mode it gets a StackWalk with kernel frames right away; for a user thread
 * the user part is remembered (timestamp + chain) and logged as a second StackWalk, same
 * EventTimeStamp, when the thread returns to user mode (perch__synth_return_to_user). Some
 * user-mode samples also get an LBR record with the same timestamp.
 */
#include "synth_internal.h"

#define MAX_FRAMES              64
#define HOOK_SAMPLE             0x0F2E
#define HOOK_PMC                0x0F2F
#define HOOK_STACK              0x1820
#define HOOK_LBR                0x0C20
#define LBR_ENTRIES             16
#define PMC_SOURCE_TOTAL_CYCLES 19
#define USER_CHAINS             8
#define KERNEL_CHAINS           6

enum kctx { KCTX_SYSCALL, KCTX_SYSTEM, KCTX_IDLE };
enum { KM_NT, KM_HAL, KM_INTELPPM };

static uint32_t fn_offset(uint64_t module_key, uint32_t fn, uint32_t size)
{
    uint64_t slots = (size - 0x2000u) / 16u;
    return (uint32_t)(0x1000u + (synth_hash(module_key, fn) % slots) * 16u);
}

const struct synth_module *perch__synth_umod(const struct synth_sim *s, unsigned u)
{
    return s->image && u == SYNTH_UMOD_GAME_EXE ? &s->game_exe : &perch__synth_umods[u];
}

/* The image standing in for the game's executable: its catalog entry and function starts. */
static void image_init(struct synth_sim *s)
{
    const perch_synth_image *im = s->image;
    const char *base = im->path;
    for (const char *p = im->path; *p; p++)
        if (*p == '\\' || *p == '/')
            base = p + 1;
    s->game_exe = (struct synth_module){
        base, im->path,          im->pdb_name && im->pdb_name[0] ? im->pdb_name : base,
        0,    im->size_of_image, im->time_date_stamp};
    for (uint32_t f = 0; f < SYNTH_FNS; f++)
        s->fn_offset[1][SYNTH_UMOD_GAME_EXE][f] = im->function_rva[f % im->function_count];
}

/* Where each module's functions start: fixed for a module, whatever the seed. */
void perch__synth_functions_init(struct synth_sim *s)
{
    for (uint32_t m = 0; m < perch__synth_kmod_count; m++)
        for (uint32_t f = 0; f < SYNTH_FNS; f++)
            s->fn_offset[0][m][f] = fn_offset(0x4B000 + m, f, perch__synth_kmods[m].size);
    for (uint32_t u = 0; u < SYNTH_UMOD_COUNT; u++)
        for (uint32_t f = 0; f < SYNTH_FNS; f++)
            s->fn_offset[1][u][f] = fn_offset(0x55000 + u, f, perch__synth_umods[u].size);
    if (s->image)
        image_init(s);
}

/* An address site bytes into function fn of the image: kept inside the function. */
static uint64_t image_frame(const struct synth_sim *s, uint64_t base, uint32_t fn, uint32_t site)
{
    uint32_t k = fn % s->image->function_count;
    return base + s->image->function_rva[k] + site % s->image->function_size[k];
}

/* The IP of a sample moved by jitter bytes inside its leaf function (in the image: inside the
 * image function that holds it). */
static uint64_t jitter_ip(const struct synth_sim *s, const struct synth_thread *t, uint64_t ip,
                          uint32_t jitter)
{
    const struct synth_proc *p = &s->procs[t->proc];
    const perch_synth_image *im = s->image;
    if (im == NULL || ip < p->exe_base || ip - p->exe_base >= im->size_of_image ||
        perch__synth_tpls[p->tpl].exe != SYNTH_UMOD_GAME_EXE)
        return ip + jitter;
    uint32_t rva = (uint32_t)(ip - p->exe_base);
    for (uint32_t k = 0; k < im->function_count; k++)
        if (rva >= im->function_rva[k] && rva - im->function_rva[k] < im->function_size[k])
            return p->exe_base + im->function_rva[k] +
                   (rva - im->function_rva[k] + jitter) % im->function_size[k];
    return ip;
}

static uint64_t kframe(const struct synth_sim *s, uint32_t m, uint32_t fn, uint32_t site)
{
    return perch__synth_kmods[m].base + s->fn_offset[0][m][fn] + 4u + site;
}

static uint64_t umod_base(const struct synth_sim *s, const struct synth_proc *p, uint8_t u)
{
    const struct synth_module *um = &perch__synth_umods[u];
    (void)s;
    return um->base ? um->base : p->exe_base;
}

static uint64_t uframe(const struct synth_sim *s, const struct synth_proc *p, uint8_t u,
                       uint32_t fn, uint32_t site)
{
    if (s->image && u == SYNTH_UMOD_GAME_EXE)
        return image_frame(s, umod_base(s, p, u), fn, 4u + site);
    return umod_base(s, p, u) + s->fn_offset[1][u][fn] + 4u + site;
}

/* User frames innermost first: [stub], leaf, middle frames, thread entry, BaseThreadInitThunk,
 * RtlUserThreadStart. stub != 0 puts an ntdll system-call stub first (the user part of a
 * kernel-mode sample). */
static unsigned user_chain(const struct synth_sim *s, const struct synth_thread *t, uint32_t chain,
                           bool stub, uint64_t *f, unsigned limit)
{
    const struct synth_proc *p = &s->procs[t->proc];
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    synth_rng r = {synth_hash(s->seed, (uint64_t)p->tpl << 16 | (uint64_t)t->role << 8 | chain)};
    unsigned n = 0, depth = 4 + synth_below(&r, 13);
    const uint8_t ntdll = tpl->mods[1], k32 = tpl->mods[2];
    if (stub)
        f[n++] = uframe(s, p, ntdll, 40 + synth_below(&r, 8), 0x10);
    for (unsigned i = 0; i < depth && n < limit; i++) {
        uint8_t u = synth_chance(&r, 55) ? tpl->mods[0] : tpl->mods[synth_below(&r, tpl->nmods)];
        /* Two draws: named, so their order does not depend on the compiler's choice of
         * argument evaluation order (which C leaves unspecified). */
        uint32_t fn = 2 + synth_below(&r, 48);
        uint32_t off = synth_below(&r, 0x1F0);
        f[n++] = uframe(s, p, u, fn, off);
    }
    f[n++] = uframe(s, p, tpl->mods[0], 1, 0x2A + t->role); /* thread entry */
    f[n++] = uframe(s, p, k32, 0, 0x10);                    /* BaseThreadInitThunk */
    f[n++] = uframe(s, p, ntdll, 0, 0x1D);                  /* RtlUserThreadStart */
    return n;
}

static unsigned kernel_chain(const struct synth_sim *s, enum kctx ctx, uint32_t chain, uint64_t *f,
                             unsigned limit)
{
    synth_rng r = {synth_hash(s->seed, 0x10000u | (uint32_t)ctx << 8 | chain)};
    unsigned n = 0, depth = 2 + synth_below(&r, 9);
    if (ctx == KCTX_IDLE) {
        f[n++] = kframe(s, chain & 1 ? KM_HAL : KM_INTELPPM, chain, 0x12);
        f[n++] = kframe(s, KM_NT, 5, 0x3C); /* PoIdle */
        f[n++] = kframe(s, KM_NT, 4, 0x5A); /* KiIdleLoop */
        return n;
    }
    for (unsigned i = 0; i < depth && n < limit; i++) {
        uint32_t m = synth_chance(&r, 60) ? KM_NT : synth_below(&r, perch__synth_kmod_count);
        uint32_t fn = 8 + synth_below(&r, 64); /* named draws, as in user_chain */
        uint32_t off = synth_below(&r, 0x2F0);
        f[n++] = kframe(s, m, fn, off);
    }
    if (ctx == KCTX_SYSTEM) {
        f[n++] = kframe(s, KM_NT, 3, 0x118); /* ExpWorkerThread */
        f[n++] = kframe(s, KM_NT, 2, 0x57);  /* PspSystemThreadStartup */
        f[n++] = kframe(s, KM_NT, 1, 0x1A);  /* KiStartSystemThread */
    } else {
        f[n++] = kframe(s, KM_NT, 0, 0x25); /* KiSystemServiceCopyEnd */
    }
    return n;
}

uint64_t perch__synth_user_ip(const struct synth_sim *s, const struct synth_thread *t,
                              uint32_t jitter)
{
    const struct synth_proc *p = &s->procs[t->proc];
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    return uframe(s, p, tpl->mods[0], 1, jitter);
}

/* The frames of a sample of t now; *kernel tells which mode it was taken in. */
static unsigned sample_frames(struct synth_sim *s, struct synth_thread *t, bool *kernel,
                              uint64_t *f, unsigned limit)
{
    const struct synth_role *r = &perch__synth_roles[t->role];
    unsigned n;
    *kernel = true;
    if (t->role == ROLE_IDLE)
        n = kernel_chain(s, KCTX_IDLE, synth_below(&s->rng, 2), f, limit);
    else if (r->kernel_only)
        n = kernel_chain(s, KCTX_SYSTEM, t->kchain, f, limit);
    else if (s->now < t->kernel_until || synth_chance(&s->rng, r->syscall_pct)) {
        if (s->now >= t->kernel_until) {
            t->kernel_until = s->now + perch__synth_exp(&s->rng, 1500);
            t->kchain = (uint8_t)synth_below(&s->rng, KERNEL_CHAINS);
        }
        n = kernel_chain(s, KCTX_SYSCALL, t->kchain, f, limit);
    } else {
        *kernel = false;
        n = user_chain(s, t, t->chain, false, f, limit);
    }
    f[0] = jitter_ip(s, t, f[0], synth_below(&s->rng, 0x40)); /* inside the leaf function */
    return n;
}

/* A timestamp >= now and the CPU's last one, and == cpu modulo cpus, so no two samples of the
 * idle threads (all tid 0) share a timestamp. */
static uint64_t sample_ts(const struct synth_sim *s, uint32_t c)
{
    uint64_t t = s->now > s->w.cpu[c].last_ts ? s->now : s->w.cpu[c].last_ts;
    return t + (c + s->cpus - t % s->cpus) % s->cpus;
}

static void put_stackwalk(struct synth_sim *s, uint32_t c, uint64_t ts, uint64_t event_ts,
                          const struct synth_thread *t, const uint64_t *f, unsigned n)
{
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_PERFINFO, HOOK_STACK, 2, ts, UINT32_MAX,
                                     UINT32_MAX, 16u + 8u * n);
    if (!d)
        return;
    d = synth_u64(d, event_ts);
    d = synth_u32(d, s->procs[t->proc].pid);
    d = synth_u32(d, t->tid);
    for (unsigned i = 0; i < n; i++)
        d = synth_u64(d, f[i]);
    perch__synth_count(s, PERCH_KIND_StackWalk);
    s->st.frames_total += n;
}

static void put_lbr(struct synth_sim *s, uint32_t c, uint64_t ts, const struct synth_thread *t,
                    uint64_t ip)
{
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_PERFINFO, HOOK_LBR, 2, ts, UINT32_MAX,
                                     UINT32_MAX, 24u + LBR_ENTRIES * 24u);
    uint64_t top = ip - 2 - synth_below(&s->rng, 0x40);
    uint64_t bottom = ip + 4 + synth_below(&s->rng, 0x80);
    if (!d)
        return;
    d = synth_u64(d, ts);
    d = synth_u32(d, s->procs[t->proc].pid);
    d = synth_u32(d, t->tid);
    d = synth_u32(d, 0); /* Filters */
    d = synth_u32(d, 0); /* padding before the pointer-sized entries */
    for (unsigned i = 0; i < LBR_ENTRIES; i++) {
        bool call = i % 3 == 2;
        d = synth_u64(d, call ? top + 0x10 : bottom);           /* From: call or back edge */
        d = synth_u64(d, call ? top - 0x400 - 0x10u * i : top); /* To: callee or loop top */
        d = synth_u64(d, 0);                                    /* Reserved */
    }
    perch__synth_count(s, PERCH_KIND_LastBranchRecord);
    s->st.lbr_records++;
}

static uint32_t sample_room(unsigned n, bool lbr)
{
    return SYNTH_PERFINFO_HDR + 16u + SYNTH_PERFINFO_HDR + 16u + 8u * n +
           (lbr ? SYNTH_PERFINFO_HDR + 24u + LBR_ENTRIES * 24u : 0u);
}

static void remember_user_part(struct synth_thread *t, uint64_t ts)
{
    if (t->npend >= SYNTH_MAX_PENDING)
        return; /* that sample stays kernel-only */
    t->pend_ts[t->npend] = ts;
    t->pend_chain[t->npend] = t->chain;
    t->npend++;
}

void perch__synth_timer_sample(struct synth_sim *s, uint32_t c)
{
    struct synth_thread *t = &s->th[s->cpu[c].cur];
    uint64_t f[MAX_FRAMES];
    bool kernel;
    unsigned n = sample_frames(s, t, &kernel, f, MAX_FRAMES);
    bool stack = synth_below(&s->rng, 200) != 0; /* 1 sample in 200 has no stack */
    bool lbr = stack && !kernel && synth_chance(&s->rng, 12);
    uint64_t ts = sample_ts(s, c);
    if (!perch__synth_room(&s->w, c, sample_room(n, lbr)))
        return;
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_PERFINFO, HOOK_SAMPLE, 2, ts, UINT32_MAX,
                                     UINT32_MAX, 16);
    d = synth_u64(d, f[0]);
    d = synth_u32(d, t->tid);
    d = synth_u16(d, 1);                      /* Count */
    d = synth_u8(d, (uint8_t)(t->prio << 3)); /* Flags: priority in bits 3..7 */
    synth_u8(d, 0);                           /* Rank */
    perch__synth_count(s, PERCH_KIND_SampledProfile);
    perch__synth_count_sample(s, t, f[0]);
    s->st.samples++;
    if (!stack)
        return;
    s->st.samples_with_stack++;
    put_stackwalk(s, c, ts + 20 + synth_below(&s->rng, 60), ts, t, f, n);
    if (!kernel)
        s->st.stacks_user_only++;
    else if (!perch__synth_roles[t->role].kernel_only)
        remember_user_part(t, ts);
    if (lbr)
        put_lbr(s, c, ts, t, f[0]);
}

void perch__synth_pmc_sample(struct synth_sim *s, uint32_t c)
{
    struct synth_thread *t = &s->th[s->cpu[c].cur];
    uint64_t f[MAX_FRAMES];
    bool kernel;
    if (t->role == ROLE_IDLE)
        return;                         /* unhalted-cycle counters do not overflow in idle */
    sample_frames(s, t, &kernel, f, 1); /* only the IP */
    uint8_t *d = perch__synth_record(&s->w, c, SYNTH_HDR_PERFINFO, HOOK_PMC, 2, s->now, UINT32_MAX,
                                     UINT32_MAX, 16);
    if (!d)
        return;
    d = synth_u64(d, f[0]);
    d = synth_u32(d, t->tid);
    d = synth_u16(d, PMC_SOURCE_TOTAL_CYCLES);
    synth_u16(d, 0);
    perch__synth_count(s, PERCH_KIND_PmcCounterProf);
    s->st.pmc_samples++;
}

void perch__synth_return_to_user(struct synth_sim *s, uint32_t c)
{
    struct synth_thread *t = &s->th[s->cpu[c].cur];
    uint64_t f[MAX_FRAMES];
    for (unsigned i = 0; i < t->npend; i++) {
        unsigned n = user_chain(s, t, t->pend_chain[i], true, f, MAX_FRAMES);
        if (!perch__synth_room(&s->w, c, SYNTH_PERFINFO_HDR + 16u + 8u * n))
            break;
        put_stackwalk(s, c, s->now, t->pend_ts[i], t, f, n);
        s->st.user_parts_deferred++;
    }
    t->npend = 0;
    t->kernel_until = 0;
    if (synth_chance(&s->rng, 30))
        t->chain = (uint8_t)synth_below(&s->rng, USER_CHAINS);
}

uint64_t perch__synth_exp(synth_rng *r, uint64_t mean)
{
    /* -ln(U) = k ln2 - ln(m) for U = m 2^-k, m in [1/2, 1); ln2 ~ 709/1024 */
    uint64_t x = synth_next(r);
    uint64_t k = 0;
    while (k < 40 && !(x & (1ull << 63))) {
        x <<= 1;
        k++;
    }
    uint64_t frac = 1024 - ((x >> 53) & 1023); /* ~ 1024 (1 - m) * 2 */
    uint64_t v = mean * 709 * (k * 1024 + frac) >> 20;
    return v ? v : 1;
}
