/*
 * The report's aggregates (report.c fills them from the record stream, report_out.c writes
 * them as text or JSON). Tables are arrays indexed through perch__hmap by the model's keys;
 * a row referenced before its record arrives (a sample's thread) is created as a placeholder.
 */
#ifndef PERCH_REPORT_INTERNAL_H
#define PERCH_REPORT_INTERNAL_H

#include "model/hmap.h"
#include "model/module_index.h"
#include "perch/json.h"
#include "perch/report.h"
#include "perch/sym.h"
#include "util/paged.h"
#include "util/spool.h"
#include "util/extsort.h"

#define RPT_MAX_ROWS (1u << 22)
#define RPT_MAX_WAIT 64

typedef struct rthread {
    uint64_t key, process_key;
    uint32_t tid; /* a placeholder's: what its first sample or slice says */
    uint32_t pid;
    char *name;
    uint64_t samples, cpu_ticks;
    int32_t cpu; /* the idle thread (tid 0, a key per CPU): its CPU; -1 otherwise */
    bool known;
} rthread;

typedef struct rproc {
    uint64_t key;
    uint32_t pid;
    char *name;
} rproc;

typedef struct rmod {
    uint64_t key, base, size;
    uint64_t process_key;
    uint32_t pid;
    char *name; /* lower-case base name */
    char *pdb;  /* lower-case PDB base name */
    perch_guid guid;
    uint32_t age;
    bool has_pdb, known;
    uint64_t samples;
} rmod;

/* An interned stack (report_stacks.c): its frames are in the spool at frame_off. */
typedef struct rstack {
    uint64_t frame_off;
    uint64_t samples;    /* timer samples */
    uint64_t thread_key; /* of its first sample */
    uint32_t count, kernel;
} rstack;

typedef struct rstacks {
    perch__paged meta;     /* rstack of id at id - 1 */
    perch__spool frames;   /* every stack's frames, in id order */
    uint32_t count;        /* ids given */
    size_t hash_memory;    /* the stack hash's sort budget */
    uint64_t hash_spilled; /* bytes the stack hash's sort wrote to scratch */
    perch_scratch_open_fn open;
    void *open_ctx;
} rstacks;

typedef struct rstack_ref {
    uint32_t id;
    rstack e;
} rstack_ref;

typedef struct rtable {
    perch__hmap index;
    void *rows;
    uint32_t count, cap;
} rtable;

/* The known modules by address (report_modmap.c), built at the first frame named after a
 * module record. */
typedef struct rmodmap {
    perch__module_index index; /* module rows in M5 order, the row seen first last */
    bool built;                /* false: build before the next lookup */
} rmodmap;

typedef struct rnamed {
    char *name;
    uint64_t value;
} rnamed;

/* Timer samples at one IP of one module (what the function table counts). */
typedef struct rip {
    uint64_t module_key, ip, samples;
} rip;

/* The per-IP counts (report_funcs.c): a fixed table (module_key 0: empty) whose rows go to the
 * spool when it fills. */
typedef struct rips {
    rip *slot;          /* mask + 1 rows, allocated at the first sample */
    uint32_t mask;      /* slots - 1 (a power of two) */
    uint32_t used;      /* rows in the table */
    perch__spool spool; /* earlier rows (an IP may have one in several flushes) */
} rips;

struct perch__html;

struct perch_report {
    uint32_t top;
    struct perch__html *html; /* what the HTML page draws; NULL until perch_report_enable_html */
    int error;
    perch_trace_info info;
    char *source;
    rtable threads, procs, mods;
    rmodmap modmap; /* of mods */
    rstacks stacks;
    rnamed *ledger, *stats;
    uint32_t ledger_count, ledger_cap, stat_count, stat_cap;
    uint64_t samples, samples_pmc, samples_with_stack, merged, kernel_only, user_only;
    uint64_t frames_total, no_module;
    uint64_t slices, run_ticks, idle_ticks, slice_flags[4], ready_count, ready_ticks;
    uint64_t wait_reason[RPT_MAX_WAIT + 1];
    uint64_t lbr;
    perch_symnames *names; /* the stream's symbol records; NULL until the first module */
    bool named;            /* a symbol record arrived */
    rips ips;              /* per (module, IP): timer samples */
};

/* report_stacks.c: memory is the report's budget (a quarter for entries in memory, a quarter
 * for frames in memory, half for the stack hash's sort); open NULL: never spill. */
void perch__rstacks_init(rstacks *s, uint64_t memory, perch_scratch_open_fn open, void *open_ctx);
void perch__rstacks_free(rstacks *s);
/* Adds the next stack (ids dense from 1: PERCH_EFORMAT otherwise). The capture reader refuses
 * a capture that breaks this (docs/capture-format.md 2); the check keeps the array by id
 * bounded whatever another producer sends. */
