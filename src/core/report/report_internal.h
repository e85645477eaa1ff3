/*
 * The report's aggregates (report.c fills them from the record stream, report_out.c writes
 * them as text or JSON). Tables are arrays indexed through perch__hmap by the model's keys;
 * a row referenced before its record arrives (a sample's thread) is created as a placeholder.
 */
#ifndef PERCH_REPORT_INTERNAL_H
#define PERCH_REPORT_INTERNAL_H

#include "model/hmap.h"
#include "perch/report.h"

#define RPT_MAX_ROWS (1u << 22)
#define RPT_MAX_WAIT 64

typedef struct rthread {
    uint64_t key, process_key;
    uint32_t tid, pid;
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

typedef struct rstack {
    uint64_t *frames;
    uint32_t count, kernel;
    uint64_t samples;
    uint64_t thread_key; /* of its first sample */
} rstack;

typedef struct rtable {
    perch__hmap index;
    void *rows;
    uint32_t count, cap;
} rtable;

typedef struct rnamed {
    char *name;
    uint64_t value;
} rnamed;

struct perch__html;

struct perch_report {
    uint32_t top;
    struct perch__html *html; /* what the HTML page draws; NULL until perch_report_enable_html */
    int error;
    perch_trace_info info;
    char *source;
    rtable threads, procs, mods;
    rstack *stacks;
    uint32_t stack_count, stack_cap;
    rnamed *ledger, *stats;
    uint32_t ledger_count, ledger_cap, stat_count, stat_cap;
    uint64_t samples, samples_pmc, samples_with_stack, merged, kernel_only, user_only;
    uint64_t frames_total, no_module;
    uint64_t slices, run_ticks, idle_ticks, slice_flags[4], ready_count, ready_ticks;
    uint64_t wait_reason[RPT_MAX_WAIT + 1];
    uint64_t lbr;
};

/* report.c */
void *perch__rtable_get(rtable *t, uint64_t key, size_t row_size, bool create);
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
