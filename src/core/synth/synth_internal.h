/*
 * Internals of the synthetic trace generator (include/perch/synth.h), shared by its files:
 *   etl_writer.c  the .etl container: header buffer, per-CPU 64 KiB buffers, record headers
 *   encode.c      payload encoders for each event family (layouts: docs/synth.md)
 *   catalog.c     the static scenario: modules, process templates, thread roles
 *   stacks.c      call chains, timer/PMC samples, StackWalk parts, LBR
 *   world.c       processes and threads: rundown, start/exit, image loads with PDB ids
 *   sched.c       the per-CPU scheduler simulation and the event loop
 *   synth.c       the public entry point: options, the two passes, stats
 * Everything here is integer arithmetic so a seed gives the same bytes on every platform.
 */
#ifndef PERCH_SYNTH_INTERNAL_H
#define PERCH_SYNTH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perch/event.h"
#include "perch/io.h"
#include "perch/synth.h"

/* ---- little-endian stores ------------------------------------------------------------- */
static inline uint8_t *synth_u8(uint8_t *p, uint8_t v)
{
    p[0] = v;
    return p + 1;
}
static inline uint8_t *synth_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}
static inline uint8_t *synth_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    return p + 4;
}
static inline uint8_t *synth_u64(uint8_t *p, uint64_t v)
{
    synth_u32(p, (uint32_t)v);
    return synth_u32(p + 4, (uint32_t)(v >> 32));
}

/* Bytes of s as NUL-terminated UTF-16LE / ANSI. */
static inline size_t synth_utf16_len(const char *s)
{
    return 2 * (strlen(s) + 1);
}
uint8_t *perch__synth_utf16(uint8_t *p, const char *ascii);
uint8_t *perch__synth_ansi(uint8_t *p, const char *s);
uint8_t *perch__synth_guid(uint8_t *p, const perch_guid *g);

/* ---- deterministic randomness (splitmix64) -------------------------------------------- */
typedef struct synth_rng {
    uint64_t s;
} synth_rng;

static inline uint64_t synth_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint64_t synth_next(synth_rng *r)
{
    r->s += 0x9E3779B97F4A7C15ull;
    return synth_mix(r->s);
}
/* Uniform in [0, n) (n > 0). */
static inline uint32_t synth_below(synth_rng *r, uint32_t n)
{
    return (uint32_t)(((synth_next(r) >> 32) * (uint64_t)n) >> 32);
}
/* True with probability pct/100. */
static inline bool synth_chance(synth_rng *r, uint32_t pct)
{
    return synth_below(r, 100) < pct;
}
static inline uint64_t synth_hash(uint64_t a, uint64_t b)
{
    return synth_mix(a * 0x9E3779B97F4A7C15ull + synth_mix(b + 0x632BE59BD9B4E019ull));
}
/* An exponential-like duration with the given mean (integer only), at least 1. */
uint64_t perch__synth_exp(synth_rng *r, uint64_t mean);

/* ---- the container writer ------------------------------------------------------------- */
enum { SYNTH_HDR_SYSTEM = 0x02, SYNTH_HDR_PERFINFO = 0x11, SYNTH_HDR_FULL = 0x14 };
#define SYNTH_SYSTEM_HDR   0x20u
#define SYNTH_PERFINFO_HDR 0x10u
#define SYNTH_FULL_HDR     0x30u
#define SYNTH_BUFHDR       0x48u
#define SYNTH_ALIGN(n)     (((n) + 7u) & ~7u)

struct synth_cpu_buf {
    uint8_t *data;
    uint32_t used;
    uint32_t records;
    uint64_t last_ts;
};

struct synth_writer {
    perch_output *out; /* NULL in the planning pass: buffers are built, not written */
    struct synth_cpu_buf *cpu;
    uint32_t cpus;
    int pass;
    uint64_t full_budget; /* full data buffers allowed before the trace stops */
    uint64_t full_flushed;
    uint64_t sequence;
    uint64_t buffers; /* written so far, header buffer included */
    uint64_t bytes;
    uint64_t bytes_goal; /* for progress */
    uint64_t records;
    uint64_t last_ts; /* largest record timestamp */
    perch_synth_progress_fn progress;
    void *progress_ctx;
    bool stopped; /* budget reached: no more records */
    int err;      /* first output error */
};