int perch__rstacks_add(rstacks *s, const perch_stack_rec *rec);
/* The entry of id (writable), valid until the next call; NULL for an unknown id or on error
 * (then s->meta.error is set). */
rstack *perch__rstacks_get(rstacks *s, uint32_t id);
/* Reads e's frames into *buf (grown as needed, *cap frames). */
int perch__rstacks_frames(rstacks *s, const rstack *e, uint64_t **buf, uint32_t *cap);
/* S7: the stack hash, 16 hex digits. */
int perch__rstacks_hash(rstacks *s, char out[17]);
/* The top stacks by timer samples (then first seen), best first, perch__alloc'd into *out;
 * *with_samples counts every stack with a timer sample. */
int perch__rstacks_top(rstacks *s, uint32_t top, rstack_ref **out, uint32_t *n,
                       uint32_t *with_samples);

/* report.c: the row of key, NULL when t has none. */
void *perch__rtable_get(rtable *t, uint64_t key, size_t row_size);
/* The row of key into *row, a zeroed one added when t has none (then *is_new, which may be
 * NULL, is true). 0; PERCH_ELIMIT when t holds RPT_MAX_ROWS rows already (a hostile stream's
 * millions of keys), PERCH_ENOMEM when an allocation fails; on error *row is untouched. */
int perch__rtable_add(rtable *t, uint64_t key, size_t row_size, void **row, bool *is_new);

/* report_modmap.c: builds m of the known modules of mods (0 or PERCH_ENOMEM, m untouched on
 * error), and the best module of process_key whose range holds addr (the M5 order below), or
 * NULL. */
void perch__rmodmap_free(rmodmap *m);
int perch__rmodmap_build(rmodmap *m, const rtable *mods);
const rmod *perch__rmodmap_find(const rmodmap *m, const rtable *mods, uint64_t process_key,
                                uint64_t addr);

/* report_names.c: the module holding addr (kernel modules for kernel addresses, else those of
 * process entity process_key; M5: highest base, then smallest size, then name), and a
 * frame's name "module!function+0xoff" (f, off and *named filled when the stream names it),
 * "module!+0xoff" or "?!0xaddr". perch__report_functions: the top functions by timer
 * samples at the IP (named frames only), in *rows (perch__free) and *n. */
const rmod *perch__report_module_at(perch_report *r, uint64_t addr, uint64_t process_key);
size_t perch__report_frame(perch_report *r, const rmod *md, uint64_t addr, char *buf, size_t cap,
                           perch_sym_func *f, int64_t *off, bool *named);
typedef struct rfunc {
    char name[192];
    uint64_t samples;
    uint8_t source;
} rfunc;

/* report_funcs.c: the per-IP counts in an eighth of the report's memory budget (half the
 * table, half the spool's memory; open NULL: never spill), the count of one timer sample's
 * (module, IP) (module_key != 0), and the top functions: every named IP's samples summed by
 * "module!function" (truncated to rfunc's name), samples descending then name, in *rows
 * (perch__free) and *n. Errors: PERCH_ENOMEM or a scratch store's error. */
void perch__rips_init(rips *t, uint64_t memory, perch_scratch_open_fn open, void *open_ctx);
void perch__rips_free(rips *t);
int perch__report_count_ip(perch_report *r, uint64_t module_key, uint64_t ip, uint32_t count);
int perch__report_functions(perch_report *r, rfunc **rows, uint32_t *n);
/* --json, only when the stream has symbol records (else nothing, so the JSON of an unnamed
 * stream is unchanged): "top_functions", and "top_stacks" with every frame named. */
int perch__report_write_functions_json(perch_report *r, perch_json *w);
int perch__report_write_stacks_json(perch_report *r, perch_json *w);
char *perch__report_lower_base(const char *path);

/* report_text.c: the timer sample interval (from the trace, else Windows' 1 ms default) */
uint64_t perch__report_interval_ns(const perch_report *r);

/* report_out.c helpers */
/* The threads with samples or CPU time, by samples then CPU time descending, then pid and tid
 * (malloc'd with perch__alloc; *n their count). NULL when out of memory. */
rthread **perch__report_sorted_threads(perch_report *r, uint32_t *n);
const char *perch__report_thread_process(perch_report *r, const rthread *t, int64_t *pid);
int perch__report_text_tables(perch_report *r, FILE *f);

/* report_text.c: CPU time of a row. Measured from slices when the trace has context switches;
 * otherwise estimated as timer samples x the sample interval (perch__report_cpu_estimated). */
bool perch__report_cpu_estimated(const perch_report *r);
double perch__report_cpu_ms(const perch_report *r, uint64_t ticks, uint64_t samples);
/* The cpu column's heading: "cpu ms" or "est. cpu ms". */
const char *perch__report_cpu_heading(const perch_report *r);

#endif
