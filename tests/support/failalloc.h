/*
 * Allocation-failure sweeps in the style of curl's and SQLite's tests.
 *
 * perch_failalloc_* replaces src/core/util/mem.h's perch__realloc_hook with a counting hook
 * that can make one allocation fail (the N-th, "transient") or every allocation from the N-th
 * on ("persistent"), and counts the blocks still live, so a run that returns without freeing
 * what it allocated is caught on the spot, in every build (LeakSanitizer in the asan preset
 * also sees what the count cannot: libc allocations).
 *
 * perch_sweep_alloc runs a scenario once to count its allocations (T), then once for every N
 * in 1..T with the N-th failing. Each run must end with PERCH_ENOMEM, or with 0 and an output
 * the scenario's verify callback accepts (the failure was absorbed: a "benign" failure when
 * the output equals the reference, a documented degradation otherwise), and with no block
 * left live. The counters are atomic, so scenarios may use threads (then N does not name the
 * same allocation in every run, but every run must still end cleanly).
 */
#ifndef PERCH_TEST_FAILALLOC_H
#define PERCH_TEST_FAILALLOC_H

#include <stdbool.h>
#include <stdint.h>

/* Installs the counting hook. fail_at: the 1-based allocation that fails, 0 for none;
 * persistent: every allocation from fail_at on fails (not only that one). */
void perch_failalloc_begin(uint64_t fail_at, bool persistent);

/* Stops failing (counting goes on), e.g. before a scenario checks what it wrote. */
void perch_failalloc_disarm(void);

typedef struct perch_failalloc_counts {
    uint64_t allocs; /* calls that asked for memory (size > 0), failed ones included */
    uint64_t failed; /* of which the hook failed on purpose */
    int64_t live;    /* blocks allocated minus blocks freed since begin */
    uint64_t peak_live;
} perch_failalloc_counts;

/* The counts so far (the hook stays installed). */
perch_failalloc_counts perch_failalloc_counts_now(void);

/* Restores the previous hook and returns the counts of the run. */
perch_failalloc_counts perch_failalloc_end(void);

/* What a run ended as, for the sweep's tally. */
typedef enum perch_sweep_outcome {
    PERCH_SWEEP_ENOMEM = 0, /* the run returned PERCH_ENOMEM */
    PERCH_SWEEP_BENIGN,     /* returned 0 and verify found the reference output */
    PERCH_SWEEP_DEGRADED,   /* returned 0 with an output verify accepts as documented */
    PERCH_SWEEP_OUTCOMES
} perch_sweep_outcome;

typedef struct perch_sweep {
    const char *name;
    /* One complete run: create, work, destroy everything but the output verify inspects.
     * Returns 0 or a negative PERCH_E*. Must be deterministic in its allocations unless
     * threads are involved. */
    int (*run)(void *ctx);
    /* Called after every run with the failure disarmed (may be NULL): checks what the run
     * left (output, partial files) and frees it. Returns the outcome for a run that returned
     * 0 (PERCH_SWEEP_BENIGN or PERCH_SWEEP_DEGRADED; anything else fails the sweep), and is
     * also called after failed runs (err < 0), where its return value is ignored. It may use
     * cmocka assertions. */
    perch_sweep_outcome (*verify)(void *ctx, int err, uint64_t fail_at);
    void *ctx;
    bool persistent; /* also sweep in persistent mode (every allocation from N on fails) */
    uint64_t stride; /* test every stride-th N only (0 or 1: every N); the last N always */
} perch_sweep;

typedef struct perch_sweep_result {
    uint64_t total;                         /* allocations of the counting run */
    uint64_t runs;                          /* runs with a failure injected */
    uint64_t outcome[PERCH_SWEEP_OUTCOMES]; /* by outcome */
    uint64_t first_degraded;                /* the first N that degraded (0: none) */
} perch_sweep_result;

/* Runs the sweep; fails the current cmocka test (naming the scenario and N) on any run that
 * returns something other than 0 or PERCH_ENOMEM, leaves a block live, or whose verify fails.
 * The counting run must return 0. Prints one summary line. */
perch_sweep_result perch_sweep_alloc(const perch_sweep *s);

#endif