/* What the header buffer states about the session. */
struct synth_logfile {
    uint32_t cpus;
    uint32_t build;
    uint64_t perf_freq;
    uint64_t start_raw;  /* SystemTime of the header record */
    uint64_t start_time; /* FILETIME */
    uint64_t end_time;   /* FILETIME */
    uint64_t boot_time;  /* FILETIME */
    uint32_t buffers_written;
    uint32_t max_file_mb;
    uint32_t cpu_mhz;
    uint32_t logger_tid;
    uint32_t logger_pid;
};

int perch__synth_writer_init(struct synth_writer *w, perch_output *out, uint32_t cpus);
void perch__synth_writer_free(struct synth_writer *w);
int perch__synth_write_header_buffer(struct synth_writer *w, const struct synth_logfile *lf);
/* Makes room for len bytes (sum of aligned record sizes) in cpu's buffer, flushing it if
 * needed. False once the budget is spent or the output failed: the trace ends. */
bool perch__synth_room(struct synth_writer *w, uint32_t cpu, uint32_t len);
/* Appends a record header of kind SYNTH_HDR_SYSTEM or SYNTH_HDR_PERFINFO and returns where
 * its payload goes (payload_len bytes, pmc_count u64 values first when pmc_count > 0), or NULL
 * when the trace has ended. ts is raised to the CPU's last timestamp; the value used is left
 * in w->cpu[cpu].last_ts. */
uint8_t *perch__synth_record(struct synth_writer *w, uint32_t cpu, int kind, uint16_t hook,
                             uint16_t version, uint64_t ts, uint32_t tid, uint32_t pid,
                             uint32_t payload_len);
/* A classic EVENT_TRACE_HEADER record (0xC014) of provider g. */
uint8_t *perch__synth_classic(struct synth_writer *w, uint32_t cpu, const perch_guid *g,
                              uint8_t opcode, uint16_t version, uint64_t ts, uint32_t tid,
                              uint32_t pid, uint32_t payload_len);
/* Flushes every CPU's partial buffer (the last ones carry FLUSH_MARKER). */
int perch__synth_writer_finish(struct synth_writer *w);

/* ---- the static catalog --------------------------------------------------------------- */
#define SYNTH_MAX_MODS 10
struct synth_module {
    const char *name;
    const char *path;
    const char *pdb;
    uint64_t base; /* 0: chosen per process (the executable) */
    uint32_t size;
    uint32_t timestamp;
};

enum synth_role_id {
    ROLE_IDLE,
    ROLE_SYSTEM,
    ROLE_SVC,
    ROLE_SHELL,
    ROLE_GAME_MAIN,
    ROLE_GAME_RENDER,
    ROLE_GAME_WORKER,
    ROLE_CC_MAIN,
    ROLE_CC_WORKER,
    ROLE_COUNT
};

struct synth_role {
    const char *thread_name; /* "" = unnamed; "Worker" gets a number */
    uint8_t priority;
    uint8_t wait_reason; /* KWAIT_REASON when it blocks */
    uint8_t syscall_pct; /* chance a user-mode sample enters the kernel */
    uint8_t kernel_only; /* a system thread: no user frames */
    uint16_t ipc_x100;   /* instructions per cycle for the PMC counters */
    uint32_t run_mean;   /* ticks (100 ns) */
    uint32_t wait_mean;  /* ticks */
};

struct synth_proc_tpl {
    const char *name;
    const char *cmdline;
    uint32_t pid; /* fixed pid, 0 = allocated */
    uint32_t session;
    int8_t exe; /* catalog index of the executable, -1 none */
    uint8_t nmods;
    uint8_t mods[SYNTH_MAX_MODS]; /* user module catalog indices (exe first when present) */
    uint8_t nroles;
    struct {
        uint8_t role;
        uint8_t count;
    } roles[3];
};

enum synth_tpl_id {
    TPL_IDLE,
    TPL_SYSTEM,
    TPL_SVCHOST,
    TPL_EXPLORER,
    TPL_GAME,
    TPL_COMPILER,
    TPL_COUNT
};

extern const struct synth_module perch__synth_kmods[];
extern const unsigned perch__synth_kmod_count;
extern const struct synth_module perch__synth_umods[];
extern const struct synth_role perch__synth_roles[ROLE_COUNT];
extern const struct synth_proc_tpl perch__synth_tpls[TPL_COUNT];
extern const perch_guid perch__synth_rsds_guid;

/* ---- the simulation ------------------------------------------------------------------- */
#define SYNTH_MAX_THREADS 256
#define SYNTH_MAX_PROCS   32
#define SYNTH_MAX_PENDING 8
#define SYNTH_NONE        0xFFFFu
#define SYNTH_NEVER       UINT64_MAX
#define SYNTH_FN_MODS     16 /* modules per catalog (kernel 7, user 13) */
#define SYNTH_FNS         80 /* functions per module */
#define SYNTH_UMOD_COUNT  13

enum synth_tstate { TS_FREE, TS_WAITING, TS_READY, TS_STANDBY, TS_RUNNING };

struct synth_thread {
    uint32_t tid;
    uint16_t proc; /* index in sim->procs */
    uint8_t role;
    uint8_t state;
    uint8_t prio;
    uint8_t cpu; /* current or last CPU */
    uint8_t exiting;
    uint8_t npend;         /* deferred user stack parts */
    uint8_t chain;         /* current user call chain */
    uint8_t kchain;        /* current kernel call chain */
    uint16_t number;       /* "Worker N" */
    uint32_t gen;          /* wake-heap generation */
    uint64_t kernel_until; /* in the kernel until then (0: user mode) */
    uint64_t since;        /* when it last started waiting / became ready */
    uint64_t ready_ts;     /* raw timestamp of its last ReadyThread */
    uint64_t queued_at;    /* when it entered the ready queue */
    uint64_t pend_ts[SYNTH_MAX_PENDING];
    uint8_t pend_chain[SYNTH_MAX_PENDING];
};

struct synth_proc {
    uint32_t row; /* its row in sim->rows (samples per process), UINT32_MAX none */
    uint32_t pid;
    uint32_t ppid;
    uint8_t tpl;
    uint8_t alive;
    uint16_t live_threads;
    uint64_t exe_base;
    uint64_t key;    /* EPROCESS address */
    uint64_t end_at; /* scheduled exit (SYNTH_NEVER) */
};

struct synth_cpu {
    uint16_t cur;       /* running thread */
    uint16_t incoming;  /* thread switching in at switch_at, or SYNTH_NONE */
    bool switched;      /* a CSwitch was logged on this CPU */
    uint64_t slice_end; /* the running thread's slice ends (SYNTH_NEVER for idle) */
    uint64_t switch_at;
    uint64_t next_tick;
    uint64_t next_pmc;
    uint64_t pmc_cycles;
    uint64_t pmc_instr;
    uint64_t pmc_last;
};

struct synth_row {
    uint32_t pid;
    uint8_t tpl;
    uint8_t ended; /* its samples can no longer grow */
    uint64_t samples;
};

/* Rows of samples per process. When they run out, the row of an ended process that can no
 * longer reach the top 10 is reused, so the top lists stay exact at any trace length. */
#define SYNTH_MAX_ROWS 16384

struct synth_wake {
    uint64_t at;
    uint16_t thread;
    uint32_t gen;
};

struct synth_sim {
    synth_rng rng;
    uint64_t seed;
    struct synth_writer w;
    perch_synth_stats st;
    uint32_t cpus;
    uint64_t now;
    uint64_t stop_at;    /* SYNTH_NEVER without a time limit */
    uint64_t next_burst; /* next compiler.exe start */
    uint32_t next_pid;
    uint32_t next_tid;
    uint32_t bursts;
    int burst_proc; /* the live compiler.exe, -1 none */
    struct synth_cpu cpu[PERCH_SYNTH_MAX_CPUS];
    struct synth_thread th[SYNTH_MAX_THREADS];
    struct synth_proc procs[SYNTH_MAX_PROCS];
    uint16_t readyq[SYNTH_MAX_THREADS];
    uint32_t nready;
    struct synth_wake heap[4 * SYNTH_MAX_THREADS];
    uint32_t nheap;
    uint64_t dirty; /* CPUs whose next event time must be recomputed */
    uint64_t cpu_next[PERCH_SYNTH_MAX_CPUS];
    uint8_t cpu_what[PERCH_SYNTH_MAX_CPUS];
    uint32_t fn_offset[2][SYNTH_FN_MODS][SYNTH_FNS];        /* [kernel/user][module][function] */
    const struct synth_module *pdb_seen[2 * SYNTH_FN_MODS]; /* modules with a PDB id logged */
    uint64_t mod_samples[2][SYNTH_FN_MODS];                 /* [kernel/user][catalog index] */
    struct synth_row rows[SYNTH_MAX_ROWS];
    uint32_t nrows;
    /* perch synth --module: the real image standing in for demo.exe (NULL: none) */
    const perch_synth_image *image;
    struct synth_module game_exe; /* its catalog entry (strings borrowed from image) */
};

/* The catalog index of the game's executable (demo.exe), which an image can stand in for. */
#define SYNTH_UMOD_GAME_EXE 9

/* User module u of the catalog, or the image standing in for it. */
const struct synth_module *perch__synth_umod(const struct synth_sim *s, unsigned u);

/* encode.c: payload sizes and writers (P = 8). */
uint32_t perch__synth_process_len(const struct synth_sim *s, const struct synth_proc *p);
void perch__synth_process_put(uint8_t *d, const struct synth_sim *s, const struct synth_proc *p,
                              int32_t exit_status);
uint32_t perch__synth_thread_len(const struct synth_sim *s, const struct synth_thread *t);
void perch__synth_thread_put(uint8_t *d, const struct synth_sim *s, const struct synth_thread *t);
uint32_t perch__synth_image_len(const struct synth_module *m);
void perch__synth_image_put(uint8_t *d, const struct synth_module *m, uint64_t base, uint32_t pid);
uint32_t perch__synth_rsds_len(const struct synth_module *m);
/* The DbgID_RSDS payload: the PDB identity of image (when not NULL), else one made up from m. */
void perch__synth_rsds_put(uint8_t *d, const struct synth_module *m, const perch_synth_image *image,
                           uint64_t base, uint32_t pid);
void perch__synth_thread_name(const struct synth_thread *t, char *out, size_t cap);

/* stacks.c */
void perch__synth_functions_init(struct synth_sim *s);
void perch__synth_timer_sample(struct synth_sim *s, uint32_t c);
void perch__synth_pmc_sample(struct synth_sim *s, uint32_t c);
void perch__synth_return_to_user(struct synth_sim *s, uint32_t c);
uint64_t perch__synth_user_ip(const struct synth_sim *s, const struct synth_thread *t,
                              uint32_t jitter);

/* top.c */
/* A row for a new process (pid, template); UINT32_MAX only if every row may still rank. */
uint32_t perch__synth_new_row(struct synth_sim *s, uint32_t pid, uint8_t tpl);
void perch__synth_count_sample(struct synth_sim *s, const struct synth_thread *t, uint64_t ip);
void perch__synth_top_lists(const struct synth_sim *s, perch_synth_stats *st);

/* world.c */
int perch__synth_world_init(struct synth_sim *s);
void perch__synth_rundown(struct synth_sim *s);
void perch__synth_start_burst(struct synth_sim *s);
void perch__synth_end_process(struct synth_sim *s, uint16_t proc);
/* Logs the exit of thread ti on cpu c (and of its process when it is the last thread). */
void perch__synth_thread_exit(struct synth_sim *s, uint32_t c, uint16_t ti);
void perch__synth_count(struct synth_sim *s, perch_kind kind);

/* sched.c */
void perch__synth_sched_start(struct synth_sim *s);
void perch__synth_wake_at(struct synth_sim *s, uint16_t ti, uint64_t at);
/* Runs the event loop until the time limit or the writer stops. */
void perch__synth_run(struct synth_sim *s);

#endif
